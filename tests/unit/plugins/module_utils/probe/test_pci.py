# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCI stage, over simulated sysfs trees: display devices, their drivers, loaded modules."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import pci
from tests.simulated import sysfs as sim


def test_simulated_pci_scan_finds_display_devices_and_their_drivers(tmp_path):
    sim.write_tree(str(tmp_path), pci=[
        sim.nvidia_gpu("0000:3b:00.0", driver="nvidia", numa_node=0, cpu_list="0-15"),
        sim.nvidia_gpu("0000:5e:00.0", driver="vfio-pci", numa_node=1),
        sim.nvidia_gpu("0000:86:00.0", driver="none"),
        sim.device("0000:00:02.0", "intel", "0x46a6", pci_class="0x030000", driver="i915"),
        sim.amd_gpu("0000:c1:00.0"),
        sim.device("0000:d1:00.0", "nvidia", "0x1aeb", pci_class="0x040300"),  # the card's audio function
    ])
    devices = pci.scan(str(tmp_path))
    assert [(d["bus_id"], d["vendor"], d["driver"]) for d in devices] == [
        ("0000:00:02.0", "intel", "i915"),
        ("0000:3b:00.0", "nvidia", "nvidia"),
        ("0000:5e:00.0", "nvidia", "vfio-pci"),
        ("0000:86:00.0", "nvidia", "none"),
        ("0000:c1:00.0", "amd", "amdgpu"),
    ]
    h100 = devices[1]
    assert h100["class"] == "0x0302" and h100["device_id"] == "0x2330"
    assert (h100["numa_node"], h100["cpu_list"]) == (0, "0-15")
    assert devices[3]["numa_node"] is None  # the kernel's -1


def test_pci_scan_of_a_host_without_sysfs_is_empty(tmp_path):
    assert pci.scan(str(tmp_path)) == []


def test_simulated_loaded_modules(tmp_path):
    sim.write_tree(str(tmp_path), modules=["nouveau"])
    assert pci.loaded_modules(str(tmp_path)) == ["nouveau"]
