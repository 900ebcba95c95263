# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AMD stage: VRAM, chip, KFD node and render node from sysfs, names from a library where one answers."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _amd as amd
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import pci
from tests.simulated import hosts as simhosts
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


# ---- the AMD hosts of tests/simulated/hosts.py: what each GPU's entry says --------------------------------

MI300X_FLOPS = {"fp32": 163.4, "fp16": 1307.4, "int8": 2614.9, "source": "table"}
NO_KFD = {"kfd_node": None, "kfd_index": None, "gpu_id": None, "gfx_target": None, "render_minor": None,
          "render_node": None}
# host: {bus_id: the keys of its entry that the host decides}
AMD_CASES = {
    "amd_one": {simhosts.AMD0: dict(chip="AMD Instinct MI300X", memory_mib=196608, driver="amdgpu", numa_node=0,
                                    cpu_list="0-15", kfd_node=1, kfd_index=0, gpu_id=53987, gfx_target="gfx942",
                                    render_minor=128, render_node="/dev/dri/renderD128", flops=MI300X_FLOPS,
                                    unusable_reason=None)},
    # KFD put the second GPU on the bus first: its kfd_index is 0.
    "amd_two": {simhosts.AMD0: dict(chip="AMD Radeon RX 7900 XTX", memory_mib=24576, numa_node=0, kfd_node=2,
                                    kfd_index=1, gpu_id=17240, gfx_target="gfx1100", render_node="/dev/dri/renderD129",
                                    flops={"fp32": 61.4, "fp16": 122.8, "int8": 245.6, "source": "table"},
                                    unusable_reason=None),
                simhosts.AMD1: dict(chip="AMD Radeon RX 7900 XT", memory_mib=20480, numa_node=1, cpu_list="16-31",
                                    kfd_node=1, kfd_index=0, gpu_id=40911, render_minor=128,
                                    render_node="/dev/dri/renderD128", unusable_reason=None)},
    "amd_nvidia": {simhosts.AMD0: dict(chip="AMD Instinct MI300X", numa_node=1, kfd_index=0,
                                       render_node="/dev/dri/renderD128", unusable_reason=None)},
    "amd_vfio": {simhosts.AMD0: dict(NO_KFD, driver="vfio-pci", numa_node=0, flops=MI300X_FLOPS,
                                     unusable_reason="bound to vfio-pci (passed through to a guest): left alone"),
                 simhosts.AMD1: dict(driver="amdgpu", kfd_node=1, kfd_index=0, render_node="/dev/dri/renderD128",
                                     unusable_reason=None)},
    "amd_no_render": {simhosts.AMD0: dict(kfd_node=1, kfd_index=0, render_minor=128, render_node=None)},
    "amd_only": {"0000:c1:00.0": dict(NO_KFD, chip="AMD Instinct MI300X", driver="amdgpu", numa_node=None)},
}
CASES = [(host, bus_id, expected) for host, gpus in sorted(AMD_CASES.items()) for bus_id, expected in gpus.items()]


def host_gpus(tmp_path, name):
    root = str(tmp_path / name)
    sim.write_tree(root, **simhosts.PROBED[name][2])
    return amd.gpus(pci.scan(root), root)


@pytest.mark.parametrize("host,bus_id,expected", CASES, ids=["%s-%s" % case[:2] for case in CASES])
def test_each_amd_gpu_entry_on_the_simulated_hosts(tmp_path, host, bus_id, expected):
    entry = next(gpu for gpu in host_gpus(tmp_path, host) if gpu["bus_id"] == bus_id)
    assert dict((key, entry[key]) for key in expected) == expected


@pytest.mark.parametrize("host,reason", [
    ("amd_no_render", "no render node: /sys/class/drm shows none for this GPU (KFD names renderD128)"),
    ("amd_only", "amdgpu is bound but no KFD topology node"),
])
def test_why_an_amd_gpu_cannot_serve(tmp_path, host, reason):
    assert host_gpus(tmp_path, host)[0]["unusable_reason"].startswith(reason)


@pytest.mark.parametrize("driver,reason", [
    ("none", "bound to no kernel driver, not amdgpu"),
    ("radeon", "bound to radeon, not amdgpu"),
])
def test_an_amd_gpu_without_amdgpu_cannot_serve(tmp_path, driver, reason):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:c1:00.0", driver=driver)])
    assert amd.gpus(pci.scan(str(tmp_path)), str(tmp_path))[0]["unusable_reason"].startswith(reason)


@pytest.mark.parametrize("version,name", [(90402, "gfx942"), (110000, "gfx1100"), (100300, "gfx1030"),
                                          (90010, "gfx90a"), (None, None), (0, None)])
def test_gfx_target_names_as_tinygrad_writes_them(version, name):
    assert amd.gfx_target(version) == name


def test_kfd_nodes_skip_cpu_nodes_and_count_in_node_order_not_directory_order(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:%02x:00.0" % bus, kfd=sim.kfd_node(node, 100 + node))
                                       for bus, node in ((0x0c, 10), (0x1c, 2), (0x2c, 9))])
    nodes = amd.kfd_nodes(str(tmp_path))
    assert dict((bus_id, (n["node"], n["index"], n["gpu_id"])) for bus_id, n in nodes.items()) == {
        "0000:1c:00.0": (2, 0, 102), "0000:2c:00.0": (9, 1, 109), "0000:0c:00.0": (10, 2, 110)}


def test_kfd_location_id_with_a_domain_device_and_function(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0001:c1:1f.3", kfd=sim.kfd_node(1, 7))])
    assert list(amd.kfd_nodes(str(tmp_path))) == ["0001:c1:1f.3"]


def test_without_kfd_or_drm_in_sysfs_nothing_is_found(tmp_path):
    assert amd.kfd_nodes(str(tmp_path)) == {} and amd.render_minors(str(tmp_path)) == {}


def test_a_partitioned_gpu_is_its_first_kfd_node_and_its_partitions_still_count(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:c1:00.0", kfd=sim.kfd_node(1, 11)),
                                       sim.amd_gpu("0000:d1:00.0", kfd=sim.kfd_node(3, 33))])
    # A second partition of the first GPU: another node at the same PCI address.
    partition = tmp_path / "sys/devices/virtual/kfd/kfd/topology/nodes/2"
    partition.mkdir()
    (partition / "gpu_id").write_text(u"22\n")
    (partition / "properties").write_text((tmp_path / "sys/devices/virtual/kfd/kfd/topology/nodes/1/properties").read_text())
    nodes = amd.kfd_nodes(str(tmp_path))
    assert [(bus_id, n["node"], n["index"]) for bus_id, n in sorted(nodes.items())] == [
        ("0000:c1:00.0", 1, 0), ("0000:d1:00.0", 3, 2)]


def test_the_render_node_kfd_names_among_several_of_one_gpu(tmp_path):
    sim.write_tree(str(tmp_path), pci=[sim.amd_gpu("0000:c1:00.0", kfd=sim.kfd_node(1, 11), render_minor=128)])
    # A second render node of the same PCI device, after the one KFD names.
    node = tmp_path / "sys/bus/pci/devices/0000:c1:00.0/drm/renderD129"
    node.mkdir()
    (node / "device").symlink_to("../..")
    (tmp_path / "sys/class/drm/renderD129").symlink_to("../../bus/pci/devices/0000:c1:00.0/drm/renderD129")
    entry = amd.gpus(pci.scan(str(tmp_path)), str(tmp_path))[0]
    assert (entry["render_minor"], entry["render_node"], entry["unusable_reason"]) == (128, "/dev/dri/renderD128", None)
