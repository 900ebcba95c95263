# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_proxy does on the host (plugins/module_utils/_exo_proxy.py): the role's two
files in a directory of the test's own, nginx and systemctl as a runner that answers as they do and
records each command. The site as nginx really reads it is in tests/integration/roles/test_node_proxy.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_proxy as proxy
from tests.unit.plugins.module_utils.test_root_files import writers

SITE = "server { listen 52515; }\n"
TOKENS = '"~^Bearer 0123456789abcdef0$" 1;\n'


class Host:
    """systemctl and nginx as they answer: nginx enabled/active or not, nginx -t taking the site or not."""

    def __init__(self, enabled=True, active=True, site_ok=True, whole_ok=True, fails=()):
        self.state = {"is-enabled": enabled, "is-active": active}
        self.site_ok, self.whole_ok, self.fails = site_ok, whole_ok, fails
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv[1:] if argv[1] != "-t" else (["-t", "alone"] if "-c" in argv else ["-t"]))
        if argv[1] in self.state:
            return (0 if self.state[argv[1]] else 3, "", "")
        if argv[1] == "-t":
            ok = self.site_ok if "-c" in argv else self.whole_ok
            # nginx names the file it read the directive in: the site, beside the configuration alone
            where = os.path.join(os.path.dirname(argv[-1]), "site.conf")
            return (0, "", "") if ok else (1, "", "nginx: [emerg] unknown directive \"lisen\" in %s:1" % where)
        return (1, "", "failed") if argv[1] in self.fails else (0, "", "")

    def commands(self):
        return [c for c in self.calls if c[0] not in ("is-enabled", "is-active")]


def params(tmp_path, **given):
    nginx = tmp_path / "nginx"
    nginx.write_text("")
    base = {"site": SITE, "tokens": TOKENS, "site_path": str(tmp_path / "conf.d" / "gpufleet-exo.conf"),
            "tokens_path": str(tmp_path / "gpufleet-exo" / "tokens"), "nginx": str(nginx), "systemd_running": True,
            "systemctl": "systemctl"}
    os.makedirs(os.path.dirname(base["site_path"]), exist_ok=True)
    base.update(given)
    return base


# name: (what the host holds before: site text or None, nginx's state, check mode,
#        what nginx gets: nginx -t runs and systemctl's changes, the module's "nginx", changed)
PRESENT = {
    "first run": (None, dict(enabled=False, active=False), False,
                  [["-t", "alone"], ["-t"], ["enable", "nginx.service"], ["start", "nginx.service"]],
                  ["enabled", "started"], True),
    "site changed, nginx running": ("old\n", {}, False, [["-t", "alone"], ["-t"], ["reload", "nginx.service"]],
                                    ["reloaded"], True),
    "second run": (SITE, {}, False, [], [], False),
    "nginx stopped by the operator": (SITE, dict(active=False), False, [["start", "nginx.service"]], ["started"], True),
    "check mode, first run": (None, dict(enabled=False, active=False), True, [], ["enabled", "started"], True),
    "check mode, site changed": ("old\n", {}, True, [], ["reloaded"], True),
}


@pytest.mark.parametrize("name", sorted(PRESENT))
def test_present_writes_checks_and_loads_only_what_changed(tmp_path, name):
    site, state, check_mode, commands, steps, changed = PRESENT[name]
    given = params(tmp_path)
    if site is not None:
        os.makedirs(os.path.dirname(given["tokens_path"]))
        with open(given["site_path"], "w") as handle:
            handle.write(site)
        with open(given["tokens_path"], "w") as handle:
            handle.write(TOKENS)
        # As a run before left them (the writers set modes too).
        for path, mode in ((given["site_path"], 0o644), (given["tokens_path"], 0o600),
                           (os.path.dirname(given["tokens_path"]), 0o700)):
            os.chmod(path, mode)
    host = Host(**state)
    result = proxy.present(given, host, writers(check_mode), check_mode)
    assert host.commands() == commands
    assert (result["nginx"], result["changed"]) == (steps, changed)
    assert result["diff"]["after"] == SITE and result["diff"]["before"] == (site or "")
    assert proxy.read(given["site_path"]) == (site if check_mode else SITE)
    assert proxy.read(given["tokens_path"]) == (None if check_mode and site is None else TOKENS)


