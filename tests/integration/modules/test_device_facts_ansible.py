# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts through Ansible itself: ad hoc, inside gather_facts, with fact caching, on every
target Python this machine has, and over a simulated 4-GPU host."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import subprocess

import pytest

from tests.helpers import BIN, REPO, run_ansible as ansible
from tests.simulated import nvml as simnvml


def facts_of(output):
    return output["ansible_facts"]["device_capabilities"]


def test_ad_hoc_on_this_machine_falls_back_to_cpu_with_a_reason(tmp_path):
    caps = facts_of(ansible(["localhost", "-m", "gpufleet.exo.device_facts"], tmp_path))
    assert caps["backend"] == "cpu" and caps["fallback_reason"]
    assert caps["nvml"]["status"] == "library_not_found"  # no libnvidia-ml on this machine
    assert caps["tinygrad"]["installed"] and caps["tinygrad"]["version"]
    assert caps["exo"]["memory"] == caps["host"]["memory_mib"] > 0


def test_check_mode_changes_nothing(tmp_path):
    result = ansible(["localhost", "-m", "gpufleet.exo.device_facts", "-a", "tinygrad=false", "--check"], tmp_path)
    assert result["changed"] is False and "device_capabilities" in result["ansible_facts"]


def test_simulated_four_gpu_host_through_ansible(tmp_path):
    gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559) for dummy in range(4)]
    config = simnvml.write_config(str(tmp_path / "nvml.conf"), gpus)
    caps = facts_of(ansible(["localhost", "-m", "gpufleet.exo.device_facts", "-a", "tinygrad=false"], tmp_path,
                            env=simnvml.environment(simnvml.build(), config)))
    assert len(caps["gpus"]) == 4 and all("H100" in g["chip"] for g in caps["gpus"])
    assert len(caps["visible"]["devices"]) == 4 and caps["backend"] == "cuda"


PLAYBOOK = """
- hosts: localhost
  gather_facts: true
  tasks:
    - name: check
      ansible.builtin.assert:
        that:
          - ansible_facts.device_capabilities.backend in ['cuda', 'nv', 'amd', 'cpu']
          - ansible_facts.os_family is defined
"""

CACHED = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: read the cache
      ansible.builtin.debug:
        var: ansible_facts.device_capabilities.backend
"""


def test_gather_facts_with_facts_modules_and_fact_caching(tmp_path):
    (tmp_path / "gather.yml").write_text(PLAYBOOK)
    (tmp_path / "cached.yml").write_text(CACHED)
    # gather_facts gives each fact module 10 s by default; a loaded 2-core machine can take most of that.
    env = {"ANSIBLE_FACTS_MODULES": "ansible.builtin.setup,gpufleet.exo.device_facts", "ANSIBLE_GATHER_TIMEOUT": "60"}
    ansible([str(tmp_path / "gather.yml")], tmp_path, env=env, command="ansible-playbook")
    # A new run, no gathering: the facts come from the jsonfile cache.
    output = ansible([str(tmp_path / "cached.yml")], tmp_path, command="ansible-playbook")
    assert '"ansible_facts.device_capabilities.backend": "cpu"' in output


def target_pythons():
    root = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, check=False).stdout.decode().strip() \
        if any(os.access(os.path.join(p, "pyenv"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep)) \
        else ""
    found = {}
    for minor in range(9, 14):
        for python in sorted(glob.glob("%s/versions/3.%d.*/bin/python3.%d" % (root, minor, minor))) + \
                ["/usr/bin/python3.%d" % minor]:
            if os.access(python, os.X_OK):
                found.setdefault("3.%d" % minor, python)
    return sorted(found.items())


@pytest.mark.parametrize("version, python", target_pythons() or [pytest.param("none", None, marks=pytest.mark.skip(
    reason="no other Python on this machine"))])
def test_module_runs_on_target_python(tmp_path, version, python):
    caps = facts_of(ansible(["localhost", "-m", "gpufleet.exo.device_facts", "-e",
                             "ansible_python_interpreter=%s" % python], tmp_path))
    assert caps["host"]["cpus"] >= 1 and caps["host"]["memory_mib"] > 0
    assert caps["nvml"]["status"] in ("not_installed", "library_not_found")
    assert caps["tinygrad"]["python"] == python


def test_bad_argument_stops_with_a_clear_message(tmp_path):
    environ = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", "gpufleet.exo.device_facts", "-a",
                           "timeout=-1"], cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)
    assert proc.returncode != 0 and b"timeout must be a positive number" in proc.stdout
