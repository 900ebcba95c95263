# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD GPUs as exo instances (plugins/plugin_utils/node/amd.py, through the node planner): one instance per
usable AMD GPU, its environment for each tinygrad version, its DeviceAllow= lines and placement as the
role renders them, a host with both kinds, and the refusals.

The facts are those the probe reports on the simulated hosts of tests/simulated/hosts.py, as recorded:
amd_one (an MI300X), amd_two (two Radeon RX 7900, KFD numbering the second on the bus first), amd_nvidia
(an H100 and an MI300X), amd_vfio (an MI300X passed through beside one driven by amdgpu) and
amd_no_render (amdgpu and KFD drive it, its render node is missing).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import amd
from tests.helpers import node_templates, plan_node as plan, plan_node_ok as ok, plan_node_refused as refused
from tests.helpers import recorded_facts

C1, C3 = "amd-0000-c1-00.0", "amd-0000-c3-00.0"
H100 = "GPU-9b7c0000-1111-2222-3333-444455556666"
# What every instance's environment holds besides the GPU's variables.
BASE = ("EXO_HOME", "HOME", "TMPDIR", "PYTHONUNBUFFERED", "GPUFLEET_EXO_REQUESTS_IN_FLIGHT", "GPUFLEET_EXO_REQUEST_QUEUE")


def selecting(instance):
    """The variables of an instance's environment that choose its backend and GPU."""
    return dict((k, v) for k, v in instance["env"].items() if k not in BASE)


def by_name(result):
    return dict((i["name"], i) for i in result["instances"])


