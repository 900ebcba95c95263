# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's network confinement: which addresses may open which ports of a host's instances.

exo binds its HTTP API to every address and has no authentication, and its gRPC takes prompts and
tensors from anyone who connects. The role confines both with one nftables table of its own
(templates/firewall.nft.j2, table inet gpufleet_exo), loaded by exo-firewall.service: gRPC and
discovery only from the ring (the addresses of every instance in the topology), the API only from
the host itself and the networks in exo_node_api_clients. With the API's proxy (proxy.py) those
networks reach the proxy's ports instead, and exo's own API ports only the host. Everything else
reaching those ports is refused; other ports and other tables are not the role's and are left as they are.
An output chain keeps the ring's ports the ring's on every host: only root and exo's user open any
ring member's gRPC, API or discovery port, at this host's addresses (loopback), at the ring's
addresses and at the ring hosts' own, through the tunnel or not, TCP and UDP (matching the socket's
owner); the proxy's worker only this host's API. Any other local user would bypass the proxy's
tokens, read prompts or inject tokens. With the tunnel on, its network is the ring's alone, and
nothing for it leaves by another interface: with the tunnel's unit stopped (its interface and route
gone) a packet for a ring member would otherwise go to the default router in clear.
The table is kept in place by exo-firewall.service's guard (roles/node/files/firewall_guard.py).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import json

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import proxy
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

TABLE = "gpufleet_exo"
# nftables' name for each IP version's saddr match and set type.
FAMILIES = ((4, "ip", "ipv4_addr"), (6, "ip6", "ipv6_addr"))
# nginx's worker user (the "user" line of the distribution's nginx.conf), by the host's os_family;
# None: any other family, as nginx's own packages name it.
PROXY_USERS = {"Debian": "www-data", "RedHat": "nginx", None: "nginx"}


def network(text):
    """text as an IP network (an address is a /32 or /128); None when it is neither."""
    try:
        return ipaddress.ip_network(str(text).strip(), strict=False)
    except ValueError:
        return None


def client_errors(clients):
    """One message per exo_node_api_clients entry that is not an address or network, or is every address."""
    errors = []
    for entry in clients:
        given = network(entry) if isinstance(entry, str) else None
        if given is None:
            errors.append("exo_node_api_clients entry %s is not an IP address or network; give one such as "
                          "192.0.2.10, 192.0.2.0/24 or 2001:db8::/32" % show(entry))
        elif given.prefixlen == 0:
            errors.append("exo_node_api_clients entry %s is every address, and exo's API has no authentication; list "
                          "the clients' own addresses or networks (with exo_node_api_proxy, those of the proxy's "
                          "clients)" % show(entry))
    return errors


def address_error(address):
    """Why exo_node_address cannot go into the firewall's ring (None: it can)."""
    try:
        ipaddress.ip_address(str(address).strip())
    except ValueError:
        return ("exo_node_address is %s, not an IP address; the firewall (exo_node_firewall) lets the ring's "
                "addresses reach gRPC, so give the IP address the other nodes reach this host at, or set "
                "exo_node_firewall: false" % show(address))
    return None


def _sets(name, networks):
    """Two sets (IPv4 and IPv6) of networks, each as nftables writes its elements."""
    result = []
    for version, family, kind in FAMILIES:
        members = sorted(set(n for n in networks if n.version == version), key=lambda n: (int(n.network_address), n.prefixlen))
        result.append({"name": "%s%d" % (name, version), "family": family, "type": kind,
                       "elements": [str(n.network_address) if n.num_addresses == 1 else str(n) for n in members]})
    return result


def ring_users(settings):
    """The host's users that may open the ring's ports: root and exo's own. Every other local user is refused there."""
    return sorted(set(["root", settings["exo_node_user"]]))


