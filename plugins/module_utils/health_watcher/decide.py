# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watcher's decisions, as pure functions over plain data: no clock, no NVML, no systemd.

A GPU's record (`new_gpu`) says whether it serves (`healthy`), what its faults ask for (`needs`:
none, drain, reset, reboot), why, and what the watcher did to its instance. `observe` takes one
fault in (merging floods), `drain` and `gate` say what to do, each returning the new record and
the actions as data ({"verb": "stop"|"start", "unit", "gpu", "reason"}) for the loop to carry out.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from . import xids

DEFAULTS = {
    # The same XID on the same GPU within this many seconds counts once: a flood of one fault
    # (hundreds of lines a second, from the journal and NVML both) is one fault.
    "flood_window_s": 60,
    # Where the driver does not report a recovery action, a drained GPU comes back when no draining
    # fault has come for this long.
    "hold_s": 300,
    # Even where the driver reports "no recovery action", a GPU stays out this long: the driver
    # updates the field after the event that made the watcher drain.
    "settle_s": 10,
    "unit": "exo@{uuid}.service",
}
# What `systemctl is-active` says of a unit the operator (or a failure) stopped: left alone.
STOPPED = ("inactive", "failed")
NVML_RECOVERY_NONE = 0  # NVML_GPU_RECOVERY_ACTION_NONE
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain", 6: "bus_reset", 7: "system_reboot"}


def new_gpu(uuid, pci_bus_id=None, index=None):
    return {"uuid": uuid, "pci_bus_id": pci_bus_id, "index": index, "healthy": True, "needs": "none",
            "reason": None, "since": None, "last_fault": None, "counted": {},
            "xids": dict((c, 0) for c in xids.CLASSES), "instance": "unknown", "stopped_by_watcher": False}


def fault_class(fault):
    """The class of a fault: an XID by the table, NVML's own events by xids.EVENT_CLASSES."""
    if fault["kind"] == "xid":
        return xids.classify(fault["xid"])["class"]
    return xids.EVENT_CLASSES[fault["kind"]]


def fault_name(fault):
    if fault["kind"] == "xid":
        return "XID %d (%s)" % (fault["xid"], xids.classify(fault["xid"])["name"])
    return {"ecc_double_bit": "a double-bit ECC error", "lost": "the GPU lost (NVML: GPU is lost)"}[fault["kind"]]


def _key(fault):
    return "xid %d" % fault["xid"] if fault["kind"] == "xid" else fault["kind"]


def observe(gpu, fault, now, settings=None):
    """(gpu, counted): the record after one fault. A repeat of a fault within the flood window is
    not counted again, but a draining repeat still restarts the hold time: the fault goes on."""
    settings = dict(DEFAULTS, **(settings or {}))
    gpu = dict(gpu, counted=dict(gpu["counted"]), xids=dict(gpu["xids"]))
    key, cls = _key(fault), fault_class(fault)
    last = gpu["counted"].get(key)
    counted = last is None or now - last >= settings["flood_window_s"]
    if counted:
        gpu["counted"][key] = now
        gpu["xids"][cls] += 1
    if cls in xids.DRAINING:
        gpu["last_fault"] = now
        needs = xids.severest([cls] + ([gpu["needs"]] if gpu["needs"] != "none" else []))
        if needs != gpu["needs"] or counted:
            gpu["reason"] = "%s from %s: needs %s" % (fault_name(fault), fault.get("source", "nvml"), needs)
        gpu["needs"] = needs
    return gpu, counted


def unit(gpu, settings=None):
    return dict(DEFAULTS, **(settings or {}))["unit"].format(uuid=gpu["uuid"])


def drain(gpu, now, settings=None):
    """(gpu, actions): a healthy GPU whose faults ask for more than nothing leaves its ring. An
    instance the operator already stopped is left alone, and not started again later."""
    if not gpu["healthy"] or gpu["needs"] == "none":
        return gpu, []
    running = gpu["instance"] not in STOPPED
    gpu = dict(gpu, healthy=False, since=now, stopped_by_watcher=running)
    if not running:
        return gpu, []
    return gpu, [{"verb": "stop", "unit": unit(gpu, settings), "gpu": gpu["uuid"], "reason": gpu["reason"]}]


def gate_verdict(gpu, answer, now, settings=None):
    """(open, why): whether a drained GPU may serve again.

    answer: what NVML says now, {"answers": bool, "verdict": the probe's health verdict or None,
    "recovery_action": NVML_FI_DEV_GET_GPU_RECOVERY_ACTION's value, or None where not reported}.
    """
    settings = dict(DEFAULTS, **(settings or {}))
    quiet = now - (gpu["last_fault"] if gpu["last_fault"] is not None else now)
    if not answer.get("answers"):
        return False, "NVML does not answer for the GPU"
    if answer.get("verdict") == "unusable":
        return False, "the probe's health verdict is unusable"
    action = answer.get("recovery_action")
    if action is not None and action != NVML_RECOVERY_NONE:
        return False, "the driver asks for recovery action %s" % RECOVERY_ACTIONS.get(action, action)
    if quiet < settings["settle_s"]:
        return False, "the last fault was %ds ago, less than settle_s %ds" % (quiet, settings["settle_s"])
    if action is None and quiet < settings["hold_s"]:
        return False, "the driver reports no recovery action; the last fault was %ds ago, less than hold_s %ds" % (
            quiet, settings["hold_s"])
    if action is None:
        return True, "no draining fault for %ds (hold_s %ds)" % (quiet, settings["hold_s"])
    return True, "the driver reports recovery action none"


def gate(gpu, answer, now, settings=None):
    """(gpu, actions): a drained GPU that passes the gate serves again; its instance starts if the
    watcher stopped it."""
    if gpu["healthy"]:
        return gpu, []
    passed, why = gate_verdict(gpu, answer, now, settings)
    if not passed:
        return gpu, []
    back = dict(gpu, healthy=True, needs="none", reason="back: " + why, since=now, stopped_by_watcher=False)
    if not gpu["stopped_by_watcher"]:
        return back, []
    return back, [{"verb": "start", "unit": unit(gpu, settings), "gpu": gpu["uuid"], "reason": back["reason"]}]


def step(gpus, faults, answers, now, settings=None):
    """(gpus, actions) after one turn of the loop: the faults taken in, then each GPU drained or
    let back. gpus: {uuid: record}; faults: [fault]; answers: {uuid: answer} for the drained GPUs."""
    gpus = dict(gpus)
    for fault in faults:
        if fault["gpu"] in gpus:
            gpus[fault["gpu"]] = observe(gpus[fault["gpu"]], fault, now, settings)[0]
    actions = []
    for uuid in sorted(gpus):
        gpus[uuid], done = drain(gpus[uuid], now, settings)
        actions += done
        if uuid in answers:
            gpus[uuid], done = gate(gpus[uuid], answers[uuid], now, settings)
            actions += done
    return gpus, actions
