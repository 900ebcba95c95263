# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The driver's examples, run as they are written: the EXAMPLES of the filter driver_plan and of the
modules driver_apt_check and driver_dnf_check, and the playbook of docs/driver.md.

They run on this machine (Debian 12, no GPU, no dnf) over a local connection; the docs' playbook runs on
a simulated host with an NVIDIA GPU and no driver, in plan-only mode, so that it changes nothing.
"""

import json
import os
import re
import subprocess
import sys

import yaml

from tests.simulated import sysfs as simsysfs
from tests.unit.conftest import REPO

SOURCES = "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources"


def playbook(tmp, text, inventory, check=False, diff=False):
    path = os.path.join(tmp, "example.yml")
    with open(path, "w") as handle:
        handle.write(text)
    with open(os.path.join(tmp, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v"]
                          + (["--check"] if check else []) + (["--diff"] if diff else []) + ["-i", os.path.join(tmp, "inventory.json"), path],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600, check=False)


def local(**host_vars):
    host = dict(ansible_connection="local", ansible_python_interpreter=sys.executable, **host_vars)
    return {"all": {"hosts": {"localhost": host}}}


def tasks_play(examples):
    """A module's EXAMPLES are tasks: they run as they are, in a play on this machine."""
    return "- name: Run the examples\n  hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(
        "    " + line + "\n" if line else "\n" for line in examples.strip("\n").splitlines())


def module_examples(name):
    path = os.path.join(REPO, "plugins", "modules", name + ".py")
    with open(path) as handle:
        return re.search(r'^EXAMPLES = r"""\n(.*?)^"""', handle.read(), re.M | re.S).group(1)


def filter_examples(name):
    """A filter's EXAMPLES, from its documentation file."""
    with open(os.path.join(REPO, "plugins", "filter", name + ".yml")) as handle:
        return yaml.safe_load(handle)["EXAMPLES"]


def recap(proc, host):
    match = re.search(r"^%s +: ok=(\d+) +changed=(\d+) +unreachable=0 +failed=(\d+)" % re.escape(host), proc.stdout, re.M)
    assert match, proc.stdout[-4000:]
    return dict(zip(("ok", "changed", "failed"), (int(n) for n in match.groups())))


def test_filter_example_plans_this_machine(tmp_path):
    example = filter_examples("driver_plan")
    proc = playbook(str(tmp_path), example, local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Show the problems, or the decision and the plan]")[1]
    # this machine has no GPU: nothing to plan, and the settings as -e gives them are accepted
    assert '"case": "no_hardware"' in shown and '"plan": null' in shown, shown[:3000]


def test_apt_check_example_asks_debians_archive(tmp_path):
    before = os.path.exists(SOURCES)
    proc = playbook(str(tmp_path), tasks_play(module_examples("driver_apt_check")), local())
    assert recap(proc, "localhost") == {"ok": 1, "changed": 0, "failed": 0}, proc.stdout[-4000:]
    assert "skipping: [localhost]" in proc.stdout.split("TASK [Stop when apt says the plan cannot work]")[1]
    assert os.path.exists(SOURCES) == before


def test_dnf_check_example_says_this_host_has_no_dnf(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(module_examples("driver_dnf_check")), local())
    assert recap(proc, "localhost")["failed"] == 1
    failure = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [localhost]")]
    assert failure and "dnf, rpm not found on this host, so dnf cannot check the plan" in failure[0], proc.stdout[-3000:]


def test_docs_playbook_on_a_gpu_host_without_driver(tmp_path):
    with open(os.path.join(REPO, "docs", "driver.md")) as handle:
        examples = re.findall(r"^```yaml\n(.*?)^```", handle.read(), re.M | re.S)
    assert len(examples) == 1
    root = str(tmp_path / "root")
    simsysfs.write_tree(root, pci=[simsysfs.nvidia_gpu("0000:3b:00.0", driver="none")])
    inventory = {"gpu_hosts": {"hosts": {"gpu7": dict(
        ansible_connection="local", ansible_python_interpreter=sys.executable, exo_driver_plan_only=True,
        exo_driver_probe_options={"rootfs": root, "tinygrad": False})}}}
    proc = playbook(str(tmp_path), examples[0], inventory)
    assert recap(proc, "gpu7")["changed"] == 0 and recap(proc, "gpu7")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [gpufleet.exo.driver : Show the decision and the plan]")[1]
    assert '"action": "install"' in shown and '"branch": "535"' in shown, shown[:3000]


def test_outcome_filter_example_reads_mokutil_on_this_machine(tmp_path):
    example = filter_examples("driver_outcome")
    proc = playbook(str(tmp_path), tasks_play(example), local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say what mokutil means]")[1]
    # this machine boots without Secure Boot (no mokutil, no EFI variable)
    assert '"msg": "Secure Boot is off"' in shown, shown[:2000]
