# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's decision table and per-distribution plans, through ansible-playbook over simulated hosts.

The policy itself is tested in tests/unit/plugins/plugin_utils/driver/test_plan.py; here each case is a
simulated host (a sysfs tree and a simulated libnvidia-ml, or none), an inventory host on a local
connection. One ansible-playbook run in check mode runs the role (driver_role.yml beside this file) with
exo_driver_plan_only over all of them: the role runs gpufleet.exo.device_facts itself against the
simulated host, so every decision is made from facts the probe really produced.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from tests.helpers import run_driver_role as run_plan
from tests.simulated.hosts import BARE_PYTHON, DRIVER_H100 as H100, GPU0, GPU1
from tests.simulated import sysfs as simsysfs

UBUNTU_2204 = {"distribution": "Ubuntu", "version": "22.04", "os_family": "Debian", "pkg_mgr": "apt",
               "kernel": "5.15.0-119-generic"}
UBUNTU_2404 = {"distribution": "Ubuntu", "version": "24.04", "os_family": "Debian", "pkg_mgr": "apt",
               "kernel": "6.8.0-45-generic"}
ROCKY_9 = {"distribution": "Rocky", "version": "9.4", "os_family": "RedHat", "pkg_mgr": "dnf",
           "kernel": "5.14.0-427.13.1.el9_4.x86_64"}
RHEL_9 = {"distribution": "RedHat", "version": "9.6", "os_family": "RedHat", "pkg_mgr": "dnf",
          "kernel": "5.14.0-570.12.1.el9_6.x86_64", "architecture": "aarch64"}
DEBIAN_13 = {"distribution": "Debian", "version": "13", "os_family": "Debian", "pkg_mgr": "apt",
             "kernel": "6.12.38+deb13-amd64"}
DEBIAN_11 = {"distribution": "Debian", "version": "11", "os_family": "Debian", "pkg_mgr": "apt",
             "kernel": "5.10.0-30-amd64"}
# A bare-metal host: the kernel module is installed (auto), unlike in a container.
METAL = {"virtualization_type": "", "virtualization_role": ""}

