# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVML stage: every GPU the NVIDIA driver knows, through nvidia-ml-py.

`query` runs in a child process (see _deadline.py) and returns raw values only; `shape` turns them
into the published facts in the parent, where nothing can hang.

AnsiballZ ships the collection as sources, compiled on every import: the modules only a GPU needs
(the chip table, health, busy) are imported where there is one, so that the child on a host
without NVIDIA's library returns before compiling them. Where the nvidia kernel module is loaded,
the parent imports this module and health before forking the child (probe.import_nvml_shaping).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ctypes
import glob
import importlib.util
import os
import sys

from .pci import sysfs_bus_id

MIB = 1024 * 1024
LIBRARY = "libnvidia-ml.so.1"

# NVML return codes (nvml.h), as nvidia-ml-py raises them in NVMLError.value.
NOT_SUPPORTED = 3
NOT_FOUND = 6
# The status published for an nvmlInit failure; any other code is "error".
INIT_STATUS = {
    4: "no_permission",
    9: "driver_not_loaded",
    10: "timeout",
    12: "library_not_found",
    15: "gpu_lost",
    18: "version_mismatch",
}
# The error kind recorded when a single call fails.
CALL_KIND = {
    4: "no_permission",
    10: "timeout",
    13: "function_not_found",
    15: "gpu_lost",
    16: "reset_required",
}
GPU_LOST = 15
CLOCK_SM = 1  # NVML_CLOCK_SM


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class _Session:
    """Calls NVML so that a failing call costs only the field it was for."""

    def __init__(self, pynvml):
        self.nvml = pynvml
        self.errors = []

    def call(self, where, name, *args):
        try:
            return getattr(self.nvml, name)(*args)
        except self.nvml.NVMLError as exc:
            if exc.value in (NOT_SUPPORTED, NOT_FOUND):
                return None  # a property this part does not have, not a fault
            self.errors.append({"stage": "nvml", "kind": CALL_KIND.get(exc.value, "error"),
                                "message": "%s%s: %s" % (where, name, exc), "code": exc.value})
        except UnicodeDecodeError as exc:
            # nvidia-ml-py decodes strings strictly; keep what the driver said rather than nothing.
            self.errors.append({"stage": "nvml", "kind": "decode_error",
                                "message": "%s%s: %s" % (where, name, exc)})
            return exc.object.decode("utf-8", "replace")
        except Exception as exc:  # pylint: disable=broad-except
            self.errors.append({"stage": "nvml", "kind": "error", "message": "%s%s: %s" % (where, name, exc)})
        return None


