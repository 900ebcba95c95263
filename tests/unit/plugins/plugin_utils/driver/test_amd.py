# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role on hosts with AMD GPUs: the planner over what gpufleet.exo.device_facts reports on the
simulated AMD hosts (tests/fixtures/simulated/amd_*.json), under each distribution's package facts.

AMD GPUs are checked and what they lack is said (plugins/plugin_utils/driver/amd.py); an AMD-only host gets
no NVIDIA package, a mixed host gets the NVIDIA driver as before plus the AMD findings.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import amd, distributions
from tests.unit.plugins.plugin_utils.driver.test_plan import (
    ARCH, DEBIAN_12, DEBIAN_13, ROCKY_9, UBUNTU_2204, dpkg, ok, refused, rpm)

AMD0, AMD1 = "0000:c1:00.0", "0000:c3:00.0"
DEBIAN_FIRMWARE = dpkg(firmware_amd_graphics="20230210-5")
UBUNTU_FIRMWARE = dpkg(linux_firmware="20220329.git681281e4-0ubuntu3.36")
EL_FIRMWARE = rpm(amd_gpu_firmware="20240905")
NO_FIRMWARE = dpkg(bash="5.2.15-2")


def with_packages(distribution, packages):
    return dict(distribution, packages=packages)


def rebound(caps, driver):
    """The host's AMD GPU bound to another driver, as the probe reports it then: no KFD node, no render node."""
    changed = copy.deepcopy(caps)
    for device in changed["pci"]:
        if device["vendor"] == "amd":
            device["driver"] = driver
    for gpu in changed["amd"]:
        gpu.update(driver=driver, kfd_node=None, kfd_index=None, gpu_id=None, render_minor=None, render_node=None)
    return changed


def mixed_needing_nvidia(probed):
    """A host whose NVIDIA GPU lacks its driver (no_driver) beside the AMD GPU of amd_one."""
    caps = copy.deepcopy(probed["no_driver"])
    caps["pci"] += probed["amd_one"]["pci"]
    caps["amd"] = copy.deepcopy(probed["amd_one"]["amd"])
    return caps


# (facts of the host, distribution with its packages, NVIDIA case, AMD GPUs driven, passed through,
#  the parts of each finding, one list per finding)
CASES = [
    ("amd_one", with_packages(DEBIAN_12, DEBIAN_FIRMWARE), "no_hardware", [AMD0], [], []),
    ("amd_one", with_packages(DEBIAN_13, NO_FIRMWARE), "no_hardware", [AMD0], [],
     [["host h: AMD GPU 0000:c1:00.0: the firmware amdgpu loads is not installed",
       "apt-get install firmware-amd-graphics", "non-free-firmware"]]),
    ("amd_two", with_packages(UBUNTU_2204, UBUNTU_FIRMWARE), "no_hardware", [AMD0, AMD1], [], []),
    ("amd_two", with_packages(UBUNTU_2204, NO_FIRMWARE), "no_hardware", [AMD0, AMD1], [],
     [["AMD GPU 0000:c1:00.0, 0000:c3:00.0: the firmware amdgpu loads is not installed",
       "apt-get install linux-firmware"]]),
    ("amd_vfio", with_packages(ROCKY_9, EL_FIRMWARE), "no_hardware", [AMD1], [AMD0], []),
    ("amd_vfio", with_packages(ROCKY_9, rpm(bash="5.1.8")), "no_hardware", [AMD1], [AMD0],
     [["AMD GPU 0000:c3:00.0: the firmware", "dnf install amd-gpu-firmware"]]),
    ("amd_no_render", with_packages(DEBIAN_12, DEBIAN_FIRMWARE), "no_hardware", [AMD0], [],
     [["host h: AMD GPU 0000:c1:00.0 (AMD Instinct MI300X) has no render node", "renderD128"]]),
    ("amd_only", with_packages(DEBIAN_12, DEBIAN_FIRMWARE), "no_hardware", [AMD0], [],
     [["AMD GPU 0000:c1:00.0 (AMD Instinct MI300X) has amdgpu but /dev/kfd does not serve it", "CONFIG_HSA_AMD"]]),
    ("amd_nvidia", with_packages(DEBIAN_12, DEBIAN_FIRMWARE), "ok", [AMD0], [], []),
    ("amd_one", with_packages(ARCH, {}), "no_hardware", [AMD0], [],
     [["host h: AMD GPU 0000:c1:00.0: this role knows the firmware package of Debian, Ubuntu and the RHEL family",
       "/lib/firmware/amdgpu"]]),
    # Without package facts nothing is said of the firmware.
    ("amd_one", DEBIAN_12, "no_hardware", [AMD0], [], []),
    ("no_gpu", with_packages(DEBIAN_12, NO_FIRMWARE), "no_hardware", [], [], []),
]


