# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ring's tunnel (plugins/plugin_utils/node/tunnel.py): each host's address, the refusals, the peers
from what the ring published, the firewall's rules with the tunnel, and the files the role renders from
them. The tunnel itself is brought up, captured and knocked on in the cluster scenario (tunnel.yml)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.node_tunnel import node_tunnel, node_tunnel_ring
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import cluster, firewall, tunnel
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS, checked, node_templates, plan_node_ok as ok

RING = ["gpu-c", "gpu-a", "gpu-b"]
# WireGuard's form: 32 bytes in base64.
KEYS = dict((host, base64.b64encode(host.encode("ascii") * 6 + b"..").decode("ascii")) for host in ("gpu-a", "gpu-b", "gpu-c"))
ADDRESSES = {"gpu-a": "192.0.2.11", "gpu-b": "192.0.2.12", "gpu-c": "2001:db8::13"}


def settings(host="gpu-b", **changes):
    given = dict(NODE_SETTINGS, exo_node_id_prefix=host, exo_node_address=ADDRESSES.get(host, "192.0.2.99"),
                 exo_node_cluster_hosts=RING)
    given.update(changes)
    return given


def planned(host="gpu-b", **changes):
    """node_tunnel as the role asks it: with the settings its preflight checked."""
    return node_tunnel(checked(settings(host, **changes)), host)


def published(changes=None, keys=True):
    """hostvars as the ring's hosts leave them once each published its tunnel (and its key)."""
    hostvars = {}
    for host in RING:
        mine = planned(host, **(changes or {}).get(host, {}))
        peer = dict(mine["published"], public_key=KEYS[host] if keys else "")
        hostvars[host] = {"ansible_facts": {"exo_node_ring_peer": peer}}
    return hostvars


# Each host's address is its place among the ring's sorted names, or the one it is given.
@pytest.mark.parametrize("host, changes, address", [
    ("gpu-a", {}, "10.213.0.1"),
    ("gpu-b", {}, "10.213.0.2"),
    ("gpu-c", {}, "10.213.0.3"),
    ("gpu-b", {"exo_node_ring_tunnel_network": "172.31.7.0/29"}, "172.31.7.2"),
    ("gpu-b", {"exo_node_ring_tunnel_network": "fd00:213::/64"}, "fd00:213::2"),
    ("gpu-b", {"exo_node_ring_tunnel_address": "10.213.0.77"}, "10.213.0.77"),
])
def test_each_host_gets_a_stable_address_in_the_network(host, changes, address):
    mine = planned(host, **changes)
    assert (mine["enabled"], mine["address"], mine["errors"]) == (True, address, [])
    # exo binds gRPC there and the topology names it: the instances are planned on it, and still
    # exchange packets with the host's own address (its API's clients on the host)
    assert mine["settings"] == {"exo_node_address": address}
    assert mine["allow"] == [ADDRESSES[host]]
    assert mine["published"] == {"enabled": True, "address": address, "endpoint": ADDRESSES[host], "port": 51820,
                                 "public_key": ""}
    # the same answer whatever order the ring is listed in
    assert planned(host, exo_node_cluster_hosts=list(reversed(RING)), **changes)["address"] == address


@pytest.mark.parametrize("changes", [
    {"exo_node_ring_tunnel": False},
    # a ring on one host: its instances talk over loopback
    {"exo_node_cluster_hosts": ["gpu-b"]},
    {"exo_node_cluster_hosts": []},
])
def test_no_tunnel_where_it_is_off_or_the_ring_is_one_host(changes):
    mine = planned(**changes)
    assert (mine["enabled"], mine["address"], mine["settings"], mine["allow"], mine["errors"]) == (False, None, {}, [], [])
    assert node_tunnel_ring(mine, "gpu-b", published()) == {"peers": [], "hosts": [], "errors": []}


