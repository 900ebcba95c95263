# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API's proxy (plugins/plugin_utils/node/proxy.py): each instance's server, the tokens as nginx's
map matches them, TLS, the CORS origins, the routes refused, and the settings it refuses, by name and
without showing a token. nginx serves what it decides in tests/integration/roles/test_node_proxy.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_proxy
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import proxy
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS, REPO, checked, plan_node, plan_node_ok as ok, plan_node_refused as refused

TOKEN = "3f9a0c6e1b7d4a25e8c0f1a2b3c4d5e6"
ON = {"exo_node_api_proxy": True, "exo_node_api_proxy_tokens": [TOKEN]}


def front(instances, **given):
    arguments = dict(base=52515, tokens=[TOKEN], address="10.0.0.1")
    arguments.update(given)
    return proxy.proxy(instances, **arguments)


def test_each_instance_gets_its_own_port_in_front_of_its_api_on_loopback(probed):
    instances = ok(probed["four"], **ON)["instances"]
    servers = front(instances)["servers"]
    assert [(s["instance"], s["port"], s["listen"], s["upstream"]) for s in servers] == [
        (i["name"], 52515 + i["slot"], "%d" % (52515 + i["slot"]), "http://127.0.0.1:%d" % i["ports"]["api"])
        for i in instances]
    assert len(set(s["port"] for s in servers)) == len(instances) == 4


@pytest.mark.parametrize("address, listen", [
    ("10.0.0.1", "52515"),
    ("2001:db8::5", "[::]:52515 ipv6only=off"),
])
def test_it_listens_on_every_address_of_the_family_of_the_hosts_address(probed, address, listen):
    instances = ok(probed["one"], exo_node_address=address, **ON)["instances"]
    assert front(instances, address=address)["servers"][0]["listen"] == listen


@pytest.mark.parametrize("tokens, keys", [
    ([TOKEN], ["~^Bearer %s$" % TOKEN]),
    # '.' and '+' mean something in nginx's regular expressions; each token once
    (["Tk.9+a/b~c_d-e012345==", "Tk.9+a/b~c_d-e012345=="], [r"~^Bearer Tk\.9\+a/b~c_d-e012345==$"]),
])
def test_each_token_is_one_key_of_nginxs_map(tokens, keys):
    assert front([], tokens=tokens)["token_keys"] == keys


@pytest.mark.parametrize("header, matches", [
    ("Bearer Tk.9+a/b~c_d-e012345==", True),
    # what the token would match with '.' and '+' as nginx's regular expressions read them unescaped
    ("Bearer Tkx9a/b~c_d-e012345==", False),
    ("Bearer Tk.99a/b~c_d-e012345==", False),
    # another case, scheme or anything more
    ("Bearer tK.9+A/B~C_D-E012345==", False),
    ("Basic Tk.9+a/b~c_d-e012345==", False),
    ("Bearer Tk.9+a/b~c_d-e012345== ", False),
])
def test_a_key_matches_its_token_exactly(header, matches):
    # nginx's PCRE and Python's re agree on these patterns: anchors, escaped '.' and '+', literals.
    key = front([], tokens=["Tk.9+a/b~c_d-e012345=="])["token_keys"][0]
    assert bool(re.match(key[1:], header)) == matches


@pytest.mark.parametrize("certificate, key, tls", [
    ("", "", False),
    ("/etc/ssl/exo.crt", "/etc/ssl/private/exo.key", True),
])
def test_tls_where_a_certificate_and_its_key_are_given(certificate, key, tls):
    answer = front([], certificate=certificate, key=key)
    assert (answer["tls"], answer["certificate"], answer["key"]) == (tls, certificate, key)


@pytest.mark.parametrize("origins, named", [
    ([], []),
    (["https://b.example.net", "http://192.0.2.10:8080", "https://b.example.net"],
     ["http://192.0.2.10:8080", "https://b.example.net"]),
])
def test_cors_only_for_the_origins_named(origins, named):
    assert front([], origins=origins)["cors_origins"] == named


