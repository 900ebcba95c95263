# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling driver change (playbooks/driver_rollout.yml) over simulated hosts: the command of docs/driver.md,
"Rolling changes", run as written (the README gives the same), and the examples of its filters.

Three hosts of exo_nodes, each a simulated host on a local connection (its own interpreter wrapper that loads
the simulated libnvidia-ml with its GPUs, and its own simulated /sys): two H100 hosts and one without a GPU.
They run no exo instance (this machine has no systemd); the molecule scenario roles/node/molecule/cluster runs
the rollout on real exo instances. Here the driver role finds a working driver and changes nothing; a second
run's exo_rollout_tasks leaves uncorrectable ECC errors on the first host's GPU, which must stop the rollout
before any other host is touched.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shlex
import stat
import subprocess
import sys

import pytest

from tests.helpers import REPO, examples, indent
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml

HOSTS = {"gpu-a": simhosts.HOSTS["two"], "gpu-b": simhosts.HOSTS["one"], "cpu-a": (None, {})}
ROLL = "Roll the driver change, one batch at a time"
# The change exo_rollout_tasks makes on a host: its simulated NVML config replaced by rollout_after.
CHANGE = """---
- name: Swap the simulated driver (a simulated change)
  ansible.builtin.copy:
    src: "{{ rollout_after }}"
    dest: "{{ rollout_nvml_config }}"
    mode: "0644"
  when: rollout_after is defined
"""


def docs_command():
    with open(os.path.join(REPO, "docs", "driver.md")) as handle:
        section = handle.read().split("## Rolling changes\n", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"^```sh\n(.*?)\n```", section, re.M | re.S)
    return command


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, nvml_lib):
    tmp = str(tmp_path_factory.mktemp("rollout"))
    hosts = {}
    for name, (gpus, config) in HOSTS.items():
        env, root = simhosts.write(tmp, name, nvml_lib, gpus, config)
        wrapper = os.path.join(tmp, name + "-python")
        with open(wrapper, "w") as handle:
            handle.write("#!/bin/sh\n%sexec %s \"$@\"\n" % (
                "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in sorted(env.items())), shlex.quote(sys.executable)))
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
        hosts[name] = {"ansible_python_interpreter": wrapper, "device_facts_rootfs": root,
                       "exo_node_config_dir": os.path.join(tmp, name, "etc-exo"),
                       # No exo here: the probe runs with the host's interpreter, whatever this machine has in /opt/exo.
                       "exo_node_install_dir": os.path.join(tmp, name, "opt-exo")}
        if gpus:
            hosts[name]["rollout_nvml_config"] = env[simnvml.CONFIG_ENV]
    # The operator's inventory: the hosts in exo_nodes, in this order.
    with open(os.path.join(tmp, "inventory.yml"), "w") as handle:
        handle.write("exo_nodes:\n  hosts:\n" + "".join("    %s:\n" % name for name in HOSTS))
    simulation = {"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_become": False, "device_facts_tinygrad": False,
        # The simulated hosts are this machine: the driver role plans and never installs here.
        "exo_driver_plan_only": True,
        "exo_rollout_tasks": os.path.join(tmp, "change.yml")}}}
    with open(os.path.join(tmp, "simulation.json"), "w") as handle:
        json.dump(simulation, handle)
    with open(os.path.join(tmp, "change.yml"), "w") as handle:
        handle.write(CHANGE)
    unhealthy = [simnvml.gpu(g["name"], g["memory_mib"], uuid=g["uuid"], pci_bus_id=g["pci_bus_id"], minor=g["minor"],
                             health=dict(ecc=(1, 1, 3, 3)) if i == 0 else None)
                 for i, g in enumerate(simnvml.resolved(HOSTS["gpu-a"][0]))]
    simnvml.write_config(os.path.join(tmp, "gpu-a-unhealthy.nvml.conf"), unhealthy, driver_version="550.127.05")
    return tmp


def run(tmp, command, *extra):
    args = shlex.split(command)
    assert args[:4] == ["ansible-playbook", "-i", "inventory.yml", "gpufleet.exo.driver_rollout"], command
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build", "collections"))
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + args[1:]
                          + ["-i", "simulation.json"] + list(extra), cwd=tmp, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600, check=False)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON report: %s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))


def batches(report):
    """Per batch of the rolling play, in order: {host: [the tasks that ran on it, in order]}."""
    found = []
    for play in report["plays"]:
        if play["play"]["name"] != ROLL:
            continue
        steps = {}
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                if not result.get("skipped"):
                    steps.setdefault(host, []).append(task["task"]["name"].split(" : ", 1)[-1])
        found.append(steps)
    return found