@pytest.mark.parametrize("changes, message", [
    ({"exo_node_ring_tunnel_network": "10.213.0.1/24"},
     'exo_node_ring_tunnel_network is "10.213.0.1/24", not a network; give a private network with its prefix'),
    ({"exo_node_ring_tunnel_network": "tunnel"}, 'exo_node_ring_tunnel_network is "tunnel", not a network'),
    ({"exo_node_ring_tunnel_network": "8.8.8.0/24"},
     'exo_node_ring_tunnel_network is "8.8.8.0/24"; give a private network (RFC 1918 or IPv6 ULA)'),
    ({"exo_node_ring_tunnel_network": "10.213.0.0/31"}, 'exo_node_ring_tunnel_network is "10.213.0.0/31"; give a private'),
    ({"exo_node_ring_tunnel_network": "10.213.0.0/30", "exo_node_cluster_hosts": RING + ["gpu-d"]},
     'exo_node_ring_tunnel_network is "10.213.0.0/30", too small for the 4 hosts of the ring; give a larger network'),
    ({"exo_node_ring_tunnel_address": "10.9.0.1"},
     'exo_node_ring_tunnel_address is "10.9.0.1", not an address of exo_node_ring_tunnel_network (10.213.0.0/24)'),
    ({"exo_node_ring_tunnel_address": "10.213.0.255"}, 'exo_node_ring_tunnel_address is "10.213.0.255", not an address'),
    ({"exo_node_ring_tunnel_address": "gpu-b.ring"}, 'exo_node_ring_tunnel_address is "gpu-b.ring", not an address'),
    ({"exo_node_discovery": "udp"},
     'exo_node_discovery is "udp", whose broadcasts WireGuard does not carry, and the ring\'s tunnel '
     '(exo_node_ring_tunnel) is on; use exo_node_discovery: manual, or set exo_node_ring_tunnel: false'),
])
def test_bad_tunnel_settings_are_refused_with_the_variable_and_what_to_do(changes, message):
    errors = planned(**changes)["errors"]
    assert len(errors) == 1 and errors[0].startswith("host gpu-b: " + message), errors


@pytest.mark.parametrize("changes", [
    {"exo_node_ring_tunnel": False},
    {"exo_node_cluster_hosts": ["gpu-b"]},
])
@pytest.mark.parametrize("bad, message", [
    ({"exo_node_ring_tunnel_network": "8.8.8.0/24"}, 'exo_node_ring_tunnel_network is "8.8.8.0/24"; give a private'),
    ({"exo_node_ring_tunnel_network": "10.213.0.0/33"}, 'exo_node_ring_tunnel_network is "10.213.0.0/33", not a network'),
    ({"exo_node_ring_tunnel_network": "off"}, 'exo_node_ring_tunnel_network is "off", not a network'),
    ({"exo_node_ring_tunnel_address": "10.9.0.1"}, 'exo_node_ring_tunnel_address is "10.9.0.1", not an address of'),
    ({"exo_node_ring_tunnel_address": "fd00::2"}, 'exo_node_ring_tunnel_address is "fd00::2", not an address of'),
])
def test_the_tunnels_settings_are_checked_where_no_tunnel_uses_them(changes, bad, message):
    mine = planned(**dict(changes, **bad))
    assert mine["enabled"] is False
    assert len(mine["errors"]) == 1 and mine["errors"][0].startswith("host gpu-b: " + message), mine["errors"]


def test_the_filter_refuses_the_settings_as_given_by_name():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="^node_tunnel takes the node role's settings as its preflight checked them"):
        node_tunnel(settings(), "gpu-b")


def test_a_bad_port_is_refused_by_the_settings():
    dummy, errors = check_settings(settings(exo_node_ring_tunnel_port=70000))
    assert any(e.startswith("exo_node_ring_tunnel_port is 70000") for e in errors), errors


def test_each_host_lists_the_others_as_peers_and_their_addresses_for_the_firewall():
    ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", published())
    assert ring == {"errors": [], "hosts": ["192.0.2.11", "2001:db8::13"], "peers": [
        {"host": "gpu-a", "public_key": KEYS["gpu-a"], "endpoint": "192.0.2.11:51820", "allowed": "10.213.0.1/32"},
        {"host": "gpu-c", "public_key": KEYS["gpu-c"], "endpoint": "[2001:db8::13]:51820", "allowed": "10.213.0.3/32"}]}


