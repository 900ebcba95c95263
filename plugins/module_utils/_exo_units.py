# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What systemd says of each exo instance's unit, as the module gpufleet.exo.exo_unit_check asks it:
plain functions over a runner of commands. The node planner (plugins/plugin_utils/node/outcome.py)
reads the answer: the exposure figures, and which instances run on settings older than their files.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

EXPOSURE = re.compile(r"Overall exposure level for \S+: ([0-9.]+)")
# ActiveEnterTimestamp with --timestamp=unix: "@seconds"; empty or "n/a" for a unit never started.
STARTED = re.compile(r"^@([0-9]+)$")


class UnitRefused(Exception):
    """A unit systemd refuses, or rates above the exposure allowed; its message is the module's."""


def unit(name):
    return "exo@%s.service" % name


def files(name, params):
    """What an instance's process was started from: the template unit, the source marker, its env file and drop-in."""
    return [os.path.join(params["unit_dir"], "exo@.service"), params["marker"],
            os.path.join(params["instances_dir"], name + ".env"),
            os.path.join(params["unit_dir"], unit(name) + ".d", "10-gpufleet.conf")]


def exposure(text):
    """The overall exposure systemd-analyze security printed, as it printed it, or None."""
    match = EXPOSURE.search(text or "")
    return match.group(1) if match else None


def verify(name, params, run):
    """systemd-analyze verify also reports problems of unrelated units: only this one's, or exo's own, count."""
    rc, out, err = run(["systemd-analyze", "verify", unit(name)])
    mine = [line for line in (err or "").splitlines() if "exo@" + name in line or params["install_dir"] in line]
    if rc != 0 and mine:
        raise UnitRefused("systemd-analyze verify %s: %s" % (unit(name), "; ".join(mine)))
    return {}


def security(name, params, run):
    """Above the threshold systemd-analyze prints the figure and fails, which refuses the unit; failing
    without a figure, it could not rate the unit at all, which is not the unit's fault."""
    threshold = int(round(params["max_exposure"] * 10))
    rc, out, err = run(["systemd-analyze", "security", "--offline=yes", "--threshold=%d" % threshold, unit(name)])
    figure = exposure(out)
    if rc != 0 and figure is not None:
        raise UnitRefused("systemd-analyze security rates %s %s, above exo_node_max_exposure %s:\n%s"
                          % (unit(name), figure, params["max_exposure"], out))
    return {"exposure": figure}


def started(name, params, run):
    """When the instance last started (seconds), and the newest modification time of its files: systemctl
    show with --timestamp=unix, since ansible.builtin.systemd_service gives the start only in the host's
    local time format, which cannot be compared with the files' times."""
    rc, out, err = run(["systemctl", "show", "--timestamp=unix", "--property=ActiveEnterTimestamp", "--value", unit(name)])
    match = STARTED.match(((out or "").splitlines() or [""])[0].strip())
    times = [int(os.stat(path).st_mtime) for path in files(name, params) if os.path.exists(path)]
    return {"started": int(match.group(1)) if match else None, "modified": max(times) if times else None}


# What each check asks, by its name in the module's option.
CHECKS = {"verify": verify, "security": security, "started": started}


def check(params, run):
    """[{"name", "unit", and what each check of params["checks"] found}] for each of params["instances"], in order;
    raises UnitRefused at the first unit refused."""
    found = []
    for name in params["instances"]:
        entry = {"name": name, "unit": unit(name)}
        for what in params["checks"]:
            entry.update(CHECKS[what](name, params, run))
        found.append(entry)
    return found
