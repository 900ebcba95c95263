# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ring's tunnel: WireGuard between the hosts of a ring, so that exo's gRPC (prompts, tensors,
tokens) crosses the network encrypted and reaches only hosts that hold a ring key.

exo's gRPC has no encryption and no authentication, and the collection does not change it: each host
of a ring that spans hosts gets one WireGuard interface (INTERFACE) with an address of
exo_node_ring_tunnel_network, exo binds gRPC to that address and the topology names the peers by
theirs. plan() decides a host's tunnel from its settings and its ring's names (before any change);
ring() checks the tunnels the ring's hosts published against each other and lists this host's peers.
Each host makes its own private key (roles/node/tasks/tunnel.yml); only public keys leave a host.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import binascii
import ipaddress
import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

# wg-quick names the interface after its configuration file (INTERFACE.conf): 15 characters at most.
INTERFACE = "exo-ring"
UNIT = "gpufleet-exo-ring.service"
# The kernel's WireGuard needs only the tools; without it, Debian's userspace wireguard-go, which
# wg-quick runs by itself when the kernel cannot make the interface.
PACKAGES = {"kernel": ["wireguard-tools"], "userspace": ["wireguard-tools", "wireguard-go"]}
# Keeps a stateful firewall or NAT between the hosts from forgetting an idle ring (seconds).
KEEPALIVE = 25
OFF = {"enabled": False, "interface": INTERFACE, "unit": UNIT, "address": None, "network": None, "prefix": None,
       "port": None, "endpoint": None, "ring": [], "packages": PACKAGES, "keepalive": KEEPALIVE, "settings": {}, "allow": [], "errors": []}


def _network(settings):
    """(exo_node_ring_tunnel_network as a network, or None; why it cannot be one)."""
    given = settings["exo_node_ring_tunnel_network"]
    try:
        network = ipaddress.ip_network(str(given).strip(), strict=True)
    except ValueError:
        return None, ("exo_node_ring_tunnel_network is %s, not a network; give a private network with its prefix, "
                      "such as 10.213.0.0/24 or fd00:213::/64" % show(given))
    if not network.is_private or network.num_addresses < 4:
        return None, ("exo_node_ring_tunnel_network is %s; give a private network (RFC 1918 or IPv6 ULA) of four "
                      "addresses or more that no host uses already, such as 10.213.0.0/24" % show(given))
    return network, None


def _address(settings, network, ring, host):
    """(this host's tunnel address, or None; why it cannot have one): the explicit one, or its place in the ring."""
    given = settings["exo_node_ring_tunnel_address"]
    if given in ("", None):
        # Neither the network's own address nor its last (IPv4's broadcast).
        if len(ring) > network.num_addresses - 2:
            return None, ("exo_node_ring_tunnel_network is %s, too small for the %d hosts of the ring; give a larger "
                          "network" % (show(str(network)), len(ring)))
        return network.network_address + ring.index(host) + 1, None
    try:
        address = ipaddress.ip_address(str(given).strip())
    except ValueError:
        address = None
    if address is None or address not in network or address in (network.network_address, network.broadcast_address):
        return None, ("exo_node_ring_tunnel_address is %s, not an address of exo_node_ring_tunnel_network (%s); give "
                      "one of its host addresses, or \"\" for the address the ring's sorted host names give"
                      % (show(given), network))
    return address, None


def plan(settings, host):
    """The host's tunnel: {"enabled", "interface", "unit", "address", "network", "prefix", "port", "endpoint",
    "ring", "packages", "keepalive", "settings", "allow", "published", "errors"}; "settings" replaces
    exo_node_address for the instances' plan; "allow" is the host's own address, which the instances'
    IPAddressAllow= keeps (exo's API listens on every address, and a client on the host may use that one) now
    that the ring's are the tunnel's; "published" what the host tells the others before it has a key.

    settings: the role's variables as check_settings() returned them (the ring: exo_node_cluster_hosts).
    The tunnel is on where exo_node_ring_tunnel is and the ring holds another host. Without an explicit
    exo_node_ring_tunnel_address a host gets the network's Nth host address, N its place among the
    ring's sorted names: the same on every run while the ring keeps its hosts.
    """
    planned = _plan(settings, host)
    return dict(planned, published=published(planned))


def _plan(settings, host):
    """plan() without "published"."""
    ring = sorted(set(settings["exo_node_cluster_hosts"]) | set([host]))
    # Checked on every host, used or not: a bad network is refused where it is given, not on the day the
    # operator adds the ring's second host.
    network, error = _network(settings)
    errors = [error] if error else []
    address = None
    if network is not None:
        address, error = _address(settings, network, ring, host)
        errors += [error] if error else []
    if not settings["exo_node_ring_tunnel"] or len(ring) < 2:
        return dict(OFF, ring=ring, errors=["host %s: %s" % (host, e) for e in errors])
    if settings["exo_node_discovery"] != "manual":
        errors.append("exo_node_discovery is %s, whose broadcasts WireGuard does not carry, and the ring's tunnel "
                      "(exo_node_ring_tunnel) is on; use exo_node_discovery: manual, or set exo_node_ring_tunnel: "
                      "false where the network is encrypted already" % show(settings["exo_node_discovery"]))
    # exo binds gRPC to the tunnel's address, and its peers are told to reach it there.
    overrides = {"exo_node_address": str(address)} if address else {}
    endpoint = str(settings["exo_node_address"]).strip()
    return dict(OFF, enabled=True, settings=overrides, allow=[endpoint], address=str(address) if address else None, network=str(network) if network else None,
                prefix=network.prefixlen if network else None, port=settings["exo_node_ring_tunnel_port"],
                endpoint=endpoint, ring=ring,
                errors=["host %s: %s" % (host, e) for e in errors])


