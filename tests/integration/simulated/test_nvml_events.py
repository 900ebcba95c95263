# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated libnvidia-ml's fault-injection kit, through the real nvidia-ml-py: events written to
the events file reach an event set, health answers change, a GPU is lost and found."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.simulated import nvml

pytest.importorskip("pynvml")

# The child registers for XIDs and double-bit ECC errors, says so, then reports what it sees at
# each line the test sends on its stdin.
CHILD = textwrap.dedent("""
    import json, sys
    import pynvml as n
    n.nvmlInit()
    handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]
    events = n.nvmlEventSetCreate()
    supported = [n.nvmlDeviceGetSupportedEventTypes(h) for h in handles]
    for h, types in zip(handles, supported):
        if types:
            n.nvmlDeviceRegisterEvents(h, types, events)

    def wait():
        try:
            data = n.nvmlEventSetWait_v2(events, 3000)
        except n.NVMLError as exc:
            return type(exc).__name__
        index = [i for i, h in enumerate(handles) if n.nvmlDeviceGetUUID(h) == n.nvmlDeviceGetUUID(data.device)]
        return [index[0], data.eventType, data.eventData]

    def answers(i):
        try:
            field = n.nvmlDeviceGetFieldValues(handles[i], [n.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION])[0]
            return {"ecc": n.nvmlDeviceGetTotalEccErrors(handles[i], 1, 0),
                    "recovery": field.value.uiVal if field.nvmlReturn == 0 else "not_supported"}
        except n.NVMLError as exc:
            return type(exc).__name__

    print(json.dumps({"supported": supported}), flush=True)
    for line in sys.stdin:
        what = line.split()
        print(json.dumps(wait() if what[0] == "wait" else answers(int(what[1]))), flush=True)
""")


@pytest.fixture
def child(tmp_path, nvml_lib):
    gpus = [nvml.gpu("NVIDIA H100 80GB HBM3", 81559, health=dict(nvml.HEALTHY_H100, recovery_action=0)),
            nvml.gpu("NVIDIA H100 80GB HBM3", 81559, health=nvml.HEALTHY_H100, event_types=0)]
    config = nvml.write_config(str(tmp_path / "nvml.conf"), gpus)
    events = str(tmp_path / "nvml.events")
    # Written before the child starts: its set line is the host's state, its event is history.
    nvml.inject(events, nvml.set_keys(0, ecc_uncorrected_volatile=3), nvml.xid(0, 31))
    env = dict(os.environ, **nvml.environment(nvml_lib, config, events))
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            universal_newlines=True, env=env)

    def ask(line):
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())
    first = json.loads(proc.stdout.readline())
    yield first, ask, events
    proc.stdin.close()
    proc.wait(timeout=30)


def test_events_reach_the_sets_registered_for_them(child):
    first, ask, events = child
    # XID (0x8) and double-bit ECC (0x2) on the first GPU; the second delivers none
    assert first == {"supported": [0xA, 0]}
    assert ask("wait") == "NVMLError_Timeout", "an event written before init is history, not delivered"
    nvml.inject(events, nvml.xid(0, 79), nvml.ecc_double_bit(0), nvml.xid(1, 48))
    assert ask("wait") == [0, 0x8, 79]
    assert ask("wait") == [0, 0x2, 0]
    assert ask("wait") == "NVMLError_Timeout", "the second GPU registered for nothing"


def test_health_answers_change_and_a_gpu_is_lost_and_found(child):
    dummy, ask, events = child
    assert ask("answers 0") == {"ecc": 3, "recovery": 0}
    assert ask("answers 1") == {"ecc": 0, "recovery": "not_supported"}
    nvml.inject(events, nvml.set_keys(0, recovery_action=1, ecc_uncorrected_volatile=4))
    assert ask("answers 0") == {"ecc": 4, "recovery": 1}
    nvml.inject(events, nvml.set_keys(1, lost=1))
    assert ask("answers 1") == "NVMLError_GpuIsLost"
    nvml.inject(events, nvml.set_keys(1, lost=0))
    assert ask("answers 1") == {"ecc": 0, "recovery": "not_supported"}


@pytest.mark.parametrize("call, message", [
    (lambda: nvml.set_keys(0, name=1), "name cannot be set"),
    (lambda: nvml.xid(99, 79), "GPU index must be an integer from 0 to 63"),
])
def test_bad_lines_are_refused_before_they_are_written(call, message):
    with pytest.raises(ValueError, match=message):
        call()
