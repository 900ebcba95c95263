# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health verdict: each rule on raw NVML values, and the real H100's answers as its facts carry them.

The raw values are what health.query returns in the NVML child; tests/fixtures/real-h100/health.json
is what the real H100 answered to the same calls."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import health
from tests.helpers import REAL_H100

FIXTURES = REAL_H100


def raw(**changes):
    """A healthy H100's raw health, idle, with changes."""
    values = {"ecc_mode": [1, 1], "ecc_uncorrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
              "remapped_rows": [0, 0, 0, 0], "retired_pages_pending": None, "persistence_mode": 1,
              "compute_mode": 0, "pcie": [5, 5, 16, 16], "temperature_c": 35, "clock_event_reasons": 0x1,
              "fabric": None, "error_kinds": []}
    values.update(changes)
    return values


def real_h100_raw():
    """health.json (the calls and what the real H100 answered) as health.query's raw values."""
    with open(os.path.join(FIXTURES, "health.json")) as handle:
        gpu = json.load(handle)["gpus"][0]

    def answer(key):
        value = gpu[key]
        return None if isinstance(value, str) and value.startswith("ERROR NVMLError_NotSupported") else value
    return {
        "ecc_mode": answer("nvmlDeviceGetEccMode"),
        "ecc_uncorrected_volatile": answer("nvmlDeviceGetTotalEccErrors(1,0)"),
        "ecc_uncorrected_aggregate": answer("nvmlDeviceGetTotalEccErrors(1,1)"),
        "remapped_rows": answer("nvmlDeviceGetRemappedRows"),
        # query asks for pending pages only where rows are not remapped; the H100 remaps rows.
        "retired_pages_pending": None,
        "persistence_mode": answer("nvmlDeviceGetPersistenceMode"),
        "compute_mode": answer("nvmlDeviceGetComputeMode"),
        "pcie": [answer("nvmlDeviceGetCurrPcieLinkGeneration"), answer("nvmlDeviceGetMaxPcieLinkGeneration"),
                 answer("nvmlDeviceGetCurrPcieLinkWidth"), answer("nvmlDeviceGetMaxPcieLinkWidth")],
        "temperature_c": answer("nvmlDeviceGetTemperature(0)"),
        "clock_event_reasons": answer("nvmlDeviceGetCurrentClocksEventReasons"),
        "fabric": None,  # not read on that host
        "error_kinds": [],
    }


def test_healthy_gpu_is_ok():
    facts = health.shape(raw())
    assert (facts["verdict"], facts["reasons"]) == ("ok", [])
    assert facts["ecc"] == {"enabled": True, "enabled_after_reboot": True, "uncorrected_volatile": 0,
                            "uncorrected_aggregate": 0}
    assert facts["clock_event_reasons"] == ["gpu_idle"] and facts["compute_mode"] == "default"


def test_nothing_known_is_ok_with_every_field_unknown():
    # An old driver or a consumer part answers none of the calls: nothing known is wrong.
    facts = health.shape(None)
    assert (facts["verdict"], facts["reasons"]) == ("ok", [])
    assert facts["ecc"]["enabled"] is None and facts["pcie"]["width"] is None and facts["fabric"] is None


@pytest.mark.parametrize("changes, verdict, phrase", [
    ({"error_kinds": ["gpu_lost"]}, "unusable", "lost"),
    ({"error_kinds": ["reset_required"]}, "unusable", "reset"),
    ({"remapped_rows": [0, 3, 0, 1]}, "unusable", "row remapping failed"),
    ({"ecc_uncorrected_volatile": 2, "ecc_uncorrected_aggregate": 2}, "unusable", "2 uncorrectable ECC errors"),
    ({"compute_mode": 2}, "unusable", "prohibited"),
    ({"fabric": {"state": 1, "status": 0, "clique_id": 0}}, "unusable", "not_started"),
    ({"fabric": {"state": 2, "status": 0, "clique_id": 0}}, "unusable", "in_progress"),
    ({"fabric": {"state": 3, "status": 999, "clique_id": 0}}, "unusable", "error 999"),
    ({"remapped_rows": [0, 1, 1, 0]}, "degraded", "row remap is pending"),
    ({"remapped_rows": None, "retired_pages_pending": 1}, "degraded", "retired pages are pending"),
    ({"ecc_mode": [0, 0]}, "degraded", "ECC is off"),
    ({"pcie": [5, 5, 8, 16]}, "degraded", "x8 of x16"),
    ({"clock_event_reasons": 0x40 | 0x1}, "degraded", "hw_thermal_slowdown"),
    ({"clock_event_reasons": 0x80}, "degraded", "hw_power_brake_slowdown"),
    ({"persistence_mode": 0}, "degraded", "persistence mode is off"),
])
def test_each_rule(changes, verdict, phrase):
    facts = health.shape(raw(**changes))
    assert facts["verdict"] == verdict
    assert len(facts["reasons"]) == 1 and phrase in facts["reasons"][0]


@pytest.mark.parametrize("changes", [
    {"pcie": [1, 5, 16, 16]},                        # an idle GPU lowers its link generation itself
    {"clock_event_reasons": 0x4},                    # a power cap under load is normal
    {"ecc_uncorrected_aggregate": 4},                # history: remapping has dealt with it
    {"fabric": {"state": 0, "status": 0, "clique_id": 0}},   # no NVSwitch
    {"fabric": {"state": 3, "status": 0, "clique_id": 7}},   # fabric up
    {"compute_mode": 3},                             # one exo process per GPU is exclusive anyway
    {"temperature_c": 87},                           # judged by the slowdown the GPU reports, not a number
])
def test_normal_states_are_ok(changes):
    assert health.shape(raw(**changes))["verdict"] == "ok"


def test_the_worst_verdict_wins_and_every_reason_is_kept():
    facts = health.shape(raw(persistence_mode=0, compute_mode=2, pcie=[4, 5, 4, 16]))
    assert facts["verdict"] == "unusable"
    assert len(facts["reasons"]) == 3


def test_every_rule_says_why():
    for level, dummy_test, reason, why in health.RULES:
        assert level in health.VERDICTS[1:] and reason and len(why) > 20


def test_real_h100_facts_carry_what_the_real_gpu_reported():
    with open(os.path.join(FIXTURES, "device_facts.json")) as handle:
        facts = json.load(handle)
    assert facts["gpus"][0]["health"] == health.shape(real_h100_raw())
    assert facts["gpus"][0]["health"]["verdict"] == "ok"
    assert facts["gpus"][0]["health"]["pcie"] == {"generation": 5, "max_generation": 5, "width": 16, "max_width": 16}
