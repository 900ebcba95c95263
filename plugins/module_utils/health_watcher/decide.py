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
    # The circuit breaker (docs/health.md): the watcher never holds more than this share of a host's
    # GPUs out at once (one GPU at least). Faults on most GPUs at once are more likely a driver, a
    # power or a watcher fault than that many sick GPUs, and emptying the host's rings would not help.
    "max_out_share": 0.5,
    # Remediation, opt-in: reset a GPU whose fault asks for a reset, at most so many times an hour.
    "reset": False,
    "reset_per_gpu_per_hour": 1,
    "reset_per_host_per_hour": 2,
    # A reset that has not ended after this many seconds is given up on (nvidia-smi can hang in
    # the driver): the GPU is then reported as needing a reboot.
    "reset_timeout_s": 120,
    "nvidia_smi": "nvidia-smi",
}
HOUR_S = 3600
# What `systemctl is-active` says of a unit the operator (or a failure) stopped: left alone.
STOPPED = ("inactive", "failed")
NVML_RECOVERY_NONE = 0  # NVML_GPU_RECOVERY_ACTION_NONE
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain", 6: "bus_reset", 7: "system_reboot"}


def new_gpu(uuid, pci_bus_id=None, index=None):
    return {"uuid": uuid, "pci_bus_id": pci_bus_id, "index": index, "healthy": True, "needs": "none",
            "reason": None, "since": None, "last_fault": None, "counted": {},
            "xids": dict((c, 0) for c in xids.CLASSES), "instance": "unknown", "stopped_by_watcher": False,
            "breaker": None, "resets": [], "reset_at": None, "remedy": None}


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


def out_allowed(total, settings=None):
    """How many of a host's `total` GPUs the watcher may hold out at once: one at least."""
    share = dict(DEFAULTS, **(settings or {}))["max_out_share"]
    return max(1, int(total * share + 1e-9))


def drain(gpu, now, settings=None, out=0, total=1):
    """(gpu, actions): a healthy GPU whose faults ask for more than nothing leaves its ring, unless
    the breaker is open: `out` of the host's `total` GPUs are out already and no more may go. An
    instance the operator already stopped is left alone, and not started again later."""
    if not gpu["healthy"] or gpu["needs"] == "none":
        return gpu, []
    if out >= out_allowed(total, settings):
        held = "breaker open: %d of %d GPUs out already, the most max_out_share %s allows; %s" % (
            out, total, dict(DEFAULTS, **(settings or {}))["max_out_share"], gpu["reason"])
        return dict(gpu, breaker=held), []
    gpu = dict(gpu, breaker=None)
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
    reset = gpu.get("reset_at") is not None and gpu["reset_at"] >= (gpu["last_fault"] or 0)
    if action is None and reset:
        return True, "reset by the watcher; the driver reports no recovery action"
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
    back = dict(gpu, healthy=True, needs="none", reason="back: " + why, since=now, stopped_by_watcher=False,
                reset_at=None)
    if not gpu["stopped_by_watcher"]:
        return back, []
    return back, [{"verb": "start", "unit": unit(gpu, settings), "gpu": gpu["uuid"], "reason": back["reason"]}]


# Why a reset is done the way it is (docs/health.md, "Resetting a GPU").
NVIDIA_SMI_DOC = ("nvidia-smi(1), -r/--gpu-reset: root; no process may use the GPU; from Ampere on a GPU with NVLink "
                  "resets alone; on Ampere NVSwitch systems the fabric manager facilitates it, from Hopper on it "
                  "does not need it; before Ampere the NVLink peers reset in the same command")
PERSISTENCE_DOC = ("NVIDIA/NVSentinel#1690 and #1692, NVIDIA/gpu-operator#118: persistence mode holds the GPU and "
                   "the reset is refused 'In use by another client' until it is off")

# NVML's architectures (nvmlDeviceArchitecture_t) as the reset on an NVSwitch system needs them:
# (lowest, highest, the fabric manager must run, refused because). An unknown one is taken as
# Ampere, the case that asks most of the host without refusing.
NVML_ARCH_AMPERE = 7
NVSWITCH_RESET = (
    (0, 6, False, "before Ampere a GPU on NVSwitch resets only with all its NVLink peers: reset the host's GPUs by hand"),
    (7, 8, True, None),
    (9, 99, False, None),
)

# (step, nvidia-smi's arguments, only where persistence mode is on, why). Persistence goes back on
# whatever the reset did: the operator chose it.
RESET_STEPS = (
    ("persistence off", ("-i", "{bus}", "-pm", "0"), True, PERSISTENCE_DOC),
    ("reset", ("-r", "-i", "{bus}"), False, NVIDIA_SMI_DOC),
    ("persistence on", ("-i", "{bus}", "-pm", "1"), True, "the operator's setting, put back"),
)


def resets_within_hour(times, now):
    return [t for t in times if now - t < HOUR_S]


