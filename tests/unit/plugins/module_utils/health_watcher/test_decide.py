# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watcher's decisions from tables of cases: floods merged, drains, the health gate, one turn."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import decide

SETTINGS = {"flood_window_s": 60, "hold_s": 300, "settle_s": 10}
UNIT = "exo@GPU-a.service"


def xid(number, source="nvml"):
    return {"gpu": "GPU-a", "kind": "xid", "xid": number, "source": source}


def gpu(**changes):
    return dict(decide.new_gpu("GPU-a", "0000:3b:00.0", 0), **dict({"instance": "active"}, **changes))


def observed(faults):
    """The record after faults given as (time, fault), and which of them counted."""
    record, counted = gpu(), []
    for now, fault in faults:
        record, was = decide.observe(record, fault, now, SETTINGS)
        counted.append(was)
    return record, counted


FLOODS = [
    # (faults, counted, xids by class, needs)
    ([(0, xid(48))], [True], {"reset": 1}, "reset"),
    # the same XID from NVML and the kernel, a second apart: one fault
    ([(0, xid(48)), (1, xid(48, "kernel"))], [True, False], {"reset": 1}, "reset"),
    # a flood of one XID within the window counts once; after the window, again
    ([(t, xid(79)) for t in range(0, 60, 2)] + [(61, xid(79))], [True] + [False] * 29 + [True],
     {"reboot": 2}, "reboot"),
    # two XIDs are two faults; the severer one is what the GPU needs
    ([(0, xid(79)), (1, xid(48))], [True, True], {"reboot": 1, "reset": 1}, "reboot"),
    ([(0, xid(48)), (1, xid(79))], [True, True], {"reboot": 1, "reset": 1}, "reboot"),
    # application errors are counted and need nothing
    ([(0, xid(13)), (1, xid(13)), (2, xid(94))], [True, False, True], {"application": 2}, "none"),
    # NVML's own events, classed as the XID that says the same
    ([(0, {"gpu": "GPU-a", "kind": "ecc_double_bit"})], [True], {"reset": 1}, "reset"),
    ([(0, {"gpu": "GPU-a", "kind": "lost"})], [True], {"reboot": 1}, "reboot"),
    # an unlisted XID drains
    ([(0, xid(777))], [True], {"drain": 1}, "drain"),
]


@pytest.mark.parametrize("faults, counted, classes, needs", FLOODS)
def test_observe_merges_floods(faults, counted, classes, needs):
    record, was = observed(faults)
    assert was == counted
    assert dict((c, n) for c, n in record["xids"].items() if n) == classes
    assert record["needs"] == needs


def test_a_merged_repeat_restarts_the_hold_time():
    record, dummy = observed([(0, xid(48)), (30, xid(48))])
    assert record["last_fault"] == 30


DRAINS = [
    # (record, stopped, actions)
    (gpu(needs="none"), False, []),
    (gpu(needs="reset", reason="r"), True, [{"verb": "stop", "unit": UNIT, "gpu": "GPU-a", "reason": "r"}]),
    # unknown instance state: stopped all the same, to be safe
    (gpu(needs="drain", reason="r", instance="unknown"), True,
     [{"verb": "stop", "unit": UNIT, "gpu": "GPU-a", "reason": "r"}]),
    # an instance the operator stopped is left alone, and not started again later
    (gpu(needs="reset", reason="r", instance="inactive"), False, []),
    (gpu(needs="reset", reason="r", instance="failed"), False, []),
    # already out: nothing more
    (gpu(needs="reset", healthy=False, stopped_by_watcher=True), True, []),
]


@pytest.mark.parametrize("record, stopped, actions", DRAINS)
def test_drain(record, stopped, actions):
    after, done = decide.drain(record, 100, SETTINGS)
    assert done == actions
    assert after["stopped_by_watcher"] == stopped
    assert after["healthy"] is (record["needs"] == "none")


OK = {"answers": True, "verdict": "ok", "recovery_action": None}
GATES = [
    # (answer, seconds since the last fault, open)
    ({"answers": False}, 1000, False),
    (dict(OK, verdict="unusable"), 1000, False),
    # where the driver reports the recovery action, it decides, after settle_s
    (dict(OK, recovery_action=0), 5, False),
    (dict(OK, recovery_action=0), 10, True),
    (dict(OK, recovery_action=1), 1000, False),
    (dict(OK, recovery_action=2), 1000, False),
    # where it does not, the hold time does
    (OK, 299, False),
    (OK, 300, True),
    (dict(OK, verdict="degraded"), 300, True),
]


@pytest.mark.parametrize("answer, quiet, expected", GATES)
def test_gate_verdict(answer, quiet, expected):
    record = gpu(healthy=False, needs="reset", last_fault=1000)
    passed, why = decide.gate_verdict(record, answer, 1000 + quiet, SETTINGS)
    assert passed is expected, why


@pytest.mark.parametrize("stopped_by_watcher, actions", [
    (True, [{"verb": "start", "unit": UNIT, "gpu": "GPU-a",
             "reason": "back: the driver reports recovery action none"}]),
    (False, []),
])
def test_gate_starts_only_what_the_watcher_stopped(stopped_by_watcher, actions):
    record = gpu(healthy=False, needs="reset", last_fault=0, stopped_by_watcher=stopped_by_watcher)
    after, done = decide.gate(record, dict(OK, recovery_action=0), 100, SETTINGS)
    assert done == actions
    assert (after["healthy"], after["needs"], after["stopped_by_watcher"]) == (True, "none", False)


def test_a_turn_takes_faults_in_and_drains_then_lets_back():
    gpus = {"GPU-a": gpu(), "GPU-b": dict(decide.new_gpu("GPU-b"), instance="active")}
    gpus, actions = decide.step(gpus, [xid(48), xid(13), {"gpu": "GPU-x", "kind": "xid", "xid": 48}], {}, 0, SETTINGS)
    assert [(a["verb"], a["unit"]) for a in actions] == [("stop", UNIT)]
    assert (gpus["GPU-a"]["healthy"], gpus["GPU-b"]["healthy"]) == (False, True)
    gpus, actions = decide.step(gpus, [], {"GPU-a": dict(OK, recovery_action=1)}, 100, SETTINGS)
    assert actions == []
    gpus, actions = decide.step(gpus, [], {"GPU-a": dict(OK, recovery_action=0)}, 200, SETTINGS)
    assert [(a["verb"], a["unit"]) for a in actions] == [("start", UNIT)]
    assert gpus["GPU-a"]["healthy"]


def test_application_errors_never_drain():
    gpus, actions = decide.step({"GPU-a": gpu()}, [xid(x) for x in (13, 31, 43, 45, 68, 109, 94)] * 50, {}, 0,
                                SETTINGS)
    assert actions == [] and gpus["GPU-a"]["healthy"]
