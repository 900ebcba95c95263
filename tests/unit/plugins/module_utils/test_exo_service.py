# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_service does on the host (plugins/module_utils/_exo_service.py): the service's
files in a directory of the test's own, systemctl as a runner that answers as it does and records each
command. The role's use of it runs in the molecule scenarios (the watcher, the firewall, removed instances)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_service as service
from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import read
from tests.unit.plugins.module_utils.test_root_files import writers

UNIT = "[Service]\nExecStart=/bin/true\n"
CODE = "print('watching')\n"


class Systemctl:
    """systemctl as it answers: each unit enabled and active or not (unknown units: neither); fails: verbs that fail."""

    def __init__(self, enabled=(), active=(), said=None, fails=()):
        self.enabled, self.active, self.said, self.fails = set(enabled), set(active), said or {}, fails
        self.calls = []

    def __call__(self, argv):
        verb, unit = argv[1], (argv[2:] or [None])[0]
        self.calls.append([verb] + ([unit] if unit else []))
        if verb == "is-enabled":
            return (0, self.said.get(unit, "enabled") + "\n", "") if unit in self.enabled else (1, "disabled\n", "")
        if verb == "is-active":
            return (0, "active\n", "") if unit in self.active else (3, "inactive\n", "")
        return (1, "", "Job failed") if verb in self.fails else (0, "", "")

    def changes(self):
        return [" ".join(call) for call in self.calls if call[0] not in ("is-enabled", "is-active", "reset-failed")]


def params(tmp_path, **given):
    base = {"units": ["w.service"], "unit": UNIT, "unit_dir": str(tmp_path / "system"),
            "files": {str(tmp_path / "lib" / "pkg" / "w.py"): CODE}, "directories": [str(tmp_path / "lib" / "pkg")],
            "remove": [], "private": False, "restart": False, "reload": False, "daemon_reload": False, "systemd_running": True,
            "systemctl": "systemctl"}
    os.makedirs(base["unit_dir"], exist_ok=True)
    base.update(given)
    return base


def install(given, code=CODE, unit=UNIT):
    """The service as a run before left it."""
    os.makedirs(given["directories"][0], exist_ok=True)
    for path, text in ((list(given["files"])[0], code), (os.path.join(given["unit_dir"], "w.service"), unit)):
        with open(path, "w") as handle:
            handle.write(text)


# name: (installed before: code, unit or None; systemctl's state; given; check mode;
#        systemctl's changes; changed)
ON = {"w.service"}
RUNTIME = {"w.service": "enabled-runtime"}
PRESENT = {
    "first run": (None, dict(), {}, False,
                  ["daemon-reload", "enable w.service", "start w.service"], True),
    "second run": ((CODE, UNIT), dict(enabled=ON, active=ON), {}, False, [], False),
    "new code: restarted on it": (("old\n", UNIT), dict(enabled=ON, active=ON), {}, False, ["restart w.service"], True),
    "new unit: systemd told, restarted": ((CODE, "old\n"), dict(enabled=ON, active=ON), {}, False,
                                          ["daemon-reload", "restart w.service"], True),
    "stopped by the operator: started, not restarted": (("old\n", UNIT), dict(enabled=ON), {}, False,
                                                        ["start w.service"], True),
    "unit written elsewhere: restart asked": ((CODE, UNIT), dict(enabled=ON, active=ON),
                                              dict(restart=True, daemon_reload=True), False,
                                              ["daemon-reload", "restart w.service"], True),
    "what it loads changed: reloaded": ((CODE, UNIT), dict(enabled=ON, active=ON), dict(reload=True), False,
                                        ["reload w.service"], True),
    "reload and new code: the restart loads it": (("old\n", UNIT), dict(enabled=ON, active=ON), dict(reload=True),
                                                  False, ["restart w.service"], True),
    "reload asked of a stopped unit: started": ((CODE, UNIT), dict(enabled=ON), dict(reload=True), False,
                                                ["start w.service"], True),
    "enabled for a boot only: enabled for good": ((CODE, UNIT), dict(enabled=ON, active=ON, said=RUNTIME), {}, False,
                                                  ["enable w.service"], True),
    "no systemd running: only enabled": (None, dict(), dict(systemd_running=False), False, ["enable w.service"], True),
    "no systemd running, enabled: nothing": ((CODE, UNIT), dict(enabled=ON), dict(systemd_running=False, reload=True),
                                             False, [], False),
    "check mode, first run": (None, dict(), {}, True, ["daemon-reload", "enable w.service", "start w.service"], True),
    "check mode, new code": (("old\n", UNIT), dict(enabled=ON, active=ON), {}, True, ["restart w.service"], True),
    "daemon-reload alone is no change": ((CODE, UNIT), dict(enabled=ON, active=ON), dict(daemon_reload=True), False,
                                         ["daemon-reload"], False),
}