# name: (PCI devices, NVML config or None for no libnvidia-ml at all, role variables, fake facts, python)
CASES = {
    "no_gpu": ([], None, {}, None, None),
    "no_driver": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, None, None),
    "not_loaded": ([simsysfs.nvidia_gpu(GPU0, driver="none")], {"gpus": [], "init_error": "DRIVER_NOT_LOADED"},
                   {}, None, None),
    "nouveau": ([simsysfs.nvidia_gpu(GPU0, driver="nouveau")], None, {"exo_driver_kernel_module": True}, None, None),
    "mismatch": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")],
                 {"gpus": [], "init_error": "LIB_RM_VERSION_MISMATCH"}, {}, None, None),
    "healthy": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [H100]}, {}, None, None),
    "other_branch": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [H100]},
                     {"exo_driver_branch": "535"}, None, None),
    "upgrade": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [H100]},
                {"exo_driver_branch": "535", "exo_driver_allow_upgrade": True}, None, None),
    "passthrough": ([simsysfs.nvidia_gpu(GPU0, driver="vfio-pci"), simsysfs.nvidia_gpu(GPU1, driver="vfio-pci")],
                    None, {}, None, None),
    "half_passthrough": ([simsysfs.nvidia_gpu(GPU0, driver="vfio-pci"), simsysfs.nvidia_gpu(GPU1, driver="none")],
                         None, {}, None, None),
    "gpu_lost": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [], "init_error": "GPU_IS_LOST"},
                 {}, None, None),
    "bound_no_pynvml": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], None, {}, None, BARE_PYTHON),
    "unbound_no_pynvml": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, None, BARE_PYTHON),
    "amd_only": ([simsysfs.amd_gpu("0000:c1:00.0")], None, {}, None, None),
    # plans for other distributions, from the same simulated host without a driver
    "ubuntu2204": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, dict(UBUNTU_2204, **METAL), None),
    "ubuntu2404_open_prebuilt": ([simsysfs.nvidia_gpu(GPU0, driver="nouveau")], None,
                                 {"exo_driver_open_kernel_modules": True, "exo_driver_ubuntu_modules": "prebuilt",
                                  "exo_driver_branch": "570"}, dict(UBUNTU_2404, **METAL), None),
    "rocky9": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, dict(ROCKY_9, **METAL), None),
    "rhel9_open_full": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
                        {"exo_driver_open_kernel_modules": True, "exo_driver_flavor": "full"},
                        dict(RHEL_9, **METAL), None),
    "debian13": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, dict(DEBIAN_13, **METAL), None),
    "debian12_tesla470": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {"exo_driver_branch": 470},
                          dict(DEBIAN_13, version="12", kernel="6.1.0-25-amd64", **METAL), None),
    # as -e gives them: strings
    "extra_vars_strings": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
                           {"exo_driver_kernel_module": "false", "exo_driver_hold": "no",
                            "exo_driver_extra_packages": "nvidia-settings,nvtop"}, dict(DEBIAN_13, **METAL), None),
}
# Cases the role must stop on, before any change, with the message given.
FAILING = {
    "debian11": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {}, dict(DEBIAN_11, **METAL), None,
                 "the releases this role knows for Debian are 12, 13"),
    "debian12_branch_560": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {"exo_driver_branch": "560"},
                            dict(DEBIAN_13, version="12", kernel="6.1.0-25-amd64", **METAL), None,
                            "branch 560 is not packaged for Debian 12: its branches are 535, 470"),
    "debian12_tesla_open": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
                            {"exo_driver_branch": "470", "exo_driver_open_kernel_modules": True},
                            dict(DEBIAN_13, version="12", kernel="6.1.0-25-amd64", **METAL), None,
                            "Debian 12 packages no open kernel modules for branch 470"),
    "container_full": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
                       {"exo_driver_flavor": "full", "exo_driver_kernel_module": False}, None, None,
                       "exo_driver_flavor full needs the kernel module"),
    # plan-only mode too refuses a branch the release lacks
    "ubuntu_branch_999": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {"exo_driver_branch": "999"},
                          dict(UBUNTU_2204, **METAL), None,
                          "branch 999 is not one this role installs on Ubuntu 22.04: its branches are 535, 550, 570, 580"),
    "rocky_branch_999": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, {"exo_driver_branch": 999},
                         dict(ROCKY_9, **METAL), None, "branch 999 is not one this role installs on Rocky 9"),
}


@pytest.fixture(scope="module")
def planned(tmp_path_factory, nvml_lib):
    proc, results = run_plan(str(tmp_path_factory.mktemp("driver-plan")), CASES, nvml_lib)
    missing = sorted(set(CASES) - set(results))
    assert proc.returncode == 0 and not missing, "hosts %s gave no result:\n%s" % (missing, proc.stdout[-6000:])
    return results


@pytest.fixture(scope="module")
def refused(tmp_path_factory, nvml_lib):
    return run_plan(str(tmp_path_factory.mktemp("driver-refused")), FAILING, nvml_lib)


# ---- the decision table -------------------------------------------------------------------------

@pytest.mark.parametrize("name, case, action, nvml_status", [
    ("no_gpu", "no_hardware", "none", "library_not_found"),
    ("amd_only", "no_hardware", "none", "library_not_found"),
    ("no_driver", "library_not_found", "install", "library_not_found"),
    ("not_loaded", "driver_not_loaded", "install", "driver_not_loaded"),
    ("nouveau", "nouveau", "install", "library_not_found"),
    ("mismatch", "version_mismatch", "reboot", "version_mismatch"),
    ("healthy", "ok", "none", "ok"),
    ("other_branch", "branch_differs", "none", "ok"),
    ("upgrade", "upgrade", "upgrade", "ok"),
    ("passthrough", "passthrough", "leave", "library_not_found"),
    ("half_passthrough", "library_not_found", "install", "library_not_found"),
    ("gpu_lost", "unhealthy", "report", "gpu_lost"),
    ("bound_no_pynvml", "bound_unchecked", "none", "not_installed"),
    ("unbound_no_pynvml", "unbound", "install", "not_installed"),
])
def test_simulated_decision_table(planned, name, case, action, nvml_status):
    result = planned[name]
    assert result["facts"]["nvml"]["status"] == nvml_status  # what the probe really said
    assert (result["decision"]["case"], result["decision"]["action"]) == (case, action)
    # only hosts that need a driver get a plan
    assert (result["plan"] is not None) == (action in ("install", "upgrade"))


