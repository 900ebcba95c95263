# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a GPU is fit to serve: what NVML says about its health, and a verdict with the reasons.

`query` runs in the NVML child (_nvml.py) and returns raw values; `shape` and `verdict` run in the
parent. A value NVML does not give (an old driver, a part without the feature) is None and no rule
judges it: `ok` means nothing known is wrong.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ctypes

VERDICTS = ("ok", "degraded", "unusable")  # in order of severity

COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
# nvmlClocksEventReason* bits (nvml.h).
CLOCK_EVENT_REASONS = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks_setting"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal_slowdown"),
    (0x040, "hw_thermal_slowdown"),
    (0x080, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
# Clocks held down by heat or by the board's protection, not by idling or a power cap under load.
SLOWDOWNS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
# NVML error kinds (nvml.CALL_KIND) that mean the GPU itself is gone until reset.
LOST_KINDS = ("gpu_lost", "reset_required")

UNCORRECTED = 1  # NVML_MEMORY_ERROR_TYPE_UNCORRECTED
VOLATILE, AGGREGATE = 0, 1  # nvmlEccCounterType_t
TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU
SUCCESS = 0


def query(session, where, handle):
    """In the NVML child: the raw health values of one GPU; each call may fail on its own."""
    call = session.call
    first_error = len(session.errors)
    ecc_mode = call(where, "nvmlDeviceGetEccMode", handle)
    remapped = call(where, "nvmlDeviceGetRemappedRows", handle)
    raw = {
        "ecc_mode": list(ecc_mode) if ecc_mode is not None else None,
        # Counters exist only where ECC does; asking a consumer part costs calls for nothing.
        "ecc_uncorrected_volatile": call(where, "nvmlDeviceGetTotalEccErrors", handle, UNCORRECTED, VOLATILE)
        if ecc_mode is not None else None,
        "ecc_uncorrected_aggregate": call(where, "nvmlDeviceGetTotalEccErrors", handle, UNCORRECTED, AGGREGATE)
        if ecc_mode is not None else None,
        "remapped_rows": list(remapped) if remapped is not None else None,
        # Page retirement is what parts before Ampere do instead of row remapping.
        "retired_pages_pending": call(where, "nvmlDeviceGetRetiredPagesPendingStatus", handle)
        if remapped is None and ecc_mode is not None else None,
        "persistence_mode": call(where, "nvmlDeviceGetPersistenceMode", handle),
        "compute_mode": call(where, "nvmlDeviceGetComputeMode", handle),
        "pcie": [call(where, name, handle) for name in (
            "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
            "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth")],
        "temperature_c": call(where, "nvmlDeviceGetTemperature", handle, TEMPERATURE_GPU),
        "clock_event_reasons": call(where, "nvmlDeviceGetCurrentClocksEventReasons", handle),
        "fabric": _fabric(session, where, handle),
    }
    raw["error_kinds"] = sorted(set(error["kind"] for error in session.errors[first_error:]))
    return raw


def _fabric(session, where, handle):
    """The GPU's NVLink fabric state (NVSwitch systems), or None where NVML has no such call."""
    struct = getattr(session.nvml, "c_nvmlGpuFabricInfoV_t", None)
    if struct is None:
        return None  # an nvidia-ml-py older than the call
    info = struct()
    # nvidia-ml-py hands the structure to C as given: by reference, or the library reads garbage.
    if session.call(where, "nvmlDeviceGetGpuFabricInfoV", handle, ctypes.byref(info)) is None:
        return None
    return {"state": info.state, "status": info.status, "clique_id": info.cliqueId}


def _bool(value):
    return bool(value) if value is not None else None


def shape(raw):
    """The published health of one GPU, with its verdict; raw None (no NVML health at all) is all unknown."""
    raw = raw or {}
    ecc_mode = raw.get("ecc_mode") or [None, None]
    remapped = raw.get("remapped_rows") or [None] * 4
    pcie = raw.get("pcie") or [None] * 4
    reasons = raw.get("clock_event_reasons")
    fabric = raw.get("fabric")
    facts = {
        "ecc": {"enabled": _bool(ecc_mode[0]), "enabled_after_reboot": _bool(ecc_mode[1]),
                "uncorrected_volatile": raw.get("ecc_uncorrected_volatile"),
                "uncorrected_aggregate": raw.get("ecc_uncorrected_aggregate")},
        "remapped_rows": {"correctable": remapped[0], "uncorrectable": remapped[1],
                          "pending": _bool(remapped[2]), "failed": _bool(remapped[3])},
        "retired_pages_pending": _bool(raw.get("retired_pages_pending")),
        "persistence_mode": _bool(raw.get("persistence_mode")),
        "compute_mode": COMPUTE_MODES.get(raw.get("compute_mode")),
        "pcie": {"generation": pcie[0], "max_generation": pcie[1], "width": pcie[2], "max_width": pcie[3]},
        "temperature_c": raw.get("temperature_c"),
        "clock_event_reasons": None if reasons is None else [name for bit, name in CLOCK_EVENT_REASONS if reasons & bit],
        "fabric": None if fabric is None else {
            "state": FABRIC_STATES.get(fabric["state"], "unknown"),
            "status": "success" if fabric["status"] == SUCCESS else "error %d" % fabric["status"],
            "clique_id": fabric["clique_id"]},
        "lost": bool(set(raw.get("error_kinds") or ()) & set(LOST_KINDS)),
    }
    facts["verdict"], facts["reasons"] = verdict(facts)
    return facts


def _fabric_down(h):
    fabric = h["fabric"]
    return fabric is not None and fabric["state"] != "not_supported" and (
        fabric["state"] != "completed" or fabric["status"] != "success")


def _slowdowns(h):
    return [r for r in h["clock_event_reasons"] or () if r in SLOWDOWNS]


# The verdict rules: (verdict, the test over the published health, the reason as a format of it, why).
# Each test sees only known values: a None never trips a rule.
RULES = (
    ("unusable", lambda h: h["lost"],
     "NVML reports the GPU lost or needing a reset; reset it (nvidia-smi -r) or reboot",
     "a GPU that fell off the bus or awaits a reset fails every CUDA context"),
    ("unusable", lambda h: h["remapped_rows"]["failed"],
     "row remapping failed: the memory has no spare rows left; the GPU needs service",
     "NVIDIA's memory error guidance: after a remap failure the bad rows stay in use and errors recur"),
    ("unusable", lambda h: (h["ecc"]["uncorrected_volatile"] or 0) > 0,
     "{ecc[uncorrected_volatile]} uncorrectable ECC errors since the driver loaded; reset the GPU (nvidia-smi -r)",
     "data in memory was lost; DCGM drains such a GPU until a reset retires or remaps the bad memory"),
    ("unusable", lambda h: h["compute_mode"] == "prohibited",
     "compute mode is prohibited: no CUDA context can be created; nvidia-smi -c DEFAULT",
     "exo would start and fail on its first tensor"),
    ("unusable", _fabric_down,
     "the NVLink fabric state is {fabric[state]} with status {fabric[status]}: start nvidia-fabricmanager of the driver's version",
     "on NVSwitch systems CUDA does not initialise until the fabric manager has trained the GPU's links"),
    ("degraded", lambda h: h["remapped_rows"]["pending"],
     "a row remap is pending; reset the GPU (nvidia-smi -r) to apply it",
     "until the reset the faulty row stays in use"),
    ("degraded", lambda h: h["retired_pages_pending"],
     "retired pages are pending; reload the driver or reboot to retire them",
     "until then the faulty pages may still be handed out"),
    ("degraded", lambda h: h["ecc"]["enabled"] is False,
     "ECC is off; nvidia-smi -e 1 and reboot",
     "memory errors then go unnoticed and corrupt results silently (parts without ECC answer no mode "
     "at all and are not judged)"),
    ("degraded", lambda h: None not in (h["pcie"]["width"], h["pcie"]["max_width"])
     and h["pcie"]["width"] < h["pcie"]["max_width"],
     "the PCIe link runs at x{pcie[width]} of x{pcie[max_width]}; reseat the GPU or check the slot",
     "a link trained down slows loading weights and every host transfer; the generation is not judged, "
     "since GPUs lower it themselves when idle"),
    ("degraded", lambda h: bool(_slowdowns(h)),
     "clocks held down ({slowdowns}); check cooling and power",
     "heat or power-brake slowdowns cut throughput and often precede faults; a power cap under load "
     "and idling are normal and not judged"),
    ("degraded", lambda h: h["persistence_mode"] is False,
     "persistence mode is off; enable nvidia-persistenced (the driver role does)",
     "without it the driver tears the GPU down whenever no client holds it, and each start pays for it again"),
)


def verdict(facts):
    """(verdict, reasons) for published health facts, by RULES."""
    found, reasons = "ok", []
    values = dict(facts, slowdowns=", ".join(_slowdowns(facts)))
    for level, test, reason, dummy_why in RULES:
        if test(facts):
            reasons.append(reason.format(**values))
            found = max(found, level, key=VERDICTS.index)
    return found, reasons
