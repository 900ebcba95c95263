# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated /sys and /proc trees, for the probe's `rootfs` option.

Library use:  write_tree(root, pci=[nvidia_gpu("0000:3b:00.0", driver="none")], numa=["0-15"])
Command line: python3 tests/simulated/sysfs.py --root DIR --nvidia 1 --driver none
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import os

VENDOR_IDS = {"nvidia": "0x10de", "amd": "0x1002", "intel": "0x8086"}


def device(bus_id, vendor, device_id, pci_class="0x030200", driver="none", numa_node=-1, cpu_list=None,
           vram_bytes=None, product_name=None, kfd=None, render_minor=None):
    return {"bus_id": bus_id, "vendor": vendor, "device_id": device_id, "class": pci_class, "driver": driver,
            "numa_node": numa_node, "cpu_list": cpu_list, "vram_bytes": vram_bytes, "product_name": product_name,
            "kfd": kfd, "render_minor": render_minor}


def nvidia_gpu(bus_id, device_id="0x2330", driver="nvidia", numa_node=-1, cpu_list=None):
    """An NVIDIA 3D controller (class 0302), an H100 SXM5 by default."""
    return device(bus_id, "nvidia", device_id, "0x030200", driver, numa_node, cpu_list)


def nvswitch(bus_id, device_id="0x22a3", driver="nvidia-nvswitch"):
    """An NVIDIA NVSwitch (class 0680, bridge), a third-generation one of HGX H100 by default."""
    return device(bus_id, "nvidia", device_id, "0x068000", driver)


# KFD's gfx_target_version of an MI300X (gfx942).
MI300X_GFX = 90402


def kfd_node(node, gpu_id, gfx_target_version=MI300X_GFX, render_minor=None):
    """A GPU's KFD topology node: its number, gpu_id, and the properties tinygrad reads; render_minor None: the GPU's own."""
    return {"node": node, "gpu_id": gpu_id, "gfx_target_version": gfx_target_version, "render_minor": render_minor}


def amd_gpu(bus_id, device_id="0x74a1", driver="amdgpu", vram_bytes=192 * 1024 ** 3, numa_node=-1, cpu_list=None,
            kfd=None, render_minor=None):
    """An AMD display controller (class 0380), an Instinct MI300X by default.

    kfd (kfd_node()): its KFD topology node; render_minor: its render node in /sys/class/drm (None: none).
    """
    return device(bus_id, "amd", device_id, "0x038000", driver, numa_node, cpu_list, vram_bytes, None, kfd, render_minor)


def _write(path, text):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    with open(path, "w") as handle:
        handle.write(text)


def _location_id(bus_id):
    """KFD's location_id of a PCI address: (bus << 8) | (device << 3) | function."""
    dummy, bus_number, rest = bus_id.split(":")
    slot, function = rest.split(".")
    return (int(bus_number, 16) << 8) | (int(slot, 16) << 3) | int(function)


def _write_kfd(root, gpus):
    """The KFD topology of a host: node 0 its CPU (gpu_id 0), then each GPU's node; /sys/class/kfd/kfd links to it."""
    base = os.path.join(root, "sys/devices/virtual/kfd/kfd")
    _write(os.path.join(base, "topology/nodes/0/gpu_id"), "0\n")
    _write(os.path.join(base, "topology/nodes/0/properties"), "cpu_cores_count 16\nsimd_count 0\nlocation_id 0\n")
    for dev in gpus:
        kfd = dev["kfd"]
        minor = dev["render_minor"] if kfd["render_minor"] is None else kfd["render_minor"]
        directory = os.path.join(base, "topology/nodes/%d" % kfd["node"])
        _write(os.path.join(directory, "gpu_id"), "%d\n" % kfd["gpu_id"])
        _write(os.path.join(directory, "properties"), "".join("%s %d\n" % pair for pair in (
            ("cpu_cores_count", 0), ("simd_count", 1216), ("gfx_target_version", kfd["gfx_target_version"]),
            ("vendor_id", 0x1002), ("device_id", int(dev["device_id"], 16)), ("location_id", _location_id(dev["bus_id"])),
            ("domain", int(dev["bus_id"].split(":")[0], 16)), ("drm_render_minor", -1 if minor is None else minor))))
    os.makedirs(os.path.join(root, "sys/class/kfd"))
    os.symlink("../../devices/virtual/kfd/kfd", os.path.join(root, "sys/class/kfd/kfd"))


