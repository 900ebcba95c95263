# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node role's preflight (plugins/plugin_utils/node/preflight.py) through the filter
gpufleet.exo.node_preflight, asked as roles/node/tasks/preflight.yml asks it: first with the settings
and the host's facts, then (node_preflight_host) that answer with exo's Python's --version and the paths
the host showed."""

import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.filter.node_preflight import FilterModule
from tests.helpers import NODE_SETTINGS

PREFLIGHT = FilterModule().filters()["node_preflight"]
HOST = FilterModule().filters()["node_preflight_host"]
FACTS = {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "12", "device_capabilities": {}}
RELEASE = "%d.%d" % sys.version_info[:2]
# What gpufleet.exo.exo_host_inspect answers: `python --version` and which paths exist; SKIPPED, what a task
# registers where it did not run (the filter takes a registered command's result too).
VERSION = {"rc": 0, "stdout": "Python %s.0" % RELEASE, "stderr": ""}
SKIPPED = {"skipped": True, "changed": False}
SYSTEMCTL = {"/usr/bin/systemctl": False, "/bin/systemctl": True}
NO_SYSTEMCTL = dict.fromkeys(SYSTEMCTL, False)


TOKEN = "0123456789abcdef0123"
TLS = dict(exo_node_api_proxy=True, exo_node_api_proxy_tokens=[TOKEN], exo_node_api_proxy_tls_certificate="/etc/ssl/exo.crt",
           exo_node_api_proxy_tls_key="/etc/ssl/private/exo.key")


def tls_found(certificate, key):
    return dict(SYSTEMCTL, **{"/etc/ssl/exo.crt": certificate, "/etc/ssl/private/exo.key": key})


def both(raw, facts, version, found):
    """The second answer, as the role gets it: the first answer's, with what the host showed."""
    return HOST(PREFLIGHT(raw, "h", facts), "h", facts, python_version=version, found=found)


def settings(**changes):
    found = dict(NODE_SETTINGS, exo_node_python=sys.executable, exo_node_python_max_version=RELEASE)
    found.update(changes)
    return found


