# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD GPUs: VRAM, NUMA node, KFD node and render node from sysfs, names from amdsmi or pyamdgpuinfo
when installed.

tinygrad's AMD backend drives a GPU through its KFD topology node (`/sys/devices/virtual/kfd/kfd/
topology/nodes/N`, the nodes whose gpu_id is not 0, in node order) and the render node that node's
properties name (drm_render_minor); docs/tinygrad.md has where each version reads them. The probe
reads the same files, and opens no device: everything here is a read of sysfs under rootfs.

`query_names` loads vendor libraries and so runs in a child process with a deadline.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from . import _chips as chips, _sysfs as sysfs
from .conclusions import PASSTHROUGH_DRIVER

MIB = 1024 * 1024


def _amdsmi_names():
    import amdsmi  # pylint: disable=import-error
    amdsmi.amdsmi_init()
    try:
        names = {}
        for handle in amdsmi.amdsmi_get_processor_handles():
            bus_id = amdsmi.amdsmi_get_gpu_device_bdf(handle).lower()
            names[bus_id] = amdsmi.amdsmi_get_gpu_asic_info(handle).get("market_name")
        return names
    finally:
        amdsmi.amdsmi_shut_down()


def _pyamdgpuinfo_names():
    import pyamdgpuinfo  # pylint: disable=import-error
    names = {}
    for index in range(pyamdgpuinfo.detect_gpus()):
        gpu = pyamdgpuinfo.get_gpu(index)
        names[gpu.pci_slot.lower()] = gpu.name
    return names


# Tried in order; the first library that imports wins.
LIBRARIES = (("amdsmi", _amdsmi_names), ("pyamdgpuinfo", _pyamdgpuinfo_names))


def query_names():
    """Runs in the child: {"library": name or None, "names": {bus_id: name}}."""
    for library, reader in LIBRARIES:
        try:
            return {"library": library, "names": reader()}
        except ImportError:
            continue
    return {"library": None, "names": {}}


# What tinygrad's AMD backend reads (docs/tinygrad.md); /sys/class/kfd/kfd links to the same directory.
KFD_NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
DRM_CLASS = "/sys/class/drm"
RENDER_PREFIX = "renderD"


def _properties(directory):
    """A KFD node's properties file ("name value" lines of integers) as a dict."""
    props = {}
    for line in (sysfs.read_text(os.path.join(directory, "properties")) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            props[parts[0]] = int(parts[1])
    return props


def _location_bus_id(props):
    """The PCI address of a KFD node: location_id is the kernel's (bus << 8) | devfn; older kernels write no domain."""
    location = props.get("location_id")
    if location is None:
        return None
    return "%04x:%02x:%02x.%x" % (props.get("domain", 0), location >> 8, (location >> 3) & 0x1F, location & 0x7)


def kfd_nodes(rootfs="/"):
    """{bus_id: {"node", "index", "gpu_id", "props"}}: the KFD GPU nodes, index being the position among them
    in node order, as tinygrad counts them (CPU nodes have gpu_id 0 and are skipped, as tinygrad does).

    A GPU split into compute partitions (MI300X in CPX mode) has a node per partition at one PCI address:
    its first node stands for it, and the others still count in the positions.
    """
    base = sysfs.path(rootfs, KFD_NODES)
    try:
        names = sorted((name for name in os.listdir(base) if name.isdigit()), key=int)
    except OSError:
        return {}
    ids = ((name, sysfs.read_int(os.path.join(base, name, "gpu_id"))) for name in names)
    found = {}
    for index, (name, gpu_id) in enumerate([(name, gpu_id) for name, gpu_id in ids if gpu_id]):
        props = _properties(os.path.join(base, name))
        found.setdefault(_location_bus_id(props), {"node": int(name), "index": index, "gpu_id": gpu_id, "props": props})
    return found


def render_minors(rootfs="/"):
    """{bus_id: [minor, ...]}: the render nodes sysfs shows (/sys/class/drm/renderDN/device links to its PCI device)."""
    base = sysfs.path(rootfs, DRM_CLASS)
    try:
        names = sorted(name for name in os.listdir(base) if name.startswith(RENDER_PREFIX))
    except OSError:
        return {}
    found = {}
    for name in names:
        device = os.path.join(base, name, "device")
        minor = name[len(RENDER_PREFIX):]
        if os.path.exists(device) and minor.isdigit():
            found.setdefault(os.path.basename(os.path.realpath(device)).lower(), []).append(int(minor))
    return found


def gfx_target(version):
    """The gfx name of KFD's gfx_target_version (90402 -> gfx942, 110000 -> gfx1100), as tinygrad writes it."""
    if not version:
        return None
    return "gfx%d%x%x" % (version // 10000, (version // 100) % 100, version % 100)


# Why an exo instance could not drive the GPU through tinygrad's kernel interface: the first rule whose test
# holds names it (None: it can). Each test reads the entry being built.
UNUSABLE = (
    (lambda e: e["driver"] == PASSTHROUGH_DRIVER,
     lambda e: "bound to vfio-pci (passed through to a guest): left alone"),
    (lambda e: e["driver"] != "amdgpu",
     lambda e: "bound to %s, not amdgpu: tinygrad's AMD backend needs the amdgpu kernel driver and its KFD"
               % ("no kernel driver" if e["driver"] == "none" else e["driver"])),
    (lambda e: e["kfd_node"] is None,
     lambda e: "amdgpu is bound but no KFD topology node (%s) has its PCI address: /dev/kfd has no such GPU "
               "(a kernel without CONFIG_HSA_AMD, or a display-only part)" % KFD_NODES),
    (lambda e: e["render_node"] is None,
     lambda e: "no render node: %s shows none for this GPU%s; tinygrad opens /dev/dri/renderD<minor> beside "
               "/dev/kfd" % (DRM_CLASS, "" if e["render_minor"] is None else " (KFD names renderD%d)" % e["render_minor"])),
)


def _unusable_reason(entry):
    return next((message(entry) for test, message in UNUSABLE if test(entry)), None)


def _flops(chip_name):
    row = chips.lookup(chip_name) if chip_name else None
    if row is None:
        return {"fp32": None, "fp16": None, "int8": None, "source": "unknown"}
    return {"fp32": row["fp32"], "fp16": row["fp16"], "int8": row["int8"], "source": "table"}


def _kfd_facts(kfd, sysfs_minors):
    """kfd_node, kfd_index, gpu_id, gfx_target, render_minor and render_node of one GPU."""
    kfd = kfd or {}
    props = kfd.get("props", {})
    # What tinygrad opens is KFD's minor; without a KFD node, sysfs's is the GPU's all the same.
    minor = props.get("drm_render_minor") if kfd else min(sysfs_minors or [None])
    return {
        "kfd_node": kfd.get("node"),
        "kfd_index": kfd.get("index"),
        "gpu_id": kfd.get("gpu_id"),
        "gfx_target": gfx_target(props.get("gfx_target_version")),
        "render_minor": minor,
        "render_node": "/dev/dri/%s%d" % (RENDER_PREFIX, minor) if minor in (sysfs_minors or ()) else None,
    }


def gpus(pci_devices, rootfs="/", names=None, library=None):
    """AMD GPUs on the PCI bus, in bus order: VRAM, chip and flops, NUMA node, KFD and render node."""
    names = names or {}
    nodes, minors = kfd_nodes(rootfs), render_minors(rootfs)
    found = []
    for device in pci_devices:
        if device["vendor"] != "amd":
            continue
        directory = sysfs.path(rootfs, "/sys/bus/pci/devices", device["bus_id"])
        vram = sysfs.read_int(os.path.join(directory, "mem_info_vram_total"))
        memory_mib = vram // MIB if vram is not None else None
        name = names.get(device["bus_id"]) or sysfs.read_text(os.path.join(directory, "product_name"))
        chip = chips.lookup(name, memory_mib) if name else None
        chip_name = chip["chip"] if chip else chips.lookup_pci(device["vendor_id"], device["device_id"], memory_mib)
        entry = {
            "bus_id": device["bus_id"],
            "name": name,
            "chip": chip_name,
            "memory_mib": memory_mib,
            "driver": device["driver"],
            "source": library if device["bus_id"] in names else "sysfs",
            "device_id": device["device_id"],
            "numa_node": device["numa_node"],
            "cpu_list": device["cpu_list"],
            "flops": _flops(chip_name),
        }
        entry.update(_kfd_facts(nodes.get(device["bus_id"]), minors.get(device["bus_id"])))
        entry["unusable_reason"] = _unusable_reason(entry)
        found.append(entry)
    return found
