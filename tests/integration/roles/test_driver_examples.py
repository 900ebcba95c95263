# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The driver's examples, run as they are written: the EXAMPLES of the filters driver_plan and
driver_package_names and of the modules driver_apt_check, driver_dnf_check and package_versions, and the
playbook of docs/driver.md.

They run on this machine (Debian 12, no GPU, no dnf) over a local connection; the docs' playbook runs on
a simulated host with an NVIDIA GPU and no driver, in plan-only mode, so that it changes nothing.
"""

import json
import os
import re
import sys

from tests.helpers import REPO, examples, local_inventory as local, recap, run_example as playbook, tasks_play
from tests.simulated import sysfs as simsysfs

SOURCES = "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources"


def test_filter_example_plans_this_machine(tmp_path):
    example = examples("filter", "driver_plan")
    proc = playbook(str(tmp_path), example, local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Show the problems, or the decision and what to install]")[1]
    # this machine has no GPU: nothing to install, and the settings as -e gives them are accepted
    assert '"case": "no_hardware"' in shown and '"install": null' in shown, shown[:3000]


def test_apt_check_example_asks_debians_archive(tmp_path):
    before = os.path.exists(SOURCES)
    proc = playbook(str(tmp_path), tasks_play(examples("module", "driver_apt_check")), local())
    assert recap(proc, "localhost") == {"ok": 1, "changed": 0, "failed": 0}, proc.stdout[-4000:]
    assert "skipping: [localhost]" in proc.stdout.split("TASK [Stop when apt says the plan cannot work]")[1]
    assert os.path.exists(SOURCES) == before


def test_dnf_check_example_says_this_host_has_no_dnf(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(examples("module", "driver_dnf_check")), local())
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
    example = examples("filter", "driver_outcome")
    proc = playbook(str(tmp_path), tasks_play(example), local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say what mokutil means]")[1]
    # this machine boots without Secure Boot (no mokutil, no EFI variable)
    assert '"msg": "Secure Boot is off"' in shown, shown[:2000]


def test_package_versions_example_reads_this_machine_as_package_facts_does(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(examples("module", "package_versions")), local())
    assert recap(proc, "localhost") == {"ok": 2, "changed": 0, "failed": 0}, proc.stdout[-4000:]
    # The same packages through ansible.builtin.package_facts: the same versions and architectures.
    compare = tasks_play("""
- name: Read a few packages
  gpufleet.exo.package_versions:
    names: '^(bash|dpkg|libc6|libgcc-s1)$'
  register: few
- name: Read every package
  ansible.builtin.package_facts:
- name: Say both
  ansible.builtin.debug:
    msg: "{{ {'few': few.packages, 'all': ansible_facts.packages | dict2items | selectattr('key', 'in', few.packages)
              | items2dict} | to_json }}"
""")
    proc = playbook(str(tmp_path), compare, local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say both]")[1].split("PLAY RECAP")[0]
    said = json.loads(json.loads(shown[shown.index("{"):shown.rindex("}") + 1])["msg"])
    assert sorted(said["few"]) == ["bash", "dpkg", "libc6", "libgcc-s1"]
    assert dict((name, [(e["version"], e["arch"]) for e in entries]) for name, entries in said["few"].items()) == \
        dict((name, [(e["version"], e["arch"]) for e in entries]) for name, entries in said["all"].items())


def test_driver_package_names_example_reads_no_driver_package_here(tmp_path):
    proc = playbook(str(tmp_path), examples("filter", "driver_package_names"), local())
    assert recap(proc, "localhost") == {"ok": 3, "changed": 0, "failed": 0}, proc.stdout[-4000:]
    # Debian 12 without a GPU: the names are Debian's, and no driver package is installed.
    assert '"msg": []' in proc.stdout.split("TASK [Say which are installed, and at which version]")[1], proc.stdout[-3000:]


def test_package_versions_refuses_names_that_are_no_regular_expression(tmp_path):
    proc = playbook(str(tmp_path), tasks_play("""
- name: Read with a broken pattern
  gpufleet.exo.package_versions:
    names: '^(nvidia-'
"""), local())
    assert recap(proc, "localhost")["failed"] == 1, proc.stdout[-3000:]
    failure = proc.stdout.split("TASK [Read with a broken pattern]")[1]
    assert "names is not a regular expression (missing ), unterminated subpattern" in failure, failure[:2000]
