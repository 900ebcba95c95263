# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions drawn from the gathered facts: the backend, whether a driver is needed, exo's view."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from . import _busy as busy

# tinygrad device name -> the backend vocabulary of docs/facts.md; names not listed map to None.
BACKENDS = {
    "CUDA": "cuda",
    "NV": "nv",
    "AMD": "amd",
    "CPU": "cpu",
    "CLANG": "cpu",
    "LLVM": "cpu",
    "METAL": None,
    "QCOM": None,
    "GPU": None,
    "CL": None,
    "HIP": None,
    "DSP": None,
    "WEBGPU": None,
    "PYTHON": None,
    "NULL": None,
}

GPU_BACKENDS = ("cuda", "nv", "amd")
# NVML states in which the NVIDIA driver is not usable because a part of it is missing.
DRIVER_MISSING = {
    "library_not_found": "the kernel driver is bound but libnvidia-ml (the user-space driver) is missing",
    "driver_not_loaded": "libnvidia-ml is installed but the nvidia kernel module is not loaded",
}


# The kernel driver of a GPU passed through to a guest: the host's driver must leave it alone.
PASSTHROUGH_DRIVER = "vfio-pci"


def nvidia_gpus(pci_devices):
    """(managed, passed_through): the NVIDIA devices on the PCI bus, those passed through to guests apart."""
    nvidia = [d for d in pci_devices if d["vendor"] == "nvidia"]
    return ([d for d in nvidia if d["driver"] != PASSTHROUGH_DRIVER],
            [d for d in nvidia if d["driver"] == PASSTHROUGH_DRIVER])


def driver(pci_devices, nvml):
    """(driver_needed, driver_reason) for the NVIDIA driver."""
    usable, passed_through = nvidia_gpus(pci_devices)
    if not usable and not passed_through:
        return False, "no NVIDIA GPU on the PCI bus"
    if not usable:
        return False, "every NVIDIA GPU is bound to vfio-pci (passed through to a guest): left alone"
    unbound = [d for d in usable if d["driver"] != "nvidia"]
    if unbound:
        return True, "NVIDIA GPU %s has driver %s, not nvidia" % (
            ", ".join(d["bus_id"] for d in unbound), "/".join(sorted(set(d["driver"] for d in unbound))))
    if nvml["status"] in DRIVER_MISSING:
        return True, DRIVER_MISSING[nvml["status"]]
    if nvml["status"] == "version_mismatch":
        return False, "driver installed but the loaded kernel module is another version: reboot pending"
    return False, "nvidia driver bound to every NVIDIA GPU"


def _gpu_reason(pci_devices, nvml, gpus, visible, amd_gpus):
    if nvml["status"] == "ok" and gpus and visible.get("cuda_init_error"):
        return visible["cuda_init_error"]["reason"]
    if any(d["vendor"] == "nvidia" for d in pci_devices) and nvml["status"] != "ok":
        return "NVML: %s (%s)" % (nvml["status"], nvml["message"])
    if any(gpu["driver"] == "amdgpu" for gpu in amd_gpus):
        return None
    if not pci_devices and not gpus:
        return "no GPU on the PCI bus"
    return "no usable NVIDIA or AMD GPU (PCI: %s; NVML: %s)" % (
        ", ".join("%s %s driver %s" % (d["bus_id"], d["vendor"], d["driver"]) for d in pci_devices) or "none",
        nvml["status"])


def busy_backend(nvml, gpus, visible, tinygrad):
    """Why the backend is cuda although tinygrad did not select a GPU: the GPU is busy. Else None.

    On a GPU whose memory other processes hold, tinygrad may get no context (it then falls to
    OpenCL or the CPU), and with any GPU busy the probe opens none (_busy.py); that says nothing
    about the GPUs, which NVML sees healthy, and the process holding one is often exo itself.
    """
    if not tinygrad.get("installed") or BACKENDS.get(tinygrad.get("backend")) in GPU_BACKENDS:
        return None
    if nvml["status"] != "ok" or visible.get("cuda_init_error") or not visible["devices"]:
        return None
    found = busy.busy_gpus(gpus)
    if not found:
        return None
    # Without a backend, tinygrad.reason says why (not asked to open a device, or its error).
    return "%s; NVML sees the visible GPUs healthy, so the backend is cuda%s" % (
        busy.describe(found), " (tinygrad %s selected %s)" % (tinygrad.get("version"), tinygrad["backend"])
        if tinygrad.get("backend") else "")