def shown(report, task):
    return [r.get("msg") for play in report["plays"] for t in play["tasks"] if t["task"]["name"] == task
            for r in t["hosts"].values()]


# The rolling play's own steps, in order (loops over no instance are skipped here: no exo runs).
STEPS = ["Keep the device facts from before the change", "Record that they stopped", "Run the operator's change tasks",
         "Swap the simulated driver (a simulated change)", "Change the driver", "Record the change",
         "Gather the device facts again", "Record the facts", "Judge NVML and the GPUs' health", "Record the verdict",
         "Stop the rollout when the host is not healthy", "Record that they started", "Record that they are back in the ring"]


def steps_of(steps):
    """The rolling play's own steps among a host's tasks (the driver role's are left out)."""
    return [s for s in steps if s in STEPS]


def test_the_readme_gives_the_same_command():
    with open(os.path.join(REPO, "README.md")) as handle:
        assert "```sh\n%s\n```" % docs_command() in handle.read()


def test_the_documented_command_rolls_two_hosts_then_one(fleet):
    rc, report = run(fleet, docs_command())
    assert rc == 0, [(t["task"]["name"], h, r.get("msg")) for p in report["plays"] for t in p["tasks"]
                     for h, r in t["hosts"].items() if r.get("failed")]
    [lines] = shown(report, "Say what the fleet serves while each batch is out")
    assert lines[0].startswith("with every host: llama-3.2-1b")
    assert lines[1].startswith("batch 1 of 2 (gpu-a, gpu-b out): the fleet serves ")
    assert lines[2].startswith("batch 2 of 2 (cpu-a out): the fleet serves ")
    rolled = batches(report)
    assert [sorted(b) for b in rolled] == [["gpu-a", "gpu-b"], ["cpu-a"]]
    for batch in rolled:
        for host, steps in batch.items():
            assert steps_of(steps) == [s for s in STEPS if not s.startswith(("Swap", "Stop the"))], (host, steps)


def test_an_unhealthy_gpu_after_the_change_stops_the_rollout_at_the_first_host(fleet):
    config = os.path.join(fleet, "gpu-a.nvml.conf")
    with open(config) as handle:
        healthy = handle.read()
    try:
        rc, report = run(fleet, docs_command(), "-e", "exo_rollout_batch=1",
                         "-e", '{"rollout_after": "%s"}' % os.path.join(fleet, "gpu-a-unhealthy.nvml.conf"))
    finally:
        with open(config, "w") as handle:
            handle.write(healthy)
    assert rc != 0
    rolled = batches(report)
    # Only the first batch ran: the other hosts were never stopped.
    assert [sorted(b) for b in rolled] == [["gpu-a"]]
    assert steps_of(rolled[0]["gpu-a"]) == STEPS[:STEPS.index("Stop the rollout when the host is not healthy") + 1]
    [message] = [m for m in shown(report, "Stop the rollout when the host is not healthy") if m]
    assert message.startswith("gpu-a: not healthy after the driver change, its instances stay stopped and the rollout "
                              "stops here: GPU 0 (GPU-"), message
    assert "is unusable: 3 uncorrectable ECC errors since the driver loaded" in message


def test_the_filters_examples_run_as_written(fleet):
    play = ("- name: Run the examples\n  hosts: exo_nodes\n  gather_facts: false\n  tasks:\n"
            "    - name: Gather the device facts\n      gpufleet.exo.device_facts:\n"
            "        tinygrad: false\n        rootfs: \"{{ device_facts_rootfs }}\"\n"
            + "".join(indent(examples("filter", name)) for name in ("driver_rollout_preview", "driver_rollout_gate")))
    with open(os.path.join(fleet, "examples.yml"), "w") as handle:
        handle.write(play)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1")
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "inventory.yml",
                           "-i", "simulation.json", "examples.yml"], cwd=fleet, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "batch 1 of 2 (gpu-a, gpu-b out): the fleet serves" in proc.stdout, proc.stdout[-4000:]
    assert "gpu-a: healthy after the change: NVML ok driver 550.54.15, 2 GPU(s) ok" in proc.stdout, proc.stdout[-4000:]
    # Whatever this machine's own NVML answers, a host without NVIDIA hardware passes.
    assert re.search(r"cpu-a: healthy after the change: NVML \w+, 0 GPU\(s\) ok", proc.stdout), proc.stdout[-4000:]
