# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster: exo's peers for the topology file, and what collides across hosts.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, as_list, show


def cluster_names(cluster_hosts):
    """exo_node_cluster_hosts as a list of names; a malformed value gives none (cluster() reports it)."""
    try:
        return as_list("exo_node_cluster_hosts", cluster_hosts, ",")
    except SettingError:
        return []


def cluster(host, instances, cluster_hosts, inventory_hosts, others, models=()):
    """(peers, errors) for host: the topology's peers and what collides across the cluster.

    others maps each other host of the cluster to its published instances (None: not known yet).
    models: exo_node_models, each checked against the ring's memory once every member is known.
    """
    errors = []
    try:
        names = as_list("exo_node_cluster_hosts", cluster_hosts, ",")
    except SettingError as problem:
        return {}, ["host %s: %s" % (host, problem)]
    unknown = [name for name in names if name not in inventory_hosts]
    if unknown:
        errors.append("host %s: exo_node_cluster_hosts names %s, not in the inventory; list inventory hosts "
                      "(or a group: \"{{ groups['name'] }}\")" % (host, ", ".join(show(n) for n in unknown)))
    mine = dict((i["node_id"], i) for i in instances)
    peers = {}
    for name in list(names) + [host]:
        for i in (instances if name == host else others.get(name) or []):
            peers[i["node_id"]] = {"address": i["address"], "port": i["ports"]["grpc"],
                                   "device_capabilities": i["capabilities"]}
    clashes = {}
    for name, theirs in sorted(others.items()):
        if name != host:
            for i in theirs or []:
                if i["node_id"] in mine:
                    clashes.setdefault(i["node_id"], []).append(name)
    for node_id, hosts in sorted(clashes.items()):
        errors.append("host %s: node id %s is also used by %s; give each host its own exo_node_id_prefix (now %s)"
                      % (host, node_id, ", ".join(hosts), node_id[:-len(mine[node_id]["name"]) - 1]))
    ring = ring_members(host, instances, names, others)
    if not unknown and all(members is not None for members in ring.values()):
        errors.extend(unfit(host, ring, models))
    return peers, errors


def ring_members(host, instances, names, others):
    """{host: its instances} of the ring: host's own, and those the others published (None: not known yet)."""
    return dict((name, instances if name == host else others.get(name)) for name in list(names) + [host])


def unfit(host, ring, models):
    """A sentence for each model the ring cannot hold: exo would run out of memory in the middle of an answer."""
    errors = []
    for model in models:
        verdict = capacity.ring(model, ring)
        if verdict is not None and not verdict["serves"]:
            errors.append("host %s: its ring (%s) cannot hold %s, which exo_node_models lists: %s; list it only for "
                          "rings with the memory (exo_node_models per group), or give the ring more instances"
                          % (host, ", ".join(sorted(ring)), model, verdict["why"]))
    return errors