def _write_render_node(root, directory, minor):
    """/sys/class/drm/renderD<minor>, linking to the device's drm/renderD<minor>, whose device links back to it."""
    name = "renderD%d" % minor
    node = os.path.join(directory, "drm", name)
    os.makedirs(node)
    os.symlink("../..", os.path.join(node, "device"))
    drm = os.path.join(root, "sys/class/drm")
    if not os.path.isdir(drm):
        os.makedirs(drm)
    os.symlink(os.path.relpath(node, drm), os.path.join(drm, name))


def write_tree(root, pci=(), numa=("0-1",), modules=(), cpu_model="Simulated CPU", memory_kib=16 * 1024 * 1024,
               extra_devices=(("0000:00:00.0", "0x8086", "0x060000"),)):
    """Write a simulated host under root: PCI devices (AMD ones with their render node and KFD topology node),
    loaded modules, NUMA nodes, cpuinfo, meminfo."""
    devices = os.path.join(root, "sys/bus/pci/devices")
    for bus_id, vendor_id, pci_class in extra_devices:  # a non-display device the scan must skip
        _write(os.path.join(devices, bus_id, "vendor"), vendor_id + "\n")
        _write(os.path.join(devices, bus_id, "class"), pci_class + "\n")
    for dev in pci:
        directory = os.path.join(devices, dev["bus_id"])
        _write(os.path.join(directory, "vendor"), VENDOR_IDS[dev["vendor"]] + "\n")
        _write(os.path.join(directory, "device"), dev["device_id"] + "\n")
        _write(os.path.join(directory, "class"), dev["class"] + "\n")
        _write(os.path.join(directory, "numa_node"), "%d\n" % dev["numa_node"])
        if dev["cpu_list"]:
            _write(os.path.join(directory, "local_cpulist"), dev["cpu_list"] + "\n")
        if dev["vram_bytes"] is not None:
            _write(os.path.join(directory, "mem_info_vram_total"), "%d\n" % dev["vram_bytes"])
        if dev["product_name"]:
            _write(os.path.join(directory, "product_name"), dev["product_name"] + "\n")
        if dev["driver"] != "none":
            drivers = os.path.join(root, "sys/bus/pci/drivers", dev["driver"])
            if not os.path.isdir(drivers):
                os.makedirs(drivers)
            os.symlink(os.path.relpath(drivers, directory), os.path.join(directory, "driver"))
        if dev.get("render_minor") is not None:
            _write_render_node(root, directory, dev["render_minor"])
    if any(dev.get("kfd") for dev in pci):
        _write_kfd(root, [dev for dev in pci if dev.get("kfd")])
    for name in modules:
        module = os.path.join(root, "sys/module", name)
        if not os.path.isdir(module):
            os.makedirs(module)
    cpus = 0
    for node, cpu_list in enumerate(numa):
        _write(os.path.join(root, "sys/devices/system/node/node%d/cpulist" % node), cpu_list + "\n")
        cpus = max(cpus, int(cpu_list.replace(",", "-").split("-")[-1]) + 1)
    _write(os.path.join(root, "proc/cpuinfo"),
           "".join("processor\t: %d\nmodel name\t: %s\n\n" % (cpu, cpu_model) for cpu in range(cpus)))
    _write(os.path.join(root, "proc/meminfo"), "MemTotal:       %d kB\nMemFree:        1024 kB\n" % memory_kib)
    return root


def main():
    parser = argparse.ArgumentParser(description="Write a simulated /sys and /proc tree.")
    parser.add_argument("--root", required=True)
    parser.add_argument("--nvidia", type=int, default=0, help="number of NVIDIA GPUs on the bus")
    parser.add_argument("--driver", default="nvidia", help="driver bound to them: nvidia, nouveau, vfio-pci, none")
    parser.add_argument("--modules", default="", help="comma-separated kernel modules shown as loaded")
    args = parser.parse_args()
    gpus = [nvidia_gpu("0000:%02x:00.0" % (0x3b + 0x10 * i), driver=args.driver) for i in range(args.nvidia)]
    write_tree(args.root, pci=gpus, modules=[m for m in args.modules.split(",") if m])


if __name__ == "__main__":
    main()
