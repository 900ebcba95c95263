# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each exo instance's unit may use and reach: memory, tasks, open files, the ports it may bind
and the addresses it may exchange packets with (the drop-in's limits, templates/instance.conf.j2).

Memory: the host's instances share exo_node_memory_percent of its memory evenly (MemoryMax=);
MemoryHigh= is a tenth below it, so the kernel reclaims and throttles before it kills. Tasks and
open files are fixed tables scaled by the host's CPUs. Binds: the instance's own gRPC and API ports
(and UDP, for UDP discovery). Addresses: where the role's firewall confines the ring
(exo_node_firewall), the unit exchanges packets only with the host itself, the ring, the API's
clients (exo's API is theirs only without the proxy, which reaches exo on loopback), the discovery
broadcast and exo_node_egress; where exo still downloads models itself (no exo_node_models placed,
or a mirror) and exo_node_egress lists nothing, it may reach any address, as a download needs DNS
and the hub. systemd applies IPAddressAllow= to both directions: a client that may reach the API
may also be reached.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.firewall import network
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, as_list, show

# MemoryHigh= as a share of MemoryMax=.
MEMORY_HIGH_SHARE = 0.9
# exo e4238f9ef runs a few dozen threads (asyncio, gRPC, its download and inference pools), and
# numpy's and tinygrad's pools grow with the CPUs it may use: a floor plus a few per CPU.
TASKS_BASE = 512
TASKS_PER_CPU = 4
# Model files, gRPC channels to every peer, one socket per API client; well under the kernel's default
# hard limit of services (524288), well over the soft 1024 a busy API would reach.
NOFILE = 65536
# exo's UDP discovery sends its broadcasts from sockets bound to an ephemeral port, which no rule can
# name (systemd refuses udp:0): UDP discovery may bind any UDP port.
BIND = {"manual": lambda ports: ["tcp:%d" % ports["grpc"], "tcp:%d" % ports["api"]],
        "udp": lambda ports: ["tcp:%d" % ports["grpc"], "tcp:%d" % ports["api"], "udp"]}


def read_networks(name, value):
    """exo_node_egress as a list of networks (as written), or SettingError naming each bad entry."""
    entries = as_list(name, value, ",")
    bad = [entry for entry in entries if not isinstance(entry, str) or network(entry) is None]
    if bad:
        raise SettingError("%s holds %s, not an IP address or network; give addresses or networks such as "
                           "192.0.2.10 or 2001:db8::/32 (a mirror's and its DNS resolver's)"
                           % (name, ", ".join(show(entry) for entry in bad)))
    return [str(network(entry)) for entry in entries]


def _broadcasts(address):
    """Where exo's UDP discovery sends: everyone, and the /24 of the address (exo e4238f9ef's guess)."""
    try:
        parsed = ipaddress.ip_address(str(address).strip())
    except ValueError:
        return []
    if parsed.version != 4:
        return []
    return ["255.255.255.255", str(ipaddress.ip_network("%s/24" % parsed, strict=False).broadcast_address)]


def downloads(settings):
    """Whether exo fetches models itself: none placed, or placed from a mirror it downloads from."""
    return not settings["exo_node_models"] or settings["exo_node_model_source"] == "mirror"


def addresses(settings):
    """(deny, allow): whether the unit refuses every address not allowed, and the host's own allowed ones.

    The ring's addresses are added by the drop-in from the cluster (ring_addresses()).
    """
    if not settings["exo_node_firewall"] or (downloads(settings) and not settings["exo_node_egress"]):
        return False, []
    allow = ["localhost"]
    if not settings["exo_node_api_proxy"]:
        allow += [str(network(c)) for c in settings["exo_node_api_clients"]]
    if settings["exo_node_discovery"] == "udp":
        allow += _broadcasts(settings["exo_node_address"])
    allow += settings["exo_node_egress"]
    return True, sorted(set(allow), key=allow.index)


def ring_addresses(peers):
    """The topology's peers' addresses, each once, IP addresses only (the firewall needs nothing else)."""
    found = [network(peer["address"]) for peer in peers.values()]
    return sorted(set(str(n.network_address) for n in found if n is not None))


def limits(host, host_facts, settings, instances):
    """Warnings; sets each instance's "limits" in place, for the drop-in."""
    memory = host_facts.get("memory_mib")
    cpus = host_facts.get("cpus")
    warnings = []
    share = None
    if isinstance(memory, int) and memory > 0 and instances:
        share = memory * settings["exo_node_memory_percent"] // 100 // len(instances)
    elif instances:
        warnings.append("host %s: the facts give no memory size (%s), so the instances get no MemoryMax=; gather "
                        "them with gpufleet.exo.device_facts" % (host, show(memory)))
    tasks = TASKS_BASE + TASKS_PER_CPU * (cpus if isinstance(cpus, int) and cpus > 0 else 1)
    deny, allow = addresses(settings)
    for instance in instances:
        instance["limits"] = {
            "memory_max_mib": share,
            "memory_high_mib": int(share * MEMORY_HIGH_SHARE) if share else None,
            "tasks_max": tasks,
            "nofile": NOFILE,
            "bind": BIND[settings["exo_node_discovery"]](instance["ports"]),
            "ip_deny": deny,
            "ip_allow": allow,
        }
    return warnings
