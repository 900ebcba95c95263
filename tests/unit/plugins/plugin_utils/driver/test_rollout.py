# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling driver change's planner: the batches of exo_rollout_batch as Ansible's serial cuts them,
what the fleet serves while each batch is out, and the gate after the change, over the recorded facts
of the simulated hosts (tests/fixtures/simulated) as tables of cases."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import rollout
from tests.helpers import recorded_facts

HOSTS = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("serial, cut", [
    (1, [["a"], ["b"], ["c"], ["d"], ["e"]]),
    ("2", [["a", "b"], ["c", "d"], ["e"]]),
    (5, [HOSTS]),
    (9, [HOSTS]),
    ("40%", [["a", "b"], ["c", "d"], ["e"]]),
    ("10%", [["a"], ["b"], ["c"], ["d"], ["e"]]),   # rounded down, at least one host
    ("100%", [HOSTS]),
])
def test_batches_are_cut_as_serial_cuts_them(serial, cut):
    assert rollout.batches(HOSTS, serial) == cut


@pytest.mark.parametrize("order, first", [
    ("inventory", ["a", "b"]), ("reverse_inventory", ["e", "d"]), ("sorted", ["a", "b"]), ("reverse_sorted", ["e", "d"]),
])
def test_batches_follow_the_plays_order(order, first):
    assert rollout.batches(["b", "a", "c", "e", "d"] if order.endswith("sorted") else HOSTS, 2, order)[0] == first


def test_shuffle_is_refused_since_the_preview_cannot_know_it():
    with pytest.raises(ValueError) as raised:
        rollout.batches(HOSTS, 1, "shuffle")
    assert str(raised.value).startswith("exo_rollout_order is 'shuffle'; give one of inventory, reverse_inventory")


@pytest.mark.parametrize("serial", [0, "0", "-1", "two", "150%", "0%", "", "2.5"])
def test_a_bad_batch_size_is_refused_naming_the_variable(serial):
    with pytest.raises(ValueError) as raised:
        rollout.batches(HOSTS, serial)
    assert str(raised.value).startswith("exo_rollout_batch is %r; give a number of hosts" % (serial,))


def report(*served):
    models = ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b"]
    return {"models": [{"model": m, "serves": m in served} for m in models]}


def test_preview_names_what_each_batch_keeps_and_loses():
    whole = report("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-70b")
    rows = rollout.preview([["gpu-a"], ["gpu-b", "cpu-a"]], whole,
                           [report("llama-3.2-1b", "llama-3.2-3b"), report("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-70b")])
    assert rows["serves"] == ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-70b"]
    assert [(r["hosts"], r["serves"], r["stops_serving"]) for r in rows["batches"]] == [
        (["gpu-a"], ["llama-3.2-1b", "llama-3.2-3b"], ["llama-3.1-70b"]),
        (["gpu-b", "cpu-a"], ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-70b"], []),
    ]
    assert rows["batches"][0]["line"] == ("batch 1 of 2 (gpu-a out): the fleet serves llama-3.2-1b, llama-3.2-3b; "
                                          "it stops serving llama-3.1-70b until the batch is back")
    assert rows["batches"][1]["line"].endswith("; nothing is lost")


def test_preview_of_a_batch_that_takes_everything():
    rows = rollout.preview([["gpu-a"]], report("llama-3.2-1b"), [report()])
    assert rows["batches"][0]["line"] == ("batch 1 of 1 (gpu-a out): the fleet serves no model; it stops serving "
                                          "llama-3.2-1b until the batch is back")


def with_health(name, index, **health):
    facts = copy.deepcopy(recorded_facts(name))
    facts["gpus"][index]["health"].update(health)
    return facts


def without_gpu(name, index):
    facts = copy.deepcopy(recorded_facts(name))
    del facts["gpus"][index]
    return facts


UNUSABLE = dict(verdict="unusable", reasons=["3 uncorrectable ECC errors since the driver loaded; reset the GPU (nvidia-smi -r)"])
DEGRADED = dict(verdict="degraded", reasons=["persistence mode is off; enable nvidia-persistenced (the driver role does)"])

# (case, facts before, facts after, reboot pending, accepted verdicts, rules that fail, words in the message)
GATE = [
    ("same healthy GPUs", "two_h100", "two_h100", None, ["ok"], [], "healthy after the change: NVML ok driver 550.54.15, 2 GPU(s) ok"),
    ("no NVIDIA hardware before or after", "cpu_only", "cpu_only", None, ["ok"], [], "NVML library_not_found, 0 GPU(s)"),
    ("a driver installed where none was", "no_driver", "one", None, ["ok"], [], "NVML ok"),
    ("NVML gone after the change", "two_h100", "nvml_broken", None, ["ok"], ["nvml", "gpus"], "NVML answers driver_not_loaded"),
    ("driver upgraded, not rebooted", "two_h100", "mismatch", "the new branch loads at the next boot",
     ["ok"], ["reboot", "nvml", "gpus"], "only after a reboot, which did not happen: the new branch loads at the next boot"),
    ("a GPU lost", "two_h100", "gpu_lost", None, ["ok"], ["nvml", "gpus"], "NVML answers gpu_lost"),
    ("a GPU fell off the bus", "two_h100", without_gpu("two_h100", 1), None, ["ok"], ["gpus"], "GPU 1 ("),
    ("uncorrectable ECC errors", "two_h100", with_health("two_h100", 0, **UNUSABLE), None, ["ok"], ["health"],
     "GPU 0 (GPU-"),
    ("degraded, only ok accepted", "two_h100", with_health("two_h100", 1, **DEGRADED), None, ["ok"], ["health"],
     "is degraded: persistence mode is off"),
    ("degraded, degraded accepted", "two_h100", with_health("two_h100", 1, **DEGRADED), None, ["ok", "degraded"], [],
     "2 GPU(s) ok/degraded"),
    ("unusable even where degraded is accepted", "two_h100", with_health("two_h100", 0, **UNUSABLE), None,
     ["ok", "degraded"], ["health"], "is unusable: 3 uncorrectable ECC errors"),
    ("no facts after the change", "two_h100", {}, None, ["ok"], ["facts"], "no device facts after the change"),
]


@pytest.mark.parametrize("before, after, pending, accept, failed, words", [case[1:] for case in GATE],
                         ids=[case[0] for case in GATE])
def test_gate(before, after, pending, accept, failed, words):
    facts = [recorded_facts(f) if isinstance(f, str) else f for f in (before, after)]
    result = rollout.gate("gpu7", facts[1], facts[0], pending, accept)
    assert result["failed"] == failed
    assert result["ok"] == (not failed)
    assert words in result["message"], result["message"]
    assert result["message"].startswith("gpu7: ")
    if failed:
        assert "the rollout stops here" in result["message"] and result["reasons"]


@pytest.mark.parametrize("accept", [[], ["fine"], ["ok", "bad"]])
def test_unknown_accepted_verdicts_are_refused(accept):
    with pytest.raises(ValueError) as raised:
        rollout.gate("gpu7", recorded_facts("two_h100"), None, None, accept)
    assert "exo_rollout_accept_health is" in str(raised.value)
