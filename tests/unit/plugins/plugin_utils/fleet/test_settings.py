# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The fleet report plans each host with the node role's own defaults and its own check of the variables.

The defaults come from the role's meta/argument_specs.yml through the settings engine; only those that are
templates of a host's variables have stand-ins (TEMPLATED_DEFAULTS), worked out as the role's templates do.
The facts are those of the real H100 of tests/fixtures/real-h100.
"""

import json
import os

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter import fleet_capacity as plugin
from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan
from tests.helpers import REPO

with open(os.path.join(REPO, "tests", "fixtures", "real-h100", "device_facts.json")) as handle:
    REAL = json.load(handle)


def test_the_defaults_are_the_roles():
    with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as handle:
        assert plugin.node_defaults() == yaml.safe_load(handle) == role_settings.defaults("node")


# (the host's variables, the address the role's default gives): its default IPv4 address, else
# ansible_host, else the inventory hostname.
@pytest.mark.parametrize("hostvars, address", [
    ({"ansible_facts": {"default_ipv4": {"address": "192.0.2.7"}}, "ansible_host": "10.1.2.3"}, "192.0.2.7"),
    ({"ansible_facts": {"default_ipv4": {}}, "ansible_host": "10.1.2.3"}, "10.1.2.3"),
    ({"ansible_facts": {}}, "h1"),
    ({"exo_node_address": "198.51.100.1", "ansible_host": "10.1.2.3"}, "198.51.100.1"),
])
def test_the_address_is_the_roles_default(hostvars, address):
    settings = plugin.host_settings("h1", hostvars, ["h1", "h2"], plugin.node_defaults())
    assert (settings["exo_node_address"], settings["exo_node_id_prefix"], settings["exo_node_cluster_hosts"]) == \
        (address, "h1", ["h1", "h2"])


def test_a_host_the_role_would_refuse_is_left_out_with_the_roles_message():
    hostvars = {"h1": {"ansible_facts": {"device_capabilities": REAL}, "exo_node_gpu": [0],
                       "exo_node_instances": [], "exo_node_cpu_reason": None}}
    report = plugin.fleet_capacity(["h1"], hostvars)
    assert [(host["host"], host["reason"]) for host in report["excluded"]] == [("h1", "plan_errors")]
    assert "host h1: exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?)" \
        in report["excluded"][0]["detail"]
    # Without the misspelt name, and with the facts the role publishes, it serves.
    del hostvars["h1"]["exo_node_gpu"]
    assert plugin.fleet_capacity(["h1"], hostvars)["excluded"] == []


def test_a_host_confined_by_the_role_is_planned_as_the_role_plans_it():
    """The report plans without the confinement (a name may stand in for the address): the API's clients and its
    proxy, which the role refuses without the firewall, are left out with it, not the host."""
    hostvars = {"h1": {"ansible_facts": {"device_capabilities": REAL}, "exo_node_api_clients": ["192.0.2.0/24"],
                       "exo_node_api_proxy": True, "exo_node_api_proxy_tokens": ["t" * 32]}}
    report = plugin.fleet_capacity(["h1"], hostvars)
    assert report["excluded"] == [] and len(report["nodes"]) == 1


# (each host's exo_node_ring, None for none; the exo_node_cluster_hosts the report plans each host with: its ring's)
CLUSTERS = [
    ({"h1": None, "h2": None}, {"h1": ["h1", "h2"], "h2": ["h1", "h2"]}),
    ({"a1": "a", "b1": "b", "u1": None, "a2": "a", "u2": ""},
     {"a1": ["a1", "a2"], "a2": ["a1", "a2"], "b1": ["b1"], "u1": ["u1", "u2"], "u2": ["u1", "u2"]}),
]


@pytest.mark.parametrize("rings, cluster_hosts", CLUSTERS)
def test_each_host_is_planned_with_its_rings_hosts(monkeypatch, rings, cluster_hosts):
    planned = {}
    instances = plan.instances

    def record(facts, settings, host, **options):
        planned[host] = settings["exo_node_cluster_hosts"]
        return instances(facts, settings, host, **options)

    monkeypatch.setattr(plan, "instances", record)
    hostvars = dict((host, dict({"ansible_facts": {"device_capabilities": REAL}},
                                **({} if ring is None else {"exo_node_ring": ring}))) for host, ring in rings.items())
    report = plugin.fleet_capacity(list(rings), hostvars)
    assert planned == cluster_hosts and report["excluded"] == []
    assert dict((ring["ring"], ring["hosts"]) for ring in report["rings"]) == dict(
        (rings[host] or "", hosts) for host, hosts in cluster_hosts.items())