def test_exos_administrative_routes_are_refused_and_its_completions_stream():
    answer = front([])
    assert [r["location"] for r in answer["refused"]] == ["= /quit", "= /download", "/download/", "/models/",
                                                          "= /create_animation"]
    assert all(r["why"] for r in answer["refused"])
    assert answer["streamed"] == ["/v1/chat/completions", "/chat/completions"]
    # exo's own response timeout (--chatgpt-api-response-timeout) and body limit
    assert (answer["read_timeout"], answer["body_limit"]) == (900, "100m")


def test_off_by_default_and_then_nothing_is_asked_of_its_settings(probed):
    assert ok(probed["one"])["errors"] == []
    assert ok(probed["one"], exo_node_api_proxy_tokens=[])["errors"] == []


@pytest.mark.parametrize("changes, message", [
    ({"exo_node_api_proxy_tokens": []}, "exo_node_api_proxy is true but exo_node_api_proxy_tokens is empty"),
    ({"exo_node_api_proxy_tokens": [TOKEN, ""]}, "exo_node_api_proxy_tokens entry 2 is empty"),
    ({"exo_node_api_proxy_tokens": ["abc def 0123456789abcdef"]},
     "exo_node_api_proxy_tokens entry 1 holds whitespace, quotes or other characters"),
    ({"exo_node_api_proxy_tokens": ['"0123456789abcdef0123"']},
     "exo_node_api_proxy_tokens entry 1 holds whitespace, quotes or other characters"),
    ({"exo_node_api_proxy_tokens": ["0123456789abcdef;deny"]},
     "exo_node_api_proxy_tokens entry 1 holds whitespace, quotes or other characters"),
    ({"exo_node_api_proxy_tokens": ["0123456789"]}, "exo_node_api_proxy_tokens entry 1 is shorter than 16 characters"),
    ({"exo_node_api_proxy_tokens": [TOKEN, 1234567890123456789]}, "exo_node_api_proxy_tokens entry 2 is not a string"),
    ({"exo_node_api_proxy_tokens": TOKEN}, "exo_node_api_proxy_tokens is not a list"),
    ({"exo_node_firewall": False}, "exo_node_api_proxy is true but exo_node_firewall is false"),
    ({"exo_node_api_proxy_tls_certificate": "/etc/ssl/exo.crt"},
     'exo_node_api_proxy_tls_certificate is "/etc/ssl/exo.crt" and exo_node_api_proxy_tls_key is ""; give both'),
    ({"exo_node_api_proxy_tls_certificate": "/etc/ssl/exo.crt", "exo_node_api_proxy_tls_key": "/etc/ssl/my key"},
     'exo_node_api_proxy_tls_key is "/etc/ssl/my key"; give an absolute path on the host without whitespace'),
    ({"exo_node_api_proxy_tls_certificate": "exo.crt", "exo_node_api_proxy_tls_key": "/etc/ssl/private/exo.key"},
     'exo_node_api_proxy_tls_certificate is "exo.crt"; give an absolute path'),
    ({"exo_node_api_proxy_cors_origins": ["*"]}, 'exo_node_api_proxy_cors_origins entry "*" is not an origin'),
    ({"exo_node_api_proxy_cors_origins": ["https://chat.example.net/"]},
     'exo_node_api_proxy_cors_origins entry "https://chat.example.net/" is not an origin'),
    ({"exo_node_api_proxy_cors_origins": ['https://a.example.net"; add_header X 1']},
     "exo_node_api_proxy_cors_origins entry"),
    ({"exo_node_api_proxy_port": 70000}, "exo_node_api_proxy_port is 70000; it must be from 1 to 65535"),
    # one origin as a string: the filter would have read it character by character
    ({"exo_node_api_proxy_cors_origins": "https://chat.example.net"},
     'exo_node_api_proxy_cors_origins is the string "https://chat.example.net"; give a list, for example '
     '-e \'{"exo_node_api_proxy_cors_origins": ["..."]}\''),
])
def test_bad_settings_are_refused_by_name_without_showing_a_token(probed, changes, message):
    given = dict(ON, **changes)
    error = refused(probed["one"], message, **given)
    tokens = given["exo_node_api_proxy_tokens"]
    assert [str(t) for t in (tokens if isinstance(tokens, list) else [tokens]) if t and str(t) in error] == []


