# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts' backends option: the child really opens each backend of a real tinygrad and runs a
one-element kernel, for tinygrad 0.14 (this interpreter's) and exo's pin ec120ce6b9ce (0.10.0,
installed from the wheel the node role's wheelhouse builds, else from the vendored archive).

Where this machine can show it, the answers are those the real H100 gave
(tests/fixtures/real-h100/tinygrad_backends.txt): exo's tinygrad under CLANG=1 without clang
raises FileNotFoundError for 'clang'; tinygrad 0.14 under DEV=CPU with CC naming gcc fails to
compile (CalledProcessError). The CPU checks run with PATH reduced to a folder without clang.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import shutil
import sys

import pytest

from tests.helpers import run_module
from tests.simulated import hosts as simhosts

NO_CLANG = {"PATH": "/nonexistent"}
EXO_PIN_CLANG_ERROR = {"type": "FileNotFoundError", "message": "[Errno 2] No such file or directory: 'clang'"}


def backends(tmp_path, python, names, env=None, **args):
    module_args = {"tinygrad": False, "tinygrad_python": python, "backends": names}
    module_args.update(args)
    run = run_module(tmp_path, module_args, env)
    assert not run.result.get("failed"), run.result
    return run.facts["tinygrad"]["backends"]


# --- exo's tinygrad (0.10.0): CLANG is its CPU backend -------------------------------------

def test_exo_pin_cpu_without_clang_fails_as_on_the_real_h100(tmp_path, exo_pin_python):
    cpu = backends(tmp_path, exo_pin_python, ["cpu"], NO_CLANG)["cpu"]
    assert cpu["status"] == "failed" and cpu["error"] == EXO_PIN_CLANG_ERROR
    assert cpu["device"] == "CLANG" and cpu["env"] == {"CUDA_VISIBLE_DEVICES": "", "CLANG": "1"}
    assert cpu["reason"] == "FileNotFoundError: [Errno 2] No such file or directory: 'clang'"


@pytest.mark.skipif(not shutil.which("clang"), reason="clang is not installed here")
def test_exo_pin_cpu_with_clang_computes(tmp_path, exo_pin_python):
    cpu = backends(tmp_path, exo_pin_python, ["cpu"])["cpu"]
    assert (cpu["status"], cpu["device"], cpu["error"], cpu["gpu"]) == ("ok", "CLANG", None, None)


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has an NVIDIA driver")
def test_exo_pin_gpu_backends_without_a_gpu_fail_with_tinygrads_error(tmp_path, exo_pin_python):
    found = backends(tmp_path, exo_pin_python, ["nv", "cuda"])
    # NV opens /dev/nvidiactl itself; CUDA needs libcuda. Each says so in its own words.
    assert found["nv"]["status"] == "failed" and found["nv"]["device"] == "NV"
    assert "nvidiactl" in found["nv"]["error"]["message"]
    assert found["cuda"]["status"] == "failed" and found["cuda"]["error"]["type"]
    assert found["cuda"]["env"] == {"CUDA": "1"}


# --- tinygrad 0.14: DEV=CPU, the compiler from CC or clang --------------------------------

needs_tinygrad = pytest.mark.skipif(importlib.util.find_spec("tinygrad") is None, reason="tinygrad is not installed here")


@needs_tinygrad
def test_tinygrad_014_cpu_with_cc_gcc_fails_to_compile_as_on_the_real_h100(tmp_path):
    cpu = backends(tmp_path, sys.executable, ["cpu"], {"CC": "gcc"})["cpu"]
    assert cpu["status"] == "failed" and cpu["error"]["type"] == "CalledProcessError"
    assert cpu["error"]["message"].startswith("Command '['gcc', '-c', '-x', 'c', '-O2', '-fPIC', '-ffreestanding'")
    assert cpu["env"] == {"CUDA_VISIBLE_DEVICES": "", "DEV": "CPU"}


@needs_tinygrad
def test_tinygrad_014_cpu_without_clang(tmp_path):
    cpu = backends(tmp_path, sys.executable, ["cpu"], NO_CLANG)["cpu"]
    assert cpu["status"] == "failed" and cpu["error"] == EXO_PIN_CLANG_ERROR


@needs_tinygrad
@pytest.mark.skipif(not shutil.which("clang"), reason="clang is not installed here")
def test_tinygrad_014_cpu_with_clang_computes(tmp_path):
    cpu = backends(tmp_path, sys.executable, ["cpu"])["cpu"]
    assert (cpu["status"], cpu["device"]) == ("ok", "CPU")


# --- the GPU a GPU backend is checked on ----------------------------------------------------

@needs_tinygrad
@pytest.mark.parametrize("host, expected", [
    # GPU 0 serves: the check goes to the idle GPU 1, pinned by UUID as an exo instance is.
    ("busy", ("failed", simhosts.uuid(1))),
    # Only the serving GPU: not opened at all.
    ("busy_only", ("skipped", simhosts.uuid(0))),
])
def test_gpu_backend_is_never_checked_on_a_busy_gpu(tmp_path, nvml_lib, host, expected):
    gpus = simhosts.HOSTS["busy"][0][:1 if host == "busy_only" else 2]
    env, root = simhosts.write(str(tmp_path), host, nvml_lib, gpus=gpus)
    cuda = backends(tmp_path, sys.executable, ["cuda"], env, rootfs=root)["cuda"]
    assert (cuda["status"], cuda["gpu"]) == expected
    if host == "busy":
        assert cuda["env"] == {"CUDA_VISIBLE_DEVICES": simhosts.uuid(1), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                               "DEV": "CUDA"}
    else:
        assert cuda["reason"].startswith("not opened: GPU 0 (%s) is busy" % simhosts.uuid(0))


def test_bad_backend_name_is_refused_with_the_choices(tmp_path):
    run = run_module(tmp_path, {"tinygrad": False, "backends": ["vulkan"]})
    assert run.result["failed"] and "vulkan" in run.result["msg"] and "cuda, nv, amd, cpu" in run.result["msg"]


def test_no_backends_by_default(tmp_path):
    facts = run_module(tmp_path, {"tinygrad": False}).facts
    assert "backends" not in facts["tinygrad"]
