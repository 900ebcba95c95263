# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe's reference case: the real H100 host, simulated, gives the facts the real host gave.

The simulated host "real_h100" (tests/simulated/hosts.py) carries what the real one had: NVML's
values (nvidia-smi -q) in the simulated libnvidia-ml under the real nvidia-ml-py, and its /sys and
/proc. device_facts runs on it as Ansible runs it, and its facts must equal
tests/fixtures/real-h100/device_facts.json on every field the real run reported, except:

- timings_ms: how long each stage took on that run, on that machine.
- tinygrad, libraries.tinygrad: tinygrad's choice there came from opening the real GPU through the
  real CUDA driver, which no simulation below libnvidia-ml gives; here tinygrad is not probed
  (tinygrad: false) and the backend comes from NVML, as on a host without tinygrad. The parts of
  the section that come from the version table are compared on their own.
- libraries.pynvml, nvml.library_version, libraries.psutil: the versions of nvidia-ml-py and psutil
  installed for the interpreter that runs the probe, a property of that environment: they must
  equal the versions installed here instead.

Fields added after the real run have nothing to be compared with there; visible.cuda_init_error is
checked against what the real driver said (cuInit succeeded with CUDA_VISIBLE_DEVICES unset).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os
from importlib import metadata

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import conclusions as decide
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _visible as visible
from tests.helpers import NODE_SETTINGS, REAL_H100, REPO, checked, run_module
from tests.simulated import cuda as simcuda
from tests.simulated import hosts as simhosts

FIXTURE = os.path.join(REAL_H100, "device_facts.json")
with open(FIXTURE) as handle:
    REAL = json.load(handle)

# (path, why it cannot be compared), as listed in the module docstring.
EXCLUDED = {
    ("timings_ms",): "run-specific durations",
    ("tinygrad",): "needs the real CUDA driver; not probed on the simulated host",
    ("libraries", "tinygrad"): "needs the real CUDA driver; not probed on the simulated host",
    ("libraries", "pynvml"): "nvidia-ml-py installed for the probing interpreter",
    ("nvml", "library_version"): "nvidia-ml-py installed for the probing interpreter",
    ("libraries", "psutil"): "psutil installed for the probing interpreter",
}


def probe(tmp_path, nvml_lib, env=None):
    environ, root = simhosts.write(str(tmp_path), "real_h100", nvml_lib)
    environ.update(env or {})
    run = run_module(tmp_path, {"tinygrad": False, "rootfs": root, "timeout": 30}, environ)
    assert run.facts is not None, run.result
    return run.facts


def differences(real, simulated, path=()):
    """Every (path, real value, simulated value) where the facts differ, over the real facts' keys."""
    if path in EXCLUDED:
        return []
    if isinstance(real, dict) and isinstance(simulated, dict):
        found = []
        for key in real:
            found += differences(real[key], simulated.get(key, "<missing>"), path + (key,))
        return found
    if isinstance(real, list) and isinstance(simulated, list) and len(real) == len(simulated):
        found = []
        for position, (one, other) in enumerate(zip(real, simulated)):
            found += differences(one, other, path + (position,))
        return found
    return [] if real == simulated else [(path, real, simulated)]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, nvml_lib):
    return probe(tmp_path_factory.mktemp("real_h100"), nvml_lib)


def test_the_facts_equal_the_real_hosts(simulated):
    assert differences(REAL, simulated) == []


def test_what_is_not_compared_is_what_this_environment_has(simulated):
    assert simulated["timings_ms"]["nvml"] > 0
    assert simulated["tinygrad"]["installed"] is None and simulated["libraries"]["tinygrad"] is None
    assert simulated["nvml"]["library_version"] == simulated["libraries"]["pynvml"] == metadata.version("nvidia-ml-py")
    assert simulated["libraries"]["psutil"] == metadata.version("psutil")
    # The real driver initialised with CUDA_VISIBLE_DEVICES unset (cuda_visible_devices.json).
    assert simulated["visible"]["cuda_init_error"] is None


def test_the_tinygrad_version_table_matches_what_the_real_tinygrad_reported():
    table = tinygrad_probe.version_facts(REAL["tinygrad"]["version"])
    assert table["select_env"] == REAL["tinygrad"]["select_env"]
    assert table["visible_devices_env"] == REAL["tinygrad"]["visible_devices_env"]