def fabric_refusal(platform, uuid):
    """Why the host's NVSwitch fabric refuses a reset of the GPU now, else None."""
    if not platform.get("nvswitch"):
        return None
    arch = platform.get("architectures", {}).get(uuid)
    arch = NVML_ARCH_AMPERE if arch is None else arch
    for low, high, needs_fm, refused in NVSWITCH_RESET:
        if low <= arch <= high:
            if refused:
                return refused
            if needs_fm and not platform.get("fabric_manager"):
                return "the fabric manager is not running, and an Ampere NVSwitch system resets a GPU through it"
            return None
    return None


# (refusal, holds(context)): every row must hold for the watcher to reset a GPU, in this order;
# the first that does not is the reason it is not reset. context: gpu, host (all records), now,
# settings, platform.
RESET_RULES = (
    ("resets are off (exo_node_health_reset)", lambda c: c["settings"]["reset"]),
    ("its fault does not ask for a reset", lambda c: c["gpu"]["needs"] == "reset"),
    ("the watcher does not hold it out", lambda c: not c["gpu"]["healthy"] and c["gpu"]["stopped_by_watcher"]),
    ("its instance has not stopped yet", lambda c: c["gpu"]["instance"] in STOPPED),
    ("reset already, since its last fault", lambda c: (c["gpu"]["reset_at"] or -1) < (c["gpu"]["last_fault"] or 0)),
    ("breaker open: reset_per_gpu_per_hour reached",
     lambda c: len(resets_within_hour(c["gpu"]["resets"], c["now"])) < c["settings"]["reset_per_gpu_per_hour"]),
    ("breaker open: reset_per_host_per_hour reached",
     lambda c: len(resets_within_hour([t for g in c["host"].values() for t in g.get("resets", [])], c["now"]))
     < c["settings"]["reset_per_host_per_hour"]),
    ("fabric", lambda c: fabric_refusal(c["platform"], c["gpu"]["uuid"]) is None),
)


def reset_refusal(gpu, host, now, settings=None, platform=None):
    """Why the watcher does not reset the GPU now, else None."""
    context = {"gpu": gpu, "host": host, "now": now, "settings": dict(DEFAULTS, **(settings or {})),
               "platform": platform or {}}
    for refusal, holds in RESET_RULES:
        if not holds(context):
            return fabric_refusal(context["platform"], gpu["uuid"]) if refusal == "fabric" else refusal
    return None


def reset_commands(gpu, persistence, settings=None):
    """[(step, argv)]: the nvidia-smi commands that reset the GPU, persistence handled."""
    nvidia_smi = dict(DEFAULTS, **(settings or {}))["nvidia_smi"]
    return [(name, [nvidia_smi] + [a.format(bus=gpu["pci_bus_id"]) for a in args])
            for name, args, only_persistent, dummy_why in RESET_STEPS if persistence or not only_persistent]


def remedy(gpus, now, settings=None, platform=None):
    """(gpus, actions): at most one reset a turn, of the first GPU (by UUID) all RESET_RULES let
    through. Each GPU's `remedy` says why it is not reset, for the state file and the journal."""
    gpus = dict(gpus)
    actions = []
    for uuid in sorted(gpus):
        refusal = reset_refusal(gpus[uuid], gpus, now, settings, platform)
        if refusal is None and not actions:
            actions.append({"verb": "reset", "unit": unit(gpus[uuid], settings), "gpu": uuid,
                            "reason": "%s; resetting it" % gpus[uuid]["reason"]})
            gpus[uuid] = dict(gpus[uuid], remedy="resetting")
        elif gpus[uuid]["needs"] == "reset":
            gpus[uuid] = dict(gpus[uuid], remedy="not reset: %s" % (refusal or "another GPU resets first"))
        else:
            gpus[uuid] = dict(gpus[uuid], remedy=None)
    return gpus, actions


def reset_done(gpu, now, ended, detail):
    """The record after a reset: it counts against the breaker whatever its end. A reset that
    failed or hung leaves a GPU only a reboot clears: reported, never done by the watcher."""
    gpu = dict(gpu, resets=resets_within_hour(gpu["resets"], now) + [now])
    if ended:
        return dict(gpu, reset_at=now, remedy="reset: %s" % detail)
    reason = "the reset failed (%s): needs reboot" % detail
    return dict(gpu, needs="reboot", reason=reason, remedy=reason)


def step(gpus, faults, answers, now, settings=None, platform=None):
    """(gpus, actions) after one turn of the loop: the faults taken in, the GPUs that pass the
    health gate let back, the others whose faults ask for it drained (within the breaker), then
    at most one reset. gpus: {uuid: record}; faults: [fault]; answers: {uuid: answer} for the
    drained GPUs; platform: what a reset needs to know of the host (fabric_refusal)."""
    gpus = dict(gpus)
    for fault in faults:
        if fault["gpu"] in gpus:
            gpus[fault["gpu"]] = observe(gpus[fault["gpu"]], fault, now, settings)[0]
    actions = []
    for uuid in sorted(answers):
        if uuid in gpus:
            gpus[uuid], done = gate(gpus[uuid], answers[uuid], now, settings)
            actions += done
    for uuid in sorted(gpus):
        out = sum(1 for g in gpus.values() if not g["healthy"])
        gpus[uuid], done = drain(gpus[uuid], now, settings, out, len(gpus))
        actions += done
    gpus, done = remedy(gpus, now, settings, platform)
    return gpus, actions + done