# (host, tinygrad version, {instance: (its selecting variables, its DeviceAllow= entries)}): under
# DevicePolicy=closed with /dev/kfd and its own render node, each GPU is tinygrad's AMD GPU 0.
AMD_KFD_0_10_3 = {"CUDA_VISIBLE_DEVICES": "", "AMD": "1", "AMD_IFACE": "KFD", "VISIBLE_DEVICES": "0"}
AMD_KFD_0_11 = {"CUDA_VISIBLE_DEVICES": "", "DEV": "AMD", "AMD_IFACE": "KFD", "VISIBLE_DEVICES": "0"}
AMD_KFD_0_12 = {"CUDA_VISIBLE_DEVICES": "", "DEV": "AMD", "AMD_IFACE": "KFD", "HCQ_VISIBLE_DEVICES": "0"}
AMD_KFD_0_13 = {"CUDA_VISIBLE_DEVICES": "", "DEV": "KFD:0+AMD"}
RENDER_128 = ["/dev/kfd rw", "/dev/dri/renderD128 rw"]
RENDER_129 = ["/dev/kfd rw", "/dev/dri/renderD129 rw"]
NVIDIA_0 = ["/dev/nvidia0 rw", "/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]
ENVIRONMENTS = [
    ("amd_one", "0.10.3", {C1: (AMD_KFD_0_10_3, RENDER_128)}),
    ("amd_one", "0.11.0", {C1: (AMD_KFD_0_11, RENDER_128)}),
    ("amd_one", "0.12.0", {C1: (AMD_KFD_0_12, RENDER_128)}),
    ("amd_one", "0.13.0", {C1: (AMD_KFD_0_13, RENDER_128)}),
    # KFD numbers c3 first (kfd_index 0): the confined index is 0 for both all the same.
    ("amd_two", "0.10.3", {C1: (AMD_KFD_0_10_3, RENDER_129), C3: (AMD_KFD_0_10_3, RENDER_128)}),
    ("amd_two", "0.11.0", {C1: (AMD_KFD_0_11, RENDER_129), C3: (AMD_KFD_0_11, RENDER_128)}),
    ("amd_two", "0.12.0", {C1: (AMD_KFD_0_12, RENDER_129), C3: (AMD_KFD_0_12, RENDER_128)}),
    ("amd_two", "0.14.0", {C1: (AMD_KFD_0_13, RENDER_129), C3: (AMD_KFD_0_13, RENDER_128)}),
    # Both kinds: the NVIDIA instance keeps its pins, the AMD one hides every GPU from CUDA.
    ("amd_nvidia", "0.11.0", {H100: ({"CUDA_VISIBLE_DEVICES": H100, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                                      "VISIBLE_DEVICES": "0"}, NVIDIA_0),
                              C1: (AMD_KFD_0_11, RENDER_128)}),
    ("amd_nvidia", "0.14.0", {H100: ({"CUDA_VISIBLE_DEVICES": H100, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, NVIDIA_0),
                              C1: (AMD_KFD_0_13, RENDER_128)}),
]


@pytest.mark.parametrize("host, version, expected", ENVIRONMENTS, ids=["%s-%s" % row[:2] for row in ENVIRONMENTS])
def test_each_amd_gpu_gets_an_instance_pinned_to_it(host, version, expected):
    instances = by_name(ok(recorded_facts(host), version=version))
    assert sorted(instances) == sorted(expected)
    for name, (variables, devices) in expected.items():
        assert selecting(instances[name]) == variables, name
        assert instances[name]["devices"] == devices, name


# (host, instance: its kind, slot, CPUs, NUMA node and the capabilities exo's topology gets).
PLACEMENTS = [
    ("amd_two", C1, "amd", 0, "0-15", 0, ("AMD Radeon RX 7900 XTX", 24576, 61.4)),
    ("amd_two", C3, "amd", 1, "16-31", 1, ("AMD Radeon RX 7900 XT", 20480, 53.4)),
    ("amd_nvidia", H100, "gpu", 0, "0-7", 0, ("NVIDIA H100 SXM5 80GB", 81559, 67.0)),
    ("amd_nvidia", C1, "amd", 1, "16-31", 1, ("AMD Instinct MI300X", 196608, 163.4)),
]


@pytest.mark.parametrize("host, name, kind, slot, cpus, numa, capabilities", PLACEMENTS)
def test_each_instance_is_placed_and_described_as_its_own_gpu(host, name, kind, slot, cpus, numa, capabilities):
    instance = by_name(ok(recorded_facts(host), version="0.14.0"))[name]
    assert (instance["kind"], instance["slot"], instance["cpu_list"], instance["numa_node"]) == (kind, slot, cpus, numa)
    assert instance["ports"]["grpc"] == 50051 + slot and instance["ports"]["api"] == 52415 + slot
    assert instance["node_id"] == "h-" + name
    found = instance["capabilities"]
    assert (found["chip"], found["memory"], found["flops"]["fp32"]) == capabilities


def rendered(instance, template):
    variables = {"ansible_managed": "Ansible managed", "exo_node_numa_policy": "preferred", "exo_node_discovery": "manual"}
    return node_templates().get_template(template).render(item=instance, **variables).splitlines()


def test_the_units_of_a_two_amd_gpu_host_allow_kfd_and_their_own_render_node():
    instances = by_name(ok(recorded_facts("amd_two"), version="0.14.0"))
    for name, render_node, cpus, kfd_node in ((C1, "/dev/dri/renderD129", "0-15", 2),
                                              (C3, "/dev/dri/renderD128", "16-31", 1)):
        dropin = rendered(instances[name], "instance.conf.j2")
        assert [line for line in dropin if line.startswith("DeviceAllow=")] == [
            "DeviceAllow=/dev/kfd rw", "DeviceAllow=%s rw" % render_node]
        assert "CPUAffinity=%s" % cpus in dropin
        env = rendered(instances[name], "instance.env.j2")
        assert 'DEV="KFD:0+AMD"' in env and 'CUDA_VISIBLE_DEVICES=""' in env
        assert not [line for line in env if "VISIBLE_DEVICES=" in line and not line.startswith("CUDA_")]
        assert "# exo@%s.service: AMD GPU %s (%s), KFD node %d, %s" % (
            name, instances[name]["pci_bus_id"], instances[name]["capabilities"]["chip"], kfd_node, render_node) in env


# (host, version, settings, what the one error holds).
REFUSALS = [
    ("amd_no_render", "0.14.0", {},
     ["AMD GPU 0000:c1:00.0 (AMD Instinct MI300X) cannot run an exo instance", "no render node", "renderD128",
      "exo_node_gpus"]),
    ("amd_vfio", "0.14.0", {"exo_node_gpus": ["0000:c1:00.0"]},
     ["exo_node_gpus entry '0000:c1:00.0' names AMD GPU 0000:c1:00.0", "bound to vfio-pci"]),
    ("amd_vfio", "0.14.0", {"exo_node_gpus": ["0000:c3:00.0", "0"]},
     ["exo_node_gpus entry '0' matches no GPU", "0000:c1:00.0 (AMD); 0000:c3:00.0 (AMD)"]),
    ("amd_two", "0.14.0", {"exo_node_gpus": ["0000:c5:00.0"]},
     ["'0000:c5:00.0' matches no GPU", "0000:c1:00.0 (AMD); 0000:c3:00.0 (AMD)"]),
    ("amd_two", "0.14.0", {"exo_node_min_memory_mib": 30000},
     ["exo_node_min_memory_mib 30000 is above the memory of every GPU here (the largest has 24576 MiB)"]),
]


@pytest.mark.parametrize("host, version, settings, parts", REFUSALS, ids=[row[0] for row in REFUSALS])
def test_refusals_name_the_gpu_and_what_to_do(host, version, settings, parts):
    refused(recorded_facts(host), *parts, version=version, **settings)


def test_a_render_node_missing_is_no_refusal_where_exo_node_gpus_leaves_the_gpu_out():
    facts = recorded_facts("amd_two")
    facts["amd"][0].update(render_node=None, unusable_reason="no render node: ...")
    assert sorted(by_name(ok(facts, version="0.14.0", exo_node_gpus=["0000:c3:00.0"]))) == [C3]
    refused(facts, "AMD GPU 0000:c1:00.0", "no render node", version="0.14.0")


def test_a_passed_through_gpu_is_listed_as_skipped_with_its_reason():
    result = ok(recorded_facts("amd_vfio"), version="0.14.0")
    assert sorted(by_name(result)) == [C3]
    assert result["skipped"] == ["AMD GPU 0000:c1:00.0 (AMD Instinct MI300X): bound to vfio-pci (passed through "
                                 "to a guest): left alone"]


# (host, what exo's tinygrad that cannot load AMD leaves: the instances, and a word of the CPU reason).
EXOS_TINYGRAD = [
    ("amd_one", ["cpu"], "cannot load its AMD backend"),
    ("amd_two", ["cpu"], "cannot load its AMD backend"),
    ("amd_nvidia", [H100], None),
]


@pytest.mark.parametrize("host, names, reason", EXOS_TINYGRAD, ids=[row[0] for row in EXOS_TINYGRAD])
def test_exos_own_tinygrad_leaves_the_host_as_it_was_and_names_the_variable(host, names, reason):
    result = ok(recorded_facts(host), version="0.10.0")
    assert [i["name"] for i in result["instances"]] == names
    assert reason is None or reason in result["cpu_reason"]
    notes = [w for w in result["warnings"] if "run" in w and "no exo instance" in w]
    assert len(notes) == 1 and "exo_node_tinygrad_requirement" in notes[0] and "AMD GPU 0000:c1:00.0" in notes[0]
    assert result["device_groups"] == []


def test_a_list_naming_an_amd_gpu_exos_tinygrad_cannot_drive_runs_the_cpu_instance_and_says_why():
    result = ok(recorded_facts("amd_one"), version="0.10.0", exo_node_gpus=[C1, "0"])
    assert [i["name"] for i in result["instances"]] == ["cpu"]
    assert "exo_node_gpus asks for %s, 0" % C1 in result["cpu_reason"]
    assert "exo_node_tinygrad_requirement" in result["cpu_reason"]


def with_amd_check(facts, status, reason=None):
    facts = copy.deepcopy(facts)
    facts.setdefault("tinygrad", {})["backends"] = {"amd": {"status": status, "reason": reason}}
    return facts


# (host, tinygrad version, its AMD check, the instances, what the skipped line holds): the check
# overrides the table both ways; the gfx targets a version accepts still apply.
CHECKED = [
    ("amd_two", "0.10.0", "ok", [C1, C3], None),
    ("amd_one", "0.10.0", "ok", ["cpu"], "tinygrad 0.10.0 does not drive gfx942"),
    ("amd_one", "0.14.0", "failed", ["cpu"], "failed its AMD check: ImportError: no comgr"),
]


@pytest.mark.parametrize("host, version, status, names, skipped", CHECKED, ids=["%s-%s-%s" % row[:3] for row in CHECKED])
def test_a_backends_check_of_amd_overrides_the_table(host, version, status, names, skipped):
    from tests.helpers import with_tinygrad
    facts = with_amd_check(with_tinygrad(recorded_facts(host), version), status, "ImportError: no comgr")
    result = ok(facts, version=None)
    assert [i["name"] for i in result["instances"]] == names
    assert skipped is None or skipped in result["skipped"][0]


def test_exo_node_gpus_and_the_memory_floor_choose_among_amd_gpus():
    facts = recorded_facts("amd_two")
    assert sorted(by_name(ok(facts, version="0.14.0", exo_node_gpus=["c3:00.0"]))) == [C3]
    assert sorted(by_name(ok(facts, version="0.14.0", exo_node_gpus=[C1]))) == [C1]
    result = ok(facts, version="0.14.0", exo_node_min_memory_mib=21000)
    assert sorted(by_name(result)) == [C1]
    assert "AMD GPU 0000:c3:00.0 (AMD Radeon RX 7900 XT): 20480 MiB is below exo_node_min_memory_mib 21000" in result["skipped"]


def test_the_service_user_joins_the_groups_of_the_device_nodes():
    assert ok(recorded_facts("amd_two"), version="0.14.0")["device_groups"] == ["render", "video"]
    assert ok(recorded_facts("amd_nvidia"), version="0.14.0")["device_paths"] == [
        "/dev/dri/renderD128", "/dev/kfd", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"]


# (existing instances, allow removal, what is removed, whether an error holds one back).
REMOVALS = [
    (["cpu"], False, ["cpu"], False),
    (["amd-0000-c5-00.0"], False, ["amd-0000-c5-00.0"], False),
    ([C1, C3], False, [], False),
]


@pytest.mark.parametrize("existing, allow, removed, held", REMOVALS)
def test_an_amd_instance_leaves_by_itself_only_with_its_gpu(existing, allow, removed, held):
    result = plan(recorded_facts("amd_two"), version="0.14.0", existing=existing, exo_node_allow_removal=allow)
    assert result["removed"] == removed
    assert bool(result["errors"]) == held


def test_an_amd_instance_whose_gpu_stays_is_held_back():
    facts = recorded_facts("amd_two")
    error = refused(facts, "exo@amd-0000-c1-00.0", version="0.14.0", existing=[C1, C3], exo_node_gpus=[C3])
    assert "exo_node_allow_removal" in error


def test_a_preview_plans_amd_instances_before_exos_tinygrad_is_known():
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan
    from tests.helpers import NODE_SETTINGS, checked
    result = node_plan.instances(recorded_facts("amd_two"), checked(NODE_SETTINGS), "h", preview=True)
    assert result["errors"] == [] and result["preview"]
    assert [selecting(i) for i in result["instances"]] == [{"CUDA_VISIBLE_DEVICES": ""}] * 2


# (gfx target, the release numbers it stands for): KFD writes the minor and stepping in hex.
GFX = [("gfx1100", (11, 0, 0)), ("gfx942", (9, 4, 2)), ("gfx90a", (9, 0, 10)), ("gfx1030", (10, 3, 0)),
       (None, None), ("gfx", None), ("bogus", None)]


@pytest.mark.parametrize("text, expected", GFX)
def test_gfx_targets_read_as_kfd_writes_them(text, expected):
    assert amd._gfx(text) == expected


# (tinygrad version, whether the table says its AMD backend loads): exo's pin reports 0.10.0.
LOADS = [("0.10.0", False), ("0.10.2", False), ("0.10.3", True), ("0.12.0", True), ("0.14.0", True),
         ("0.10.1.dev20250129", False), (None, False), ("master", False)]


@pytest.mark.parametrize("version, loads", LOADS)
def test_which_tinygrad_loads_its_amd_backend(version, loads):
    assert amd._row(version)["loads"] == loads


def test_a_tinygrad_not_probed_leaves_the_amd_gpus_out_and_says_why():
    result = ok(recorded_facts("amd_two"), version=None)
    assert [i["name"] for i in result["instances"]] == ["cpu"]
    assert "the variables that select tinygrad's AMD backend are unknown" in result["skipped"][0]