def test_without_systemd_nginx_is_only_enabled(tmp_path):
    host = Host(enabled=False, active=False)
    result = proxy.present(params(tmp_path, systemd_running=False), host, writers(False), False)
    assert (host.commands()[-1], result["nginx"]) == (["enable", "nginx.service"], ["enabled"])


def test_a_site_nginx_refuses_never_reaches_conf_d(tmp_path):
    given = params(tmp_path)
    host = Host(enabled=False, active=False, site_ok=False)
    with pytest.raises(proxy.ProxyRefused, match=r"nginx refuses the proxy's site, which stays out of .*conf.d: "
                                                 r"nginx: \[emerg\] unknown directive \"lisen\" in the site:1"):
        proxy.present(given, host, writers(False), False)
    assert not os.path.exists(given["site_path"])
    assert host.commands() == [["-t", "alone"]]


def test_a_whole_configuration_nginx_refuses_is_never_loaded(tmp_path):
    host = Host(site_ok=True, whole_ok=False)
    with pytest.raises(proxy.ProxyRefused, match="nginx refuses its whole configuration with the proxy's site"):
        proxy.present(params(tmp_path), host, writers(False), False)
    assert ["reload", "nginx.service"] not in host.calls


@pytest.mark.parametrize("check_mode", [False, True])
def test_without_nginx_it_refuses_before_any_file_except_in_check_mode(tmp_path, check_mode):
    given = params(tmp_path, nginx=str(tmp_path / "no-nginx"))
    if not check_mode:
        with pytest.raises(proxy.ProxyRefused, match="exo_node_api_proxy needs nginx, which is not installed .*"
                                                     "set exo_node_manage_packages: true"):
            proxy.present(given, Host(), writers(False), False)
        assert not os.path.exists(os.path.dirname(given["tokens_path"]))
        return
    host = Host()
    result = proxy.present(given, host, writers(True), True)
    assert (result["changed"], result["nginx"], host.calls) == (True, [], [])


def test_the_site_check_runs_nginx_on_the_site_alone(tmp_path):
    seen = {}

    def run(argv):
        with open(argv[-1]) as handle:
            seen["conf"] = handle.read()
        with open(seen["conf"].split("include ")[1].split(";")[0]) as handle:
            seen["site"] = handle.read()
        return (0, "", "")
    assert proxy.site_refusal("/usr/sbin/nginx", SITE, run) is None
    assert seen["conf"].startswith("events {}\nhttp { include ") and seen["site"] == SITE


# name: (the files there: site, tokens; nginx active; check mode; removed, reload commands)
ABSENT = {
    "both there, nginx running": (True, True, True, False, (True, True), [["reload", "nginx.service"]]),
    "both there, nginx stopped": (True, True, False, False, (True, True), []),
    "only the tokens left": (False, True, True, False, (False, True), [["reload", "nginx.service"]]),
    "nothing there": (False, False, True, False, (False, False), []),
    "check mode": (True, True, True, True, (True, True), []),
}


@pytest.mark.parametrize("name", sorted(ABSENT))
def test_absent_removes_the_roles_files_and_reloads_a_running_nginx(tmp_path, name):
    site, tokens, active, check_mode, removed, commands = ABSENT[name]
    given = params(tmp_path)
    other = os.path.join(os.path.dirname(given["site_path"]), "default")
    for path, there in ((given["site_path"], site), (given["tokens_path"], tokens), (other, True)):
        if there:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write("x")
    host = Host(active=active)
    result = proxy.absent(given, host, writers(check_mode)["remove"], check_mode)
    assert (result["site_changed"], result["tokens_changed"]) == removed
    assert result["changed"] == any(removed)
    assert host.commands() == commands
    assert os.path.exists(given["site_path"]) == (site and check_mode)
    assert os.path.exists(other)