@pytest.mark.parametrize("changes, hostvars_change, check_mode, message, peer", [
    # two hosts given one address
    ({"gpu-a": {"exo_node_ring_tunnel_address": "10.213.0.2"}}, None, False,
     "hosts gpu-b and gpu-a both have the tunnel address 10.213.0.2; give each its own exo_node_ring_tunnel_address", True),
    ({"gpu-a": {"exo_node_ring_tunnel_network": "10.99.0.0/24"}}, None, False,
     "host gpu-a's tunnel address 10.99.0.1 is outside this host's exo_node_ring_tunnel_network 10.213.0.0/24", True),
    ({"gpu-a": {"exo_node_ring_tunnel": False}}, None, False, "host gpu-a of the ring has its tunnel off; run the role",
     False),
    ({}, "gone", False, "host gpu-a of the ring has published no tunnel (it failed earlier in this run, or is not in "
     "the play and no fact cache has it); run the role on every host of the ring", False),
    ({}, "keyless", False, "host gpu-a of the ring has no public ring key; run the role on it", False),
    # in check mode a host has no key yet: left out, not refused
    ({}, "keyless", True, None, False),
])
def test_what_collides_across_the_ring_is_refused(changes, hostvars_change, check_mode, message, peer):
    hostvars = published(changes)
    if hostvars_change == "gone":
        del hostvars["gpu-a"]
    if hostvars_change == "keyless":
        hostvars["gpu-a"]["ansible_facts"]["exo_node_ring_peer"]["public_key"] = ""
    ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", hostvars, check_mode=check_mode)
    assert len(ring["errors"]) == (1 if message else 0), ring
    if message:
        assert ring["errors"][0].startswith("host gpu-b: " + message), ring
    # a host without a tunnel or a key is no peer
    assert ("gpu-a" in [p["host"] for p in ring["peers"]]) == peer


@pytest.mark.parametrize("field, value, form", [
    # a key that goes on to write its own lines into every peer's ring.conf, which wg-quick runs as root
    ("public_key", KEYS["gpu-a"] + "\n[Interface]\nPostUp = touch /pwned", "a WireGuard public key"),
    ("public_key", "A" * 43, "a WireGuard public key"),
    # 32 bytes, but not base64 as WireGuard writes it (the last character's spare bits set)
    ("public_key", "B" * 43 + "=", "a WireGuard public key"),
    ("public_key", None, "a WireGuard public key"),
    ("address", "10.213.0.1/32\nPostUp = id", "an IP address"),
    ("address", None, "an IP address"),
    ("endpoint", "192.0.2.11:51820\n[Peer]", "an IP address or a DNS name"),
    ("endpoint", "gpu a", "an IP address or a DNS name"),
    ("port", "51820", "a port number (1-65535)"),
    ("port", 0, "a port number (1-65535)"),
    ("port", True, "a port number (1-65535)"),
    ("enabled", "yes", "true or false"),
])
def test_what_a_host_publishes_is_checked_before_any_peer_takes_it(field, value, form):
    hostvars = published()
    hostvars["gpu-a"]["ansible_facts"]["exo_node_ring_peer"][field] = value
    for check_mode, partial in ((True, True), (False, False)):
        ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", hostvars, check_mode=check_mode, partial=partial)
        assert ring["errors"] == ["host gpu-b: host gpu-a published exo_node_ring_peer.%s %s, not %s%s; no peer takes "
                                  "it: find out what wrote that fact on gpu-a, then run the role on it again"
                                  % (field, json.dumps(value), form, " (44 characters of base64) or \"\""
                                     if field == "public_key" else "")], ring
        assert [p["host"] for p in ring["peers"]] == ["gpu-c"]


