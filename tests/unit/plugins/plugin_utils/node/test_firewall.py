# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's network confinement (plugins/plugin_utils/node/firewall.py): the ring and the API's
clients as nftables sets, the ports each may reach, and the settings it refuses. The table itself is
loaded and tried from other addresses in tests/integration/roles/test_node_firewall.py and the
cluster scenario."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_firewall
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import cluster, firewall
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from ansible.errors import AnsibleFilterError
from tests.helpers import NODE_SETTINGS, plan_node_ok as ok, plan_node_refused as refused


def sets(table):
    return dict((s["name"], s["elements"]) for s in table["sets"])


def checked(**changes):
    """The role's settings as check_settings() gives them to the firewall, with changes."""
    values, errors = check_settings(dict(NODE_SETTINGS, **changes))
    assert errors == []
    return values


def table_of(instances, peers, clients, discovery, proxy_base=None, os_family="Debian", ring_ports=(), **changes):
    proxy = {"exo_node_api_proxy": True, "exo_node_api_proxy_port": proxy_base,
             "exo_node_api_proxy_tokens": ["t" * 32]} if proxy_base else {}
    settings = checked(exo_node_api_clients=clients, exo_node_discovery=discovery, **dict(proxy, **changes))
    return firewall.firewall(instances, peers, settings, os_family=os_family, ring_ports=ring_ports)