def backend(pci_devices, nvml, gpus, visible, amd_gpus, tinygrad):
    """(backend, fallback_reason): tinygrad's own choice when it was probed, else from NVML and sysfs."""
    if tinygrad.get("installed"):
        chosen = BACKENDS.get(tinygrad.get("backend"))
        if chosen == "cuda" and visible.get("cuda_init_error"):
            # tinygrad was asked about the host, without CUDA_VISIBLE_DEVICES; with it, cuInit fails.
            return "cpu", visible["cuda_init_error"]["reason"]
        if chosen in GPU_BACKENDS:
            return chosen, None
        if busy_backend(nvml, gpus, visible, tinygrad):
            return "cuda", None
        gpu_reason = _gpu_reason(pci_devices, nvml, gpus, visible, amd_gpus)
        if tinygrad.get("backend"):
            # Up to 0.13 tinygrad selects its CPU backend even without the compiler it needs.
            tinygrad_reason = "tinygrad %s selected %s%s" % (
                tinygrad.get("version"), tinygrad["backend"],
                " (%s)" % tinygrad["reason"] if tinygrad.get("reason") else "")
        else:
            tinygrad_reason = "tinygrad %s found no usable device (%s)" % (
                tinygrad.get("version"), tinygrad.get("reason"))
        return "cpu", "; ".join(r for r in (gpu_reason, tinygrad_reason) if r)
    if nvml["status"] == "ok" and visible["devices"]:
        return "cuda", None
    if any(gpu["driver"] == "amdgpu" for gpu in amd_gpus):
        return "amd", None
    return "cpu", _gpu_reason(pci_devices, nvml, gpus, visible, amd_gpus)


def _capabilities(name, chip, memory, flops):
    return {
        "model": "Linux Box (%s)" % name,
        "chip": chip,
        "memory": memory or 0,
        "flops": dict((kind, float(flops.get(kind) or 0.0)) for kind in ("fp32", "fp16", "int8")),
    }


def gpu_capabilities(gpu, memory_mib):
    """exo's DeviceCapabilities for an NVIDIA GPU (or a MIG device of it, with its own memory)."""
    return _capabilities(gpu["name"], gpu["chip"] or gpu["name"], memory_mib, gpu.get("flops") or {})


def cpu_capabilities(host):
    """exo's DeviceCapabilities for a node on the CPU."""
    return _capabilities("CPU", host["cpu_model"], host["memory_mib"], {})


def amd_capabilities(gpu):
    """exo's DeviceCapabilities for one AMD GPU (an entry of the facts' ``amd`` list): its own name, memory and flops."""
    return _capabilities(gpu["name"] or gpu["chip"], gpu["chip"] or gpu["name"], gpu["memory_mib"], gpu.get("flops") or {})


def amd_default(amd_gpus):
    """The AMD GPU tinygrad's AMD device opens when given no list: the first in KFD order (kfd_index), not
    the first on the bus; without any KFD node, the first bound to amdgpu, else the first on the bus (None: no AMD GPU)."""
    bound = [gpu for gpu in amd_gpus if gpu["driver"] == "amdgpu"]
    in_kfd = sorted((gpu for gpu in bound if gpu.get("kfd_index") is not None), key=lambda gpu: gpu["kfd_index"])
    return (in_kfd or bound or list(amd_gpus) or [None])[0]


def exo_capabilities(chosen, gpus, visible, amd_gpus, host):
    """exo's DeviceCapabilities for the device an exo node here would use.

    exo wants numbers for flops; an unknown part gets 0.0 here, and the GPU's own entry says
    flops.source: unknown.
    """
    first = visible["devices"][0] if visible["devices"] else {}
    # A device the CUDA driver lists and NVML does not know (index None) has no figures here.
    gpu = next((g for g in gpus if g["index"] == first.get("index")), None)
    if chosen in ("cuda", "nv") and gpu:
        mig = next((m for m in gpu["mig"]["devices"] if m["uuid"] == first["mig_uuid"]), None)
        return gpu_capabilities(gpu, mig["memory_mib"] if mig else gpu["memory_mib"])
    if chosen == "amd" and amd_default(amd_gpus):
        return amd_capabilities(amd_default(amd_gpus))
    return cpu_capabilities(host)
