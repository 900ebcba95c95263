# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's nftables table as this machine's kernel enforces it, on two ring hosts made of network
namespaces: host a, whose table the filter node_firewall and its template make (as the role does, tunnel on),
and host b, its peer. Each has an address on the hosts' network and one on the ring's tunnel, a veth pair
named as the role names WireGuard's interface (the kernel's filtering is the same; WireGuard itself is
tried in the cluster scenario). Root listens on every ring port of both hosts, TCP and UDP.

On host a, a local user that is neither root nor exo's (nobody) is refused on every ring port of both
hosts, at every address; exo's user and root reach them. With the tunnel's interface gone (its unit
stopped) nothing for the tunnel's network leaves host a, even though host b answers there by its
ordinary address."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import pwd
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_cluster, node_firewall
from ansible_collections.gpufleet.exo.plugins.filter.node_tunnel import node_tunnel, node_tunnel_ring
from tests.helpers import NODE_SETTINGS, checked, node_templates, plan_node_ok as ok, recorded_facts

NEEDS = ("nft", "ip", "setpriv")
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(tool) for tool in NEEDS) or not os.path.exists("/usr/bin/python3"),
    reason="needs root, nft, ip, setpriv and /usr/bin/python3")

HOSTS = {"gf-fw-a": {"address": "192.0.2.1", "tunnel": "10.213.0.1"},
         "gf-fw-b": {"address": "192.0.2.2", "tunnel": "10.213.0.2"}}
KEYS = {"gf-fw-a": "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "gf-fw-b": "TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0="}
# exo's user: one every Debian has, as nft looks the names up when it loads the table.
EXO_USER = "daemon"
# Tries each "address:port/protocol" given and prints {target: "open" | "refused"}: TCP connects; UDP sends a
# datagram and waits for the listener's echo.
PROBE = r"""
import json, socket, sys
found = {}
for target in sys.argv[1:]:
    where, protocol = target.rsplit("/", 1)
    host, port = where.rsplit(":", 1)
    kind = socket.SOCK_STREAM if protocol == "tcp" else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as s:
        s.settimeout(1.5)
        try:
            s.connect((host, int(port)))
            if protocol == "udp":
                s.send(b"knock")
                s.recv(16)
            found[target] = "open"
        except OSError:
            found[target] = "refused"
print(json.dumps(found))
"""
# Root's listeners on a host: TCP accepts, UDP echoes.
LISTEN = r"""
import socket, sys, threading
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", port)); s.listen(64)
    while True:
        s.accept()[0].close()
def udp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", port))
    while True:
        data, peer = s.recvfrom(16); s.sendto(data, peer)
for spec in sys.argv[1:]:
    kind, port = spec.split(":")
    threading.Thread(target={"tcp": tcp, "udp": udp}[kind], args=(int(port),), daemon=True).start()
print("listening", flush=True)
threading.Event().wait()
"""


def run(*argv, **kwargs):
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=kwargs.pop("check", True), **kwargs)


def in_ns(host, *argv):
    return ["ip", "netns", "exec", host] + list(argv)


