# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backend decision and exo's view, from gathered facts."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import conclusions as decide

NVML_OK = {"status": "ok", "message": None}
GPU = {"index": 0, "name": "NVIDIA L4", "chip": "NVIDIA L4", "memory_mib": 22491, "uuid": "GPU-1",
       "mig": {"devices": []}, "flops": {"fp32": 30.3, "fp16": 121.0, "int8": 242.5, "source": "table"}}
VISIBLE = {"devices": [{"cuda_index": 0, "index": 0, "uuid": "GPU-1", "mig_uuid": None}],
           "invalid_entry": None, "cuda_visible_devices": None}
PCI = [{"bus_id": "0000:3b:00.0", "vendor": "nvidia", "driver": "nvidia"}]
HOST = {"cpu_model": "Simulated CPU", "memory_mib": 65536}


def tinygrad(backend, reason=None):
    return {"installed": True, "version": "0.10.0", "backend": backend, "reason": reason}


def test_tinygrads_gpu_choice_wins():
    assert decide.backend(PCI, NVML_OK, [GPU], VISIBLE, [], tinygrad("NV")) == ("nv", None)


def test_tinygrad_choosing_cpu_on_a_gpu_host_is_a_fallback_with_its_warning():
    chosen, reason = decide.backend(PCI, NVML_OK, [GPU], VISIBLE, [], tinygrad("CLANG", "clang not found"))
    assert chosen == "cpu"
    assert "selected CLANG" in reason and "clang not found" in reason


def test_without_tinygrad_nvml_decides():
    not_probed = {"installed": None}
    assert decide.backend(PCI, NVML_OK, [GPU], VISIBLE, [], not_probed) == ("cuda", None)
    nvml_broken = {"status": "driver_not_loaded", "message": "Driver Not Loaded"}
    chosen, reason = decide.backend(PCI, nvml_broken, [], {"devices": []}, [], not_probed)
    assert chosen == "cpu" and "driver_not_loaded" in reason


def test_amdgpu_bound_gpu_means_amd_without_tinygrad():
    amd = [{"name": "AMD Instinct MI300X", "chip": "AMD Instinct MI300X", "memory_mib": 196608, "driver": "amdgpu"}]
    pci = [{"bus_id": "0000:c1:00.0", "vendor": "amd", "driver": "amdgpu"}]
    no_nvml = {"status": "library_not_found", "message": "NVML Shared Library Not Found"}
    assert decide.backend(pci, no_nvml, [], {"devices": []}, amd, {"installed": False}) == ("amd", None)
    caps = decide.exo_capabilities("amd", [], {"devices": []}, amd, HOST)
    assert caps["memory"] == 196608 and caps["chip"] == "AMD Instinct MI300X"


def test_exo_view_of_a_gpu_and_of_the_cpu():
    caps = decide.exo_capabilities("cuda", [GPU], VISIBLE, [], HOST)
    assert caps == {"model": "Linux Box (NVIDIA L4)", "chip": "NVIDIA L4", "memory": 22491,
                    "flops": {"fp32": 30.3, "fp16": 121.0, "int8": 242.5}}
    cpu = decide.exo_capabilities("cpu", [GPU], VISIBLE, [], HOST)
    assert cpu["memory"] == 65536 and cpu["chip"] == "Simulated CPU"


def amd_entry(bus_id, chip, memory_mib, kfd_index, driver="amdgpu", fp32=1.0):
    return {"bus_id": bus_id, "name": None, "chip": chip, "memory_mib": memory_mib, "driver": driver,
            "kfd_index": kfd_index, "flops": {"fp32": fp32, "fp16": 2 * fp32, "int8": 4 * fp32, "source": "table"}}


XTX = amd_entry("0000:c1:00.0", "AMD Radeon RX 7900 XTX", 24576, 1, fp32=61.4)
XT = amd_entry("0000:c3:00.0", "AMD Radeon RX 7900 XT", 20480, 0, fp32=53.4)
PASSED = amd_entry("0000:c1:00.0", "AMD Instinct MI300X", 196608, None, driver="vfio-pci")
NO_KFD = amd_entry("0000:c3:00.0", "AMD Instinct MI210", 65520, None)


@pytest.mark.parametrize("amd_gpus,chosen", [
    ([XTX, XT], XT),            # tinygrad's AMD:0 is the first in KFD order, not the first on the bus
    ([XT, XTX], XT),
    ([PASSED, XT], XT),         # one passed through to a guest is never exo's
    ([PASSED, NO_KFD], NO_KFD),  # no KFD node anywhere: the first bound to amdgpu
    ([PASSED], PASSED),         # tinygrad chose AMD all the same: the only AMD GPU there is
    ([], None),
])
def test_the_amd_gpu_exo_describes_is_tinygrads_first(amd_gpus, chosen):
    assert decide.amd_default(amd_gpus) is chosen


@pytest.mark.parametrize("gpu", [XTX, XT, PASSED, NO_KFD])
def test_each_amd_gpu_is_described_by_its_own_figures(gpu):
    assert decide.amd_capabilities(gpu) == {
        "model": "Linux Box (%s)" % gpu["chip"], "chip": gpu["chip"], "memory": gpu["memory_mib"],
        "flops": dict((kind, gpu["flops"][kind]) for kind in ("fp32", "fp16", "int8"))}


def test_exo_view_of_an_amd_host_is_its_first_gpu_in_kfd_order():
    assert decide.exo_capabilities("amd", [], {"devices": []}, [XTX, XT], HOST) == decide.amd_capabilities(XT)
