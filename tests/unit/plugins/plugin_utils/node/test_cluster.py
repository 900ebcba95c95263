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
from tests.helpers import NODE_SETTINGS, plan_node_ok as ok
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
        found = node_cluster(mine, "h", ["h", "g"], dict(hostvars, h={}))
        assert sorted(found["peers"]) == ["h-" + uuid(0), "h-" + uuid(1)], hostvars
    found = node_cluster(mine, "h", ["h", "g"], {"h": {}, "g": {"ansible_facts": {}}})
    assert list(found["peers"]) == ["h-" + uuid(0)]


def test_the_topology_says_what_the_ring_computes_at_once(probed):
    """Each instance's API admits exo_node_requests_in_flight: the ring's members keep a KV cache for the sum."""
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster
    mine = ok(probed["one"], exo_node_requests_in_flight=3)["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g")["instances"]
    assert [i["requests_in_flight"] for i in mine + theirs] == [3] * len(mine) + [1] * len(theirs)
    found = node_cluster(mine, "h", ["h", "g"], {"h": {}, "g": {"ansible_facts": {"exo_node_instances": theirs}}})
    assert found["ring_requests_in_flight"] == 3 * len(mine) + len(theirs)
    assert node_cluster(mine, "h", ["h"], {"h": {}})["ring_requests_in_flight"] == 3 * len(mine)


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
    found = node_cluster(mine, "h", ["h", "g"], {"h": {}, "g": {"ansible_facts": {"exo_node_instances": theirs}}})
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


# ---- rings by group --------------------------------------------------------------------------------------------

def ring_settings(**given):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
    values, errors = check_settings(dict(NODE_SETTINGS, **given))
    assert errors == []
    return values


PLAY = ["gpu%02d" % n for n in range(20)]
RING_CASES = {
    "one_ring_of_a_small_play": (dict(exo_node_cluster_hosts=PLAY[:16]), []),
    "a_ring_by_group": (dict(exo_node_ring="ring_a", exo_node_cluster_hosts=PLAY[:3]), []),
    "a_group_of_20_allowed_by_the_operator": (
        dict(exo_node_ring="big", exo_node_cluster_hosts=PLAY, exo_node_ring_max_hosts=20), []),
    "one_ring_of_a_large_play": (
        dict(exo_node_cluster_hosts=PLAY),
        ["its ring (every host of the play, as exo_node_ring is not set) holds 20 hosts, more than "
         "exo_node_ring_max_hosts (16): every request crosses every host of a ring. Put each ring's hosts in an "
         "inventory group and set exo_node_ring to the group's name in its variables, or raise exo_node_ring_max_hosts"]),
    "a_group_too_large": (
        dict(exo_node_ring="ring_a", exo_node_cluster_hosts=PLAY[:5], exo_node_ring_max_hosts=4),
        ["its ring (the group \"ring_a\") holds 5 hosts, more than exo_node_ring_max_hosts (4): every request crosses "
         "every host of a ring. Put each ring's hosts in an inventory group and set exo_node_ring to the group's name "
         "in its variables, or raise exo_node_ring_max_hosts"]),
    # The role's default gives [] for a group the inventory lacks (groups[exo_node_ring] | default([])).
    "a_group_the_inventory_lacks": (
        dict(exo_node_ring="ring_z", exo_node_cluster_hosts=[]),
        ["exo_node_ring is \"ring_z\", which names no inventory group with hosts; give the group that holds this "
         "ring's hosts"]),
    "a_group_this_host_is_not_in": (
        dict(exo_node_ring="ring_b", exo_node_cluster_hosts=PLAY[3:6]),
        ["exo_node_ring is \"ring_b\", a group this host is not in, so the ring's other hosts would leave it out; add "
         "it to the group, or set exo_node_ring to its own ring's group"]),
}


@pytest.mark.parametrize("given, errors", list(RING_CASES.values()), ids=list(RING_CASES))
def test_the_ring_is_checked_before_any_change(given, errors):
    assert cluster.ring_errors(ring_settings(**given), "gpu00") == errors


