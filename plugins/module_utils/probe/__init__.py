# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gather device_capabilities: what this host can really compute.

Safe stages (sysfs, procfs) run in this process. Risky ones (NVML, vendor libraries, tinygrad's
device selection and backend checks) run in child processes that share one deadline, all at once
except where an NVIDIA GPU is on the bus: tinygrad's stages then start once NVML has said which
GPUs are busy (_busy.py). A stage that fails costs only its own part of the facts.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys
import time

from . import (
    _amd as amd, _busy as busy, _deadline as deadline, _host as host, _nvml as nvml, _tinygrad as tinygrad_probe,
    _visible as visible, conclusions, pci)

SCHEMA_VERSION = 1


def _timed(timings, name, func, *args):
    started = time.monotonic()
    try:
        return func(*args)
    finally:
        timings[name] = round((time.monotonic() - started) * 1000.0, 1)


def _stage_error(name, outcome):
    return {"stage": name, "kind": outcome.kind, "message": outcome.message}


def _nvml_section(outcome, errors):
    if not outcome.ok:
        errors.append(_stage_error("nvml", outcome))
        status = "timeout" if outcome.kind == "timeout" else "error"
        return {"status": status, "message": outcome.message, "driver_version": None,
                "cuda_driver_version": None, "library_version": None, "gpus": []}
    raw = outcome.value
    errors.extend(raw.get("errors", []))
    section = {"status": raw["status"], "message": raw.get("message"), "gpus": raw.get("gpus", [])}
    for key in ("driver_version", "cuda_driver_version", "library_version"):
        section[key] = raw.get(key)
    return section


def _library_version(module_name):
    module = sys.modules.get(module_name)
    return getattr(module, "__version__", None) if module else None


def _check_gpu(gpus, visible_facts):
    """The GPU a GPU backend is checked on: the first idle one, visible ones first (None: none)."""
    visible_indices = [d["index"] for d in visible_facts["devices"]]
    order = sorted(gpus, key=lambda g: visible_indices.index(g["index"]) if g["index"] in visible_indices
                   else len(visible_indices) + g["index"])
    return next((gpu for gpu in order if not gpu.get("busy")), None)


def _tinygrad_stages(python, environ, tinygrad, backends, busy_gpus, gpus, visible_facts):
    """(stages, skipped, check_gpus): the tinygrad probe and a check per backend, none opening a busy GPU."""
    env = dict(environ)
    stages, skipped, check_gpus = {}, {}, {}
    if tinygrad:
        mode = "version" if busy_gpus else None
        stages["tinygrad"] = deadline.Stage(argv=tinygrad_probe.stage_argv(python, mode), env=env)
    gpu = _check_gpu(gpus, visible_facts) if visible_facts else None
    for name in backends:
        if name in conclusions.GPU_BACKENDS and gpu is None and busy_gpus:
            skipped[name] = tinygrad_probe.skipped_entry(busy_gpus[0][0], "not opened: " + busy.describe(busy_gpus))
            continue
        check_gpus[name] = None if name == "cpu" else gpu
        stages["tinygrad_" + name] = deadline.Stage(
            argv=tinygrad_probe.stage_argv(python, "check", name, check_gpus[name]), env=env)
    return stages, skipped, check_gpus


