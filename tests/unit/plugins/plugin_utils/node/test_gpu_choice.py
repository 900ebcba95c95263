# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU gets an instance (plugins/plugin_utils/node/gpu_choice.py, through the node planner): the GPUs
exo_node_gpus lists by UUID, index or bus id, the memory floor, MIG mode, GPU health, the fallback to one
CPU instance and why, and the requests a host cannot meet.

The facts are those the probe reports on the simulated hosts of tests/simulated/hosts.py, as recorded
(the fixture probed): four, t4_and_h100, mig, cpu_only and nvml_broken of the node role's hosts, and
sick (a healthy, a degraded and an unusable H100), planned with each exo_node_gpu_health.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from tests.helpers import plan_node as plan, plan_node_ok as ok, plan_node_refused as refused
from tests.simulated import hosts as simhosts
from tests.simulated.hosts import bus, uuid

HEALTHY, DEGRADED, UNUSABLE = simhosts.SICK_UUIDS
MIG_DEVICE = "MIG-aaaaaaaa-0000-0000-0000-000000000002"


def without_the_first_two_gpus(facts):
    facts["gpus"] = facts["gpus"][2:]


def without_health(facts):
    for gpu in facts["gpus"]:
        del gpu["health"]


def case(case_id, host, settings=None, change=None, **expected):
    """A row: the host's facts (changed in place by change), the planner's settings, and what the plan shows:
    names, kinds, slots: the instances' in order; count: how many instances there are;
    cpu_reason: what the reason for the CPU instance holds;
    skipped: per GPU left out, in order, what its line holds; warnings: per warning looked for, what it holds;
    error: what the one error holds besides "host h", when the planner refuses."""
    return pytest.param(host, change, settings or {}, expected, id=case_id)


CASES = [
    # ---- the GPUs listed in exo_node_gpus, in NVML order whatever the list's
    case("uuid-any-case-index-nvml-bus-id", "four", dict(exo_node_gpus=[uuid(3).lower(), 1, "00000000:18:00.0"]),
         names=[uuid(0), uuid(1), uuid(3)], slots=[0, 1, 2]),
    case("sysfs-bus-id-index-as-text-short-bus-id", "four", dict(exo_node_gpus=[bus(3), "1", "18:00.0"]),
         names=[uuid(0), uuid(1), uuid(3)], slots=[0, 1, 2]),
    # -e exo_node_gpus=...: a comma-separated string, or a JSON list
    case("comma-separated-string", "four", dict(exo_node_gpus="%s, 1,0" % uuid(3)),
         names=[uuid(0), uuid(1), uuid(3)], slots=[0, 1, 2]),
    case("json-list-string", "four", dict(exo_node_gpus='["%s", 1, 0]' % uuid(3)),
         names=[uuid(0), uuid(1), uuid(3)], slots=[0, 1, 2]),
    # A string is never read character by character: -e exo_node_gpus=13 names GPU 13, not GPUs 1 and 3.
    case("string-13-is-one-entry", "four", dict(exo_node_gpus="13"),
         error=["exo_node_gpus entry '13' matches no GPU here", uuid(0)]),
    case("string-1", "four", dict(exo_node_gpus="1"), names=[uuid(1)]),
    case("unknown-uuid-lists-the-hosts-gpus", "one", dict(exo_node_gpus=["GPU-00000000-dead-beef-0000-000000000000"]),
         error=["GPU-00000000-dead-beef-0000-000000000000", "matches no GPU", uuid(0)]),
    case("unknown-index", "two", dict(exo_node_gpus=[5]), error=["exo_node_gpus entry '5'"]),
    # ---- the memory floor
    case("minimum-memory", "t4_and_h100", dict(exo_node_min_memory_mib=20000), names=[uuid(1)]),
    case("minimum-memory-as-text", "t4_and_h100", dict(exo_node_min_memory_mib="20000"), names=[uuid(1)]),
    case("listed-gpu-below-the-minimum", "t4_and_h100", dict(exo_node_gpus=[0], exo_node_min_memory_mib=20000),
         error=["15360 MiB, below exo_node_min_memory_mib 20000"]),
    # A floor above every GPU is a setting's mistake, not the hardware's: never a silent CPU node.
    case("minimum-above-every-gpu", "t4_and_h100", dict(exo_node_min_memory_mib=200000),
         error=["exo_node_min_memory_mib 200000 is above the memory of every GPU here", "the largest has 81559 MiB",
                "lower exo_node_min_memory_mib for this host"]),
    # ---- MIG
    case("mig-gpu-without-mig-falls-back", "mig", kinds=["cpu"], cpu_reason="MIG mode is on; set exo_node_mig: true"),
    case("mig-device-without-mig", "mig", dict(exo_node_gpus=[MIG_DEVICE]),
         error=["is a MIG device; set exo_node_mig"]),
    # ---- no usable GPU: one CPU instance, and why, unless the fallback is off
    case("broken-nvml-falls-back-with-the-probes-reason", "nvml_broken", kinds=["cpu"],
         cpu_reason="NVML: driver_not_loaded"),
    case("gpu-list-ignored-on-a-cpu-host-with-fallback", "cpu_only", dict(exo_node_gpus=[0]), kinds=["cpu"],
         cpu_reason="exo_node_gpus asks for 0 but this host has no GPU"),
    case("no-gpu-and-no-fallback", "cpu_only", dict(exo_node_gpus=[0], exo_node_cpu_fallback=False),
         error=["has no usable GPU", "library_not_found", "exo_node_cpu_fallback is false"]),
    # ---- health: by default (exo_node_gpu_health degraded) an unusable GPU gets no instance and the summary says
    # why; the degraded GPU runs, and the run says what is wrong with it
    case("unusable-gpu-skipped-by-default", "sick", names=[HEALTHY, DEGRADED],
         skipped=[[UNUSABLE, "row remapping failed", "exo_node_gpu_health is degraded"]],
         warnings=[[DEGRADED, "x4 of x16"]]),
    case("listed-unusable-gpu-is-an-error-with-its-reasons", "sick", dict(exo_node_gpus=[UNUSABLE]),
         error=[UNUSABLE, "row remapping failed", "cannot run a node"]),
    case("only-unusable-gpus-fall-back-to-the-cpu", "sick", change=without_the_first_two_gpus, kinds=["cpu"],
         cpu_reason="row remapping failed"),
    case("facts-from-before-health-was-probed-plan-as-before", "sick", change=without_health, count=3),
]


