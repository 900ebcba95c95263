# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node planner on sick GPUs: facts from the probe over the simulated libnvidia-ml (a healthy,
a degraded and an unusable H100), planned with each exo_node_gpu_health."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from tests.simulated import nvml as sim
from tests.helpers import plan_node as plan, plan_node_ok as ok, plan_node_refused as refused, run_module

HEALTHY, DEGRADED, UNUSABLE = ("GPU-%08x-0000-0000-0000-000000000000" % n for n in range(3))


@pytest.fixture(scope="module")
def sick_host(tmp_path_factory, nvml_lib):
    tmp = tmp_path_factory.mktemp("sick")
    gpus = [sim.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=HEALTHY, health=sim.HEALTHY_H100),
            sim.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=DEGRADED,
                    health=dict(sim.HEALTHY_H100, pcie=(5, 5, 4, 16))),
            sim.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=UNUSABLE,
                    health=dict(sim.HEALTHY_H100, remapped_rows=(0, 9, 0, 1)))]
    config = sim.write_config(str(tmp / "nvml.conf"), gpus)
    facts = run_module(tmp, {"tinygrad": False}, sim.environment(nvml_lib, config)).facts
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