@pytest.mark.parametrize("name, distribution, case, gpus, passthrough, findings", CASES)
def test_amd_gpus_are_checked_and_what_they_lack_said(probed, name, distribution, case, gpus, passthrough, findings):
    result = ok(probed[name], distribution)
    said = result["decision"]["amd"]
    assert result["decision"]["case"] == case
    assert (said["gpus"], said["passthrough"]) == (gpus, passthrough)
    assert len(said["findings"]) == len(findings), said["findings"]
    for finding, parts in zip(said["findings"], findings):
        for part in parts:
            assert part in finding, finding
    # shown with the notes, and in the summary wherever the host has AMD GPUs
    assert all(finding in result["notes"] for finding in said["findings"])
    assert ("amd" in result["summary"]) == bool(gpus or passthrough)


@pytest.mark.parametrize("driver, parts", [
    ("none", ["AMD GPU 0000:c1:00.0 (AMD Instinct MI300X) is bound to no kernel driver, not amdgpu",
              "modprobe amdgpu"]),
    ("radeon", ["is bound to radeon, not amdgpu", "blacklist"]),
])
def test_an_amd_gpu_without_amdgpu_is_named_with_what_to_do(probed, driver, parts):
    said = ok(rebound(probed["amd_one"], driver), with_packages(DEBIAN_12, DEBIAN_FIRMWARE))["decision"]["amd"]
    assert len(said["findings"]) == 1
    for part in parts:
        assert part in said["findings"][0]


@pytest.mark.parametrize("name", ["amd_one", "amd_two", "amd_vfio", "amd_no_render", "amd_only"])
@pytest.mark.parametrize("distribution", [DEBIAN_12, DEBIAN_13, UBUNTU_2204, ROCKY_9, ARCH])
def test_an_amd_only_host_never_gets_nvidia_packages(probed, name, distribution):
    result = ok(probed[name], with_packages(distribution, NO_FIRMWARE), exo_driver_allow_upgrade=True,
                exo_driver_branch="550")
    assert (result["decision"]["action"], result["install"], result["package_check"]) == ("none", None, None)
    assert result["decision"]["gpus"] == []


def test_a_mixed_host_gets_the_nvidia_driver_and_the_amd_findings(probed):
    result = ok(mixed_needing_nvidia(probed), with_packages(DEBIAN_12, NO_FIRMWARE))
    assert (result["decision"]["case"], result["decision"]["action"]) == ("library_not_found", "install")
    assert result["install"]["packages"] == ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"]
    assert result["decision"]["gpus"] == ["0000:3b:00.0"] and result["decision"]["amd"]["gpus"] == [AMD0]
    said = result["decision"]["amd"]["findings"]
    assert [note for note in result["notes"] if "firmware-amd-graphics" in note] == said
    assert not any("amd" in name or "rocm" in name for name in result["install"]["packages"])


def test_every_family_names_its_amd_firmware():
    for table in distributions.FAMILIES:
        firmware = table["amd_firmware"]
        assert firmware["packages"] and all(name in firmware["advice"] for name in firmware["packages"][:1])


def test_the_first_need_lacking_is_the_finding():
    """A GPU lacking amdgpu lacks KFD and its render node too: only amdgpu is said."""
    gpu = {"bus_id": AMD0, "chip": None, "driver": "vfio-pci", "kfd_node": None, "render_minor": None,
           "render_node": None}
    caps = {"amd": [dict(gpu, driver="none"), gpu]}
    said = amd.findings("h", caps, distributions.family("Debian"), None)
    assert (said["gpus"], said["passthrough"], len(said["findings"])) == ([AMD0], [AMD0], 1)
    assert said["findings"][0].startswith("host h: AMD GPU 0000:c1:00.0 is bound to no kernel driver, not amdgpu")


def test_amd_facts_lacking_a_key_are_refused_by_name(probed):
    caps = copy.deepcopy(probed["amd_one"])
    del caps["amd"][0]["render_node"]
    refused(caps, "ansible_facts.device_capabilities.amd entry", "lacks render_node")
