# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""busy.reason and the backend decision on busy GPUs, with the real H100's figures as expectations."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _busy as busy
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import conclusions as decide


def gpu(used, free, processes=(), index=0):
    return {"index": index, "uuid": "GPU-%d" % index, "memory_used_mib": used, "memory_free_mib": free,
            "processes": None if processes is None else [{"pid": p, "used_memory_mib": m} for p, m in processes]}


# The real H100 (tests/fixtures/real-h100: health.json and busy_gpu.txt):
# idle, NVML said 480 MiB used and 81079 free with no process; held by another process, nvidia-smi
# said 81017 used and 63 free (the probe reported a CPU host), then 80057 used and 1023 free.
@pytest.mark.parametrize("entry, phrases", [
    (gpu(480, 81079), []),
    (gpu(81017, 63, [(4242, 80512)]), ["1 compute process (pid 4242) holds 80512 MiB", "63 MiB free"]),
    (gpu(80057, 1023, [(4242, 79552)]), ["holds 79552 MiB", "1023 MiB free"]),
    # The same, the process in another container's PID namespace: NVML lists nothing.
    (gpu(81017, 63, []), ["81017 MiB in use by processes NVML does not list", "63 MiB free"]),
    (gpu(900, 2048), []),
    (gpu(200, 300), ["300 MiB free, less than the 1024 MiB"]),
    (gpu(1200, 80000, [(1, 100), (2, 600)]), ["2 compute processes (pid 1, 2) hold 700 MiB"]),
    (gpu(None, None, None), []),
])
def test_reason(entry, phrases):
    why = busy.reason(entry)
    if not phrases:
        assert why is None
    else:
        assert all(phrase in why for phrase in phrases), why


NVML_OK = {"status": "ok", "message": None}
VISIBLE = {"devices": [{"cuda_index": 0, "index": 0, "uuid": "GPU-0", "mig_uuid": None}], "invalid_entry": None,
           "cuda_visible_devices": None}
PCI = [{"bus_id": "0000:00:06.0", "vendor": "nvidia", "driver": "nvidia"}]


def busy_gpu():
    entry = gpu(81017, 63, [(4242, 80512)])
    entry.update(busy=True, busy_reason=busy.reason(entry))
    return entry


def test_a_busy_gpu_tinygrad_could_not_open_stays_cuda():
    # What the real H100 showed: tinygrad 0.14 got no CUDA context and selected OpenCL.
    tinygrad = {"installed": True, "version": "0.14.0", "backend": "CL", "reason": None}
    assert decide.backend(PCI, NVML_OK, [busy_gpu()], VISIBLE, [], tinygrad) == ("cuda", None)
    why = decide.busy_backend(NVML_OK, [busy_gpu()], VISIBLE, tinygrad)
    assert why.startswith("GPU 0 (GPU-0) is busy: 1 compute process (pid 4242)")
    assert why.endswith("so the backend is cuda (tinygrad 0.14.0 selected CL)")


def test_an_idle_gpu_tinygrad_could_not_open_is_cpu():
    idle = gpu(480, 81079)
    idle.update(busy=False, busy_reason=None)
    tinygrad = {"installed": True, "version": "0.14.0", "backend": "CL", "reason": None}
    chosen, why = decide.backend(PCI, NVML_OK, [idle], VISIBLE, [], tinygrad)
    assert chosen == "cpu" and "tinygrad 0.14.0 selected CL" in why
    assert decide.busy_backend(NVML_OK, [idle], VISIBLE, tinygrad) is None


@pytest.mark.parametrize("nvml, visible", [
    ({"status": "gpu_lost", "message": "GPU 0 is lost"}, VISIBLE),
    (NVML_OK, dict(VISIBLE, devices=[], cuda_visible_devices="")),
])
def test_busy_does_not_outweigh_nvml_or_cuda_visible_devices(nvml, visible):
    tinygrad = {"installed": True, "version": "0.14.0", "backend": None, "reason": "not asked"}
    assert decide.backend(PCI, nvml, [busy_gpu()], visible, [], tinygrad)[0] == "cpu"
    assert decide.busy_backend(nvml, [busy_gpu()], visible, tinygrad) is None


def test_tinygrads_own_gpu_choice_needs_no_note():
    tinygrad = {"installed": True, "version": "0.14.0", "backend": "CUDA", "reason": None}
    assert decide.busy_backend(NVML_OK, [busy_gpu()], VISIBLE, tinygrad) is None
