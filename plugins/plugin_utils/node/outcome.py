# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run of the node role found: device nodes missing, exposure figures, instances to restart, an exo
run without the collection's patches.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# What systemd reads of the files node_files lists: a change to one needs a daemon reload.
UNIT_FILES = ("unit", "dropin", "limits", "firewall_unit")


def _results(registered):
    """The per-item results of a registered loop (or of a skipped one: none)."""
    return (registered or {}).get("results") or []


def _item(result):
    """The loop item of one result, whatever the loop's loop_var."""
    return result.get(result.get("ansible_loop_var") or "item") or {}


def missing_devices(devices):
    """The device nodes of plan["device_paths"] found missing ({path: exists}), sorted as the plan lists them."""
    return sorted(path for path, exists in (devices or {}).items() if not exists)


def devices_note(host, missing, modprobe):
    """What the user is told about device nodes missing (None when none are).

    modprobe: the registered result of nvidia-modprobe; what it said is quoted unless it was skipped.
    """
    if not missing:
        return None
    said = "" if not modprobe or modprobe.get("skipped") else " (nvidia-modprobe: %s)" % (
        modprobe.get("msg") or modprobe.get("stderr") or "not run")
    return ("host %s: %s missing%s; DeviceAllow= lines for them take effect only once they exist and the instance "
            "restarts" % (host, ", ".join(missing), said))


def _units(checked):
    """What the module gpufleet.exo.exo_unit_check found of each unit (none where it was skipped)."""
    return (checked or {}).get("units") or []


def exposures(security):
    """Each instance's exposure figure from exo_unit_check's security check: {name: "1.6"}."""
    return dict((u["name"], u["exposure"]) for u in _units(security) if u.get("exposure"))


def _written_files(files, written):
    """The entries of files (node_files' templates) that the registered results of gpufleet.exo.exo_files
    (written, a list of them) wrote or changed."""
    paths = set(path for result in written or [] for path in (result or {}).get("written") or [])
    return [entry for entry in files or [] if entry["dest"] in paths]


def kinds_written(files, results):
    """{what: changed} of node_files' templates (files), from what gpufleet.exo.exo_files wrote of them
    (results: its registered results), and "reload": whether systemd must read its units again."""
    changed = dict((what, False) for what in ("unit", "env", "dropin", "limits", "topology", "firewall", "firewall_unit"))
    for entry in _written_files(files, results):
        if entry["what"] in changed:
            changed[entry["what"]] = True
    changed["reload"] = any(changed[what] for what in UNIT_FILES)
    return changed


def restarts(instances, existing, changed, all_changed=False, started=None, files=None, written=None):
    """The instances to restart, in the plan's order.

    changed: the registered loops that wrote the instances' files (a list of them: the model links);
    each item names the instances its change restarts ("instances", else its own "name"). files and
    written: node_files' templates and what gpufleet.exo.exo_files wrote of them (its registered
    results), each file naming the instances its change restarts. all_changed: exo itself changed.
    An instance new in this run is started, not restarted. Besides, an instance still running with
    settings older than its files (a run that stopped before its handlers) is restarted: started is
    exo_unit_check's answer with its started check (when each instance last started, and the newest
    modification time of its files).
    """
    names = [i["name"] for i in instances]
    if all_changed:
        touched = set(names)
    else:
        # A file names the instances that read it (a model link, node_files' templates), else it is an
        # instance's own.
        touched = set(name for loop in changed or [] for r in _results(loop) if r.get("changed")
                      for name in _item(r).get("instances", [_item(r).get("name")]))
        touched.update(name for entry in _written_files(files, written) for name in entry["instances"])
    wanted = set(name for name in touched if name in existing)
    wanted.update(u["name"] for u in _units(started)
                  if u.get("started") is not None and u.get("modified") is not None and u["modified"] > u["started"])
    return [name for name in names if name in wanted]


def unpatched_note(exo):
    """The summary's line where exo runs without some of the collection's patches (exo_node_exo_unpatched let it):
    exo is gpufleet.exo.exo_venv's result, whose "patches" names them. None where it does not, or was not checked."""
    modules = [m["module"] for m in ((exo or {}).get("patches") or {}).get("modules") or [] if not m.get("matches")]
    if not modules:
        return None
    return ("exo runs without the collection's patches of %s, whose sources they do not know "
            "(exo_node_exo_unpatched: true); transformers still runs no code of a model" % ", ".join(modules))


def findings(instances, host, existing=(), devices=None, modprobe=None, units=None, changed=None,
             all_changed=False, files=None, written=None, exo=None):
    """What the configure step found, from what its tasks registered (each argument may be left out).

    units: exo_unit_check's answer; its security check gives each exposure, its started check the
    instances running on settings older than their files.

    files and written: node_files' templates and the registered results of gpufleet.exo.exo_files that
    wrote them, for "written" and "restart". The template unit's entry names every instance, so its change
    restarts every instance that ran.

    exo: gpufleet.exo.exo_venv's result, for "unpatched" (unpatched_note()).
    """
    missing = missing_devices(devices)
    return {
        "missing_devices": missing,
        # A confined exo cannot create /dev/nvidia-uvm on first use, as CUDA would otherwise do.
        "modprobe_needed": any(path.startswith("/dev/nvidia-uvm") for path in missing),
        "devices_note": devices_note(host, missing, modprobe),
        "exposure": exposures(units),
        "written": kinds_written(files, written),
        "restart": restarts(instances, existing, changed, all_changed=all_changed, started=units, files=files,
                            written=written),
        "unpatched": unpatched_note(exo),
    }
