# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Display-class PCI devices from sysfs: works with no driver and no library at all."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from . import _sysfs as sysfs

# PCI class codes (base class 03, display controller) that GPUs use: VGA, 3D, other display.
DISPLAY_CLASSES = ("0x0300", "0x0302", "0x0380")
VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}
# NVSwitch shows up as an NVIDIA device of class 0680 (bridge, other): lspci's "Bridge [0680]".
NVSWITCH = ("0x10de", "0x0680")


def sysfs_bus_id(bus_id):
    """NVML writes 00000000:3B:00.0; sysfs, lspci and the PCI scan write 0000:3b:00.0."""
    if not bus_id:
        return None
    domain, sep, rest = bus_id.lower().partition(":")
    return "%04x:%s" % (int(domain, 16), rest) if sep and rest else bus_id.lower()


def _device(directory, bus_id):
    vendor_id = (sysfs.read_text(os.path.join(directory, "vendor")) or "").lower()
    pci_class = (sysfs.read_text(os.path.join(directory, "class")) or "").lower()[:6]
    if vendor_id not in VENDORS or pci_class not in DISPLAY_CLASSES:
        return None
    driver = _driver(directory)
    numa_node = sysfs.read_int(os.path.join(directory, "numa_node"))
    return {
        "bus_id": bus_id,
        "vendor": VENDORS[vendor_id],
        "vendor_id": vendor_id,
        "device_id": (sysfs.read_text(os.path.join(directory, "device")) or "").lower() or None,
        "class": pci_class,
        "driver": driver,
        # The kernel writes -1 when the platform does not say which node a device is on.
        "numa_node": numa_node if numa_node is not None and numa_node >= 0 else None,
        "cpu_list": sysfs.read_text(os.path.join(directory, "local_cpulist")) or None,
    }


def _directories(rootfs):
    """(sysfs directory, bus id) of every PCI device, in bus order."""
    base = sysfs.path(rootfs, "/sys/bus/pci/devices")
    try:
        return [(os.path.join(base, bus_id), bus_id.lower()) for bus_id in sorted(os.listdir(base))]
    except OSError:
        return []


def _driver(directory):
    driver_link = os.path.join(directory, "driver")
    return os.path.basename(os.readlink(driver_link)) if os.path.islink(driver_link) else "none"


def scan(rootfs="/"):
    """Every NVIDIA, AMD and Intel display device on the PCI bus, in bus order."""
    devices = (_device(directory, bus_id) for directory, bus_id in _directories(rootfs))
    return [device for device in devices if device is not None]


def nvswitches(rootfs="/"):
    """The NVSwitch devices on the PCI bus, in bus order: where they are, GPUs need the fabric manager."""
    found = []
    for directory, bus_id in _directories(rootfs):
        ids = ((sysfs.read_text(os.path.join(directory, "vendor")) or "").lower(),
               (sysfs.read_text(os.path.join(directory, "class")) or "").lower()[:6])
        if ids == NVSWITCH:
            found.append({"bus_id": bus_id, "driver": _driver(directory),
                          "device_id": (sysfs.read_text(os.path.join(directory, "device")) or "").lower() or None})
    return found


def loaded_modules(rootfs="/", names=("nvidia", "nouveau", "amdgpu", "vfio_pci")):
    """The kernel modules among names that are loaded (built-in ones show up too)."""
    return [name for name in names if os.path.isdir(sysfs.path(rootfs, "/sys/module", name))]
