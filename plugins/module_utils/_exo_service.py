# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A systemd service of the node role's on the host, as the module gpufleet.exo.exo_service sets it up
or removes it: plain functions over a runner of commands and the module's writers of files, so that
the steps and their order read in one place.

Set up: its directories and files written, its unit file too where it is given, systemd told of a
changed unit, the unit enabled and, where systemd runs, started, or restarted on a change of its own
files (a running program still has the old ones), or reloaded where only what it loads changed.
Removed: stopped where systemd runs, disabled (systemctl enables and disables without a running
systemd, on the files alone), its paths removed, systemd told, and its failed state forgotten.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import read

# What `systemctl is-enabled` answers, with rc 0, for a unit that enabling would still change (as
# ansible.builtin.systemd_service reads it).
NOT_ENABLED = ("enabled-runtime", "indirect", "alias")


class ServiceFailed(Exception):
    """A systemctl command that failed; its message is the module's."""


class _Systemctl:
    """systemctl through run: queries always, changes only outside check mode; each change noted in done."""

    def __init__(self, params, run, check_mode):
        self.path, self.run, self.check_mode, self.done = params["systemctl"], run, check_mode, []

    def query(self, verb, unit):
        rc, out, dummy = self.run([self.path, verb, unit])
        return rc == 0, out.strip()

    def enabled(self, unit):
        ok, said = self.query("is-enabled", unit)
        return ok and said not in NOT_ENABLED

    def active(self, unit):
        return self.query("is-active", unit)[0]

    def change(self, verb, unit=None):
        argv = [self.path, verb] + ([unit] if unit else [])
        self.done.append(" ".join(argv[1:]))
        if self.check_mode:
            return
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ServiceFailed("systemctl %s failed (rc %s): %s" % (" ".join(argv[1:]), rc, (err or out).strip()))


def _running_step(params, unit, systemctl, files_changed):
    """What a set-up unit needs where systemd runs: started, restarted, reloaded, or nothing."""
    if not systemctl.active(unit):
        return "start"
    if files_changed or params["restart"]:
        return "restart"
    return "reload" if params["reload"] else None


def present(params, run, files, check_mode):
    """Write the directories, files and unit file, then tell systemd, enable, and start, restart or reload.

    files: _root_files.writers' "directory" and "put", each only saying in check mode whether it would change.
    Returns {"changed", "files": the paths written, "systemd": the systemctl commands run, "diff"}.
    """
    directory_mode, file_mode = ("0700", "0600") if params["private"] else ("0755", "0644")
    written = [path for path in params["directories"]
               if files["directory"](path, directory_mode, own=params["private"])]
    written += [path for path, content in sorted(params["files"].items()) if files["put"](path, content, file_mode)]
    unit_path, before = None, None
    if params["unit"] is not None:
        unit_path = os.path.join(params["unit_dir"], params["units"][0])
        before = read(unit_path)
        if files["put"](unit_path, params["unit"], "0644"):
            written.append(unit_path)
    systemctl = _Systemctl(params, run, check_mode)
    if params["systemd_running"] and (params["daemon_reload"] or unit_path in written):
        systemctl.change("daemon-reload")
    for unit in params["units"]:
        if not systemctl.enabled(unit):
            systemctl.change("enable", unit)
        step = _running_step(params, unit, systemctl, bool(written)) if params["systemd_running"] else None
        if step:
            systemctl.change(step, unit)
    return _result(written, systemctl.done, unit_path, before, params["unit"])


def absent(params, run, remove, check_mode):
    """Stop (where systemd runs) and disable each unit, remove the paths, tell systemd, forget failures.

    remove(path) -> changed. A unit systemd does not know is left alone: it is what absent means.
    """
    systemctl = _Systemctl(params, run, check_mode)
    for unit in params["units"] if params["systemctl"] else ():
        if params["systemd_running"] and systemctl.active(unit):
            systemctl.change("stop", unit)
        if systemctl.enabled(unit):
            systemctl.change("disable", unit)
    unit_path = os.path.join(params["unit_dir"], params["units"][0]) if params["units"] else None
    before = read(unit_path) if unit_path else None
    removed = [path for path in params["remove"] if remove(path)]
    if params["systemd_running"]:
        if params["daemon_reload"]:
            systemctl.change("daemon-reload")
        # A unit that failed before it was stopped would stay listed as failed; not a change.
        for unit in params["units"] if not check_mode else ():
            run([params["systemctl"], "reset-failed", unit])
    return _result(removed, systemctl.done, unit_path, before, "" if unit_path in removed else before)


def _result(paths, done, unit_path, before, after):
    """The module's answer; daemon-reload alone is no change, as with ansible.builtin.systemd_service."""
    return {"changed": bool(paths) or any(step != "daemon-reload" for step in done), "files": paths, "systemd": done,
            "diff": {"before": before or "", "after": after or "", "before_header": unit_path or "",
                     "after_header": unit_path or ""}}
