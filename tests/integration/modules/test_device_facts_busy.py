# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Busy GPUs: device_facts over the simulated libnvidia-ml (memory in use, compute processes) under
the real nvidia-ml-py, with a simulated tinygrad that marks every device open.

The numbers are those of the real H100 (tests/fixtures/real-h100/busy_gpu.txt): idle, NVML reports
480 MiB used; with another process holding the GPU, 63 MiB free, tinygrad 0.14 got no CUDA context
and fell to OpenCL, and the probe reported a CPU host.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from tests.simulated import hosts as simhosts
from tests.simulated import sysfs as simsysfs
from tests.helpers import COLLECTIONS, device_module, simulated_tinygrad

# What tinygrad did on the real busy H100: no CUDA context, so OpenCL on the CPU (POCL).
OPENS_CL = device_module("""
    with open(os.environ["SIMULATED_MARK"], "a") as mark:
        mark.write("Device.DEFAULT opened devices\\n")
    return "CL"
""")


@pytest.fixture
def busy_host(tmp_path, simulated_host, bare_python):
    """probe(gpus, args=None) -> Run: NVIDIA GPUs on the simulated PCI bus, tinygrad simulated."""
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", {"tinygrad/device.py": OPENS_CL})
    mark = tmp_path / "opened"

    def probe(gpus, args=None, lib=None, env=None, **config):
        module_args = {"tinygrad": True, "tinygrad_python": bare_python}
        module_args.update(args or {})
        environ = {"SIMULATED_MARK": str(mark), "PYTHONPATH": os.pathsep.join([site, COLLECTIONS])}
        environ.update(env or {})
        run = simulated_host(gpus, pci=[simsysfs.nvidia_gpu(simhosts.bus(i)) for i in range(len(gpus))],
                             args=module_args, lib=lib, env=environ, **config)
        run.opened = mark.exists()
        return run
    return probe


def serving_h100(i=0):
    """GPU 0 of the simulated host "busy": an exo node (pid 4242) holds all but 63 MiB."""
    gpu = dict(simhosts.HOSTS["busy"][0][0])
    if i:
        gpu.update(uuid=simhosts.uuid(i), pci_bus_id=simhosts.h100(i)["pci_bus_id"], minor=i)
    return gpu


def test_simulated_busy_gpu_is_a_gpu_host_and_is_never_opened(busy_host):
    run = busy_host([serving_h100()])
    facts = run.facts
    gpu = facts["gpus"][0]
    assert (gpu["memory_used_mib"], gpu["memory_free_mib"]) == (81496, 63)
    assert gpu["processes"] == [{"pid": 4242, "used_memory_mib": 81016}]
    assert gpu["busy"] is True
    assert "1 compute process (pid 4242) holds 81016 MiB" in gpu["busy_reason"]
    assert "63 MiB free" in gpu["busy_reason"]
    # tinygrad was asked for its version only: no device was opened on the serving GPU.
    assert not run.opened
    assert facts["tinygrad"]["installed"] is True and facts["tinygrad"]["backend"] is None
    assert facts["tinygrad"]["reason"].startswith("not asked to open a device: GPU 0 (%s) is busy" % gpu["uuid"])
    assert facts["tinygrad"]["select_env"]["cuda"] == {"DEV": "CUDA"}
    assert facts["backend"] == "cuda" and facts["fallback_reason"] is None
    assert facts["backend_reason"] == ("%s; NVML sees the visible GPUs healthy, so the backend is cuda"
                                       % facts["tinygrad"]["reason"][len("not asked to open a device: "):])
    assert facts["exo"]["memory"] == 81559
    assert facts["errors"] == []


def test_simulated_idle_gpu_is_opened_and_tinygrads_choice_counts(busy_host):
    # The same host idle, with what the real idle H100 reported as used (driver reserve).
    run = busy_host([simhosts.h100(0, memory_used_mib=480)])
    gpu = run.facts["gpus"][0]
    assert (gpu["busy"], gpu["busy_reason"], gpu["processes"]) == (False, None, [])
    assert gpu["memory_free_mib"] == 81079
    assert run.opened
    # Not busy: a GPU tinygrad cannot open is not usable, whatever NVML says.
    assert run.facts["backend"] == "cpu" and "tinygrad 0.14.0 selected CL" in run.facts["fallback_reason"]
    assert run.facts["backend_reason"] is None


@pytest.mark.parametrize("free_mib, busy", [(1023, True), (2048, False)])
def test_simulated_memory_held_by_a_process_nvml_cannot_list(busy_host, free_mib, busy):
    # Another container's process: NVML lists none, the memory says it.
    run = busy_host([simhosts.h100(0, memory_used_mib=81559 - free_mib)] if busy
                    else [simhosts.h100(0, memory_used_mib=900)])
    gpu = run.facts["gpus"][0]
    assert gpu["busy"] is busy and gpu["processes"] == []
    assert run.opened is not busy
    if busy:
        assert "in use by processes NVML does not list" in gpu["busy_reason"]
        assert run.facts["backend"] == "cuda"


def test_simulated_one_busy_gpu_of_two(busy_host):
    run = busy_host(simhosts.HOSTS["busy"][0])
    facts = run.facts
    assert [g["busy"] for g in facts["gpus"]] == [True, False]
    assert not run.opened
    assert facts["backend"] == "cuda" and facts["backend_reason"].startswith("GPU 0 ")


def test_simulated_busy_gpu_hidden_by_cuda_visible_devices_is_not_opened_either(busy_host):
    # tinygrad's probe clears CUDA_VISIBLE_DEVICES and opens the host's first GPU: a hidden busy
    # GPU keeps it closed too, and the visible idle GPU is taken on NVML's word.
    run = busy_host([serving_h100(0), simhosts.h100(1)], env={"CUDA_VISIBLE_DEVICES": simhosts.uuid(1)})
    facts = run.facts
    assert [d["index"] for d in facts["visible"]["devices"]] == [1]
    assert not run.opened
    assert facts["backend"] == "cuda" and facts["exo"]["memory"] == 81559


def test_simulated_all_gpus_hidden_stays_a_cpu_host(busy_host):
    run = busy_host([serving_h100(0)], env={"CUDA_VISIBLE_DEVICES": ""})
    assert run.facts["backend"] == "cpu" and run.facts["backend_reason"] is None
    assert not run.opened


def test_simulated_old_driver_without_the_process_list(busy_host, legacy_nvml_lib):
    # R418-era drivers lack nvmlDeviceGetComputeRunningProcesses_v3: that costs the list alone.
    run = busy_host([serving_h100()], lib=legacy_nvml_lib)
    gpu = run.facts["gpus"][0]
    assert gpu["processes"] is None and gpu["busy"] is True
    assert "63 MiB free" in gpu["busy_reason"]
    assert any(e["kind"] == "function_not_found" and "ComputeRunningProcesses" in e["message"]
               for e in run.facts["errors"])
    assert not run.opened and run.facts["backend"] == "cuda"


def test_simulated_failing_process_list_costs_only_that_field(busy_host):
    run = busy_host([simhosts.h100(0), simhosts.h100(1)], args={"tinygrad": False},
                    errors={("nvmlDeviceGetComputeRunningProcesses_v3", 0): "UNKNOWN"})
    gpus = run.facts["gpus"]
    assert gpus[0]["processes"] is None and gpus[1]["processes"] == []
    # Memory still tells: both idle.
    assert [g["busy"] for g in gpus] == [False, False]
    assert [e["kind"] for e in run.facts["errors"]] == ["error"]