def ring():
    """Each host's instances, the cluster around host a, its tunnel and the table the role would load there."""
    settings = dict((host, checked(dict(NODE_SETTINGS, exo_node_id_prefix=host, exo_node_address=spec["address"],
                                        exo_node_cluster_hosts=sorted(HOSTS), exo_node_user=EXO_USER)))
                    for host, spec in HOSTS.items())
    tunnels = dict((host, node_tunnel(settings[host], host)) for host in HOSTS)
    instances = dict((host, ok(recorded_facts("cpu_only"), **dict(settings[host], **tunnels[host]["settings"]))["instances"]) for host in HOSTS)
    hostvars = dict((host, {"ansible_facts": {"exo_node_instances": instances[host],
                                              "exo_node_ring_peer": dict(tunnels[host]["published"], public_key=KEYS[host])}})
                    for host in HOSTS)
    host = "gf-fw-a"
    tunnel = dict(tunnels[host], **node_tunnel_ring(tunnels[host], host, hostvars))
    cluster = node_cluster(instances[host], host, sorted(HOSTS), hostvars)
    table = node_firewall(instances[host], cluster, dict(settings[host], **tunnels[host]["settings"]),
                          os_family="Debian", tunnel=tunnel)
    env = node_templates()
    env.tests["match"] = lambda value, pattern: __import__("re").match(pattern, value) is not None
    env.filters["to_json"] = json.dumps
    text = env.get_template("firewall.nft.j2").render(ansible_managed="Ansible managed", __exo_node_firewall=table)
    return instances, cluster, text


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """The two namespaces, the table loaded on host a, root listening on both; their ring ports."""
    tmp = tmp_path_factory.mktemp("firewall-kernel")
    instances, cluster, text = ring()
    (tmp / "firewall.nft").write_text(text)
    (tmp / "listen.py").write_text(LISTEN)
    names = sorted(HOSTS)
    listeners = []
    try:
        for host in names:
            run("ip", "netns", "add", host)
            run(*in_ns(host, "ip", "link", "set", "lo", "up"))
        # the hosts' network and the tunnel (both veth pairs, moved into the namespaces)
        for link, kind in (("gffw", "address"), ("exo-ring", "tunnel")):
            run("ip", "link", "add", "%s-a" % link[:8], "type", "veth", "peer", "name", "%s-b" % link[:8])
            for host, end in zip(names, "ab"):
                run("ip", "link", "set", "%s-%s" % (link[:8], end), "netns", host)
                name = "exo-ring" if kind == "tunnel" else "eth0"
                run(*in_ns(host, "ip", "link", "set", "%s-%s" % (link[:8], end), "name", name))
                prefix = 24
                run(*in_ns(host, "ip", "addr", "add", "%s/%d" % (HOSTS[host][kind], prefix), "dev", name))
                run(*in_ns(host, "ip", "link", "set", name, "up"))
        # host a's default route leads to host b: where the tunnel is gone, its network would go there in clear
        run(*in_ns("gf-fw-a", "ip", "route", "add", "default", "via", HOSTS["gf-fw-b"]["address"]))
        run(*in_ns("gf-fw-a", "nft", "-f", str(tmp / "firewall.nft")))
        # host b counts what arrives for the tunnel's network by its ordinary interface
        (tmp / "count.nft").write_text('table ip gfcount {\n chain in {\n  type filter hook input priority -10;\n'
                                       '  iifname "eth0" ip daddr 10.213.0.0/24 counter\n }\n}\n')
        run(*in_ns("gf-fw-b", "nft", "-f", str(tmp / "count.nft")))
        ports = cluster["ports"]
        specs = ["tcp:%d" % p for p in ports] + ["udp:%d" % p for p in ports]
        for host in names:
            proc = subprocess.Popen(in_ns(host, sys.executable, str(tmp / "listen.py"), *specs),
                                    stdout=subprocess.PIPE, universal_newlines=True)
            listeners.append(proc)
            assert proc.stdout.readline().strip() == "listening"
        yield {"tmp": tmp, "ports": ports, "instances": instances, "text": text}
    finally:
        for proc in listeners:
            proc.kill()
            proc.wait()
        for host in names:
            run("ip", "netns", "delete", host, check=False)


def arrived(hosts):
    """The packets for the tunnel's network that host b received on its ordinary interface (its counter)."""
    listed = json.loads(run(*in_ns("gf-fw-b", "nft", "-j", "list", "table", "ip", "gfcount")).stdout)["nftables"]
    return [item["rule"]["expr"][-1]["counter"]["packets"] for item in listed if "rule" in item][0]


def probe(hosts, user, targets):
    # The host's own Python, given the script inline: the test's files and virtualenv are root's alone.
    argv = ["setpriv", "--reuid=%s" % user, "--regid=%d" % pwd.getpwnam(user).pw_gid, "--clear-groups"] if user != "root" else []
    proc = run(*in_ns("gf-fw-a", *(argv + ["/usr/bin/python3", "-c", PROBE] + targets)))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def every_ring_port(hosts):
    """Every ring port, TCP and UDP, at every address of both hosts (host a's own by loopback too)."""
    addresses = ["127.0.0.1"] + [spec[kind] for spec in HOSTS.values() for kind in ("address", "tunnel")]
    return ["%s:%d/%s" % (a, p, protocol) for a in addresses for p in hosts["ports"] for protocol in ("tcp", "udp")]


def test_a_local_user_is_refused_on_every_ring_port_of_every_ring_host(hosts):
    targets = every_ring_port(hosts)
    assert len(hosts["ports"]) >= 3, hosts["ports"]
    found = probe(hosts, "nobody", targets)
    assert [t for t in targets if found[t] != "refused"] == [], hosts["text"]


def test_exos_user_and_root_reach_every_ring_port(hosts):
    targets = every_ring_port(hosts)
    for user in (EXO_USER, "root"):
        found = probe(hosts, user, targets)
        assert [t for t in targets if found[t] != "open"] == [], (user, found)


def test_with_the_tunnel_gone_nothing_for_its_network_leaves_in_clear(hosts):
    grpc = hosts["instances"]["gf-fw-b"][0]["ports"]["grpc"]
    target = "%s:%d/tcp" % (HOSTS["gf-fw-b"]["tunnel"], grpc)
    run(*in_ns("gf-fw-a", "ip", "link", "set", "exo-ring", "down"))
    try:
        # host a's route for the tunnel's network is gone with the interface: the default route would carry it
        route = run(*in_ns("gf-fw-a", "ip", "route", "get", HOSTS["gf-fw-b"]["tunnel"])).stdout
        assert "dev eth0" in route, route
        assert probe(hosts, "root", [target]) == {target: "refused"}
        # and host b saw no packet for the tunnel's network arrive on its ordinary interface
        assert arrived(hosts) == 0
    finally:
        run(*in_ns("gf-fw-a", "ip", "link", "set", "exo-ring", "up"))
    # the tunnel back, the ring is reached again
    assert probe(hosts, "root", [target]) == {target: "open"}
