# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD GPUs: VRAM from sysfs (amdgpu), names from amdsmi or pyamdgpuinfo when installed.

`query_names` loads vendor libraries and so runs in a child process with a deadline.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from . import _chips as chips, _sysfs as sysfs

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


def gpus(pci_devices, rootfs="/", names=None, library=None):
    """AMD GPUs on the PCI bus with their VRAM and, where known, their chip."""
    names = names or {}
    found = []
    for device in pci_devices:
        if device["vendor"] != "amd":
            continue
        directory = sysfs.path(rootfs, "/sys/bus/pci/devices", device["bus_id"])
        vram = sysfs.read_int(os.path.join(directory, "mem_info_vram_total"))
        memory_mib = vram // MIB if vram is not None else None
        name = names.get(device["bus_id"]) or sysfs.read_text(os.path.join(directory, "product_name"))
        chip = chips.lookup(name, memory_mib) if name else None
        found.append({
            "bus_id": device["bus_id"],
            "name": name,
            "chip": chip["chip"] if chip else chips.lookup_pci(device["vendor_id"], device["device_id"], memory_mib),
            "memory_mib": memory_mib,
            "driver": device["driver"],
            "source": library if device["bus_id"] in names else "sysfs",
        })
    return found