def test_the_comparison_sees_a_difference(simulated):
    changed = copy.deepcopy(simulated)
    changed["gpus"][0]["numa_node"] = 0
    changed["host"]["cpus"] = 8
    assert [found[0] for found in differences(REAL, changed)] == [("gpus", 0, "numa_node"), ("host", "cpus")]


@pytest.fixture(scope="module")
def named_twice(tmp_path_factory, nvml_lib):
    return probe(tmp_path_factory.mktemp("real_h100_twice"), nvml_lib, {"CUDA_VISIBLE_DEVICES": "0,0"})


def test_a_gpu_named_twice_is_no_usable_gpu_with_the_drivers_reason(named_twice):
    error = named_twice["visible"]["cuda_init_error"]
    assert (error["code"], error["name"]) == (101, "CUDA_ERROR_INVALID_DEVICE")
    assert named_twice["visible"]["devices"] == []
    assert named_twice["backend"] == "cpu" and named_twice["fallback_reason"] == error["reason"]
    assert "'0,0'" in error["reason"] and simhosts.REAL_H100_UUID in error["reason"]
    assert named_twice["exo"]["model"] == "Linux Box (CPU)"


def test_tinygrads_cuda_answer_gives_way_to_cudas_refusal():
    # tinygrad is asked about the host without CUDA_VISIBLE_DEVICES; CUDA with it refuses to start.
    cuda = {"installed": True, "version": "0.14.0", "backend": "CUDA", "reason": None}
    refused = visible.resolve(REAL["gpus"], "0,0", None)
    assert decide.backend(REAL["pci"], REAL["nvml"], REAL["gpus"], refused, [], cuda) == (
        "cpu", refused["cuda_init_error"]["reason"])
    fine = visible.resolve(REAL["gpus"], "+0", None)
    assert decide.backend(REAL["pci"], REAL["nvml"], REAL["gpus"], fine, [], cuda) == ("cuda", None)
    # tinygrad's NV backend does not go through cuInit.
    nv = dict(cuda, backend="NV")
    assert decide.backend(REAL["pci"], REAL["nvml"], REAL["gpus"], refused, [], nv) == ("nv", None)


def test_the_node_planner_refuses_such_facts_and_says_what_to_do(named_twice):
    settings = checked(NODE_SETTINGS)
    result = node_plan.instances(named_twice, settings, "h")
    assert result["instances"] == [] and len(result["errors"]) == 1
    message = result["errors"][0]
    for part in ("host h:", "CUDA_VISIBLE_DEVICES='0,0'", "CUDA_ERROR_INVALID_DEVICE",
                 "name each GPU once in CUDA_VISIBLE_DEVICES, or unset it", "gather them again"):
        assert part in message, message
    assert node_plan.instances(REAL, settings, "h")["errors"] == []


# ---- with the CUDA driver to ask: the simulated libcuda.so.1 answering what the real driver answered ----

def probe_with_driver(tmp_path, nvml_lib, answers, visible_devices, **args):
    table = simcuda.write_config(str(tmp_path / "cuda.conf"), answers)
    env = simcuda.environment(simcuda.build(), table)
    environ, root = simhosts.write(str(tmp_path), "real_h100", nvml_lib)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([environ["LD_LIBRARY_PATH"], env["LD_LIBRARY_PATH"]])
    environ.update(env)
    if visible_devices is not None:
        environ["CUDA_VISIBLE_DEVICES"] = visible_devices
    run = run_module(tmp_path, dict({"tinygrad": False, "rootfs": root, "timeout": 30}, **args), environ)
    assert run.facts is not None, run.result
    return run.facts


def test_the_driver_answers_and_the_rules_agree(tmp_path, nvml_lib):
    facts = probe_with_driver(tmp_path, nvml_lib, simcuda.recorded_answers(), "0,0")
    visible_facts = facts["visible"]
    assert (visible_facts["source"], visible_facts["rules_agree"]) == ("driver", True)
    assert visible_facts["cuda_init_error"]["code"] == 101 and facts["backend"] == "cpu"
    assert facts["timings_ms"]["cuda"] > 0