def test_a_host_that_publishes_no_mapping_is_refused_by_name():
    hostvars = published()
    hostvars["gpu-a"]["ansible_facts"]["exo_node_ring_peer"] = "[Peer]"
    ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", hostvars)
    assert ring["errors"] == ['host gpu-b: host gpu-a published exo_node_ring_peer "[Peer]", not a mapping; run the '
                              "role on it again (its fact is the role's alone)"]


def test_the_peers_published_by_real_hosts_are_taken():
    # keys as wg genkey | wg pubkey writes them, endpoints as names and addresses
    hostvars = published()
    hostvars["gpu-a"]["ansible_facts"]["exo_node_ring_peer"].update(
        public_key="xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", endpoint="gpu-a.ring.example.net")
    ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", hostvars)
    assert ring["errors"] == [] and ring["peers"][0]["endpoint"] == "gpu-a.ring.example.net:51820"


@pytest.mark.parametrize("changes, hostvars_change, errors", [
    # before the plan, a host that published nothing is left to its own refusal
    ({}, "gone", []),
    # what those that published say is checked all the same
    ({"gpu-a": {"exo_node_ring_tunnel_address": "10.213.0.2"}}, None,
     ["host gpu-b: hosts gpu-b and gpu-a both have the tunnel address 10.213.0.2; give each its own "
      "exo_node_ring_tunnel_address"]),
])
def test_the_check_before_the_plan_leaves_out_a_host_that_published_nothing(changes, hostvars_change, errors):
    hostvars = published(changes)
    if hostvars_change == "gone":
        del hostvars["gpu-a"]
    ring = node_tunnel_ring(planned("gpu-b"), "gpu-b", hostvars, check_mode=True, partial=True)
    assert ring["errors"] == errors


def table(probed, with_tunnel):
    # a user every Debian has: nft looks the names up as it reads the table
    values, errors = check_settings(dict(NODE_SETTINGS, exo_node_address="10.213.0.2", exo_node_user="daemon"))
    mine = ok(probed["one"], exo_node_address="10.213.0.2")["instances"]
    peers = cluster.cluster("h", mine, ["h"], ["h"], {})[0]
    tunnel_ = dict(planned(), **node_tunnel_ring(planned(), "gpu-b", published())) if with_tunnel else None
    return firewall.firewall(mine, peers, values, os_family="Debian", tunnel=tunnel_), mine


@pytest.mark.parametrize("with_tunnel", [True, False])
def test_with_the_tunnel_grpc_is_accepted_only_on_its_interface_and_its_port_only_from_the_rings_hosts(probed, with_tunnel):
    made, mine = table(probed, with_tunnel)
    rules = dict((r["what"], r) for r in made["rules"])
    assert rules["gRPC"].get("interface") == ("exo-ring" if with_tunnel else None)
    assert rules["gRPC"]["from"] == "ring"
    assert ("the ring's tunnel" in rules) == with_tunnel
    if with_tunnel:
        assert rules["the ring's tunnel"] == {"protocol": "udp", "ports": [51820], "from": "hosts", "what": "the ring's tunnel"}
        sets = dict((s["name"], s["elements"]) for s in made["sets"])
        assert (sets["hosts4"], sets["hosts6"]) == (["192.0.2.11"], ["2001:db8::13"])


def render(name, **variables):
    env = node_templates()
    # Ansible's test, which the firewall's template uses to pick a rule's sets.
    env.tests["match"] = lambda value, pattern: re.match(pattern, value) is not None
    env.filters["to_json"] = json.dumps
    return env.get_template(name).render(ansible_managed="Ansible managed", **variables)


