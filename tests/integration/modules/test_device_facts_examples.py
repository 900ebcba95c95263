# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts' EXAMPLES, run as they are written: its tasks in a play on this machine (the play
among them, for a group of hosts, is run by test_device_facts_ansible's gathering tests)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import shutil

import yaml

from tests.helpers import examples, run_ansible as ansible


def test_the_tasks_of_the_examples_run_as_written(tmp_path):
    tasks = [entry for entry in yaml.safe_load(examples("module", "device_facts")) if "hosts" not in entry]
    assert any("backends" in (task.get("gpufleet.exo.device_facts") or {}) for task in tasks)
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump([{"name": "device_facts examples", "hosts": "localhost",
                                         "connection": "local", "gather_facts": False, "tasks": tasks}]))
    output = ansible([str(playbook)], tmp_path, env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"},
                     command="ansible-playbook")
    assert "failed=0" in output
    # The answer of each backend checked: CUDA fails here for want of a GPU, the CPU backend
    # computes where clang is installed.
    cuda = re.search(r'"msg": "cuda: (\w+)', output)
    cpu = re.search(r'"msg": "cpu: (\w+)', output)
    assert cuda and cuda.group(1) == ("ok" if os.path.exists("/dev/nvidiactl") else "failed")
    assert cpu and cpu.group(1) == ("ok" if shutil.which("clang") else "failed")