def _mig(session, where, handle):
    modes = session.call(where, "nvmlDeviceGetMigMode", handle)
    if modes is None:
        return {"supported": False, "enabled": False, "pending": False, "devices": []}
    current, pending = modes
    devices = []
    if current:
        for slot in range(session.call(where, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0):
            mig = session.call(where, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
            if mig is None:
                continue  # an empty slot
            here = "%sMIG %d " % (where, slot)
            memory = session.call(here, "nvmlDeviceGetMemoryInfo", mig)
            devices.append({
                "index": slot,
                "uuid": _text(session.call(here, "nvmlDeviceGetUUID", mig)),
                "memory_mib": memory.total // MIB if memory is not None else None,
                "gpu_instance_id": session.call(here, "nvmlDeviceGetGpuInstanceId", mig),
                "compute_instance_id": session.call(here, "nvmlDeviceGetComputeInstanceId", mig),
            })
    return {"supported": True, "enabled": bool(current), "pending": bool(pending), "devices": devices}


def _gpu(session, index):
    from . import health
    where = "GPU %d " % index
    handle = session.call(where, "nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return None
    memory = session.call(where, "nvmlDeviceGetMemoryInfo", handle)
    pci_info = session.call(where, "nvmlDeviceGetPciInfo", handle)
    capability = session.call(where, "nvmlDeviceGetCudaComputeCapability", handle)
    return {
        "index": index,
        "minor": session.call(where, "nvmlDeviceGetMinorNumber", handle),
        "uuid": _text(session.call(where, "nvmlDeviceGetUUID", handle)),
        "name": _text(session.call(where, "nvmlDeviceGetName", handle)),
        "memory_total": memory.total if memory is not None else None,
        "usage": _usage(session, where, handle, memory),
        "pci_bus_id": _text(pci_info.busId) if pci_info is not None else None,
        "compute_capability": list(capability) if capability is not None else None,
        "mig": _mig(session, where, handle),
        "numa_node": session.call(where, "nvmlDeviceGetNumaNodeId", handle),
        "cores": session.call(where, "nvmlDeviceGetNumGpuCores", handle),
        "max_sm_clock_mhz": session.call(where, "nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
        "health": health.query(session, where, handle),
    }


def _usage(session, where, handle, memory):
    """Memory in use and the compute processes holding it: what tells a busy GPU from an unusable one.

    The process list may fail on its own (older drivers lack the call): processes is then None.
    """
    # The versioned name: the plain one turns an old driver's FunctionNotFound into another class.
    name = "nvmlDeviceGetComputeRunningProcesses"
    processes = session.call(where, name + "_v3" if hasattr(session.nvml, name + "_v3") else name, handle)
    return {
        "used": memory.used if memory is not None else None,
        "free": memory.free if memory is not None else None,
        "processes": None if processes is None else [
            {"pid": p.pid, "used_memory": getattr(p, "usedGpuMemory", None)} for p in processes],
    }


def _library_version(spec):
    """nvidia-ml-py's version, from the dist-info beside the module it imports.

    importlib.metadata scans every distribution on the path, which costs tens of milliseconds
    in a large environment; the dist-info sits next to pynvml.py.
    """
    site = os.path.dirname(spec.origin or "")
    for pattern in ("nvidia_ml_py-*.dist-info", "pynvml-*.dist-info"):
        found = glob.glob(os.path.join(site, pattern))
        if found:
            return os.path.basename(found[0])[:-len(".dist-info")].split("-", 1)[1]
    return None


def query():
    """Runs in the child: raw NVML facts, or the status that stopped them."""
    result = {"library_version": None, "driver_version": None, "cuda_driver_version": None,
              "gpus": [], "errors": []}
    spec = importlib.util.find_spec("pynvml")
    if spec is None:
        result.update(status="not_installed",
                      message="nvidia-ml-py is not installed for %s; pip install nvidia-ml-py" % sys.executable)
        return result
    result["library_version"] = _library_version(spec)
    try:
        # nvidia-ml-py loads the library by this name too; looking first spares importing it
        # (a tenth of a second) on the many hosts that have no NVIDIA driver.
        ctypes.CDLL(LIBRARY)
    except OSError as exc:
        result.update(status="library_not_found", message="%s cannot be loaded: %s" % (LIBRARY, exc))
        return result
    try:
        import pynvml
    except ImportError as exc:
        result.update(status="not_installed", message="nvidia-ml-py cannot be imported for %s (%s); "
                                                      "pip install nvidia-ml-py" % (sys.executable, exc))
        return result
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        result.update(status=INIT_STATUS.get(exc.value, "error"), message=str(exc))
        return result
    session = _Session(pynvml)
    result["driver_version"] = _text(session.call("", "nvmlSystemGetDriverVersion"))
    cuda = session.call("", "nvmlSystemGetCudaDriverVersion")
    result["cuda_driver_version"] = "%d.%d" % (cuda // 1000, cuda % 1000 // 10) if cuda else None
    count = session.call("", "nvmlDeviceGetCount")
    if count is None:
        result.update(status="error", message="nvmlDeviceGetCount failed", errors=session.errors)
        return result
    for index in range(count):
        gpu = _gpu(session, index)
        if gpu is not None:
            result["gpus"].append(gpu)
    lost = [error for error in session.errors if error.get("code") == GPU_LOST]
    result.update(status="gpu_lost" if lost else "ok", message=lost[0]["message"] if lost else None)
    result["errors"] = [dict((k, v) for k, v in error.items() if k != "code") for error in session.errors]
    try:
        pynvml.nvmlShutdown()
    except Exception:  # pylint: disable=broad-except
        pass
    return result


def _flops(raw, chip):
    from . import _chips as chips
    if chip is not None:
        return {"fp32": chip["fp32"], "fp16": chip["fp16"], "int8": chip["int8"], "source": "table"}
    major, minor = raw.get("compute_capability") or (None, None)
    estimate = chips.estimate_flops(raw.get("cores"), raw.get("max_sm_clock_mhz"), major, minor)
    if estimate is not None:
        return dict(estimate, source="estimated")
    return {"fp32": None, "fp16": None, "int8": None, "source": "unknown"}


def _usage_facts(raw):
    """memory_used_mib, memory_free_mib, processes, busy and busy_reason of a GPU's entry."""
    from . import _busy as busy

    def mib(value):
        return value // MIB if value is not None else None
    processes = raw.get("processes")
    facts = {
        "memory_used_mib": mib(raw.get("used")),
        "memory_free_mib": mib(raw.get("free")),
        "processes": None if processes is None else [
            {"pid": p["pid"], "used_memory_mib": mib(p["used_memory"])} for p in processes],
    }
    facts["busy_reason"] = busy.reason(facts)
    # Unknown without the memory figures: nothing tells busy from idle then.
    facts["busy"] = bool(facts["busy_reason"]) if raw.get("used") is not None or processes else None
    return facts


def shape(raw, pci_devices):
    """The published entry for one GPU, merged with what sysfs says about its PCI device."""
    from . import _chips as chips, health
    memory_mib = raw["memory_total"] // MIB if raw.get("memory_total") is not None else None
    chip = chips.lookup(raw["name"], memory_mib) if raw.get("name") else None
    bus_id = sysfs_bus_id(raw.get("pci_bus_id"))
    device = next((d for d in pci_devices if d["bus_id"] == bus_id), {})
    capability = raw.get("compute_capability")
    numa_node = device.get("numa_node")
    return {
        "index": raw["index"],
        "minor": raw.get("minor"),
        "uuid": raw.get("uuid"),
        "name": raw.get("name"),
        "chip": chip["chip"] if chip else None,
        "memory_mib": memory_mib,
        **_usage_facts(raw.get("usage") or {}),
        "pci_bus_id": bus_id,
        "compute_capability": "%d.%d" % tuple(capability) if capability else None,
        "architecture": chips.architecture(*capability) if capability else None,
        "mig": raw["mig"],
        "numa_node": numa_node if numa_node is not None else raw.get("numa_node"),
        "cpu_list": device.get("cpu_list"),
        "flops": _flops(raw, chip),
        "health": health.shape(raw.get("health")),
    }
