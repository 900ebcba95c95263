# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node planner on sick GPUs: the facts the probe reports over the simulated libnvidia-ml on the
simulated host sick (tests/simulated/hosts.py: a healthy, a degraded and an unusable H100), as
recorded, planned with each exo_node_gpu_health."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from tests.helpers import plan_node as plan, plan_node_ok as ok, plan_node_refused as refused
from tests.simulated import hosts as simhosts

HEALTHY, DEGRADED, UNUSABLE = simhosts.SICK_UUIDS


@pytest.fixture(scope="module")
def sick_host(probed):
    facts = probed["sick"]
    assert [g["health"]["verdict"] for g in facts["gpus"]] == ["ok", "degraded", "unusable"]
    return facts


def test_by_default_an_unusable_gpu_gets_no_instance_and_the_summary_says_why(sick_host):
    result = ok(sick_host)
    assert [i["name"] for i in result["instances"]] == [HEALTHY, DEGRADED]
    assert len(result["skipped"]) == 1
    assert UNUSABLE in result["skipped"][0] and "row remapping failed" in result["skipped"][0]
    assert "exo_node_gpu_health is degraded" in result["skipped"][0]
    # The degraded GPU runs, and the run says what is wrong with it.
    assert [w for w in result["warnings"] if DEGRADED in w and "x4 of x16" in w]


def test_ok_skips_degraded_gpus_too(sick_host):
    result = ok(sick_host, exo_node_gpu_health="ok")
    assert [i["name"] for i in result["instances"]] == [HEALTHY]
    assert [s.split()[2] for s in result["skipped"]] == ["(%s," % DEGRADED, "(%s," % UNUSABLE]


def test_unusable_runs_on_every_gpu(sick_host):
    result = ok(sick_host, exo_node_gpu_health="unusable")
    assert [i["name"] for i in result["instances"]] == [HEALTHY, DEGRADED, UNUSABLE]
    assert result["skipped"] == [] and len([w for w in result["warnings"] if "health" in w]) == 2


def test_a_listed_unusable_gpu_is_an_error_with_its_reasons(sick_host):
    error = refused(sick_host, UNUSABLE, "row remapping failed", exo_node_gpus=[UNUSABLE])
    assert "cannot run a node" in error


def test_only_unusable_gpus_fall_back_to_the_cpu_with_the_reason(sick_host):
    facts = copy.deepcopy(sick_host)
    facts["gpus"] = facts["gpus"][2:]
    result = ok(facts)
    assert [i["kind"] for i in result["instances"]] == ["cpu"]
    assert "row remapping failed" in result["cpu_reason"]


def test_a_bad_value_is_refused_before_anything(sick_host):
    result = plan(sick_host, exo_node_gpu_health="healthy")
    assert result["instances"] == []
    assert any("exo_node_gpu_health" in e and "healthy" in e for e in result["errors"])


def test_facts_from_before_health_was_probed_plan_as_before(sick_host):
    facts = copy.deepcopy(sick_host)
    for gpu in facts["gpus"]:
        del gpu["health"]
    assert len(ok(facts)["instances"]) == 3