@pytest.mark.parametrize("host, change, settings, expected", CASES)
def test_which_gpus_get_an_instance(probed, host, change, settings, expected):
    facts = copy.deepcopy(probed[host])
    if change:
        change(facts)
    if "error" in expected:
        refused(facts, *expected["error"], **settings)
        return
    result = ok(facts, **settings)
    instances = result["instances"]
    for field, key in (("names", "name"), ("kinds", "kind"), ("slots", "slot")):
        if field in expected:
            assert [i[key] for i in instances] == expected[field], instances
    if "count" in expected:
        assert len(instances) == expected["count"], instances
    if "cpu_reason" in expected:
        assert expected["cpu_reason"] in result["cpu_reason"], result["cpu_reason"]
    if "skipped" in expected:
        assert len(result["skipped"]) == len(expected["skipped"]), result["skipped"]
        for line, parts in zip(result["skipped"], expected["skipped"]):
            assert all(part in line for part in parts), (line, parts)
    for parts in expected.get("warnings", ()):
        assert [w for w in result["warnings"] if all(part in w for part in parts)], (result["warnings"], parts)


@pytest.fixture(scope="module")
def sick_host(probed):
    facts = probed["sick"]
    assert [g["health"]["verdict"] for g in facts["gpus"]] == ["ok", "degraded", "unusable"]
    return facts


def test_ok_skips_degraded_gpus_too(sick_host):
    result = ok(sick_host, exo_node_gpu_health="ok")
    assert [i["name"] for i in result["instances"]] == [HEALTHY]
    assert [s.split()[2] for s in result["skipped"]] == ["(%s," % DEGRADED, "(%s," % UNUSABLE]


def test_unusable_runs_on_every_gpu(sick_host):
    result = ok(sick_host, exo_node_gpu_health="unusable")
    assert [i["name"] for i in result["instances"]] == [HEALTHY, DEGRADED, UNUSABLE]
    assert result["skipped"] == [] and len([w for w in result["warnings"] if "health" in w]) == 2


def test_a_bad_value_is_refused_before_anything(sick_host):
    result = plan(sick_host, exo_node_gpu_health="healthy")
    assert result["instances"] == []
    assert any("exo_node_gpu_health" in e and "healthy" in e for e in result["errors"])
