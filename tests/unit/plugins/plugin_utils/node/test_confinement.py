# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each instance's unit may use and reach (plugins/plugin_utils/node/confinement.py): its share of
the host's memory, tasks, open files, the ports it may bind and the addresses it may exchange packets
with. The units are rated in tests/unit/roles/test_node_specs.py and run under the limits in the
molecule default scenario (roles/node/molecule/default/tasks/limits.yml)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import cluster, confinement
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS, plan_node_ok as ok, plan_node_refused as refused


def with_host(facts, **host):
    facts = copy.deepcopy(facts)
    facts["host"].update(host)
    return facts


# (simulated host, host memory MiB, CPUs, exo_node_memory_percent, MemoryMax= MiB each, MemoryHigh= MiB each,
# TasksMax=): the share is split evenly among the host's instances; the CPU node is alone on its host.
SHARES = [
    ("four", 1048576, 64, 80, 209715, 188743, 768),
    ("one", 1048576, 64, 80, 838860, 754974, 768),
    ("cpu_only", 65536, 16, 80, 52428, 47185, 576),
    ("four", 128887, 16, 50, 16110, 14499, 576),
    ("four", 128887, 16, 100, 32221, 28998, 576),
]


@pytest.mark.parametrize("name, memory, cpus, percent, high_max, high, tasks", SHARES)
def test_each_instance_gets_its_share_of_the_hosts_memory(probed, name, memory, cpus, percent, high_max, high, tasks):
    result = ok(with_host(probed[name], memory_mib=memory, cpus=cpus), exo_node_memory_percent=percent)
    assert result["instances"]
    for instance in result["instances"]:
        limits = instance["limits"]
        assert (limits["memory_max_mib"], limits["memory_high_mib"], limits["tasks_max"]) == (high_max, high, tasks)
        assert limits["nofile"] == 65536


def test_without_the_hosts_memory_no_memory_limit_and_a_warning(probed):
    result = ok(with_host(probed["one"], memory_mib=None))
    assert result["instances"][0]["limits"]["memory_max_mib"] is None
    assert [w for w in result["warnings"] if "no MemoryMax=" in w and "host h" in w]


# (discovery, the binds of the second instance, or the only one for UDP discovery): its own gRPC and API ports; UDP discovery binds its
# broadcasts to ephemeral ports, which no rule can name.
BINDS = [("manual", ["tcp:50052", "tcp:52416"]), ("udp", ["tcp:50051", "tcp:52415", "udp"])]


@pytest.mark.parametrize("discovery, binds", BINDS)
def test_each_instance_binds_its_own_ports_only(probed, discovery, binds):
    instances = ok(probed["four" if discovery == "manual" else "one"], exo_node_discovery=discovery)["instances"]
    assert instances[1 if discovery == "manual" else 0]["limits"]["bind"] == binds


PLACED = {"exo_node_models": ["llama-3.2-1b"], "exo_node_model_store": "/srv/models"}
# (settings, whether every other address is refused, the host's own allowed addresses).
ADDRESSES = [
    # exo downloads models from the hub: any address, as a download needs DNS and the hub.
    ({}, False, []),
    ({"exo_node_models": ["llama-3.2-1b"], "exo_node_model_source": "mirror",
      "exo_node_model_store": "https://mirror.example"}, False, []),
    # Placed models: the host, the API's clients.
    (dict(PLACED, exo_node_api_clients=["192.0.2.0/24", "2001:db8::7"]), True,
     ["localhost", "192.0.2.0/24", "2001:db8::7/128"]),
    # The proxy reaches exo's API on loopback: the clients are the proxy's, not exo's.
    (dict(PLACED, exo_node_api_clients=["192.0.2.0/24"], exo_node_api_proxy=True, exo_node_api_proxy_tokens=["t" * 32]),
     True, ["localhost"]),
    # A mirror's address and its resolver, given.
    ({"exo_node_egress": ["198.51.100.7", "198.51.100.53/32"]}, True,
     ["localhost", "198.51.100.7/32", "198.51.100.53/32"]),
    # UDP discovery's broadcasts: everyone and the /24 of exo_node_address (exo e4238f9ef's guess).
    ({"exo_node_egress": ["198.51.100.7"], "exo_node_discovery": "udp"}, True,
     ["localhost", "255.255.255.255", "10.0.0.255", "198.51.100.7/32"]),
    # Without the role's firewall the ring's addresses may be names: no address list.
    ({"exo_node_egress": ["198.51.100.7"], "exo_node_firewall": False}, False, []),
]


@pytest.mark.parametrize("settings, deny, allow", ADDRESSES)
def test_the_addresses_an_instance_may_reach(probed, settings, deny, allow):
    limits = ok(probed["one"], **settings)["instances"][0]["limits"]
    assert (limits["ip_deny"], limits["ip_allow"]) == (deny, allow)


def test_the_ring_is_its_members_addresses_each_once(probed):
    mine = ok(probed["two"])["instances"]
    theirs = ok(probed["one"], exo_node_address="10.0.0.2", exo_node_id_prefix="g")["instances"]
    peers, errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": theirs})
    assert errors == []
    assert confinement.ring_addresses(peers) == ["10.0.0.1", "10.0.0.2"]
    named = dict(peers, other={"address": "node3.example", "port": 1})
    assert confinement.ring_addresses(named) == ["10.0.0.1", "10.0.0.2"]


# (variable, value, what the refusal says).
REFUSALS = [
    ("exo_node_memory_percent", 0, "exo_node_memory_percent"),
    ("exo_node_memory_percent", 101, "exo_node_memory_percent"),
    ("exo_node_egress", ["192.0.2.1", "mirror.example"], 'exo_node_egress holds "mirror.example", not an IP'),
    ("exo_node_egress", [7], "exo_node_egress holds 7, not an IP"),
]


@pytest.mark.parametrize("name, value, said", REFUSALS)
def test_bad_limits_are_refused_before_any_change(probed, name, value, said):
    values, errors = check_settings(dict(NODE_SETTINGS, **{name: value}))
    assert [e for e in errors if said in e], errors
    refused(probed["one"], said, **{name: value})


def test_a_network_given_as_a_string_is_split_at_commas():
    values, errors = check_settings(dict(NODE_SETTINGS, exo_node_egress="192.0.2.1, 198.51.100.0/24"))
    assert errors == []
    assert values["exo_node_egress"] == ["192.0.2.1/32", "198.51.100.0/24"]