def test_simulated_passthrough_gpus_are_left_alone(planned):
    assert planned["passthrough"]["decision"]["passthrough"] == [GPU0, GPU1]
    half = planned["half_passthrough"]["decision"]
    assert half["passthrough"] == [GPU0]
    assert half["gpus"] == [GPU1]


def test_simulated_pending_reboot_is_listed_not_reinstalled(planned):
    mismatch = planned["mismatch"]
    assert mismatch["reboot_required"] is True
    assert "version mismatch" in mismatch["reboot_reason"]
    # the end-of-play list, the same on every host, names exactly the host with the pending reboot
    for result in planned.values():
        assert list(result["reboot_hosts"]) == ["mismatch"]


def test_simulated_amd_gpu_is_checked_and_what_it_lacks_shown(planned):
    """The AMD GPU of amd_only has amdgpu but no KFD node: said in the decision and the notes, nothing planned."""
    amd = planned["amd_only"]["decision"]["amd"]
    assert (amd["gpus"], amd["passthrough"], planned["amd_only"]["plan"]) == (["0000:c1:00.0"], [], None)
    assert "host amd_only: AMD GPU 0000:c1:00.0 (AMD Instinct MI300X) has amdgpu but /dev/kfd does not serve it" in (
        amd["findings"][0])
    assert amd["findings"] and all(finding in planned["amd_only"]["notes"] for finding in amd["findings"])
    assert planned["no_driver"]["decision"]["amd"] == {"gpus": [], "passthrough": [], "findings": []}


def test_simulated_nouveau_gets_blacklisted(planned):
    assert planned["nouveau"]["plan"]["nouveau_blacklist"] is True
    assert planned["nouveau"]["decision"]["nouveau"] == [GPU0]
    assert planned["no_driver"]["plan"]["nouveau_blacklist"] is False


def test_simulated_debian12_plan_on_this_machine(planned):
    """The real facts of this machine (Debian 12, a container) with a simulated GPU without driver."""
    plan = planned["no_driver"]["plan"]
    assert plan["distribution"] == "Debian 12 (bookworm)"
    assert plan["branch"] == "535"
    assert plan["repositories"][0]["components"] == ["contrib", "non-free", "non-free-firmware"]
    assert [s["suite"] for s in plan["repositories"][0]["sources"]] == [
        "bookworm", "bookworm-updates", "bookworm-security"]
    assert plan["packages"] == ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"]
    assert plan["optional_packages"] == ["python3-pynvml"]
    if planned["no_driver"]["decision"]["container"]:
        assert plan["kernel_module"] == "none" and plan["kernel_packages"] == []
        assert "container" in plan["kernel_module_why"]
    else:
        assert plan["kernel_packages"][0] == "nvidia-kernel-dkms"
    assert plan["hold"] == plan["kernel_packages"][:1] * (plan["kernel_module"] != "none") + plan["packages"]


def test_simulated_extra_vars_strings_are_read_as_ansible_reads_them(planned):
    plan = planned["extra_vars_strings"]["plan"]
    assert (plan["kernel_module"], plan["kernel_packages"]) == ("none", [])
    assert plan["kernel_module_why"] == "exo_driver_kernel_module is false"
    assert plan["hold"] == []
    assert plan["packages"][-2:] == ["nvidia-settings", "nvtop"]


# ---- plans for other distributions (fake distribution facts, check mode) -------------------------

def test_simulated_debian13_plan(planned):
    plan = planned["debian13"]["plan"]
    assert plan["distribution"] == "Debian 13 (trixie)"
    assert plan["branch"] == "550"
    assert plan["kernel_packages"] == ["nvidia-kernel-dkms", "dkms", "linux-headers-6.12.38+deb13-amd64"]
    assert plan["version_match"] == ["nvidia-kernel-dkms", "libnvidia-ml1"]
    assert plan["hold"] == ["nvidia-kernel-dkms", "nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"]