# name: (settings changed, facts, --version, found, the refusals' parts in order (empty: none))
SECOND = {
    "all there": ({}, FACTS, VERSION, SYSTEMCTL, []),
    "a bad setting alone, the host not looked at": (
        {"exo_node_restart_sec": "-5"}, {}, SKIPPED, {}, [["host h: exo_node_restart_sec is \"-5\""]]),
    "a platform without such a Python": (
        {"exo_node_distribution_python": True}, dict(FACTS, distribution_major_version="7", os_family="RedHat",
                                                     distribution="CentOS"),
        SKIPPED, {}, [["host h: exo_node_distribution_python is true but"]]),
    "a Python out of range": ({"exo_node_python_min_version": "99.0"}, FACTS, VERSION, SYSTEMCTL,
                              [["host h: exo's Python", "is Python %s" % RELEASE, "exo runs on Python 99.0 to"]]),
    "exo's name on PyPI": ({"exo_node_source": "index", "exo_node_index_requirement": "exo==0.0.1"}, FACTS, VERSION,
                           SYSTEMCTL, [["host h: ", "the name exo is an unrelated project"]]),
    "no systemctl": ({}, FACTS, VERSION, NO_SYSTEMCTL, [["host h: systemctl is missing"]]),
    "no facts and told never to gather them": (
        {"exo_node_refresh_facts": "never"}, dict((k, v) for k, v in FACTS.items() if k != "device_capabilities"),
        VERSION, SYSTEMCTL, [["host h: exo_node_refresh_facts is never but ansible_facts.device_capabilities"]]),
    "the proxy's TLS files there": (TLS, FACTS, VERSION, tls_found(True, True), []),
    "the proxy's certificate missing": (
        TLS, FACTS, VERSION, tls_found(False, True),
        [['host h: exo_node_api_proxy_tls_certificate is "/etc/ssl/exo.crt", which is not a file on the host; put '
          'the certificate (chain) there first, or leave']]),
    "both TLS files missing": (TLS, FACTS, VERSION, tls_found(False, False),
                               [["exo_node_api_proxy_tls_certificate is"], ["exo_node_api_proxy_tls_key is"]]),
    # plain HTTP, or no proxy at all: the files are neither looked for nor missed
    "the proxy off, its TLS files missing": (dict(TLS, exo_node_api_proxy=False), FACTS, VERSION,
                                             tls_found(False, False), []),
    "every refusal of the host, in order": (
        {"exo_node_refresh_facts": "never", "exo_node_python_min_version": "99.0"},
        dict((k, v) for k, v in FACTS.items() if k != "device_capabilities"), VERSION, NO_SYSTEMCTL,
        [["host h: exo's Python"], ["host h: systemctl is missing"], ["host h: exo_node_refresh_facts is never"]]),
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_the_second_answer_refuses_what_the_settings_and_the_host_show(name):
    changes, facts, version, found, refusals = SECOND[name]
    answer = both(settings(**changes), facts, version, found)
    assert len(answer["errors"]) == len(refusals), answer["errors"]
    for error, parts in zip(answer["errors"], refusals):
        for part in parts:
            assert part in error, error


def test_the_first_answer_says_which_python_to_ask_and_what_to_look_for():
    answer = PREFLIGHT(settings(), "h", FACTS)
    assert answer["errors"] == [] and answer["install"] is None
    assert answer["python_choice"]["python"] == sys.executable
    assert answer["paths"] == ["/usr/bin/systemctl", "/bin/systemctl"]
    assert answer["settings"]["exo_node_restart_sec"] == NODE_SETTINGS["exo_node_restart_sec"]
    assert answer["model_repos"] == []


def test_the_first_answer_names_the_models_repositories_each_once():
    answer = PREFLIGHT(settings(exo_node_models="llama-3.2-1b, llama-3.2-1b-8bit, llama-3.2-3b",
                                exo_node_model_store="/srv/exo-models"), "h", FACTS)
    assert answer["errors"] == []
    assert answer["model_repos"] == ["unsloth/Llama-3.2-1B-Instruct", "unsloth/Llama-3.2-3B-Instruct"]


def test_a_bad_setting_gives_nothing_to_ask_or_look_for():
    answer = PREFLIGHT(settings(exo_node_restart_sec="-5"), "h", FACTS)
    assert (answer["python_choice"], answer["paths"], answer["settings"], answer["model_repos"]) == (None, [], None, [])


def test_the_second_answer_plans_the_install():
    answer = both(settings(), FACTS, VERSION, SYSTEMCTL)
    assert answer["install"]["python_release"] == RELEASE
    assert answer["install"]["wheels"]["exo"].startswith("git+") and answer["install"]["wheels"]["python"] == RELEASE


@pytest.mark.parametrize("changes, paths", [
    ({}, ["/usr/bin/systemctl", "/bin/systemctl"]),
    (TLS, ["/usr/bin/systemctl", "/bin/systemctl", "/etc/ssl/exo.crt", "/etc/ssl/private/exo.key"]),
    (dict(TLS, exo_node_api_proxy=False), ["/usr/bin/systemctl", "/bin/systemctl"]),
])
def test_the_proxys_tls_files_are_looked_for_only_where_it_speaks_tls(changes, paths):
    assert PREFLIGHT(settings(**changes), "h", FACTS)["paths"] == paths


def test_a_refusal_never_shows_a_token():
    answer = both(settings(**TLS), FACTS, VERSION, tls_found(False, False))
    assert answer["errors"] and not [e for e in answer["errors"] if TOKEN in e]


def test_the_second_answer_hands_the_settings_on_and_checks_them_no_more(monkeypatch):
    first = PREFLIGHT(settings(), "h", FACTS)
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import preflight, settings as node_settings

    def refused(raw):
        raise AssertionError("checked again")
    # Wherever the second step could reach it: the module that defines it, and the preflight's own name for it.
    monkeypatch.setattr(node_settings, "check_settings", refused)
    monkeypatch.setattr(preflight, "check_settings", refused)
    answer = HOST(first, "h", FACTS, python_version=VERSION, found=SYSTEMCTL)
    assert answer["errors"] == [] and "settings" not in answer and answer["install"]["python_release"] == RELEASE


def test_the_first_answer_decides_the_rings_tunnel_and_hands_on_its_address():
    # A ring of two with the tunnel on: the instances are planned on the tunnel's address, and the tunnel
    # keeps the host's own as the endpoint the other hosts send its packets to.
    answer = PREFLIGHT(settings(exo_node_cluster_hosts=["g", "h"], exo_node_ring_tunnel=True), "h", FACTS)
    assert answer["errors"] == []
    assert (answer["tunnel"]["enabled"], answer["tunnel"]["endpoint"]) == (True, NODE_SETTINGS["exo_node_address"])
    assert answer["settings"]["exo_node_address"] == answer["tunnel"]["address"] == "10.213.0.2"
    assert answer["tunnel"]["published"]["address"] == "10.213.0.2"
    assert both(settings(exo_node_cluster_hosts=["g", "h"], exo_node_ring_tunnel=True), FACTS, VERSION,
                SYSTEMCTL)["tunnel"] == answer["tunnel"]
    # off, or a ring of one: the settings keep the host's own address
    alone = PREFLIGHT(settings(exo_node_ring_tunnel=True), "h", FACTS)
    assert not alone["tunnel"]["enabled"] and alone["settings"]["exo_node_address"] == NODE_SETTINGS["exo_node_address"]


def test_a_refused_tunnel_is_a_refusal_of_the_first_answer():
    first = PREFLIGHT(settings(exo_node_cluster_hosts=["g", "h"], exo_node_ring_tunnel=True,
                               exo_node_ring_tunnel_address="192.0.2.1"), "h", FACTS)
    assert len(first["errors"]) == 1, first["errors"]
    assert first["errors"][0].startswith('host h: exo_node_ring_tunnel_address is "192.0.2.1", not an address of')
    # it stands in the second answer, and the host's own refusals are not looked at then
    assert HOST(first, "h", FACTS, python_version=VERSION, found=NO_SYSTEMCTL)["errors"] == first["errors"]
