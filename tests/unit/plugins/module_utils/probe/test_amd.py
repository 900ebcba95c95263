# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AMD stage: VRAM and chip from sysfs, names from a library where one answers."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _amd as amd
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import pci
from tests.simulated import sysfs as sim


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
