# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stages that read sysfs and procfs, over simulated trees."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _amd as amd
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _host as host
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


def test_simulated_host_from_proc_and_sys(tmp_path):
    sim.write_tree(str(tmp_path), numa=["0-7", "8-15"], cpu_model="Simulated EPYC", memory_kib=64 * 1024 * 1024)
    facts = host.probe(str(tmp_path))
    assert facts == {"cpu_model": "Simulated EPYC", "cpus": 16, "memory_mib": 65536,
                     "numa_nodes": [{"node": 0, "cpu_list": "0-7"}, {"node": 1, "cpu_list": "8-15"}]}


def test_live_host_is_read_too():
    facts = host.probe("/")
    assert facts["cpus"] >= 1 and facts["memory_mib"] > 0 and facts["numa_nodes"]


def test_simulated_amd_vram_and_chip_from_sysfs(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:c1:00.0", vram_bytes=192 * 1024 ** 3)])
    found = amd.gpus(pci.scan(str(tmp_path)), str(tmp_path))
    assert len(found) == 1
    assert found[0]["memory_mib"] == 192 * 1024 and found[0]["source"] == "sysfs"
    assert found[0]["chip"] and "MI300X" in found[0]["chip"]


def test_amd_names_from_a_library_win_over_sysfs(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:c1:00.0")])
    found = amd.gpus(pci.scan(str(tmp_path)), str(tmp_path), {"0000:c1:00.0": "AMD Instinct MI300X"}, "amdsmi")
    assert found[0]["name"] == "AMD Instinct MI300X" and found[0]["source"] == "amdsmi"


def test_amd_library_stage_without_libraries():
    assert amd.query_names() == {"library": None, "names": {}}
