# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module's RETURN documents every key of device_capabilities, nested ones included, and nothing
that the module does not return: both are read from the module itself, the keys from its runs on
the simulated hosts of tests/simulated/hosts.py and a few more that fill every list it returns."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.modules import device_facts
from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import decide
from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import report as watcher_report
from tests.helpers import run_module
from tests.simulated import cuda as simcuda
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml
from tests.simulated import sysfs as simsysfs

# Dicts keyed by data rather than by a fixed set of names: documented as a whole, their keys not
# one by one (tinygrad stages, each tinygrad version's own variables, environments).
MAPS = {"timings_ms", "tinygrad.select_env", "tinygrad.backends.*.env"}
# The backends' checks share one shape (one YAML anchor in RETURN): compared as one, so that a key
# one backend's check returns here (an error) counts for all.
SAME_SHAPE = re.compile(r"^(tinygrad\.backends)\.[a-z]+\.")
# A deadline no stage misses on a loaded machine: a stage that timed out would hide its keys.
ARGS = {"timeout": 60}


def normal(path):
    return SAME_SHAPE.sub(r"\1.*.", path)


def documented(entries, prefix=""):
    """The paths RETURN documents below entries ("gpus[].mig.devices[].uuid"), and the dicts it leaves bare."""
    paths, bare = set(), set()
    for name, entry in entries.items():
        path = prefix + name
        paths.add(normal(path))
        if "contains" in entry:
            inner, inner_bare = documented(entry["contains"], path + ("[]." if entry["type"] == "list" else "."))
            paths |= inner
            bare |= inner_bare
        elif entry["type"] == "dict" or entry.get("elements") == "dict":
            bare.add(normal(path))
    return paths, bare


def returned(value, prefix, paths):
    """Add the paths of every key in value, list elements as "[]"."""
    if isinstance(value, dict):
        for name, inner in value.items():
            paths.add(normal(prefix + name))
            if normal(prefix + name) not in MAPS:
                returned(inner, prefix + name + ".", paths)
    elif isinstance(value, list):
        for inner in value:
            returned(inner, prefix[:-1] + "[].", paths)
    return paths


def extra_hosts(tmp):
    """Hosts whose lists and values the hosts of tests/simulated/hosts.py leave empty: an NVSwitch
    system whose GPUs report their health (one with its fabric up, one with a page retirement pending
    and a name that is not UTF-8, an entry in errors), AMD GPUs on the bus, a
    CUDA_VISIBLE_DEVICES that leaves CUDA no GPU, a CUDA driver whose answer the rules do not reach, and
    the health watcher's state file."""
    root = str(tmp / "extra")
    simsysfs.write_tree(root, pci=[simsysfs.nvidia_gpu(simhosts.bus(0)), simsysfs.nvidia_gpu(simhosts.bus(1)),
                                   simsysfs.nvswitch("0000:05:00.0"), simsysfs.amd_gpu("0000:c1:00.0")])
    # The health watcher's state file, holding GPU 0 out (docs/health.md).
    os.makedirs(os.path.join(root, "run", "gpufleet-exo-health"))
    held = dict(decide.new_gpu(simhosts.uuid(0), simhosts.bus(0), 0), healthy=False, needs="reset", reason="XID 48",
                since=1.0, last_fault=1.0, instance="inactive", stopped_by_watcher=True, remedy="resetting",
                breaker="breaker open", reset_at=2.0, resets=[2.0])
    with open(os.path.join(root, "run", "gpufleet-exo-health", "state.json"), "w") as handle:
        handle.write(watcher_report.state_json({held["uuid"]: held}, 3.0))
    gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=simhosts.uuid(0), pci_bus_id=simhosts.bus(0),
                        health=dict(simnvml.HEALTHY_H100, fabric=(3, 0, 1))),
            simnvml.gpu("x", 16384, uuid=simhosts.uuid(1), pci_bus_id=simhosts.bus(1), name_bytes=b"NVIDIA \xff GPU",
                        health=dict(simnvml.HEALTHY_H100, remapped_rows=(0, 0, 1, 0)))]
    # A CUDA driver (simulated) that reads an upper-case UUID as the GPU's, where the rules read nothing: the
    # facts follow the driver and say what the rules read (rules_reading).
    upper = "GPU-" + simhosts.uuid(0)[4:].upper()
    # With visible_per_gpu: the driver sees GPU 0 alone under its instance's environment, and refuses GPU 1's
    # (an environment the simulation has no answer for).
    table = simcuda.write_config(str(tmp / "cuda.conf"), [
        simcuda.answer(upper, None, 0, [(simhosts.uuid(0), simhosts.bus(0))]),
        simcuda.answer(simhosts.uuid(0), "PCI_BUS_ID", 0, [(simhosts.uuid(0), simhosts.bus(0))])])
    return [(root, gpus, {"CUDA_VISIBLE_DEVICES": ""}, {}),
            (root, gpus, dict(simcuda.environment(simcuda.build(), table), CUDA_VISIBLE_DEVICES=upper),
             {"visible_per_gpu": True})]


@pytest.fixture(scope="module")
def facts(tmp_path_factory, nvml_lib):
    tmp = tmp_path_factory.mktemp("documented")
    runs = []
    for name, (gpus, config) in simhosts.HOSTS.items():
        env, root = simhosts.write(str(tmp), name, nvml_lib, gpus, config)
        runs.append(run_module(tmp, dict(ARGS, rootfs=root, tinygrad=False), env))
    for root, gpus, env, args in extra_hosts(tmp):
        nvml_env = simnvml.environment(nvml_lib, simnvml.write_config(str(tmp / "extra.conf"), gpus))
        nvml_env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [nvml_env["LD_LIBRARY_PATH"], env.get("LD_LIBRARY_PATH")]))
        env.update(nvml_env)
        runs.append(run_module(tmp, dict(ARGS, rootfs=root, tinygrad=False, **args), env))
    # tinygrad's stage as it runs here, with this interpreter's tinygrad, and every backend's check.
    env, root = simhosts.write(str(tmp), "backends", nvml_lib, *simhosts.HOSTS["one"])
    runs.append(run_module(tmp, dict(ARGS, rootfs=root, backends=["cuda", "nv", "amd", "cpu"]), env))
    assert all(run.facts for run in runs), [run.result for run in runs if not run.facts]
    return [run.facts for run in runs]


def return_doc():
    return yaml.safe_load(device_facts.RETURN)["ansible_facts"]["contains"]["device_capabilities"]["contains"]


def test_every_returned_key_is_documented(facts):
    paths = set()
    for host in facts:
        returned(host, "", paths)
    missing = sorted(paths - documented(return_doc())[0])
    assert not missing, "keys of device_capabilities missing from RETURN in plugins/modules/device_facts.py: %s" % missing


def test_every_documented_key_is_returned(facts):
    paths = set()
    for host in facts:
        returned(host, "", paths)
    stale = sorted(documented(return_doc())[0] - paths)
    assert not stale, "RETURN documents keys no simulated host returns: %s" % stale


def test_every_dict_lists_its_keys():
    assert sorted(documented(return_doc())[1] - MAPS) == []
