# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node planner refuses a forced tinygrad backend that does not open, from the facts the probe
really reports: device_facts with the planner's backends, run with exo's tinygrad (ec120ce6b9ce)
on simulated hosts (tests/simulated/hosts.py). The planner on facts given as data:
tests/unit/plugins/plugin_utils/node/test_backend_refusals.py.

This machine's real case: exo's tinygrad's CPU backend is CLANG, and without clang (PATH without
it here; a host without the package in the field) it raises the FileNotFoundError the real H100
raised. The NV backend fails here for want of a GPU; on the real H100 it failed on driver 580
("rm_control returned 58"), which the hint names.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import shutil

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan
from tests.helpers import NODE_SETTINGS as SETTINGS, checked, run_module
from tests.simulated import hosts as simhosts

NO_CLANG = {"PATH": "/nonexistent"}


@pytest.fixture
def probe(tmp_path, nvml_lib, exo_pin_python):
    """probe(host, settings, env) -> facts: device_facts as the role's facts.yml runs it."""
    def run(host, settings, env=None):
        environ, root = simhosts.write(str(tmp_path), host, nvml_lib)
        environ.update(env or {})
        backends = node_plan.instances(None, checked(settings), "h")["backends"]
        result = run_module(tmp_path, {"tinygrad_python": exo_pin_python, "backends": backends, "rootfs": root,
                                       "timeout": 60}, environ)
        assert result.facts is not None, result.result
        return result.facts
    return run


def test_cpu_host_without_clang_is_refused_with_tinygrads_error(probe):
    facts = probe("cpu_only", SETTINGS, NO_CLANG)
    assert facts["tinygrad"]["backends"]["cpu"]["status"] == "failed"
    result = node_plan.instances(facts, checked(SETTINGS), "h")
    [error] = [e for e in result["errors"] if "tinygrad's cpu backend" in e]
    assert "instance cpu would crash at start" in error
    assert "under CLANG=1 CUDA_VISIBLE_DEVICES=, tinygrad 0.10.0" in error
    assert "FileNotFoundError: [Errno 2] No such file or directory: 'clang'" in error
    assert "install clang on the host" in error


@pytest.mark.skipif(not shutil.which("clang"), reason="clang is not installed here")
def test_cpu_host_with_clang_plans_its_cpu_instance(probe):
    facts = probe("cpu_only", SETTINGS)
    assert facts["tinygrad"]["backends"]["cpu"]["status"] == "ok"
    result = node_plan.instances(facts, checked(SETTINGS), "h")
    assert result["errors"] == [] and [i["name"] for i in result["instances"]] == ["cpu"]


def test_gpu_host_does_not_need_the_cpu_backend(probe):
    # Checked (the planner cannot know beforehand), failed, and not held against a host whose
    # instances are all on GPUs.
    facts = probe("one", SETTINGS, NO_CLANG)
    assert facts["tinygrad"]["backends"]["cpu"]["status"] == "failed"
    result = node_plan.instances(facts, checked(SETTINGS), "h")
    assert result["errors"] == [] and [i["kind"] for i in result["instances"]] == ["gpu"]


def test_forced_nv_that_does_not_open_is_refused_naming_cuda(probe):
    settings = dict(SETTINGS, exo_node_tinygrad_backend="nv")
    facts = probe("two", settings)
    nv = facts["tinygrad"]["backends"]["nv"]
    # Checked on the first idle GPU, pinned as the instance on it would be.
    assert nv["status"] == "failed" and nv["gpu"] == simhosts.uuid(0)
    assert nv["env"] == {"CUDA_VISIBLE_DEVICES": simhosts.uuid(0), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                         "VISIBLE_DEVICES": "0", "NV": "1"}
    result = node_plan.instances(facts, checked(settings), "h")
    [error] = [e for e in result["errors"] if "tinygrad's nv backend" in e]
    assert "instances %s, %s would crash" % (simhosts.uuid(0), simhosts.uuid(1)) in error
    assert "set exo_node_tinygrad_backend to cuda" in error


def test_busy_gpus_are_not_refused_for_a_check_that_was_skipped(probe):
    settings = dict(SETTINGS, exo_node_tinygrad_backend="cuda", exo_node_gpus=[simhosts.uuid(0)])
    facts = probe("busy", settings)
    # GPU 1 is idle: the check goes there, and fails for want of libcuda on this machine.
    assert facts["tinygrad"]["backends"]["cuda"]["gpu"] == simhosts.uuid(1)
    skipped = dict(facts)
    skipped["tinygrad"] = dict(facts["tinygrad"], backends={"cuda": {"status": "skipped", "reason": "busy"}})
    assert not any("tinygrad's cuda backend" in e for e in node_plan.instances(skipped, checked(settings), "h")["errors"])


def test_the_dummy_engine_forces_no_tinygrad_backend(probe):
    settings = dict(SETTINGS, exo_node_inference_engine="dummy", exo_node_tinygrad_backend="nv")
    assert node_plan.instances(None, checked(settings), "h")["backends"] == []
    # facts that say the CPU backend fails (gathered for the tinygrad engine) do not refuse it
    facts = probe("cpu_only", SETTINGS, NO_CLANG)
    result = node_plan.instances(facts, checked(settings), "h")
    assert result["errors"] == [] and [i["name"] for i in result["instances"]] == ["cpu"]
    assert not any("tinygrad's" in w for w in result["warnings"])