def test_where_the_driver_reads_otherwise_the_backend_follows_it(tmp_path, nvml_lib):
    # The simulation's answer, not a recording: this driver reads an upper-case UUID as the GPU's.
    upper = "GPU-" + simhosts.REAL_H100_UUID[4:].upper()
    answers = [simcuda.answer(upper, None, 0, [(simhosts.REAL_H100_UUID, simcuda.REAL_H100_BUS_ID)])]
    facts = probe_with_driver(tmp_path, nvml_lib, answers, upper)
    assert facts["visible"]["source"] == "driver" and facts["visible"]["rules_agree"] is False
    assert [d["uuid"] for d in facts["visible"]["devices"]] == [simhosts.REAL_H100_UUID]
    assert facts["backend"] == "cuda" and facts["exo"]["memory"] == 81559


# ---- each GPU instance's environment, as the driver reads it (visible_per_gpu), and the node planner's check ----

ALL_VISIBLE = simcuda.answer(None, None, 0, [(simhosts.REAL_H100_UUID, simcuda.REAL_H100_BUS_ID)])


def test_the_driver_reads_the_gpu_instances_environment_and_the_plan_goes_on(tmp_path, nvml_lib):
    # The module's own environment (the variables unset) is the simulation's answer; the instance's is recorded:
    # CUDA_VISIBLE_DEVICES=<the UUID> CUDA_DEVICE_ORDER=PCI_BUS_ID.
    answers = simcuda.recorded_answers() + [ALL_VISIBLE]
    facts = probe_with_driver(tmp_path, nvml_lib, answers, None, visible_per_gpu=True)
    assert facts["visible"]["per_gpu"] == [{
        "cuda_visible_devices": simhosts.REAL_H100_UUID, "device_order": "PCI_BUS_ID", "source": "driver",
        "devices": [simhosts.REAL_H100_UUID], "cuda_init_error": None, "rules_agree": True}]
    assert "cuda_gpu0" in facts["timings_ms"]
    result = node_plan.instances(facts, checked(NODE_SETTINGS), "h")
    assert result["errors"] == [] and [i["name"] for i in result["instances"]] == [simhosts.REAL_H100_UUID]
    assert not [w for w in result["warnings"] if "CUDA driver" in w]


def test_a_driver_that_refuses_the_gpu_instances_environment_stops_the_plan(tmp_path, nvml_lib):
    # The simulation's answers, not recordings: the module's own environment sees the GPU; the instance's
    # (the UUID, in PCI order) makes cuInit fail.
    answers = [ALL_VISIBLE, simcuda.answer(simhosts.REAL_H100_UUID, "PCI_BUS_ID", 101)]
    facts = probe_with_driver(tmp_path, nvml_lib, answers, None, visible_per_gpu=True)
    assert facts["visible"]["devices"][0]["uuid"] == simhosts.REAL_H100_UUID
    entry = facts["visible"]["per_gpu"][0]
    assert entry["devices"] == [] and entry["cuda_init_error"]["code"] == 101 and entry["rules_agree"] is False
    errors = node_plan.instances(facts, checked(NODE_SETTINGS), "h")["errors"]
    assert errors == ["host h: instance %s would not run on its own GPU: under CUDA_VISIBLE_DEVICES=%s "
                      "CUDA_DEVICE_ORDER=PCI_BUS_ID the CUDA driver sees no GPU (%s), not %s alone; check the NVIDIA "
                      "driver (nvidia-smi -L against a CUDA program's device list) and gather the facts again, or "
                      "leave this GPU out with exo_node_gpus" % (
                          simhosts.REAL_H100_UUID, simhosts.REAL_H100_UUID, entry["cuda_init_error"]["reason"],
                          simhosts.REAL_H100_UUID)]
    # docs/node.md shows this very message.
    with open(os.path.join(REPO, "docs", "node.md")) as handle:
        assert "\n%s\n" % errors[0].replace("host h:", "host gpu1:", 1) in handle.read()


def test_without_the_option_no_driver_is_asked_per_gpu(tmp_path, nvml_lib):
    facts = probe_with_driver(tmp_path, nvml_lib, [ALL_VISIBLE], None)
    assert "per_gpu" not in facts["visible"] and not [s for s in facts["timings_ms"] if s.startswith("cuda_gpu")]
