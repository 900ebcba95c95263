# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The circuit breaker and the opt-in reset, from tables of cases: the share of a host's GPUs held
out at once, the resets an hour per GPU and per host, the fabric manager's order, the commands."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import decide

ON = {"reset": True, "reset_per_gpu_per_hour": 1, "reset_per_host_per_hour": 2, "max_out_share": 0.5}
HOUR = 3600


def gpu(uuid="GPU-a", **changes):
    base = dict(decide.new_gpu(uuid, "00000000:3B:00.0", 0), instance="active")
    return dict(base, **changes)


def held(uuid="GPU-a", **changes):
    """A GPU the watcher drained for a reset at time 0, whose instance has stopped."""
    return gpu(uuid, **dict(dict(healthy=False, needs="reset", reason="XID 48", last_fault=0, since=0,
                                 stopped_by_watcher=True, instance="inactive"), **changes))


@pytest.mark.parametrize("total, share, allowed", [
    (8, 0.5, 4), (8, 0.25, 2), (8, 1, 8), (4, 0.5, 2), (3, 0.5, 1),
    # one GPU may always go out, even where the share rounds down to none
    (1, 0.5, 1), (2, 0.1, 1), (10, 0.3, 3),
])
def test_out_allowed(total, share, allowed):
    assert decide.out_allowed(total, {"max_out_share": share}) == allowed


BREAKER = [
    # (GPUs out already, host's GPUs, share, drained)
    (0, 4, 0.5, True),
    (1, 4, 0.5, True),
    (2, 4, 0.5, False),  # the edge: the third of four would pass the share
    (0, 1, 0.5, True),
    (1, 2, 0.5, False),
    (3, 8, 0.5, True),
    (4, 8, 0.5, False),
]


@pytest.mark.parametrize("out, total, share, drained", BREAKER)
def test_the_breaker_holds_drains_past_the_share(out, total, share, drained):
    record = gpu(needs="drain", reason="XID 777")
    after, actions = decide.drain(record, 5, {"max_out_share": share}, out, total)
    assert (not after["healthy"], bool(actions)) == (drained, drained)
    assert (after["breaker"] is None) is drained
    if not drained:
        assert after["breaker"].startswith("breaker open: %d of %d GPUs out already" % (out, total))


def test_a_turn_drains_up_to_the_share_and_the_next_once_one_is_back():
    gpus = dict((u, gpu(u)) for u in ("GPU-a", "GPU-b", "GPU-c", "GPU-d"))
    faults = [{"gpu": u, "kind": "xid", "xid": 777} for u in gpus]
    gpus, actions = decide.step(gpus, faults, {}, 0, {"max_out_share": 0.5, "hold_s": 10, "settle_s": 0})
    assert [a["gpu"] for a in actions] == ["GPU-a", "GPU-b"]
    assert [u for u, g in sorted(gpus.items()) if g["breaker"]] == ["GPU-c", "GPU-d"]
    back = {"answers": True, "verdict": "ok", "recovery_action": 0}
    gpus, actions = decide.step(gpus, [], {"GPU-a": back}, 20, {"max_out_share": 0.5, "hold_s": 10, "settle_s": 0})
    assert [(a["verb"], a["gpu"]) for a in actions] == [("start", "GPU-a"), ("stop", "GPU-c")]


