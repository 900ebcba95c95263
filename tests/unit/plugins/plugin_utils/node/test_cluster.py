# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's cluster (plugins/plugin_utils/node/cluster.py): exo's manual discovery peers
from the instances the planner gives each host (the recorded facts of the simulated hosts one and two),
and node ids or cluster hosts that cannot work."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import cluster
from tests.helpers import plan_node_ok as ok
from tests.simulated.hosts import uuid


def test_cluster_peers_and_node_ids_used_twice(probed):
    mine = ok(probed["one"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2")["instances"]
    peers, errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": theirs})
    assert errors == ["host h: node id h-%s is also used by g; give each host its own exo_node_id_prefix (now h)"
                      % uuid(0)]
    assert sorted(peers) == ["h-" + uuid(0), "h-" + uuid(1)]
    assert peers["h-" + uuid(1)] == {"address": "10.0.0.2", "port": 50052,
                                     "device_capabilities": theirs[1]["capabilities"]}


def test_cluster_hosts_must_be_in_the_inventory(probed):
    mine = ok(probed["one"])["instances"]
    peers, errors = cluster.cluster("h", mine, "h,gpu99", ["h"], {})
    assert errors == ["host h: exo_node_cluster_hosts names \"gpu99\", not in the inventory; list inventory hosts "
                      "(or a group: \"{{ groups['name'] }}\")"]
    assert list(peers) == ["h-" + uuid(0)]


def test_the_filter_reads_a_peer_published_as_a_fact_or_as_a_variable(probed):
    """node_cluster reads another host's instances from its ansible_facts, where the role publishes them
    (a cached fact read as a top-level variable is deprecated in ansible-core 2.21), else from its variables."""
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster
    mine = ok(probed["one"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2")["instances"]
    for hostvars in ({"g": {"ansible_facts": {"exo_node_instances": theirs}}}, {"g": {"exo_node_instances": theirs}}):
        found = node_cluster(mine, "h", ["h", "g"], ["h", "g"], dict(hostvars, h={}))
        assert sorted(found["peers"]) == ["h-" + uuid(0), "h-" + uuid(1)], hostvars
    found = node_cluster(mine, "h", ["h", "g"], ["h", "g"], {"h": {}, "g": {"ansible_facts": {}}})
    assert list(found["peers"]) == ["h-" + uuid(0)]


def test_the_topology_says_what_the_ring_computes_at_once(probed):
    """Each instance's API admits exo_node_requests_in_flight: the ring's members keep a KV cache for the sum."""
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster
    mine = ok(probed["one"], exo_node_requests_in_flight=3)["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g")["instances"]
    assert [i["requests_in_flight"] for i in mine + theirs] == [3] * len(mine) + [1] * len(theirs)
    found = node_cluster(mine, "h", ["h", "g"], ["h", "g"], {"h": {}, "g": {"ansible_facts": {"exo_node_instances": theirs}}})
    assert found["ring_requests_in_flight"] == 3 * len(mine) + len(theirs)
    assert node_cluster(mine, "h", ["h"], ["h"], {"h": {}})["ring_requests_in_flight"] == 3 * len(mine)


def test_a_listed_model_the_ring_cannot_hold_is_refused_once_every_member_is_known(probed):
    """A GPU host's instances and a CPU host's: the 8B Llama at fp16 needs more than the ring has, the 1B fits;
    a member not planned yet (None) leaves the check for later; a model exo's engine has no size for passes."""
    mine = ok(probed["one"])["instances"]
    for instance in mine:
        instance["capabilities"] = dict(instance["capabilities"], memory=4096)
    cpu = ok(probed["cpu_only"], exo_node_address="10.0.0.2")["instances"]
    cpu[0]["capabilities"] = dict(cpu[0]["capabilities"], memory=4096)
    models = ["llama-3.2-1b", "llama-3.1-8b", "a-model-of-another-engine"]
    dummy, errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": cpu}, models)
    assert len(errors) == 1, errors
    assert errors[0].startswith("host h: its ring (g, h) cannot hold llama-3.1-8b, which exo_node_models lists: ")
    assert "MiB short on" in errors[0] and "each instance: " in errors[0] and errors[0].endswith(
        "; list it only for rings with the memory (exo_node_models per group), or give the ring more instances")
    assert cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": None}, models)[1] == []
    assert cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": cpu}, ["llama-3.2-1b"])[1] == []


@pytest.mark.parametrize("change, message", [
    # a port that would write its own rules into every ring host's nftables table
    (lambda i: i["ports"].update(grpc="50051 } accept; tcp dport { 22"), "whose ports"),
    (lambda i: i["ports"].update(api=True), "whose ports"),
    (lambda i: i["ports"].update(api=70000), "whose ports"),
    (lambda i: i.pop("ports"), "whose ports"),
    (lambda i: i.update(address="10.0.0.2\nPostUp = id"), "at the address"),
    (lambda i: i.update(address=None), "at the address"),
])
def test_what_a_host_publishes_of_its_instances_is_checked_before_this_host_takes_it(probed, change, message):
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster
    mine = ok(probed["one"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g")["instances"]
    change(theirs[1])
    found = node_cluster(mine, "h", ["h", "g"], ["h", "g"], {"h": {}, "g": {"ansible_facts": {"exo_node_instances": theirs}}})
    assert len(found["errors"]) == 1 and found["errors"][0].startswith(
        'host h: host g published an instance "g-%s" %s' % (uuid(1), message)), found["errors"]
    assert "find out what wrote that fact on g, then run the role on it again" in found["errors"][0]
    # none of g's instances reaches the topology or the firewall's ports
    assert sorted(found["peers"]) == ["h-" + uuid(0)]
    assert found["ports"] == sorted(set(mine[0]["ports"].values()))


def test_a_host_that_publishes_no_list_of_instances_is_refused_by_name(probed):
    mine = ok(probed["one"])["instances"]
    peers, errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": {"g-0": "10.0.0.2"}})
    assert errors == ['host h: host g published exo_node_instances {"g-0": "10.0.0.2"}, not a list of instances; run '
                      "the role on it again (its fact is the role's alone)"]


def test_the_rings_ports_are_every_port_of_every_members_instances(probed):
    mine = ok(probed["one"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g", exo_node_grpc_port=41000)["instances"]
    assert cluster.ring_ports({"h": mine, "g": theirs, "f": None}) == sorted(
        set(p for i in mine + theirs for p in i["ports"].values()))
    assert 41001 in cluster.ring_ports({"h": mine, "g": theirs})
