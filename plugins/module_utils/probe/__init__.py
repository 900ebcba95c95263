# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gather device_capabilities: what this host can really compute.

Safe stages (sysfs, procfs) run in this process. Risky ones (NVML, vendor libraries, the CUDA
driver's device list, tinygrad's device selection and backend checks) run in child processes that
share one deadline, all at once except where an NVIDIA GPU is on the bus: tinygrad's stages then
start once NVML has said which GPUs are busy (_busy.py). A stage that fails costs only its own part
of the facts. tinygrad's answer is kept between gatherings while nothing that decides it changes
(_cache.py).

AnsiballZ ships the package as sources, compiled on every run: the modules only some hosts need
(NVML's shaping, AMD, tinygrad) are imported where they are needed.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import os
import sys
import time

from . import _busy as busy, _deadline as deadline, _host as host, _visible as visible, conclusions, pci

SCHEMA_VERSION = 1
# Where root keeps the tinygrad stage's answers (_cache.py, imported only where the stage is asked for).
CACHE_DIRECTORY = "/run/gpufleet-exo/tinygrad"
# The tinygrad section where no stage answered: every key, no value.
TINYGRAD_UNKNOWN = {"installed": None, "version": None, "python": None, "backend": None, "reason": None,
                    "select_env": None, "visible_devices_env": None, "guards": []}


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


def _installed_version(package):
    """A package's version from the dist-info beside it, without importing it; None where it is not installed."""
    import glob
    import importlib.util
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return None
    site = os.path.dirname(os.path.dirname(spec.origin))
    found = glob.glob(os.path.join(site, "%s-*.dist-info" % package))
    return os.path.basename(found[0])[len(package) + 1:-len(".dist-info")] if found else None


def _check_gpu(gpus, visible_facts):
    """The GPU a GPU backend is checked on: the first idle one, visible ones first (None: none)."""
    visible_indices = [d["index"] for d in visible_facts["devices"]]
    order = sorted(gpus, key=lambda g: visible_indices.index(g["index"]) if g["index"] in visible_indices
                   else len(visible_indices) + g["index"])
    return next((gpu for gpu in order if not gpu.get("busy")), None)


def _tinygrad_stages(python, environ, tinygrad, backends, busy_gpus, gpus, visible_facts):
    """(stages, skipped, check_gpus): the tinygrad probe and a check per backend, none opening a busy GPU."""
    from . import _tinygrad as tinygrad_probe
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


def _tinygrad_section(tinygrad, backends, planned, outcomes, nvidia_first, busy_gpus, errors):
    """The tinygrad section from the stages' outcomes; stage failures go to ``errors``."""
    if not tinygrad and not backends:
        return dict(TINYGRAD_UNKNOWN, guards=[], reason="not probed (tinygrad: false)")
    from . import _tinygrad as tinygrad_probe
    dummy, skipped_checks, check_gpus = planned
    if tinygrad:
        outcome = outcomes["tinygrad"]
        section = tinygrad_probe.interpret(outcome.value if outcome.ok else None)
        if not outcome.ok:
            errors.append(_stage_error("tinygrad", outcome))
            section["reason"] = "tinygrad stage failed: %s" % outcome.message
        elif nvidia_first and busy_gpus and section["installed"]:
            section["reason"] = "not asked to open a device: " + busy.describe(busy_gpus)
    else:
        section = tinygrad_probe.interpret(None)
        section.update(installed=None, reason="not probed (tinygrad: false)")
    if backends:
        section["backends"] = {}
        for name in backends:
            outcome = outcomes.get("tinygrad_" + name)
            if outcome is None:
                section["backends"][name] = skipped_checks[name]
            elif outcome.ok:
                section["backends"][name] = tinygrad_probe.check_entry(outcome.value, check_gpus[name])
            else:
                errors.append(_stage_error("tinygrad_" + name, outcome))
                section["backends"][name] = tinygrad_probe.check_entry(
                    None, check_gpus[name], {"type": outcome.kind, "message": outcome.message})
    return section


def import_nvml_shaping():
    """Import what shapes NVML's answer (_nvml, health) in this process, before the NVML child is forked.

    This process needs them wherever NVML lists GPUs (an NVIDIA GPU on the bus, the nvidia kernel module
    loaded): imported (under AnsiballZ, compiled) once here, the child inherits them instead of
    compiling them again.
    """
    importlib.import_module(__name__ + "._nvml")
    importlib.import_module(__name__ + ".health")


def _nvml_query():
    # Imported in the stage's child: the parent needs _nvml only where NVML lists GPUs.
    from . import _nvml
    return _nvml.query()


def _driver_answer(outcome):
    """The CUDA driver's answer for the visible section (_visible.resolve), from the ``cuda`` stage."""
    if outcome is None:
        return None
    if not outcome.ok:
        return {"status": outcome.kind, "message": outcome.message}
    return outcome.value.get("cuda") or {"status": "error", "message": "the cuda stage gave no answer"}


class _Cache:
    """The tinygrad stage's answer between gatherings (_cache.py): where it is kept, and what decides it."""

    def __init__(self, directory, python, inputs):
        self.directory = directory if directory and os.geteuid() == 0 else None
        self.python = python
        self.inputs = inputs
        self.key = None

    def load(self, timings, pci_devices, nvml_facts=None, gpus=()):
        if self.directory is None:
            return None
        from . import _cache as cache, _tinygrad as tinygrad_probe
        started = time.monotonic()
        self.key = cache.inputs(script=tinygrad_probe.script(), python=self.python, pci_devices=pci_devices,
                                nvml_facts=nvml_facts, gpus=gpus, **self.inputs)
        entry = cache.load(self.directory, self.key)
        timings["tinygrad_cache"] = round((time.monotonic() - started) * 1000.0, 1)
        return entry

    def save(self, outcomes, names, section):
        """Keep an answer every stage of which gave one: a timeout or a crash may not happen next time."""
        if self.directory is None or not names or not all(outcomes[name].ok for name in names):
            return
        install = next((outcomes[name].value.get("install") for name in names), None)
        if install is not None:
            from . import _cache as cache
            cache.save(self.directory, self.key, install, section)


def _per_gpu_stages(gpus, environ, driver):
    """{stage: Stage}: the CUDA driver asked once per GPU and MIG device alone, where it answered at all."""
    if not driver or driver["status"] not in ("ok", "init_error"):
        return {}
    from . import _tinygrad as tinygrad_probe
    return dict(("cuda_gpu%d" % position, deadline.Stage(
        argv=tinygrad_probe.stage_argv(sys.executable, "cuda"),
        env=dict(environ, CUDA_VISIBLE_DEVICES=value, CUDA_DEVICE_ORDER=visible.PER_GPU_ORDER)))
        for position, value in enumerate(visible.per_gpu_values(gpus)))


def _per_gpu_section(gpus, driver, outcomes, errors):
    """``visible.per_gpu``: each GPU's and MIG device's environment as the driver (or, without it, the rules) reads it."""
    entries = []
    for position, value in enumerate(visible.per_gpu_values(gpus)):
        outcome = outcomes.get("cuda_gpu%d" % position)
        if outcome is not None and not outcome.ok:
            errors.append(_stage_error("cuda_gpu%d" % position, outcome))
        answer = _driver_answer(outcome) if outcome is not None else driver
        entries.append(visible.per_gpu_entry(visible.resolve(gpus, value, visible.PER_GPU_ORDER, answer)))
    return entries


def gather(rootfs="/", timeout=10.0, tinygrad=True, tinygrad_python=None, environ=None, backends=(),
           tinygrad_cache=CACHE_DIRECTORY, visible_per_gpu=False):
    """The facts. ``tinygrad_cache``: the directory of the tinygrad stage's answers (None: none kept).

    ``visible_per_gpu``: also ask which devices a process given each GPU (and MIG device) alone sees.
    """
    environ = os.environ if environ is None else environ
    timings = {}
    errors = []
    started = time.monotonic()
    pci_devices = _timed(timings, "pci", pci.scan, rootfs)
    host_facts = _timed(timings, "host", host.probe, rootfs)
    nvswitches = pci.nvswitches(rootfs)

    stages = {"nvml": deadline.Stage(func=_nvml_query)}
    amd_present = any(device["vendor"] == "amd" for device in pci_devices)
    if amd_present:
        from . import _amd as amd
        stages["amd"] = deadline.Stage(func=amd.query_names)
    python = tinygrad_python or sys.executable
    # Where an NVIDIA GPU is on the bus, tinygrad waits for NVML, which says whether the GPU is
    # busy (_busy.py); elsewhere there is nothing to wait for.
    nvidia_first = any(device["vendor"] == "nvidia" for device in pci_devices)
    if nvidia_first and pci.loaded_modules(rootfs, ("nvidia",)):
        import_nvml_shaping()
    asked = bool(tinygrad or backends)
    kept = _Cache(tinygrad_cache if asked else None, python, dict(
        rootfs=rootfs, environ=environ, backends=backends, tinygrad=tinygrad))
    planned, entry = ({}, {}, {}), None
    if nvidia_first:
        from . import _tinygrad as tinygrad_probe
        # The CUDA driver's own reading of CUDA_VISIBLE_DEVICES, asked with the module's interpreter.
        stages["cuda"] = deadline.Stage(argv=tinygrad_probe.stage_argv(sys.executable, "cuda"), env=dict(environ))
    elif asked:
        entry = kept.load(timings, pci_devices)
        if entry is None:
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
    raw_gpus = nvml_facts.pop("gpus")
    gpus = []
    if raw_gpus:
        from . import _nvml as nvml
        gpus = [nvml.shape(raw, pci_devices) for raw in raw_gpus]
    if "cuda" in outcomes and not outcomes["cuda"].ok:
        errors.append(_stage_error("cuda", outcomes["cuda"]))
    driver = _driver_answer(outcomes.get("cuda"))
    visible_facts = visible.resolve(gpus, environ.get("CUDA_VISIBLE_DEVICES"), environ.get("CUDA_DEVICE_ORDER"), driver)
    busy_gpus = busy.busy_gpus(gpus) if nvml_facts["status"] == "ok" else []
    later = _per_gpu_stages(gpus, environ, driver) if visible_per_gpu else {}
    if nvidia_first and asked:
        entry = kept.load(timings, pci_devices, nvml_facts, gpus)
        if entry is None:
            planned = _tinygrad_stages(python, environ, tinygrad, backends, busy_gpus, gpus, visible_facts)
            later.update(planned[0])
    if later:
        left = max(timeout - (time.monotonic() - started), 0.0)
        outcomes.update(deadline.run_stages(later, left, state_dir))
    if visible_per_gpu:
        visible_facts["per_gpu"] = _per_gpu_section(gpus, driver, outcomes, errors)
    for name, outcome in outcomes.items():
        timings[name] = round(outcome.elapsed_ms, 1)

    amd_gpus = []
    if amd_present:
        from . import _amd as amd
        names, library = {}, None
        if outcomes["amd"].ok:
            names, library = outcomes["amd"].value["names"], outcomes["amd"].value["library"]
        else:
            errors.append(_stage_error("amd", outcomes["amd"]))
        amd_gpus = amd.gpus(pci_devices, rootfs, names, library)

    if entry is not None:
        tinygrad_facts = entry["tinygrad"]
    else:
        tinygrad_facts = _tinygrad_section(tinygrad, backends, planned, outcomes, nvidia_first, busy_gpus, errors)
        tinygrad_facts["python"] = python
        kept.save(outcomes, list(planned[0]), tinygrad_facts)
    tinygrad_facts.update(cached=entry is not None, cached_since=None)
    if entry is not None:
        from . import _cache as cache
        tinygrad_facts["cached_since"] = cache.since_text(entry["since"])

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
            "psutil": _installed_version("psutil"),
            "tinygrad": tinygrad_facts.get("version"),
        },
        "errors": errors,
        "timings_ms": timings,
    }