def test_the_preflight_refuses_a_ring_of_the_whole_large_play_by_host():
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.preflight import preflight
    found = preflight(dict(NODE_SETTINGS, exo_node_cluster_hosts=PLAY), "gpu00", {"os_family": "Debian"})
    assert [e.split(":")[0] for e in found["errors"]] == ["host gpu00"]
    assert "more than exo_node_ring_max_hosts (16)" in found["errors"][0]


@pytest.mark.parametrize("name", ["ring a", "ring/a", "-a", "a;b", "{{ x }}"])
def test_a_ring_name_that_is_no_group_name_is_refused(name):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
    errors = check_settings(dict(NODE_SETTINGS, exo_node_ring=name))[1]
    assert len(errors) == 1 and errors[0].startswith("exo_node_ring is ") and "not the name of an inventory group" in errors[0]


def test_each_instance_is_published_with_its_rings_name(probed):
    assert set(i["ring"] for i in ok(probed["one"], exo_node_ring="ring_a", exo_node_cluster_hosts=["h"])["instances"]) \
        == set(["ring_a"])
    assert set(i["ring"] for i in ok(probed["one"])["instances"]) == set([""])


def test_a_member_planned_for_another_ring_is_refused(probed):
    """A host in two rings' groups takes one exo_node_ring: the other ring would list it and it would not list them,
    so the two split a model differently."""
    mine = ok(probed["one"], exo_node_ring="ring_a")["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g", exo_node_ring="ring_b")["instances"]
    errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": theirs}, ring="ring_a")[1]
    assert errors == ["host h: its ring (exo_node_ring \"ring_a\") lists g, whose instances are planned for the ring "
                      "\"ring_b\"; keep each host in one ring's group, with exo_node_ring set to that group for all of "
                      "them"]
    # the same ring, or a member published before rings had names: nothing to refuse
    same = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g", exo_node_ring="ring_a")["instances"]
    unnamed = [dict((k, v) for k, v in i.items() if k != "ring") for i in theirs]
    for published in (same, unnamed):
        assert cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": published}, ring="ring_a")[1] == []


def test_a_host_moved_to_another_ring_is_forgotten_by_the_first_and_reads_only_the_second(probed):
    """The filter reads the ring's members only: g, moved from ring_a (h, g) to ring_b (g, f), leaves h's topology
    and ports on h's next run, and reads f, never h."""
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster
    h = ok(probed["one"], exo_node_ring="ring_a")["instances"]
    g = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g", exo_node_ring="ring_b")["instances"]
    f = ok(probed["two"], exo_node_address="10.0.0.3", exo_node_id_prefix="f", exo_node_grpc_port=41000,
           exo_node_ring="ring_b")["instances"]
    hostvars = dict((name, {"ansible_facts": {"exo_node_instances": found}}) for name, found in
                    (("h", h), ("g", g), ("f", f)))
    before = node_cluster(h, "h", ["h", "g"], hostvars, ring="ring_a")
    after = node_cluster(h, "h", ["h"], hostvars, ring="ring_a")
    assert before["errors"] and "whose instances are planned for the ring \"ring_b\"" in before["errors"][0]
    assert (sorted(after["peers"]), after["errors"]) == (sorted(i["node_id"] for i in h), [])
    assert 41000 not in after["ports"] and "10.0.0.2" not in after["addresses"]
    moved = node_cluster(g, "g", ["g", "f"], hostvars, ring="ring_b")
    assert (sorted(moved["peers"]), moved["errors"]) == (sorted(i["node_id"] for i in g + f), [])
    assert not set(i["node_id"] for i in h) & set(moved["peers"])


def test_the_cluster_reads_no_host_outside_the_ring(probed):
    """What a host reads grows with its ring, not the fleet: hostvars of hosts outside the ring are never read."""
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster

    class Watched(dict):
        read = set()

        def __getitem__(self, name):
            Watched.read.add(name)
            return dict.__getitem__(self, name)

        def get(self, name, default=None):
            Watched.read.add(name)
            return dict.get(self, name, default)

    mine = ok(probed["one"])["instances"]
    hostvars = Watched((name, {"ansible_facts": {"exo_node_instances": None}}) for name in PLAY + ["h"])
    node_cluster(mine, "h", ["h", "gpu01"], hostvars)
    assert Watched.read <= set(["h", "gpu01"])