@pytest.mark.parametrize("name", sorted(PRESENT))
def test_present_writes_and_starts_restarts_or_reloads_only_on_a_change(tmp_path, name):
    before, state, given, check_mode, changes, changed = PRESENT[name]
    given = params(tmp_path, **given)
    if before:
        install(given, *before)
    host = Systemctl(**state)
    result = service.present(given, host, writers(check_mode), check_mode)
    assert (host.changes() if not check_mode else result["systemd"]) == changes
    assert (result["systemd"], result["changed"]) == (changes, changed)
    if check_mode:
        assert host.changes() == []
    code, unit = list(given["files"])[0], os.path.join(given["unit_dir"], "w.service")
    assert read(code) == (before[0] if check_mode and before else None if check_mode else CODE)
    assert result["diff"] == {"before": before[1] if before else "", "after": UNIT, "before_header": unit,
                              "after_header": unit}
    assert read(unit) == (before[1] if check_mode and before else None if check_mode else UNIT)


def test_present_without_a_unit_file_writes_none(tmp_path):
    given = params(tmp_path, unit=None)
    result = service.present(given, Systemctl(enabled=ON, active=ON), writers(False), False)
    assert os.listdir(given["unit_dir"]) == []
    assert result["files"] == given["directories"] + list(given["files"])
    assert result["systemd"] == ["restart w.service"]


@pytest.mark.parametrize("private, modes", [(False, (0o755, 0o644)), (True, (0o700, 0o600))])
def test_private_files_and_directories_are_roots_alone(tmp_path, private, modes):
    given = params(tmp_path, private=private)
    install(given)
    os.chmod(given["directories"][0], 0o755)
    os.chmod(list(given["files"])[0], 0o644)
    result = service.present(given, Systemctl(enabled=ON, active=ON), writers(False), False)
    assert tuple(os.stat(path).st_mode & 0o777 for path in (given["directories"][0], list(given["files"])[0])) == modes
    assert os.stat(os.path.join(given["unit_dir"], "w.service")).st_mode & 0o777 != 0o600
    # Made private by this run: a change, and the unit restarted on it.
    assert result["systemd"] == (["restart w.service"] if private else [])


def test_a_failed_systemctl_says_which_command_and_why(tmp_path):
    with pytest.raises(service.ServiceFailed, match=r"systemctl start w.service failed \(rc 1\): Job failed"):
        service.present(params(tmp_path), Systemctl(fails=("start",)), writers(False), False)


TWO = ["exo@gpu0.service", "exo@gpu1.service"]
# name: (units; systemctl's state; given; check mode; systemctl's changes; reset-failed per unit)
ABSENT = {
    "running and enabled: stopped, disabled, systemd told": (
        TWO, dict(enabled=TWO, active=TWO), dict(daemon_reload=True), False,
        ["stop exo@gpu0.service", "disable exo@gpu0.service", "stop exo@gpu1.service", "disable exo@gpu1.service",
         "daemon-reload"], True),
    "unknown to systemd: left alone": (TWO, dict(), {}, False, [], True),
    "no systemd running: only disabled": (TWO, dict(enabled=TWO[:1]), dict(systemd_running=False, daemon_reload=True),
                                          False, ["disable exo@gpu0.service"], False),
    "no systemctl on a host without systemd: only the files": (TWO, dict(enabled=TWO),
                                                               dict(systemd_running=False, systemctl=None), False, [],
                                                               False),
    "no units: only the files": ([], dict(), {}, False, [], False),
    "check mode": (TWO, dict(enabled=TWO, active=TWO[1:]), dict(daemon_reload=True), True,
                   ["disable exo@gpu0.service", "stop exo@gpu1.service", "disable exo@gpu1.service", "daemon-reload"],
                   False),
}


@pytest.mark.parametrize("name", sorted(ABSENT))
def test_absent_stops_disables_and_removes_what_is_there(tmp_path, name):
    units, state, given, check_mode, changes, reset = ABSENT[name]
    given = params(tmp_path, units=units, **given)
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    for path in (kept, gone / "pkg"):
        path.mkdir(parents=True)
        (path / "file").write_text("x")
    given["remove"] = [str(gone), str(tmp_path / "never-there")]
    host = Systemctl(**state)
    result = service.absent(given, host, writers(check_mode)["remove"], check_mode)
    assert result["systemd"] == changes
    assert host.changes() == ([] if check_mode else changes)
    assert result["files"] == [str(gone)] and result["changed"]
    assert gone.exists() == check_mode and (kept / "file").exists()
    forgotten = [["reset-failed", unit] for unit in units] if reset else []
    assert [call for call in host.calls if call[0] == "reset-failed"] == forgotten


def test_absent_of_what_is_not_there_is_no_change(tmp_path):
    result = service.absent(params(tmp_path, remove=[str(tmp_path / "none")]), Systemctl(), writers(False)["remove"], False)
    assert (result["changed"], result["files"], result["systemd"]) == (False, [], [])
