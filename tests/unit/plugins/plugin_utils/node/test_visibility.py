# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node planner's check that each GPU instance sees exactly its own device under its environment, from
device_facts' visible.per_gpu (the CUDA driver's answer per device). The facts are the recorded simulated
hosts' (no CUDA driver there: the rules answer), with visible.per_gpu made by the probe's own functions from
the driver answers each case gives; the probe asking the simulated libcuda.so.1 for them:
tests/integration/modules/test_device_facts_per_gpu.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _visible as visible
from tests.helpers import plan_node as plan
from tests.simulated.hosts import uuid

MIG_1, MIG_2 = "MIG-aaaaaaaa-0000-0000-0000-000000000001", "MIG-aaaaaaaa-0000-0000-0000-000000000002"


def sees(*uuids):
    """The CUDA driver's answer for a process that sees these devices (UUIDs with their tag)."""
    return {"status": "ok", "devices": [{"uuid": u.partition("-")[2], "pci_bus_id": "?"} for u in uuids]}


def refuses(code, name):
    return {"status": "init_error", "init_error": {"code": code, "name": name}}


NO_DRIVER = {"status": "library_not_found", "message": "libcuda.so.1 cannot be loaded"}


def with_per_gpu(facts, answers):
    """The facts with visible.per_gpu as the probe writes it, from {device UUID: the driver's answer} (a device
    left out: the driver's answer for it is that device alone; None: no entry for it)."""
    facts = copy.deepcopy(facts)
    gpus = facts["gpus"]
    facts["visible"]["per_gpu"] = [
        visible.per_gpu_entry(visible.resolve(gpus, value, visible.PER_GPU_ORDER, answers.get(value, sees(value))))
        for value in visible.per_gpu_values(gpus) if answers.get(value, True) is not None]
    return facts


# (host, {device: the driver's answer}, settings, the errors' parts per error, the warnings' parts per warning)
CASES = {
    "each_sees_its_own": ("two", {}, {}, [], []),
    "the_driver_sees_another_gpu": (
        "two", {uuid(1): sees(uuid(0))}, {},
        [["instance %s would not run on its own GPU" % uuid(1), "CUDA_VISIBLE_DEVICES=%s CUDA_DEVICE_ORDER=PCI_BUS_ID"
          % uuid(1), "the CUDA driver sees %s, not %s alone" % (uuid(0), uuid(1))]], []),
    "the_driver_sees_two": (
        "two", {uuid(0): sees(uuid(0), uuid(1))}, {},
        [["instance %s" % uuid(0), "sees %s, %s, not %s alone" % (uuid(0), uuid(1), uuid(0))]], []),
    "cuinit_refuses": (
        "one", {uuid(0): refuses(101, "CUDA_ERROR_INVALID_DEVICE")}, {},
        [["instance %s" % uuid(0), "the CUDA driver sees no GPU (the CUDA driver's cuInit returned "
          "CUDA_ERROR_INVALID_DEVICE (101)"]], []),
    "a_gpu_the_nvml_facts_lack": (
        "one", {uuid(0): sees("GPU-00000000-0000-0000-0000-000000000000")}, {},
        [["sees GPU-00000000-0000-0000-0000-000000000000, not %s alone" % uuid(0)]], []),
    "the_rules_without_a_driver": ("two", {uuid(0): NO_DRIVER, uuid(1): NO_DRIVER}, {}, [], []),
    "mig_devices_by_their_own_uuid": ("mig", {}, {"exo_node_mig": True}, [], []),
    "a_mig_device_that_sees_its_gpu": (
        "mig", {MIG_2: sees(uuid(0))}, {"exo_node_mig": True},
        [["instance %s" % MIG_2, "sees %s, not %s alone" % (uuid(0), MIG_2)]], []),
    "an_environment_the_facts_did_not_resolve": (
        "two", {uuid(1): None}, {}, [],
        [["instance %s was not checked against the CUDA driver" % uuid(1), "no answer for that environment"]]),
    "the_cpu_instance_is_not_checked": ("no_gpu", {}, {}, [], []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_gpu_instance_sees_its_own_device(probed, case):
    host, answers, settings, errors, warnings = CASES[case]
    result = plan(with_per_gpu(probed[host], answers), **settings)
    assert len(result["errors"]) == len(errors), result["errors"]
    for error, parts in zip(result["errors"], errors):
        assert all(part in error for part in ["host h:"] + parts), (error, parts)
    checked = [w for w in result["warnings"] if "CUDA driver" in w]
    assert len(checked) == len(warnings), result["warnings"]
    for warning, parts in zip(checked, warnings):
        assert all(part in warning for part in parts), (warning, parts)


def test_facts_gathered_without_per_gpu_warn_and_name_the_instances(probed):
    result = plan(probed["two"])
    assert result["errors"] == []
    assert [w for w in result["warnings"] if "CUDA driver" in w] == [
        "host h: the environment of instances %s, %s was not checked against the CUDA driver (the facts were gathered "
        "without visible_per_gpu); gather the facts with visible_per_gpu: true" % (uuid(0), uuid(1))]


def test_the_probe_resolves_the_environment_the_planner_gives_each_gpu_instance(probed):
    facts = with_per_gpu(probed["mig"], {})
    instances = plan(facts, exo_node_mig=True)["instances"]
    planned = sorted((i["env"]["CUDA_VISIBLE_DEVICES"], i["env"]["CUDA_DEVICE_ORDER"]) for i in instances)
    resolved = set((e["cuda_visible_devices"], e["device_order"]) for e in facts["visible"]["per_gpu"])
    assert planned == [(MIG_1, "PCI_BUS_ID"), (MIG_2, "PCI_BUS_ID")] and set(planned) <= resolved
