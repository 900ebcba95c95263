# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node planner's examples, run as they are written: the EXAMPLES of the filters node_plan,
node_cluster, node_firewall, node_proxy, node_models and node_outcome, one after the other in one play, as a
user would chain them; and node_python's, node_install's, node_preflight's and node_preflight_host's on this machine,
with the module exo_host_inspect's.

They run on a simulated host with four H100s (tests/simulated/hosts.py "four": the simulated
libnvidia-ml under the real nvidia-ml-py, a simulated /sys) over a local connection, in check mode,
so that the topology the node_cluster example writes to /etc/exo is only shown (--diff), not written.
"""

import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from tests.helpers import examples, indent, local_inventory as local, recap, run_example as playbook, tasks_play
from tests.simulated import hosts as simhosts
from tests.simulated.hosts import uuid


def test_node_filter_examples_on_a_simulated_four_gpu_host(tmp_path, nvml_lib):
    env, root = simhosts.write(str(tmp_path), "four", nvml_lib)
    # The play around the examples points the probe at the simulated host; the examples are verbatim.
    play = ("- name: Run the examples\n  hosts: all\n  gather_facts: false\n"
            "  environment: %s\n  module_defaults:\n    gpufleet.exo.device_facts: %s\n  tasks:\n"
            % (json.dumps(env), json.dumps({"rootfs": root, "tinygrad": False, "timeout": 30})))
    names = ("node_plan", "node_cluster", "node_firewall", "node_proxy", "node_files", "node_models", "node_outcome")
    play += "".join(indent(examples("filter", name)) for name in names)
    before = os.path.exists("/etc/exo/topology.json")
    proc = playbook(str(tmp_path), play, local(), check=True, diff=True)
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    assert os.path.exists("/etc/exo/topology.json") == before
    # exo_node_gpus "0,2": the first and third GPU, each with its own ports from the bases
    shown = proc.stdout.split("TASK [Show each instance's node id, GPU and ports]")[1]
    assert re.search(r'"localhost-%s",\s*"%s",\s*\{\s*"api": 52415' % (uuid(0), uuid(0)), shown), shown[:3000]
    assert re.search(r'"localhost-%s",\s*"%s",\s*\{\s*"api": 52416' % (uuid(2), uuid(2)), shown), shown[:3000]
    assert uuid(1) not in shown
    # the topology lists both instances as exo's manual discovery peers
    topology = proc.stdout.split("TASK [Write exo's manual discovery file]")[1]
    assert '+    "peers": {' in topology and '"address": "10.0.0.11"' in topology, topology[:3000]
    # gRPC from the ring (this host's address), the API from the example's clients
    allowed = proc.stdout.split("TASK [Show who may reach this host's exo instances]")[1]
    assert re.search(r'"gRPC",\s*\[\s*50051,\s*50052\s*\],\s*"ring"', allowed), allowed[:3000]
    assert re.search(r'"API",\s*\[\s*52415,\s*52416\s*\],\s*"clients"', allowed), allowed[:3000]
    # each instance behind the proxy on its own port, and exo's administrative routes refused
    proxied = proc.stdout.split("TASK [Show where each instance's API is reached through the proxy, and what it refuses]")[1]
    assert re.search(r'"%s",\s*52515\s*\],\s*\[\s*"%s",\s*52516' % (uuid(0), uuid(2)), proxied), proxied[:3000]
    assert re.search(r'"= /quit",\s*"= /download",\s*"/download/",\s*"/models/"', proxied), proxied[:3000]
    assert "0b8e5bd2c4a1f9e37d6a0c5b8f2e4d17" not in proxied
    # the configuration directory, the env files' and each instance's drop-in directory, root's
    made = proc.stdout.split("TASK [Create the directories of the instances]")[1].split("TASK [")[0]
    dropins = ["/etc/systemd/system/exo@%s.service.d" % uuid(n) for n in (0, 2)]
    for path in ["/etc/exo", "/etc/exo/instances"] + dropins:
        assert "'path': '%s'" % path in made, made[:3000]
    # this machine has no model store: the placement says so and what to do
    placing = proc.stdout.split("TASK [Show what placing llama-3.2-1b would take, or why it cannot be placed]")[1]
    assert "exo_node_model_store has no *.safetensors file of unsloth/Llama-3.2-1B-Instruct" in placing, placing[:3000]
    assert "huggingface-cli download unsloth/Llama-3.2-1B-Instruct --local-dir /srv/exo-models/" in placing
    # this machine has none of the GPUs' device nodes
    note = proc.stdout.split("TASK [Say which are missing]")[1]
    assert '"msg": "host localhost: /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia0, /dev/nvidia3, ' \
           '/dev/nvidiactl missing; DeviceAllow= lines' in note, note[:2000]


def example_shows(tmp_path, name, task):
    """What the task of the filter's EXAMPLES shows, run on this machine, which must not fail."""
    proc = playbook(str(tmp_path), tasks_play(examples("filter", name)), local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    return proc.stdout.split("TASK [%s]" % task)[1]


@pytest.mark.skipif(not os.path.exists("/etc/debian_version") or not open("/etc/debian_version").read().startswith("12"),
                    reason="the answer checked is Debian 12's")
def test_node_python_example_on_this_machine(tmp_path):
    shown = example_shows(tmp_path, "node_python", "Say which, or why there is none")
    assert '"msg": "/usr/bin/python3 (Python 3.11)"' in shown, shown[:2000]


def test_node_install_example_on_this_machine(tmp_path):
    shown = example_shows(tmp_path, "node_install", "Say what pip installs, or why it cannot")
    # every source installs from the wheelhouse the controller built, every wheel checked, none built on the host
    assert '"msg": "/opt/exo/bin/python -m pip install --disable-pip-version-check --no-input --require-hashes ' \
           '--no-index --only-binary :all: --find-links /opt/exo/wheelhouse --timeout 60 ' \
           '--requirement=/opt/exo/wheelhouse/requirements.txt"' in shown, shown[:2000]


def test_node_preflight_example_on_this_machine(tmp_path):
    shown = example_shows(tmp_path, "node_preflight", "Say what the role would refuse, or how pip would install exo")
    # this machine has systemctl and /usr/bin/python3 in range, but no device facts were gathered: the
    # role would gather them (exo_node_refresh_facts auto), so nothing is refused
    assert '"msg": "/opt/exo/bin/python -m pip install --disable-pip-version-check --no-input --require-hashes ' \
           '--no-index --only-binary :all: --find-links /opt/exo/wheelhouse ' \
           '--requirement=/opt/exo/wheelhouse/requirements.txt"' in shown, shown[:2000]


def test_node_preflight_host_example_as_the_second_step_on_this_machine(tmp_path):
    """node_preflight_host's EXAMPLES are the second step alone: run verbatim in the place of the second step of
    node_preflight's, after its first, they give the same answer."""
    steps = examples("filter", "node_preflight")
    first, rest = steps.split("# The settings as checked, for the planners; the second answer leaves them out.\n")
    say = rest.split("\n\n", 1)[1]
    play = tasks_play(first + examples("filter", "node_preflight_host") + "\n" + say)
    proc = playbook(str(tmp_path), play, local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say what the role would refuse, or how pip would install exo]")[1]
    assert '"msg": "/opt/exo/bin/python -m pip install --disable-pip-version-check --no-input --require-hashes ' \
           '--no-index --only-binary :all: --find-links /opt/exo/wheelhouse ' \
           '--requirement=/opt/exo/wheelhouse/requirements.txt"' in shown, shown[:2000]


def test_exo_host_inspect_example_on_this_machine(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(examples("module", "exo_host_inspect")), local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say what was found]")[1]
    version = subprocess.run(["/usr/bin/python3", "--version"], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout.strip()
    configured = len(glob.glob("/etc/exo/instances/*.env"))
    venv = "in place" if os.path.exists("/opt/exo/bin/python") else "to make"
    kernel = os.path.exists("/sys/module/wireguard") or bool(shutil.which("modprobe")) and subprocess.run(
        ["modprobe", "-n", "wireguard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode == 0
    assert ('"msg": "%s; exo\'s virtualenv %s; WireGuard %s; systemctl found; root\'s uid 0; %d instances configured"'
            % (version, venv, "in the kernel" if kernel else "in userspace", configured)) in shown, shown[:2000]


def test_node_settings_example_takes_good_variables_and_stops_on_a_misspelt_one(tmp_path):
    # The variables whose defaults are templates only the role fills in are given, as a play gives them.
    given = {"exo_node_id_prefix": "gpu7", "exo_node_address": "10.0.0.11", "exo_node_cluster_hosts": ["localhost"]}
    play = tasks_play(examples("filter", "node_settings"))
    good = playbook(str(tmp_path), play, local(**given))
    assert recap(good, "localhost")["failed"] == 0, good.stdout[-4000:]
    bad = playbook(str(tmp_path), play, local(exo_node_gpu=[0], **given))
    assert recap(bad, "localhost")["failed"] == 1
    assert "host localhost: exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?)" in bad.stdout, \
        bad.stdout[-4000:]