def gather(rootfs="/", timeout=10.0, tinygrad=True, tinygrad_python=None, environ=None, backends=()):
    environ = os.environ if environ is None else environ
    timings = {}
    errors = []
    started = time.monotonic()
    pci_devices = _timed(timings, "pci", pci.scan, rootfs)
    host_facts = _timed(timings, "host", host.probe, rootfs)
    nvswitches = pci.nvswitches(rootfs)

    stages = {"nvml": deadline.Stage(func=nvml.query)}
    if any(device["vendor"] == "amd" for device in pci_devices):
        stages["amd"] = deadline.Stage(func=amd.query_names)
    python = tinygrad_python or sys.executable
    # Where an NVIDIA GPU is on the bus, tinygrad waits for NVML, which says whether the GPU is
    # busy (_busy.py); elsewhere there is nothing to wait for.
    nvidia_first = any(device["vendor"] == "nvidia" for device in pci_devices)
    planned = ({}, {}, {})
    if not nvidia_first:
        planned = _tinygrad_stages(python, environ, tinygrad, backends, [], [], None)
        stages.update(planned[0])
    state_dir = deadline.STATE_DIR if os.geteuid() == 0 else None
    outcomes = deadline.run_stages(stages, timeout, state_dir)

    nvml_facts = _nvml_section(outcomes["nvml"], errors)
    if (outcomes["nvml"].ok and nvml_facts["status"] == "error" and "nvidia" not in pci.loaded_modules(rootfs)
            and any(device["vendor"] == "nvidia" for device in pci_devices)):
        # Without the kernel module some libnvidia-ml builds (in containers, for one) say only
        # "Unknown Error"; sysfs says what it is.
        nvml_facts.update(status="driver_not_loaded", message="%s; /sys/module/nvidia is absent: the nvidia kernel "
                                                              "module is not loaded" % nvml_facts["message"])
    gpus = [nvml.shape(raw, pci_devices) for raw in nvml_facts.pop("gpus")]
    visible_facts = visible.resolve(gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"))
    busy_gpus = busy.busy_gpus(gpus) if nvml_facts["status"] == "ok" else []
    if nvidia_first:
        planned = _tinygrad_stages(python, environ, tinygrad, backends, busy_gpus, gpus, visible_facts)
        outcomes.update(deadline.run_stages(planned[0], max(timeout - (time.monotonic() - started), 0.0), state_dir))
    dummy, skipped_checks, check_gpus = planned
    for name, outcome in outcomes.items():
        timings[name] = round(outcome.elapsed_ms, 1)

    names, library = {}, None
    if "amd" in outcomes:
        if outcomes["amd"].ok:
            names, library = outcomes["amd"].value["names"], outcomes["amd"].value["library"]
        else:
            errors.append(_stage_error("amd", outcomes["amd"]))
    amd_gpus = amd.gpus(pci_devices, rootfs, names, library)

    if tinygrad:
        outcome = outcomes["tinygrad"]
        tinygrad_facts = tinygrad_probe.interpret(outcome.value if outcome.ok else None)
        if not outcome.ok:
            errors.append(_stage_error("tinygrad", outcome))
            tinygrad_facts["reason"] = "tinygrad stage failed: %s" % outcome.message
        elif nvidia_first and busy_gpus and tinygrad_facts["installed"]:
            tinygrad_facts["reason"] = "not asked to open a device: " + busy.describe(busy_gpus)
    else:
        tinygrad_facts = tinygrad_probe.interpret(None)
        tinygrad_facts.update(installed=None, reason="not probed (tinygrad: false)")
    tinygrad_facts["python"] = python
    if backends:
        tinygrad_facts["backends"] = {}
        for name in backends:
            outcome = outcomes.get("tinygrad_" + name)
            if outcome is None:
                tinygrad_facts["backends"][name] = skipped_checks[name]
            elif outcome.ok:
                tinygrad_facts["backends"][name] = tinygrad_probe.check_entry(outcome.value, check_gpus[name])
            else:
                errors.append(_stage_error("tinygrad_" + name, outcome))
                tinygrad_facts["backends"][name] = tinygrad_probe.check_entry(
                    None, check_gpus[name], {"type": outcome.kind, "message": outcome.message})

    chosen, fallback_reason = conclusions.backend(pci_devices, nvml_facts, gpus, visible_facts, amd_gpus,
                                                  tinygrad_facts)
    driver_needed, driver_reason = conclusions.driver(pci_devices, nvml_facts)
    return {
        "schema_version": SCHEMA_VERSION,
        "backend": chosen,
        "fallback_reason": fallback_reason,
        "backend_reason": conclusions.busy_backend(nvml_facts, gpus, visible_facts, tinygrad_facts),
        "driver_needed": driver_needed,
        "driver_reason": driver_reason,
        "exo": conclusions.exo_capabilities(chosen, gpus, visible_facts, amd_gpus, host_facts),
        "gpus": gpus,
        "visible": visible_facts,
        "pci": pci_devices,
        "nvswitches": nvswitches,
        "nvml": nvml_facts,
        "amd": amd_gpus,
        "tinygrad": tinygrad_facts,
        "host": host_facts,
        "libraries": {
            "pynvml": nvml_facts.get("library_version"),
            "psutil": _library_version("psutil") if host.psutil is not None else None,
            "tinygrad": tinygrad_facts.get("version"),
        },
        "errors": errors,
        "timings_ms": timings,
    }