@pytest.mark.parametrize("changes, message", [
    # the proxy of slot 0 on the API port, or the gRPC port, of slot 1
    ({"exo_node_api_proxy_port": 52416}, "tcp port 52416 is used by the API proxy port of %s and the API port of %s"),
    ({"exo_node_api_proxy_port": 50052}, "tcp port 50052 is used by the API proxy port of %s and the gRPC port of %s"),
    ({"exo_node_api_proxy_port": 65534}, "port 65537 is beyond 65535 (4 instances from the bases given); lower "
                                         "exo_node_grpc_port, exo_node_api_port, exo_node_api_proxy_port"),
])
def test_a_proxy_port_on_exos_ports_is_refused(probed, changes, message):
    first, second = [i["name"] for i in ok(probed["four"])["instances"]][:2]
    errors = plan_node(probed["four"], **dict(ON, **changes))["errors"]
    assert [e for e in errors if message.replace("%s", "{}").format(first, second) in e], errors


def test_the_proxy_ports_next_to_exos_are_taken(probed):
    assert ok(probed["four"], **ON)["errors"] == []


def test_the_example_of_docs_node_md_is_taken_as_it_is_written(probed):
    with open(os.path.join(REPO, "docs", "node.md")) as handle:
        section = handle.read().split("## An authenticated front for the API\n", 1)[1]
    given = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    # The tokens come from Ansible Vault, which Ansible fills in before the role reads them.
    assert given["exo_node_api_proxy_tokens"] == "{{ vault_exo_api_tokens }}"
    given["exo_node_api_proxy_tokens"] = [TOKEN]
    plan = ok(probed["two"], **given)
    # As the role hands them over: the settings its preflight checked, which the filter reads.
    answer = node_proxy(plan["instances"], checked(dict(NODE_SETTINGS, **given)))
    assert answer["tls"] and answer["cors_origins"] == ["https://chat.example.net"]
    assert [s["port"] for s in answer["servers"]] == [52515, 52516]


@pytest.mark.parametrize("changes, expected", [
    # A port as -e gives it, a string, which the filter reads as the role checked it.
    ({"exo_node_api_proxy_port": "52600", "exo_node_api_proxy_cors_origins": ["https://chat.example.net"]},
     {"port": 52600, "listen": "52600", "cors_origins": ["https://chat.example.net"], "tls": False}),
    ({"exo_node_address": "2001:db8::5", "exo_node_api_proxy_tls_certificate": "/etc/ssl/exo.pem",
      "exo_node_api_proxy_tls_key": "/etc/ssl/exo.key"},
     {"port": 52515, "listen": "[::]:52515 ipv6only=off", "cors_origins": [], "tls": True}),
])
def test_the_filter_reads_the_checked_settings(probed, changes, expected):
    instances = ok(probed["one"], **ON)["instances"]
    site = node_proxy(instances, checked(dict(NODE_SETTINGS, **dict(ON, **changes))))
    found = {"port": site["servers"][0]["port"], "listen": site["servers"][0]["listen"],
             "cors_origins": site["cors_origins"], "tls": site["tls"]}
    assert found == expected and site["token_keys"] == [proxy.token_key(TOKEN)]


def test_the_settings_the_role_refuses_never_reach_the_filter_and_no_refusal_shows_a_token(probed):
    instances = ok(probed["one"], **ON)["instances"]
    given = dict(NODE_SETTINGS, exo_node_api_proxy=True, exo_node_api_proxy_tokens=["s3cr3t"])
    # The preflight's check refuses them, naming the variable and not its value.
    dummy, errors = check_settings(given)
    assert errors and errors[0].startswith("exo_node_api_proxy_tokens") and not [e for e in errors if "s3cr3t" in e]
    # The filter takes none but checked settings.
    with pytest.raises(AnsibleFilterError, match="^node_proxy takes the node role's settings as its preflight checked") as raised:
        node_proxy(instances, given)
    assert "s3cr3t" not in str(raised.value)
