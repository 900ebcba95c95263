# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts over a simulated libnvidia-ml (built from tests/simulated) under the real nvidia-ml-py:
GPU sets, the fault matrix, and the facts that depend on the PCI bus."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from importlib import metadata

import pytest

from tests.helpers import run_module
from tests.simulated import nvml as sim
from tests.simulated import sysfs as simsysfs

# A deadline check, not a speed check: generous for a shared, noisy machine.
MARGIN = 5.0


def h100(i, **kw):
    kw.setdefault("uuid", "GPU-%08x-1111-2222-3333-44445555%04x" % (0x9b7c0000 + i, i))
    kw.setdefault("pci_bus_id", "%08X:%02X:00.0" % (0, 0x18 + 0x10 * i))
    kw.setdefault("cc", (9, 0))
    return sim.gpu("NVIDIA H100 80GB HBM3", 81559, **kw)


@pytest.mark.parametrize("count", [1, 2, 8])
def test_simulated_gpu_sets(simulated_host, count):
    run = simulated_host([h100(i, minor=count - 1 - i) for i in range(count)])
    facts = run.facts
    assert facts["nvml"]["status"] == "ok"
    assert facts["nvml"]["driver_version"] == "550.54.15" and facts["nvml"]["cuda_driver_version"] == "12.4"
    assert facts["nvml"]["library_version"] == metadata.version("nvidia-ml-py")
    assert [g["index"] for g in facts["gpus"]] == list(range(count))
    # The minor number is the driver's, not the index.
    assert [g["minor"] for g in facts["gpus"]] == [count - 1 - i for i in range(count)]
    first = facts["gpus"][0]
    assert first["pci_bus_id"] == "0000:18:00.0"
    assert first["memory_mib"] == 81559 and first["compute_capability"] == "9.0"
    assert first["architecture"] == "hopper"
    assert first["flops"]["source"] == "table" and first["flops"]["fp32"] > 50
    assert first["mig"] == {"supported": False, "enabled": False, "pending": False, "devices": []}
    assert len(facts["visible"]["devices"]) == count
    assert facts["backend"] == "cuda" and facts["fallback_reason"] is None
    assert facts["exo"]["memory"] == 81559 and facts["exo"]["flops"]["fp32"] == first["flops"]["fp32"]
    assert facts["errors"] == []


def test_simulated_exo_uses_the_visible_gpu_not_index_0(simulated_host):
    gpus = [sim.gpu("Tesla T4", 15360, uuid="GPU-t4", pci_bus_id="00000000:18:00.0", cc=(7, 5)),
            h100(1, uuid="GPU-h100")]
    facts = simulated_host(gpus, env={"CUDA_VISIBLE_DEVICES": "GPU-h1"}).facts
    assert [d["index"] for d in facts["visible"]["devices"]] == [1]
    assert facts["exo"]["memory"] == 81559 and "H100" in facts["exo"]["model"]


