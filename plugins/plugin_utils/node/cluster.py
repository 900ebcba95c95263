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


def ring_errors(settings, host):
    """Why host's ring cannot be the one its checked settings make, before any change: a ring named for a group
    that holds no host or not this one (its peers would not count it in), or more hosts than
    exo_node_ring_max_hosts."""
    name, hosts, most = settings["exo_node_ring"], settings["exo_node_cluster_hosts"], settings["exo_node_ring_max_hosts"]
    if name and not hosts:
        return ["exo_node_ring is %s, which names no inventory group with hosts; give the group that holds this "
                "ring's hosts" % show(name)]
    if name and host not in hosts:
        return ["exo_node_ring is %s, a group this host is not in, so the ring's other hosts would leave it out; add "
                "it to the group, or set exo_node_ring to its own ring's group" % show(name)]
    count = len(set(hosts) | set([host]))
    if count > most:
        return ["its ring (%s) holds %d hosts, more than exo_node_ring_max_hosts (%d): every request crosses every "
                "host of a ring. Put each ring's hosts in an inventory group and set exo_node_ring to the group's name "
                "in its variables, or raise exo_node_ring_max_hosts"
                % ("every host of the play, as exo_node_ring is not set" if not name else "the group " + show(name),
                   count, most)]
    return []


def cluster(host, instances, cluster_hosts, inventory_hosts, others, models=(), ring=""):
    """(peers, errors) for host: the topology's peers and what collides across the cluster (survey())."""
    found = survey(host, instances, cluster_hosts, inventory_hosts, others, models, ring)
    return found["peers"], found["errors"]


def survey(host, instances, cluster_hosts, inventory_hosts, others, models=(), ring=""):
    """{"peers", "errors", "ring"} for host: the topology's peers, what collides across the cluster, and the ring's
    members ({host: its instances}, a host whose published instances are refused taken as not known yet).

    others maps each other host of the cluster to its published instances (None: not known yet).
    models: exo_node_models, each checked against the ring's memory once every member is known.
    ring: exo_node_ring, which every member's instances must have been planned for.
    """
    errors = []
    try:
        names = as_list("exo_node_cluster_hosts", cluster_hosts, ",")
    except SettingError as problem:
        return {"peers": {}, "errors": ["host %s: %s" % (host, problem)], "ring": {host: instances}}
    unknown = [name for name in names if name not in inventory_hosts]
    if unknown:
        errors.append("host %s: exo_node_cluster_hosts names %s, not in the inventory; list inventory hosts "
                      "(or a group: \"{{ groups['name'] }}\")" % (host, ", ".join(show(n) for n in unknown)))
    others, refused = checked(others)
    errors += ["host %s: %s" % (host, e) for e in refused]
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
    # A member planned for another ring lists other peers than this host does: the two would split a model
    # differently and hang every request. Instances published before rings had names carry none.
    for name in sorted(set(names) - set([host])):
        theirs = set(i.get("ring", ring) for i in others.get(name) or [])
        if theirs - set([ring]):
            errors.append("host %s: its ring (exo_node_ring %s) lists %s, whose instances are planned for the ring %s; "
                          "keep each host in one ring's group, with exo_node_ring set to that group for all of them"
                          % (host, show(ring), name, ", ".join(show(r) for r in sorted(theirs - set([ring]), key=str))))
    for node_id, hosts in sorted(clashes.items()):
        errors.append("host %s: node id %s is also used by %s; give each host its own exo_node_id_prefix (now %s)"
                      % (host, node_id, ", ".join(hosts), node_id[:-len(mine[node_id]["name"]) - 1]))
    # {member: its instances}: host's own, and those the others published (None: not known yet).
    ring = dict((name, instances if name == host else others.get(name)) for name in list(names) + [host])
    if not unknown and all(members is not None for members in ring.values()):
        errors.extend(unfit(host, ring, models))
    return {"peers": peers, "errors": errors, "ring": ring}


def _is_port(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536


def published_errors(name, instances):
    """Why what host name published as exo_node_instances cannot reach this host's topology and firewall: each
    instance a mapping whose ports are port numbers (they go into the firewall's rules) and whose address is
    text without spaces. Written by the host itself, so a compromised host could publish anything."""
    if not isinstance(instances, list) or not all(isinstance(i, dict) for i in instances):
        return ["host %s published exo_node_instances %s, not a list of instances; run the role on it again (its fact "
                "is the role's alone)" % (name, show(instances))]
    errors = []
    for i in instances:
        ports = i.get("ports") if isinstance(i.get("ports"), dict) else {}
        bad = dict((k, v) for k, v in sorted(ports.items()) if not _is_port(v))
        if not ports or bad or not all(k in ports for k in ("grpc", "api")):
            errors.append("host %s published an instance %s whose ports %s are not port numbers (1-65535) for grpc and "
                          "api; find out what wrote that fact on %s, then run the role on it again"
                          % (name, show(i.get("node_id")), show(i.get("ports")), name))
        address = i.get("address")
        if not isinstance(address, str) or not address or any(c.isspace() or not c.isprintable() for c in address):
            errors.append("host %s published an instance %s at the address %s; find out what wrote that fact on %s, "
                          "then run the role on it again" % (name, show(i.get("node_id")), show(address), name))
    return errors


def checked(others):
    """(others, each host whose published instances are refused taken as not known, the refusals)."""
    refusals = dict((name, published_errors(name, theirs)) for name, theirs in others.items() if theirs is not None)
    return (dict((name, None if refusals.get(name) else theirs) for name, theirs in others.items()),
            [e for name in sorted(refusals) for e in refusals[name]])


def ring_ports(members):
    """Every port of every ring member's instances (gRPC, API, discovery): the ring's alone on every ring host,
    which only exo's user and root open (firewall.py's output chain)."""
    return sorted(set(port for instances in members.values() for i in instances or []
                      for port in i["ports"].values()))


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