def output(sets, settings, os_family, ports, api, tunnel):
    """The output chain's rules, each {"what", "rule"} as nft reads it: what this host's own sockets may not send.

    A packet of the kernel's own (WireGuard's, a TCP reset) has no socket owner: "meta skuid" does not match it.
    """
    users = "meta skuid != { %s }" % ", ".join(json.dumps(u) for u in ring_users(settings))
    where = "meta l4proto { tcp, udp } th dport { %s }" % ", ".join(str(p) for p in ports)
    rules = []
    if tunnel and tunnel["enabled"]:
        net = network(tunnel["network"])
        daddr = "%s daddr %s" % ("ip" if net.version == 4 else "ip6", net)
        rules += [{"what": "Nothing for the tunnel's network leaves by another interface, whoever sends it: with the "
                           "tunnel's unit stopped it would reach the default router in clear",
                   "rule": '%s oifname != { "%s", "lo" } reject' % (daddr, tunnel["interface"])}]
    if settings["exo_node_api_proxy"]:
        rules += [{"what": "The proxy's worker reaches this host's exo API, nothing else of the ring's",
                   "rule": 'oifname "lo" tcp dport { %s } meta skuid %s accept'
                           % (", ".join(str(p) for p in api), json.dumps(PROXY_USERS.get(os_family, PROXY_USERS[None])))}]
    if tunnel and tunnel["enabled"]:
        rules += [{"what": "The tunnel's network is the ring's alone: every port", "rule": "%s %s reject" % (daddr, users)}]
    rules += [{"what": "The ring's ports at %s" % {"ring": "the ring's addresses", "hosts": "the ring hosts' own addresses"}[s["name"][:-1]],
               "rule": "%s daddr @%s %s %s reject" % (s["family"], s["name"], where, users)}
              for s in sets if s["name"][:-1] in ("ring", "hosts") and s["elements"]]
    rules += [{"what": "The ring's ports at this host's own addresses", "rule": 'oifname "lo" %s %s reject' % (where, users)}]
    return rules


def firewall(instances, peers, settings, os_family=None, tunnel=None, ring_ports=()):
    """The table's contents for a host: {"table", "sets", "rules", "output"}.

    instances: the host's instances (their ports); peers: the topology's peers (node_cluster), whose
    addresses make the ring; settings: the role's variables as check_settings() returned them (the API's
    clients, discovery, the proxy, exo's user); os_family: the host's, which names nginx's user. Each rule
    lets one set reach some ports and refuses everyone else there ("from" "host": no set, only the host
    itself); "output" says what the host's own users may not send (output()).
    ring_ports: every port of the ring's instances (cluster.ring_ports()), this host's own added.
    tunnel: the ring's tunnel (tunnel.plan() with tunnel.ring()'s "hosts"), or None: with it on, the
    ring's addresses are tunnel addresses and gRPC is accepted only on the tunnel's interface (a
    packet routed to a tunnel address from outside arrives elsewhere), the tunnel's UDP port only
    from the ring's hosts.
    """
    ring = [network(peer["address"]) for peer in peers.values()]
    clients = [network(c) for c in settings["exo_node_api_clients"]]
    sets = _sets("ring", [n for n in ring if n is not None]) + _sets("clients", clients)
    api = sorted(i["ports"]["api"] for i in instances)
    grpc = sorted(i["ports"]["grpc"] for i in instances)
    rules = [{"protocol": "tcp", "ports": grpc, "from": "ring", "what": "gRPC"}]
    if tunnel and tunnel["enabled"]:
        rules[0]["interface"] = tunnel["interface"]
        sets += _sets("hosts", [n for n in (network(h) for h in tunnel["hosts"]) if n is not None])
        rules.append({"protocol": "udp", "ports": [tunnel["port"]], "from": "hosts", "what": "the ring's tunnel"})
    if not settings["exo_node_api_proxy"]:
        rules.append({"protocol": "tcp", "ports": api, "from": "clients", "what": "API"})
    else:
        proxy_ports = proxy.ports(instances, settings["exo_node_api_proxy_port"]).values()
        rules += [{"protocol": "tcp", "ports": sorted(proxy_ports), "from": "clients", "what": "API proxy"},
                  {"protocol": "tcp", "ports": api, "from": "host", "what": "API"}]
    if settings["exo_node_discovery"] == "udp":
        rules.append({"protocol": "udp", "ports": sorted(i["ports"]["udp"] for i in instances), "from": "ring",
                      "what": "discovery"})
    ports = set(ring_ports) | set(port for i in instances for port in i["ports"].values())
    ports |= set([tunnel["port"]]) if tunnel and tunnel["enabled"] else set()
    return {"table": TABLE, "sets": sets, "rules": rules,
            "output": output(sets, settings, os_family, sorted(ports), api, tunnel)}