# An endpoint is an IP address or a DNS name: nothing that could end a line of ring.conf or start another.
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


def _is_key(value):
    """WireGuard's public key form: 32 bytes in canonical base64 (44 characters, one "=")."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (TypeError, ValueError, binascii.Error):
        return False
    return len(raw) == 32 and base64.b64encode(raw).decode("ascii") == value


def _is_address(value):
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# What a host may publish in exo_node_ring_peer, field by field, and the form each must have: the fact
# is written by the host itself, so a compromised host could publish anything, and its values go into
# every other ring host's ring.conf (which wg-quick runs as root) and firewall.
PEER_FIELDS = (
    ("enabled", "true or false", lambda v: isinstance(v, bool)),
    ("address", "an IP address", lambda v: isinstance(v, str) and _is_address(v)),
    ("endpoint", "an IP address or a DNS name", lambda v: isinstance(v, str) and (_is_address(v) or HOSTNAME.match(v) is not None)),
    ("port", "a port number (1-65535)", lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 < v < 65536),
    ("public_key", "a WireGuard public key (44 characters of base64) or \"\"",
     lambda v: isinstance(v, str) and (v == "" or _is_key(v))),
)


def peer_errors(name, theirs):
    """Why what host name published as exo_node_ring_peer cannot reach another host's configuration."""
    if not isinstance(theirs, dict):
        return ["host %s published exo_node_ring_peer %s, not a mapping; run the role on it again (its fact is "
                "the role's alone)" % (name, show(theirs))]
    return ["host %s published exo_node_ring_peer.%s %s, not %s; no peer takes it: find out what wrote that fact "
            "on %s, then run the role on it again" % (name, field, show(theirs.get(field)), form, name)
            for field, form, valid in PEER_FIELDS
            if not (theirs.get("enabled") is False and field != "enabled") and not valid(theirs.get(field))]


def published(tunnel, public_key=""):
    """What a host tells the others of its tunnel (the fact exo_node_ring_peer): never its private key."""
    return {"enabled": tunnel["enabled"], "address": tunnel["address"], "endpoint": tunnel["endpoint"],
            "port": tunnel["port"], "public_key": public_key}


def endpoint(address, port):
    """WireGuard's Endpoint: host:port, an IPv6 address in brackets."""
    return ("[%s]:%d" if ":" in address else "%s:%d") % (address, port)


def ring(tunnel, host, others, check_mode=False, partial=False):
    """{"peers", "hosts", "errors"}: the WireGuard peers of the host and the ring hosts' addresses.

    tunnel: plan()'s answer for host; others: each other host of the ring to what it published
    (published()), None where it published nothing. In check mode a host may have no key yet; partial leaves out
    a host that published nothing (before the plan, where its own refusal says why).
    """
    if not tunnel["enabled"]:
        return {"peers": [], "hosts": [], "errors": []}
    errors, peers, taken = [], [], {tunnel["address"]: host}
    network = ipaddress.ip_network(tunnel["network"])
    for name in [n for n in tunnel["ring"] if n != host]:
        theirs = others.get(name)
        if partial and not theirs:
            continue
        refused = peer_errors(name, theirs) if theirs else []
        if refused:
            errors += refused
            continue
        if not theirs or not theirs.get("enabled"):
            errors.append("host %s of the ring has %s; run the role on every host of the ring (or keep their facts in "
                          "a fact cache), and set exo_node_ring_tunnel alike on all of them"
                          % (name, "its tunnel off" if theirs else "published no tunnel (it failed earlier in this run, or is not in the play and "
                             "no fact cache has it)"))
            continue
        if ipaddress.ip_address(theirs["address"]) not in network:
            errors.append("host %s's tunnel address %s is outside this host's exo_node_ring_tunnel_network %s; give the "
                          "ring's hosts one network" % (name, theirs["address"], network))
        if theirs["address"] in taken:
            errors.append("hosts %s and %s both have the tunnel address %s; give each its own "
                          "exo_node_ring_tunnel_address" % (taken[theirs["address"]], name, theirs["address"]))
        taken.setdefault(theirs["address"], name)
        if not theirs["public_key"]:
            if not check_mode:
                errors.append("host %s of the ring has no public ring key; run the role on it" % name)
            continue
        peers.append({"host": name, "public_key": theirs["public_key"], "endpoint": endpoint(theirs["endpoint"], theirs["port"]),
                      "allowed": "%s/%d" % (theirs["address"], 128 if ":" in theirs["address"] else 32)})
    hosts = sorted(set(others[p["host"]]["endpoint"] for p in peers))
    return {"peers": peers, "hosts": hosts, "errors": ["host %s: %s" % (host, e) for e in errors]}
