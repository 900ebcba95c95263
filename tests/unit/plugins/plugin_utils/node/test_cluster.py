# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's cluster (plugins/plugin_utils/node/cluster.py): exo's manual discovery peers
from the instances the planner gives each host (the recorded facts of the simulated hosts one and two),
and node ids or cluster hosts that cannot work."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

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
