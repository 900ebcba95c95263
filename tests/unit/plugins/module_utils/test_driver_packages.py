# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The package checks of the driver role: the sources file they write, how they read apt's and
dnf's output, and the words they put on what they find.

apt itself answers in tests/integration/roles/test_driver_preflight.py (Debian's real archive); here
apt runs only where it needs no network: the host's own sources, its dpkg database.
"""

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _driver_packages as driver_packages

DEBIAN = {"file": "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources",
          "keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
          "components": ["contrib", "non-free", "non-free-firmware"],
          "sources": [{"uri": "http://deb.debian.org/debian", "suite": "bookworm"},
                      {"uri": "http://deb.debian.org/debian", "suite": "bookworm-updates"},
                      {"uri": "http://deb.debian.org/debian-security", "suite": "bookworm-security"}]}
USERSPACE = ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"]
KERNEL = "6.1.0-25-amd64"


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          env=dict(os.environ, LC_ALL="C"), check=False)
    return proc.returncode, proc.stdout, proc.stderr


def answer(**changes):
    result = driver_packages.apt_answer()
    result.update(checked=True)
    result.update(changes)
    return result


def verdict(result, packages=None, optional=("python3-pynvml",)):
    return driver_packages.apt_verdict(result, [DEBIAN], list(packages or USERSPACE), list(optional), KERNEL,
                                       "Debian 12 (bookworm)", "535")


# ---- the sources file ---------------------------------------------------------------------------

def test_sources_file_adds_only_what_the_host_lacks():
    configured = {("bookworm", "main"), ("bookworm-updates", "main"), ("bookworm-security", "main"),
                  ("bookworm-security", "contrib")}
    text, missing = driver_packages.sources_text([DEBIAN], configured)
    assert missing == {"bookworm": ["contrib", "non-free", "non-free-firmware"],
                       "bookworm-updates": ["contrib", "non-free", "non-free-firmware"],
                       "bookworm-security": ["non-free", "non-free-firmware"]}
    assert text == (
        "# Managed by gpufleet.exo.driver: the components the NVIDIA driver needs that the\n"
        "# host's own sources lack.\n"
        "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n"
        "Components: contrib non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        "\n"
        "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n"
        "Components: non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    everything = set((s["suite"], c) for s in DEBIAN["sources"] for c in DEBIAN["components"])
    assert driver_packages.sources_text([DEBIAN], everything) == ("", {})


@pytest.mark.parametrize("version, expected", [
    ("535.309.01-0+deb12u1", "535.309.01"), ("1:535.309.01-1", "535.309.01"), ("580.65.06", "580.65.06"),
    (None, ""),
])
def test_upstream_version(version, expected):
    assert driver_packages.upstream(version) == expected


@pytest.mark.skipif(not shutil.which("apt-get"), reason="needs apt")
def test_apt_asks_nothing_of_the_network_when_the_plan_is_installed():
    """dpkg is installed on every apt host: only the host's sources and dpkg database are read."""
    result = driver_packages.apt_check(run, [DEBIAN], ["dpkg"], [], [], KERNEL)
    assert (result["checked"], result["installed"], result["candidates"]) == (False, ["dpkg"], {})
    # what the host's own sources give, as apt itself lists them
    rc, out, err = run(["apt-get", "indextargets", "--no-release-info", "--format", "$(RELEASE) $(COMPONENT)",
                        "Identifier: Packages"])
    configured = set(tuple(line.split()) for line in out.splitlines() if len(line.split()) == 2)
    assert (result["sources"], result["missing_components"]) == driver_packages.sources_text([DEBIAN], configured)


# ---- apt's answer in words ----------------------------------------------------------------------

def test_a_plan_apt_can_install():
    result = answer(candidates=dict((name, "535.309.01-0+deb12u1") for name in USERSPACE + ["python3-pynvml"]),
                    simulate={"rc": 0, "errors": [], "install": {}})
    assert verdict(result) == {"install": USERSPACE + ["python3-pynvml"], "problems": [], "notes": []}


def test_optional_packages_apt_lacks_are_left_out_with_a_note():
    result = answer(candidates=dict(dict((name, "1") for name in USERSPACE), **{"python3-pynvml": None}))
    said = verdict(result)
    assert said["install"] == USERSPACE
    assert said["notes"] == ["python3-pynvml is not available here: skipped"]


def test_a_branch_the_archive_lacks():
    result = answer(candidates={"nvidia-tesla-999-smi": None, "libnvidia-tesla-999-ml1": None})
    said = verdict(result, ["nvidia-tesla-999-smi", "libnvidia-tesla-999-ml1"], ())
    assert said["problems"] == [
        "no installation candidate for nvidia-tesla-999-smi, libnvidia-tesla-999-ml1 in Debian 12 (bookworm) with the "
        "components contrib, non-free, non-free-firmware: branch 535 is not available there; set exo_driver_branch "
        "to a branch this release carries"]


def test_headers_for_a_kernel_the_distribution_lacks_and_headers_already_there():
    packages = ["nvidia-kernel-dkms", "dkms", "linux-headers-" + KERNEL] + USERSPACE
    result = answer(candidates=dict(dict((name, "1") for name in packages), **{"linux-headers-" + KERNEL: None}))
    problem, = verdict(result, packages, ())["problems"]
    assert problem.startswith("linux-headers-%s has no installation candidate: the running kernel %s is not one "
                              "Debian 12 (bookworm) carries headers for" % (KERNEL, KERNEL))
    assert "put the headers of this kernel at /lib/modules/%s/build" % KERNEL in problem
    assert problem.endswith("or set exo_driver_kernel_module: false to install user space only")
    skipped = answer(candidates=dict((name, "1") for name in packages if "headers" not in name),
                     skipped_headers=["linux-headers-" + KERNEL])
    said = verdict(skipped, packages, ())
    assert said["problems"] == [] and "linux-headers-" + KERNEL not in said["install"]
    assert said["notes"] == ["kernel headers found at /lib/modules/%s/build, not installing linux-headers-%s"
                             % (KERNEL, KERNEL)]


def test_a_kernel_module_and_library_of_different_versions():
    result = answer(candidates=dict((name, "1") for name in USERSPACE),
                    upstream={"nvidia-open-kernel-dkms": "535.261.03", "libnvidia-ml1": "535.309.01"})
    assert verdict(result, USERSPACE, ())["problems"] == [
        "the kernel module and the NVML library would differ in version (nvidia-open-kernel-dkms 535.261.03, "
        "libnvidia-ml1 535.309.01): the library would refuse the module (Driver/library version mismatch). Use the "
        "other kernel module flavour (exo_driver_open_kernel_modules) or another branch"]


def test_apt_refusing_and_unreadable_sources():
    result = answer(candidates=dict((name, "1") for name in USERSPACE),
                    update_errors=["Err:1 http://deb.debian.org/debian bookworm InRelease"],
                    simulate={"rc": 100, "install": {},
                              "errors": ["nvidia-smi : Depends: libnvidia-ml1 (= 535.309.01) but it is not going "
                                         "to be installed", "E: Unable to correct problems, you have held broken packages."]})
    assert verdict(result, USERSPACE, ())["problems"] == [
        "apt could not read the package sources: Err:1 http://deb.debian.org/debian bookworm InRelease",
        "apt cannot install the plan: nvidia-smi : Depends: libnvidia-ml1 (= 535.309.01) but it is not going to be "
        "installed E: Unable to correct problems, you have held broken packages."]


def test_nothing_is_asked_when_everything_is_installed():
    result = driver_packages.apt_answer()
    result["installed"] = USERSPACE
    assert verdict(result, USERSPACE, ("python3-pynvml",)) == {"install": USERSPACE, "problems": [], "notes": []}


def test_a_host_without_the_package_managers_tools():
    said = driver_packages.without_tools(["dnf", "rpm"], "dnf")
    assert said["problems"] == [
        "dnf, rpm not found on this host, so dnf cannot check the plan: the host's package manager is not dnf, or "
        "its facts are not this host's; gather them again (ansible.builtin.setup)"]
    assert said["checked"] is False and said["available"] == {}


# ---- dnf ----------------------------------------------------------------------------------------

MODULE_LIST = """\
NVIDIA CUDA (cuda-rhel9-x86_64)
Name           Stream              Profiles                         Summary
nvidia-driver  latest              default [d], fm, ks, src         Nvidia driver for latest branch
nvidia-driver  latest-dkms [d]     default [d], fm, ks              Nvidia driver for latest-dkms branch
nvidia-driver  570-dkms            default [d], fm, ks              Nvidia driver for 570-dkms branch
nvidia-driver  580-dkms            default [d], fm, ks              Nvidia driver for 580-dkms branch
nvidia-driver  580-open            default [d], fm, ks, src         Nvidia driver for 580-open branch

Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled
"""
MODULE_INFO = """\
Name             : nvidia-driver
Stream           : 580-dkms
Version          : 9050020250731011234
Artifacts        : kmod-nvidia-latest-dkms-3:580.65.06-1.el9.x86_64
                 : nvidia-driver-3:580.65.06-1.el9.x86_64
                 : nvidia-driver-cuda-3:580.65.06-1.el9.x86_64
                 : nvidia-persistenced-3:580.65.06-1.el9.x86_64
"""


def test_dnf_output_read():
    assert driver_packages.module_streams(MODULE_LIST) == ["570-dkms", "580-dkms", "580-open", "latest", "latest-dkms"]
    assert driver_packages.stream_artifacts(MODULE_INFO) == [
        "kmod-nvidia-latest-dkms", "nvidia-driver", "nvidia-driver-cuda", "nvidia-persistenced"]


def test_dnf_answer_in_words():
    missing_stream = dict(driver_packages.dnf_answer(), checked=True, stream_found=False,
                          streams=["570-dkms", "580-dkms", "latest-dkms"])
    assert driver_packages.dnf_verdict(missing_stream, "nvidia-driver:999-dkms", KERNEL, "Rocky 9")["problems"] == [
        "the CUDA repository has no module stream nvidia-driver:999-dkms for Rocky 9: its nvidia-driver streams are "
        "570-dkms, 580-dkms, latest-dkms; set exo_driver_branch to one of them"]
    devel = "kernel-devel-5.14.0-70.el9.x86_64"
    old_kernel = dict(driver_packages.dnf_answer(), checked=True, stream_found=True,
                      available={devel: False, "dkms": True, "nvtop": False, "nvidia-driver-cuda": True})
    problems = driver_packages.dnf_verdict(old_kernel, "nvidia-driver:580-dkms", "5.14.0-70.el9.x86_64",
                                           "Rocky 9")["problems"]
    assert problems == [
        "%s is not available: the running kernel 5.14.0-70.el9.x86_64 is not the current one of the distribution, "
        "so DKMS cannot build the nvidia module. Update the kernel and reboot, or set exo_driver_kernel_module: "
        "false" % devel, "not available: nvtop"]