def test_simulated_debian12_tesla_branch_plan(planned):
    plan = planned["debian12_tesla470"]["plan"]
    assert plan["branch"] == "470"
    assert plan["kernel_packages"] == ["nvidia-tesla-470-kernel-dkms", "dkms", "linux-headers-6.1.0-25-amd64"]
    assert plan["packages"] == ["nvidia-tesla-470-smi", "libnvidia-tesla-470-ml1", "libnvidia-tesla-470-cuda1",
                                "nvidia-persistenced"]
    assert plan["version_match"] == ["nvidia-tesla-470-kernel-dkms", "libnvidia-tesla-470-ml1"]


def test_simulated_ubuntu2204_plan(planned):
    plan = planned["ubuntu2204"]["plan"]
    assert plan["distribution"] == "Ubuntu 22.04 (jammy)"
    assert plan["branch"] == "580"
    assert plan["kernel_module"] == "dkms"
    assert plan["kernel_packages"] == ["nvidia-headless-580-server", "linux-headers-5.15.0-119-generic"]
    assert plan["packages"] == ["nvidia-utils-580-server"]
    assert plan["repositories"][0]["components"] == ["restricted", "multiverse"]
    assert plan["repositories"][0]["keyring"] == "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
    assert [(s["uri"], s["suite"]) for s in plan["repositories"][0]["sources"]] == [
        ("http://archive.ubuntu.com/ubuntu", "jammy"), ("http://archive.ubuntu.com/ubuntu", "jammy-updates"),
        ("http://security.ubuntu.com/ubuntu", "jammy-security")]
    assert plan["hold"] == ["nvidia-headless-580-server", "nvidia-utils-580-server"]
    assert plan["version_match"] == ["nvidia-dkms-580-server", "libnvidia-compute-580-server"]
    assert plan["module_stream"] is None


def test_simulated_ubuntu2404_open_prebuilt_plan(planned):
    plan = planned["ubuntu2404_open_prebuilt"]["plan"]
    assert plan["distribution"] == "Ubuntu 24.04 (noble)"
    assert plan["kernel_module"] == "prebuilt"
    assert plan["kernel_packages"] == ["linux-modules-nvidia-570-server-open-6.8.0-45-generic"]
    assert plan["packages"] == ["nvidia-headless-no-dkms-570-server-open", "nvidia-utils-570-server"]
    assert plan["nouveau_blacklist"] is True


def test_simulated_rocky9_plan(planned):
    plan = planned["rocky9"]["plan"]
    assert plan["distribution"] == "Rocky 9"
    assert plan["module_stream"] == "nvidia-driver:580-dkms"
    assert plan["kernel_packages"] == ["kmod-nvidia-latest-dkms", "kernel-devel-5.14.0-427.13.1.el9_4.x86_64"]
    # the versionlock plugin holds them at their version after the install
    assert plan["packages"] == ["nvidia-driver-cuda", "nvidia-persistenced", "python3-dnf-plugin-versionlock"]
    assert plan["hold_mechanism"] == "dnf versionlock"
    epel, cuda = plan["repositories"]
    assert epel == {"kind": "epel", "package": "epel-release", "needed": True,
                    "key": "https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9",
                    "fingerprint": "FF8AD1344597106ECE813B918A3872BF3228467C"}
    assert cuda["baseurl"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"
    assert cuda["gpgkey"] == cuda["baseurl"] + "/D42D0685.pub"
    assert cuda["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert plan["initramfs_command"] == ["dracut", "--force"]


def test_simulated_rhel9_open_full_plan_on_arm(planned):
    plan = planned["rhel9_open_full"]["plan"]
    assert plan["module_stream"] == "nvidia-driver:580-open"
    assert plan["kernel_packages"] == ["kmod-nvidia-open-dkms", "kernel-devel-5.14.0-570.12.1.el9_6.x86_64"]
    assert plan["packages"] == ["nvidia-driver-cuda", "nvidia-persistenced", "nvidia-open", "python3-dnf-plugin-versionlock"]
    epel, cuda = plan["repositories"]
    assert epel["package"] == "https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"
    assert cuda["baseurl"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/sbsa"


# ---- refused before any change --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FAILING))
def test_simulated_impossible_plans_stop_with_a_reason(refused, name):
    proc, results = refused
    assert proc.returncode != 0
    assert name not in results  # the host stopped inside the role
    message = FAILING[name][5]
    failures = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [%s]" % name)]
    assert failures and message in failures[0], proc.stdout[-4000:]
