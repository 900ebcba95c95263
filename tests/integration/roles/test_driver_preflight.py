# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's preflight against Debian's real archive, in check mode, on this machine.

A simulated GPU without a driver on this (Debian) machine's real facts. The preflight reads the
archive into a private directory: nothing on the machine changes, and check mode proves it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import platform
import shutil

import pytest

from tests.helpers import run_driver_role as run_plan
from tests.simulated import sysfs as simsysfs
from tests.simulated.hosts import GPU0

pytestmark = pytest.mark.skipif(
    not shutil.which("apt-get") or "bookworm" not in open("/etc/os-release").read(),
    reason="the preflight is checked against Debian 12's archive on a Debian 12 machine")

SOURCES = "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources"
CASES = {
    # user space only: every package exists, apt's simulation passes, check mode reports the install
    "userspace": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
                  {"exo_driver_kernel_module": False, "exo_driver_plan_only": False}, None, None),
    # the kernel module for this machine's kernel: no Debian headers exist for it
    "kernel": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None,
               {"exo_driver_kernel_module": True, "exo_driver_plan_only": False,
                "exo_driver_secure_boot": "continue"}, None, None),
}


@pytest.fixture(scope="module")
def preflight(tmp_path_factory, nvml_lib):
    before = os.path.exists(SOURCES)
    proc, results = run_plan(str(tmp_path_factory.mktemp("driver-preflight")), CASES, nvml_lib)
    assert os.path.exists(SOURCES) == before, "check mode changed the machine's apt sources"
    return proc, results


def test_simulated_userspace_plan_passes_preflight_in_check_mode(preflight):
    proc, results = preflight
    assert "userspace" in results, proc.stdout[-6000:]
    assert results["userspace"]["plan"]["kernel_packages"] == []
    # the sources file would change, so the install is reported as planned (apt's own check mode
    # would not know the packages yet); had the machine the components already, apt reports it
    installs = [line for line in proc.stdout.splitlines() if '"msg": "would install' in line]
    section = proc.stdout.split("TASK [gpufleet.exo.driver : Install the driver packages]")[-1].split("TASK [")[0]
    apt_check_mode = "changed: [userspace]" in section
    assert installs or apt_check_mode, proc.stdout[-6000:]
    if installs:
        assert "nvidia-smi libnvidia-ml1 libcuda1 nvidia-persistenced" in installs[0]


def test_simulated_missing_headers_stop_before_any_change(preflight):
    proc, results = preflight
    assert "kernel" not in results
    failure = proc.stdout.replace("\n", " ").split("fatal: [kernel]")[1:]
    assert failure, proc.stdout[-6000:]
    message = " ".join(failure[0].split())
    assert "cannot take the NVIDIA driver yet" in message
    assert "linux-headers-%s has no installation candidate" % platform.release() in message
    assert "exo_driver_kernel_module: false" in message
