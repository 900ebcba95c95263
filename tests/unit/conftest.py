# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the device_facts module as Ansible would, over simulated hosts."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [p for p in (REPO, os.path.join(REPO, ".build", "collections")) if p not in sys.path]

from tests.simulated import nvml as simnvml  # noqa: E402
from tests.simulated import sysfs as simsysfs  # noqa: E402
MODULE = os.path.join(REPO, "plugins", "modules", "device_facts.py")
COLLECTIONS = os.path.join(REPO, ".build", "collections")


class Run:
    def __init__(self, result, elapsed):
        self.result = result
        self.elapsed = elapsed
        self.facts = result.get("ansible_facts", {}).get("device_capabilities")


def run_module(tmp_path, args=None, env=None, python=sys.executable):
    """Run device_facts in a fresh process: the simulated libnvidia-ml is found at process start."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args or {})}))
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, os.environ.get("PYTHONPATH", "")]))
    environ.pop("LD_LIBRARY_PATH", None)
    environ.update(env or {})
    started = time.monotonic()
    proc = subprocess.run([python, MODULE, str(args_file)], env=environ, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, check=False)
    elapsed = time.monotonic() - started
    try:
        result = json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: %r %r" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return Run(result, elapsed)


def run_playbook(tmp, inventory, playbook, hosts, check=False, timeout=600):
    """Run a playbook over a JSON inventory; each host writes <result_dir>/<host>.json.

    Returns the finished process and the results of the hosts that wrote one.
    """
    result_dir = os.path.join(tmp, "results")
    os.makedirs(result_dir)
    inventory["all"]["vars"]["result_dir"] = result_dir
    with open(os.path.join(tmp, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_FORKS="4", ANSIBLE_NOCOLOR="1")
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")]
                          + (["--check"] if check else []) + ["-i", os.path.join(tmp, "inventory.json"), playbook],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    results = {}
    for name in hosts:
        path = os.path.join(result_dir, name + ".json")
        if os.path.exists(path):
            with open(path) as handle:
                results[name] = json.load(handle)
    return proc, results


@pytest.fixture(scope="session")
def nvml_lib():
    return simnvml.build("current")


@pytest.fixture(scope="session")
def legacy_nvml_lib():
    return simnvml.build("legacy")


@pytest.fixture
def simulated_host(tmp_path, nvml_lib):
    """Returns probe(gpus, pci=None, args=None, lib=None, env=None, **config) -> Run."""
    def probe(gpus=(), pci=None, args=None, lib=None, env=None, modules=(), **config):
        config_path = simnvml.write_config(str(tmp_path / "nvml.conf"), list(gpus), **config)
        environ = simnvml.environment(lib or nvml_lib, config_path)
        environ.update(env or {})
        module_args = {"tinygrad": False}
        if pci is not None:
            root = tmp_path / "root"
            simsysfs.write_tree(str(root), pci=pci, modules=modules)
            module_args["rootfs"] = str(root)
        module_args.update(args or {})
        return run_module(tmp_path, module_args, environ)
    return probe