def test_simulated_mig_devices_with_their_uuids(simulated_host):
    mig = dict(current=1, pending=1, devices=[
        dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000001", memory_mib=9856, gi=7, ci=0),
        dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000002", memory_mib=19968, gi=3, ci=0)])
    gpu = sim.gpu("NVIDIA A100-SXM4-80GB", 81920, uuid="GPU-a100", cc=(8, 0), mig=mig)
    facts = simulated_host([gpu], env={"CUDA_VISIBLE_DEVICES": "MIG-aaaaaaaa-0000-0000-0000-000000000002"}).facts
    entry = facts["gpus"][0]
    assert entry["mig"]["enabled"] and entry["mig"]["pending"]
    assert [(d["uuid"][-1], d["memory_mib"], d["gpu_instance_id"], d["compute_instance_id"])
            for d in entry["mig"]["devices"]] == [("1", 9856, 7, 0), ("2", 19968, 3, 0)]
    assert facts["visible"]["devices"][0]["mig_uuid"].endswith("2")
    assert facts["exo"]["memory"] == 19968  # the MIG slice, not the whole GPU


def test_simulated_unknown_name_is_estimated_from_cores_and_clocks(simulated_host):
    gpu = sim.gpu("NVIDIA Future GPU X1", 98304, cc=(12, 0), cores=21760, max_sm_clock_mhz=2400)
    entry = simulated_host([gpu]).facts["gpus"][0]
    assert entry["chip"] is None and entry["flops"]["source"] == "estimated"
    assert entry["flops"]["fp32"] == pytest.approx(21760 * 2400 * 2 / 1e6, rel=1e-3)


def test_simulated_unknown_name_without_cores_is_unknown_never_zero(simulated_host):
    facts = simulated_host([sim.gpu("NVIDIA Future GPU X2", 98304, cc=(12, 0))]).facts
    assert facts["gpus"][0]["flops"] == {"fp32": None, "fp16": None, "int8": None, "source": "unknown"}


@pytest.mark.parametrize("memory_mib, size", [(10010, "10"), (12288, "12")])
def test_simulated_rtx_3080_told_apart_by_memory(simulated_host, memory_mib, size):
    entry = simulated_host([sim.gpu("NVIDIA GeForce RTX 3080", memory_mib, cc=(8, 6))]).facts["gpus"][0]
    assert entry["chip"] is not None and size in entry["chip"]


def test_simulated_non_utf8_name_is_kept_and_reported(simulated_host):
    gpu = sim.gpu("x", 16384, name_bytes=b"NVIDIA \xff\xfe GPU")
    facts = simulated_host([gpu]).facts
    assert facts["gpus"][0]["name"] == u"NVIDIA \ufffd\ufffd GPU"
    assert [e["kind"] for e in facts["errors"]] == ["decode_error"]


@pytest.mark.parametrize("init_error, status", [
    ("DRIVER_NOT_LOADED", "driver_not_loaded"),
    ("LIB_RM_VERSION_MISMATCH", "version_mismatch"),
    ("NO_PERMISSION", "no_permission"),
    ("GPU_IS_LOST", "gpu_lost"),
    ("TIMEOUT", "timeout"),
    ("UNKNOWN", "error"),
])
def test_simulated_init_failures(simulated_host, init_error, status):
    run = simulated_host([h100(0)], init_error=init_error)
    assert not run.result.get("failed")
    assert run.facts["nvml"]["status"] == status
    assert run.facts["gpus"] == [] and run.facts["backend"] == "cpu"


@pytest.mark.parametrize("modules, status", [((), "driver_not_loaded"), (("nvidia",), "error")])
def test_simulated_unknown_init_error_without_the_kernel_module(simulated_host, modules, status):
    facts = simulated_host([h100(0)], init_error="UNKNOWN", modules=modules,
                           pci=[simsysfs.nvidia_gpu("0000:18:00.0", driver="none")]).facts
    assert facts["nvml"]["status"] == status
    assert facts["driver_needed"] is True


def test_library_not_found_on_this_machine(tmp_path):
    # No libnvidia-ml at all (this machine has none): nvidia-ml-py's own LibraryNotFound.
    facts = run_module(tmp_path, {"tinygrad": False}).facts
    assert facts["nvml"]["status"] == "library_not_found" and "libnvidia-ml.so.1" in facts["nvml"]["message"]
    assert facts["backend"] == "cpu" and facts["fallback_reason"]


def test_simulated_not_installed(tmp_path, simulated_host):
    # A directory that shadows nvidia-ml-py with a module that cannot be imported.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pynvml.py").write_text(u"raise ImportError('No module named pynvml')\n")
    import os
    facts = simulated_host([h100(0)], env={"PYTHONPATH": os.pathsep.join(
        [str(shadow), os.environ.get("PYTHONPATH", "")])}).facts
    assert facts["nvml"]["status"] == "not_installed" and "pip install nvidia-ml-py" in facts["nvml"]["message"]


def test_simulated_one_lost_gpu_costs_only_that_gpu(simulated_host):
    run = simulated_host([h100(0), h100(1), h100(2)], errors={("nvmlDeviceGetHandleByIndex_v2", 1): "GPU_IS_LOST"})
    facts = run.facts
    assert facts["nvml"]["status"] == "gpu_lost"
    assert [g["index"] for g in facts["gpus"]] == [0, 2]
    assert [e["kind"] for e in facts["errors"]] == ["gpu_lost"]


def test_simulated_failing_call_costs_only_that_field(simulated_host):
    facts = simulated_host([h100(0), h100(1)], errors={("nvmlDeviceGetUUID", 0): "UNKNOWN"}).facts
    assert facts["nvml"]["status"] == "ok"
    assert facts["gpus"][0]["uuid"] is None and facts["gpus"][1]["uuid"]
    assert facts["gpus"][0]["memory_mib"] == 81559
    assert [e["kind"] for e in facts["errors"]] == ["error"]


def test_simulated_old_driver_missing_symbols(simulated_host, legacy_nvml_lib):
    facts = simulated_host([h100(0, numa_node=1, cores=16896, mig=dict(current=0, pending=0, devices=[]))],
                           lib=legacy_nvml_lib).facts
    assert facts["nvml"]["status"] == "ok"
    gpu = facts["gpus"][0]
    assert gpu["uuid"] and gpu["memory_mib"] == 81559
    assert gpu["numa_node"] is None and gpu["mig"]["supported"] is False
    kinds = set(e["kind"] for e in facts["errors"])
    assert kinds == {"function_not_found"}


def test_simulated_hang_is_abandoned_in_time(simulated_host):
    run = simulated_host([h100(0)], hang_in="nvmlDeviceGetName", args={"timeout": 1.0})
    assert run.facts["nvml"]["status"] == "timeout"
    assert run.facts["backend"] == "cpu"
    assert run.elapsed < 1.0 + MARGIN


def test_simulated_crash_costs_only_the_nvml_stage(simulated_host):
    facts = simulated_host([h100(0)], crash_in="nvmlDeviceGetUUID",
                           pci=[simsysfs.nvidia_gpu("0000:18:00.0")]).facts
    assert facts["nvml"]["status"] == "error"
    assert [(e["stage"], e["kind"]) for e in facts["errors"]] == [("nvml", "crash")]
    assert facts["pci"][0]["bus_id"] == "0000:18:00.0"  # the rest of the facts are there


def test_simulated_numa_and_cpus_come_from_the_gpus_pci_device(simulated_host):
    facts = simulated_host([h100(0, numa_node=0)],
                           pci=[simsysfs.nvidia_gpu("0000:18:00.0", numa_node=1, cpu_list="16-31")]).facts
    assert (facts["gpus"][0]["numa_node"], facts["gpus"][0]["cpu_list"]) == (1, "16-31")


@pytest.mark.parametrize("pci_driver, nvml_error, needed, phrase", [
    ("none", "DRIVER_NOT_LOADED", True, "has driver none"),
    ("nouveau", "DRIVER_NOT_LOADED", True, "nouveau"),
    ("nvidia", "DRIVER_NOT_LOADED", True, "kernel module is not loaded"),
    ("nvidia", "LIB_RM_VERSION_MISMATCH", False, "reboot pending"),
    ("vfio-pci", "DRIVER_NOT_LOADED", False, "vfio-pci"),
    ("nvidia", None, False, "bound to every NVIDIA GPU"),
])
def test_simulated_driver_needed(simulated_host, pci_driver, nvml_error, needed, phrase):
    facts = simulated_host([h100(0)], init_error=nvml_error,
                           pci=[simsysfs.nvidia_gpu("0000:18:00.0", driver=pci_driver)]).facts
    assert facts["driver_needed"] is needed
    assert phrase in facts["driver_reason"]


def test_simulated_hidden_gpus_fall_back_to_cpu_with_the_reason(simulated_host):
    facts = simulated_host([h100(0)], env={"CUDA_VISIBLE_DEVICES": "7"}).facts
    assert facts["backend"] == "cpu" and "CUDA_VISIBLE_DEVICES" in facts["fallback_reason"]


def test_bad_arguments_fail_clearly(tmp_path):
    run = run_module(tmp_path, {"timeout": 0})
    assert run.result["failed"] and "timeout" in run.result["msg"]
    run = run_module(tmp_path, {"rootfs": str(tmp_path / "missing")})
    assert run.result["failed"] and "rootfs" in run.result["msg"]
    run = run_module(tmp_path, {"bogus": 1})
    assert run.result["failed"] and "bogus" in run.result["msg"]