def test_the_table_renders_the_interface_and_the_tunnels_port(probed, tmp_path):
    made, mine = table(probed, True)
    text = render("firewall.nft.j2", __exo_node_firewall=made)
    grpc = mine[0]["ports"]["grpc"]
    assert '\t\tiifname "exo-ring" tcp dport { %d } ip saddr @ring4 accept\n' % grpc in text
    assert "\t\ttcp dport { %d } reject with tcp reset\n" % grpc in text
    assert "\t\tudp dport { 51820 } ip saddr @hosts4 accept\n\t\tudp dport { 51820 } ip6 saddr @hosts6 accept\n" in text
    assert "\t\tudp dport { 51820 } reject\n" in text
    # nothing for the tunnel's network leaves by another interface, and it is the ring's users' alone
    assert '\t\tip daddr 10.213.0.0/24 oifname != { "exo-ring", "lo" } reject\n' in text
    assert '\t\tip daddr 10.213.0.0/24 meta skuid != { "daemon", "root" } reject\n' in text
    assert text.index('oifname != { "exo-ring", "lo" }') < text.index("meta skuid")
    if shutil.which("nft") and os.geteuid() == 0:
        (tmp_path / "firewall.nft").write_text(text)
        proc = subprocess.run(["nft", "-c", "-f", str(tmp_path / "firewall.nft")], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        assert proc.returncode == 0 or "Operation not permitted" in proc.stdout, proc.stdout


def test_the_wg_quick_file_lists_the_peers_and_never_a_private_key():
    mine = dict(planned(), **node_tunnel_ring(planned(), "gpu-b", published()))
    text = render("ring.conf.j2", __exo_node_tunnel=mine, __exo_node_ring_dir="/etc/exo/ring")
    assert "[Interface]\nAddress = 10.213.0.2/24\nListenPort = 51820\n" in text
    # the key stays in the host's own file, set once the interface is up
    assert "PostUp = wg set %i private-key /etc/exo/ring/private.key\n" in text
    assert "PrivateKey" not in text
    assert text.count("[Peer]") == 2
    assert ("[Peer]\nPublicKey = %s\nEndpoint = [2001:db8::13]:51820\nAllowedIPs = 10.213.0.3/32\n"
            "PersistentKeepalive = 25\n" % KEYS["gpu-c"]) in text


def test_the_tunnels_unit_runs_wg_quick_on_that_file():
    text = render("gpufleet-exo-ring.service.j2", __exo_node_tunnel=planned(), __exo_node_ring_dir="/etc/exo/ring")
    assert "ExecStart=/usr/bin/wg-quick up /etc/exo/ring/exo-ring.conf\n" in text
    assert "ExecStop=/usr/bin/wg-quick down /etc/exo/ring/exo-ring.conf\n" in text
    assert "Type=oneshot\nRemainAfterExit=yes\n" in text
    assert "WantedBy=multi-user.target" in text


def test_the_packages_follow_where_wireguard_runs():
    assert tunnel.PACKAGES == {"kernel": ["wireguard-tools"], "userspace": ["wireguard-tools", "wireguard-go"]}
    assert planned()["packages"] == tunnel.PACKAGES


def test_the_examples_of_docs_node_md_are_taken_as_they_are_written():
    with open(os.path.join(os.path.dirname(tunnel.__file__), "..", "..", "..", "docs", "node.md")) as handle:
        section = handle.read().split("## The ring's tunnel\n", 1)[1].split("\n## ", 1)[0]
    opt_out, explicit = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", section, re.S)]
    assert planned(**opt_out)["enabled"] is False
    assert (planned(**explicit)["address"], planned(**explicit)["errors"]) == ("10.213.0.17", [])


def test_the_instances_still_exchange_packets_with_the_hosts_own_address():
    """exo's API listens on every address: a client on the host may use the host's own address, which is no
    longer among the ring's (tunnel) addresses."""
    item = {"name": "cpu", "limits": {"memory_max_mib": None, "tasks_max": 100, "ip_deny": True,
                                      "ip_allow": ["localhost"]}}
    text = render("instance-limits.conf.j2", item=item, exo_node_memory_percent=90, __exo_node_tunnel=planned(),
                  __exo_node_cluster={"addresses": ["10.213.0.1", "10.213.0.2", "10.213.0.3"]})
    assert "IPAddressAllow=localhost 10.213.0.1 10.213.0.2 10.213.0.3 192.0.2.12\nIPAddressDeny=any\n" in text
