# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ring's tunnel (plugins/plugin_utils/node/tunnel.py) as the filters node_tunnel (a host's tunnel,
from its settings) and node_tunnel_ring (its WireGuard peers, from what the ring's hosts published),
documented in node_tunnel.yml and node_tunnel_ring.yml beside this file."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def node_tunnel(settings, host):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import tunnel
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
    return tunnel.plan(checked("node_tunnel", settings), host)


def node_tunnel_ring(planned, host, hostvars, check_mode=False, partial=False):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import tunnel
    others = {}
    for name in planned["ring"]:
        if name != host and name in hostvars:
            # Published as a fact, as the instances are (node_plan.py's node_cluster says why).
            facts = hostvars[name].get("ansible_facts") or {}
            others[name] = facts["exo_node_ring_peer"] if "exo_node_ring_peer" in facts else hostvars[name].get("exo_node_ring_peer")
    return tunnel.ring(planned, host, others, check_mode=check_mode, partial=partial)


class FilterModule(object):
    def filters(self):
        return {"node_tunnel": node_tunnel, "node_tunnel_ring": node_tunnel_ring}