REFUSALS = [
    # (record, settings, other GPUs' records, platform, refusal)
    (held(), {}, [], {}, "resets are off (exo_node_health_reset)"),
    (held(), ON, [], {}, None),
    (held(needs="reboot"), ON, [], {}, "its fault does not ask for a reset"),
    (held(needs="drain"), ON, [], {}, "its fault does not ask for a reset"),
    (gpu(needs="reset"), ON, [], {}, "the watcher does not hold it out"),  # e.g. held in by the breaker
    (held(stopped_by_watcher=False), ON, [], {}, "the watcher does not hold it out"),  # the operator stopped it
    (held(instance="active"), ON, [], {}, "its instance has not stopped yet"),
    (held(instance="deactivating"), ON, [], {}, "its instance has not stopped yet"),
    (held(instance="failed"), ON, [], {}, None),
    (held(reset_at=5), ON, [], {}, "reset already, since its last fault"),
    (held(reset_at=5, last_fault=6), ON, [], {}, None),  # a new fault after the reset
    # per GPU an hour: the edge is 3600 s after the last reset
    (held(last_fault=HOUR - 1, resets=[0]), ON, [], {}, "breaker open: reset_per_gpu_per_hour reached"),
    (held(last_fault=HOUR, resets=[0]), dict(ON, reset_per_gpu_per_hour=1), [], {}, None),
    (held(last_fault=10, resets=[0]), dict(ON, reset_per_gpu_per_hour=2), [], {}, None),
    (held(), dict(ON, reset_per_gpu_per_hour=0), [], {}, "breaker open: reset_per_gpu_per_hour reached"),
    # per host an hour: the other GPUs' resets count
    (held(last_fault=100), ON, [gpu("GPU-b", resets=[10]), gpu("GPU-c", resets=[20])], {},
     "breaker open: reset_per_host_per_hour reached"),
    (held(last_fault=100), ON, [gpu("GPU-b", resets=[10])], {}, None),
    (held(last_fault=HOUR + 10), ON, [gpu("GPU-b", resets=[10]), gpu("GPU-c", resets=[20])], {}, None),
    # NVSwitch: Hopper resets alone; Ampere through the fabric manager; before Ampere not alone
    (held(), ON, [], {"nvswitch": True, "architectures": {"GPU-a": 9}}, None),
    (held(), ON, [], {"nvswitch": True, "architectures": {"GPU-a": 10}}, None),
    (held(), ON, [], {"nvswitch": True, "fabric_manager": True, "architectures": {"GPU-a": 7}}, None),
    (held(), ON, [], {"nvswitch": True, "fabric_manager": False, "architectures": {"GPU-a": 7}},
     "the fabric manager is not running, and an Ampere NVSwitch system resets a GPU through it"),
    (held(), ON, [], {"nvswitch": True, "fabric_manager": False, "architectures": {}},
     "the fabric manager is not running, and an Ampere NVSwitch system resets a GPU through it"),
    (held(), ON, [], {"nvswitch": True, "fabric_manager": True, "architectures": {"GPU-a": 5}},
     "before Ampere a GPU on NVSwitch resets only with all its NVLink peers: reset the host's GPUs by hand"),
    (held(), ON, [], {"nvswitch": False, "architectures": {"GPU-a": 5}}, None),
]


@pytest.mark.parametrize("record, settings, others, platform, refusal", REFUSALS)
def test_reset_refusal(record, settings, others, platform, refusal):
    host = dict((g["uuid"], g) for g in [record] + others)
    now = max([record["last_fault"] or 0] + [t for g in others for t in g["resets"]])
    assert decide.reset_refusal(record, host, now, settings, platform) == refusal


def test_one_reset_a_turn_and_the_others_say_why_not():
    gpus = {"GPU-a": held("GPU-a"), "GPU-b": held("GPU-b"), "GPU-c": gpu("GPU-c")}
    gpus, actions = decide.remedy(gpus, 0, ON)
    assert [(a["verb"], a["gpu"], a["unit"]) for a in actions] == [("reset", "GPU-a", "exo@GPU-a.service")]
    assert [gpus[u]["remedy"] for u in sorted(gpus)] == [
        "resetting", "not reset: another GPU resets first", None]


@pytest.mark.parametrize("persistence, commands", [
    (False, [("reset", ["nvidia-smi", "-r", "-i", "00000000:3B:00.0"])]),
    (True, [("persistence off", ["nvidia-smi", "-i", "00000000:3B:00.0", "-pm", "0"]),
            ("reset", ["nvidia-smi", "-r", "-i", "00000000:3B:00.0"]),
            ("persistence on", ["nvidia-smi", "-i", "00000000:3B:00.0", "-pm", "1"])]),
])
def test_reset_commands_handle_persistence(persistence, commands):
    assert decide.reset_commands(held(), persistence) == commands


@pytest.mark.parametrize("ended, needs, reset_at, remedy", [
    (True, "reset", 50, "reset: done"),
    # a failed or hung reset leaves a GPU only a reboot clears: reported, never done
    (False, "reboot", None, "the reset failed (timed out): needs reboot"),
])
def test_reset_done(ended, needs, reset_at, remedy):
    after = decide.reset_done(held(resets=[-HOUR - 1]), 50, ended, "done" if ended else "timed out")
    assert (after["needs"], after["reset_at"], after["remedy"], after["resets"]) == (needs, reset_at, remedy, [50])


@pytest.mark.parametrize("answer, open_", [
    # after the watcher's reset, a driver without a recovery action field need not wait hold_s
    ({"answers": True, "verdict": "ok", "recovery_action": None}, True),
    ({"answers": True, "verdict": "ok", "recovery_action": 1}, False),
    ({"answers": False}, False),
])
def test_the_gate_after_a_reset(answer, open_):
    record = held(reset_at=20, last_fault=0)
    assert decide.gate_verdict(record, answer, 30, {"hold_s": 300, "settle_s": 10})[0] is open_


def test_a_gpu_that_needs_a_reboot_is_never_reset():
    gpus, actions = decide.step({"GPU-a": held(needs="reboot")}, [{"gpu": "GPU-a", "kind": "lost"}], {}, 0, ON)
    assert actions == [] and gpus["GPU-a"]["needs"] == "reboot"