def test_the_ring_reaches_grpc_and_the_clients_the_api(probed):
    mine = ok(probed["one"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g")["instances"]
    peers, errors = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": theirs})
    assert errors == []
    table = table_of(mine, peers, ["192.0.2.0/24", "2001:db8::7"], "manual")
    assert table["table"] == "gpufleet_exo"
    assert sets(table) == {"ring4": ["10.0.0.1", "10.0.0.2"], "ring6": [],
                           "clients4": ["192.0.2.0/24"], "clients6": ["2001:db8::7"]}
    assert [(r["protocol"], r["ports"], r["from"]) for r in table["rules"]] == [
        ("tcp", [i["ports"]["grpc"] for i in mine], "ring"), ("tcp", [i["ports"]["api"] for i in mine], "clients")]


@pytest.mark.parametrize("discovery", ["manual", "udp"])
def test_with_the_proxy_the_clients_reach_its_ports_and_exos_api_only_the_host(probed, discovery):
    # UDP discovery serves one instance a host (the planner refuses more).
    mine = ok(probed["four" if discovery == "manual" else "one"], exo_node_discovery=discovery)["instances"]
    peers = cluster.cluster("h", mine, ["h"], ["h"], {})[0]
    table = table_of(mine, peers, ["192.0.2.0/24"], discovery, proxy_base=52515)
    rules = dict((r["what"], (r["protocol"], r["ports"], r["from"])) for r in table["rules"])
    assert rules["API proxy"] == ("tcp", [52515 + i["slot"] for i in mine], "clients")
    assert rules["API"] == ("tcp", [i["ports"]["api"] for i in mine], "host")
    assert rules["gRPC"] == ("tcp", [i["ports"]["grpc"] for i in mine], "ring")
    assert ("discovery" in rules) == (discovery == "udp")
    assert sets(table)["clients4"] == ["192.0.2.0/24"]
    # without the proxy, the clients reach exo's API itself
    plain = table_of(mine, peers, ["192.0.2.0/24"], discovery)
    assert [r["from"] for r in plain["rules"] if r["what"].startswith("API")] == ["clients"]


def test_udp_discovery_ports_are_the_rings_too(probed):
    mine = ok(probed["one"], exo_node_discovery="udp")["instances"]
    table = table_of(mine, cluster.cluster("h", mine, ["h"], ["h"], {})[0], [], "udp")
    assert table["rules"][-1] == {"protocol": "udp", "ports": [5678 + i["slot"] for i in mine], "from": "ring",
                                  "what": "discovery"}
    assert sets(table)["clients4"] == []


@pytest.mark.parametrize("clients, elements", [
    # an address in a network already listed, and a network given by a host address, as nftables writes them
    (["10.1.0.0/16", "10.1.2.3", "10.1.2.3/16"], ["10.1.0.0/16", "10.1.2.3"]),
    ([" 192.0.2.5 ", "192.0.2.5/32"], ["192.0.2.5"]),
])
def test_client_networks_are_written_as_nftables_reads_them(clients, elements):
    assert sets(table_of([], {}, clients, "manual"))["clients4"] == elements


@pytest.mark.parametrize("clients, message", [
    (["192.0.2.300"], 'exo_node_api_clients entry "192.0.2.300" is not an IP address or network'),
    (["gpu01.example.net"], 'exo_node_api_clients entry "gpu01.example.net" is not an IP address or network'),
    ([True], "exo_node_api_clients entry is true; give a string"),
])
def test_clients_that_are_not_addresses_are_refused_by_name(probed, clients, message):
    assert message in refused(probed["one"], exo_node_api_clients=clients)


def test_a_name_as_the_address_is_refused_with_the_firewall_and_taken_without(probed):
    assert 'exo_node_address is "gpu01.example.net", not an IP address' in refused(
        probed["one"], exo_node_address="gpu01.example.net")
    instances = ok(probed["one"], exo_node_address="gpu01.example.net", exo_node_firewall=False)["instances"]
    assert all("--node-host=gpu01.example.net" in i["args"] for i in instances)


def test_grpc_is_bound_to_the_hosts_address(probed):
    assert all("--node-host=10.0.0.1" in i["args"] for i in ok(probed["one"])["instances"])


@pytest.mark.parametrize("changes, os_family, proxy_user", [
    # root and exo's own user always; nginx's worker user only with the proxy, as the distribution names it
    ({}, "Debian", None),
    ({"exo_node_user": "llm"}, "RedHat", None),
    ({"proxy_base": 52515}, "Debian", "www-data"),
    ({"proxy_base": 52515}, "RedHat", "nginx"),
    ({"proxy_base": 52515}, "Archlinux", "nginx"),
])
def test_only_root_and_exo_open_the_rings_ports_and_the_proxy_this_hosts_api(probed, changes, os_family, proxy_user):
    mine = ok(probed["four"])["instances"]
    theirs = ok(probed["two"], exo_node_address="10.0.0.2", exo_node_id_prefix="g", exo_node_api_port=53000)["instances"]
    peers = cluster.cluster("h", mine, ["h", "g"], ["h", "g"], {"g": theirs})[0]
    ring_ports = cluster.ring_ports({"h": mine, "g": theirs})
    table = table_of(mine, peers, [], "manual", os_family=os_family, ring_ports=ring_ports, **changes)
    users = '{ "%s", "root" }' % changes.get("exo_node_user", "exo")
    ports = ", ".join(str(p) for p in sorted(set(p for i in mine + theirs for p in i["ports"].values())))
    api = ", ".join(str(i["ports"]["api"]) for i in mine)
    # the other host's API ports are the ring's too
    assert "53000" in ports and "53001" in ports
    proxy = ['oifname "lo" tcp dport { %s } meta skuid "%s" accept' % (api, proxy_user)] if proxy_user else []
    assert [r["rule"] for r in table["output"]] == proxy + [
        "ip daddr @ring4 meta l4proto { tcp, udp } th dport { %s } meta skuid != %s reject" % (ports, users),
        'oifname "lo" meta l4proto { tcp, udp } th dport { %s } meta skuid != %s reject' % (ports, users)]


@pytest.mark.parametrize("clients, elements", [
    # -e exo_node_api_clients=... gives a string: the filter reads the checked list, not its characters
    ("192.0.2.10", ["192.0.2.10"]),
    ("192.0.2.10,198.51.100.0/24", ["192.0.2.10", "198.51.100.0/24"]),
    (["192.0.2.10"], ["192.0.2.10"]),
])
def test_the_filter_reads_the_checked_settings(probed, clients, elements):
    mine = ok(probed["one"])["instances"]
    settings = checked(exo_node_api_clients=clients)
    table = node_firewall(mine, {"peers": {}}, settings, os_family="Debian")
    assert sets(table)["clients4"] == elements


@pytest.mark.parametrize("changes, message", [
    ({"exo_node_api_clients": [["192.0.2.10"]]}, "exo_node_api_clients entry"),
    ({"exo_node_api_clients": 7}, "exo_node_api_clients"),
    ({"exo_node_user": 0}, "exo_node_user"),
])
def test_the_settings_the_role_refuses_never_reach_the_filter(probed, changes, message):
    given = dict(NODE_SETTINGS, **changes)
    dummy, errors = check_settings(given)
    assert len(errors) == 1 and errors[0].startswith(message), errors
    with pytest.raises(AnsibleFilterError, match="^node_firewall takes the node role's settings as its preflight checked"):
        node_firewall(ok(probed["one"])["instances"], {"peers": {}}, given)
