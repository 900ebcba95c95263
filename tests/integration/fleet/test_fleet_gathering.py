# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every gathering recipe of the README, docs/ and device_facts' EXAMPLES, run as written over a lab of
one host of each kind (lab.py: real SSH, simulated hardware); the fact cache read by a later play
and by the constructed inventory of docs/fleet-groups.yml."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shutil
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

from tests.helpers import examples  # noqa: E402
from tests.integration.fleet import lab as fleetlab  # noqa: E402

REPO = fleetlab.REPO
# gather_facts gives setup 10 s by default; a loaded 2-core controller running the lab needs more.
LOADED = dict(ANSIBLE_GATHER_TIMEOUT="60")
# Two hosts for the recipes that only need to be shown working: each gathering of the host whose
# NVML hangs costs its 10 s deadline.
FEW = ("h100x4", "no_gpu")


def read(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return handle.read()


def blocks(text, language):
    return re.findall(r"^```%s\n(.*?)^```" % language, text, re.M | re.S)


def recipes(text):
    return [b for b in blocks(text, "yaml") + blocks(text, "ini") if "facts_modules" in b]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    with fleetlab.Lab(str(tmp_path_factory.mktemp("fleet")), fleetlab.ORDER) as lab:
        yield lab


def names(fleet, kinds):
    return [n for n, h in fleet.hosts.items() if h["kind"] in kinds]


def run_play(fleet, text, *args, **env):
    path = os.path.join(fleet.dir, "play.yml")
    with open(path, "w") as handle:
        handle.write(text)
    proc = fleet.playbook([path] + list(args), env=fleet.environment(**dict(LOADED, **env)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    return proc.stdout


def recap(output):
    return dict((m.group(1), dict(re.findall(r"(\w+)=(\d+)", m.group(2))))
                for m in re.finditer(r"^(\S+)\s+: (ok=.*)$", output, re.M))


def cached(fleet, hosts, var):
    """A variable of each host as a later ad hoc run sees it: from the fact cache, nothing gathered."""
    proc = fleet.ansible([",".join(hosts), "-m", "ansible.builtin.debug", "-a", "var=" + var, "-o"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict((line.split(" | ")[0], json.loads(line.split(" => ", 1)[1])[var])
                for line in proc.stdout.splitlines() if " => " in line)


def test_every_recipe_that_names_facts_modules_is_one_of_those_run_here():
    found = dict((name, len(recipes(read(*name.split("/")))))
                 for name in ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(REPO, "docs")))
                                              if f.endswith(".md")])
    assert dict((k, v) for k, v in found.items() if v) == {"docs/facts.md": 2, "docs/fleet.md": 2}
    broken = "ansible.builtin.gather_facts:\n      facts_modules"
    assert not any(broken in read(*name.split("/")) for name in found) and broken not in examples("module", "device_facts")


def facts_recipe(options):
    """docs/facts.md's recipe with module options (module_defaults) or without."""
    (play,) = [r for r in recipes(read("docs", "facts.md")) if ("module_defaults" in r) == options]
    return play


def test_docs_facts_first_recipe(fleet):
    """docs/facts.md's first recipe (no options) on every kind of host: setup's facts and the device facts,
    tinygrad included."""
    assert recipes(read("docs", "facts.md"))[0] == facts_recipe(options=False)
    output = run_play(fleet, facts_recipe(options=False))
    assert sorted(recap(output)) == sorted(fleet.hosts)
    assert all(r["failed"] == "0" and r["unreachable"] == "0" for r in recap(output).values()), output[-3000:]
    families = cached(fleet, fleet.hosts, "ansible_facts.os_family")
    assert set(families.values()) == {"Debian"}, families  # setup's facts, beside the device facts
    # The lab's GPUs are simulated down to NVML only: tinygrad opens no CUDA device there and says so.
    (h100,) = names(fleet, ["h100x4"])
    caps = cached(fleet, [h100], "ansible_facts.device_capabilities")[h100]
    assert len(caps["gpus"]) == 4 and caps["tinygrad"]["installed"]
    assert caps["backend"] == "cpu" and "tinygrad" in caps["fallback_reason"]


def test_docs_facts_recipe_then_the_cache_then_groups(fleet):
    """docs/facts.md's recipe with options for the module on every kind of host; then docs/fleet.md's play
    and its groups read the fleet from the cache."""
    output = run_play(fleet, facts_recipe(options=True))
    backends = re.findall(r'"ansible_facts.device_capabilities.backend": "(\w+)"', output)
    assert sorted(backends) == sorted(fleetlab.expected(h["kind"])["backend"] for h in fleet.hosts.values())
    reasons = cached(fleet, fleet.hosts, "ansible_facts.device_capabilities.tinygrad.reason")
    assert set(reasons.values()) == {"not probed (tinygrad: false)"}, reasons

    # A new run reads the fleet from the cache and gathers nothing.
    fleet_md = read("docs", "fleet.md")
    play = [b for b in blocks(fleet_md, "yaml") if "gather_facts: false" in b]
    assert len(play) == 1
    output = run_play(fleet, play[0])
    assert "Gathering Facts" not in output and "gpufleet.exo.device_facts" not in output
    for name, host in fleet.hosts.items():
        want = fleetlab.expected(host["kind"])
        line = "%s; NVML %s; driver needed %s" % (
            ", ".join(want["names"]) or "no GPU", want["status"], want["driver_needed"])
        assert re.search(r"ok: \[%s\] => \{\n\s+\"msg\": \"%s\"" % (name, re.escape(line)), output), \
            (line, output[-4000:])

    groups_file = read("docs", "fleet-groups.yml")
    assert groups_file in blocks(fleet_md, "yaml")  # the page shows the file as it is
    proc = fleet.run([os.path.join(fleetlab.BIN, "ansible-inventory"), "-i", fleet.inventory, "-i",
                      os.path.join(REPO, "docs", "fleet-groups.yml"), "--list"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    inventory = json.loads(proc.stdout)

    def group(name):
        return sorted(fleet.hosts[h]["kind"] for h in inventory.get(name, {}).get("hosts", []))

    assert group("backend_cuda") == ["a100_mig", "h100x4", "rtx3080_3090", "unknown_part"]
    assert group("backend_cpu") == ["driver_missing", "no_gpu", "nvml_hangs", "reboot_pending"]
    assert group("driver_needed") == ["driver_missing"]
    assert group("reboot_pending") == ["reboot_pending"]
    assert group("nvml_timeout") == ["nvml_hangs"]
    assert group("unknown_chip") == ["unknown_part"]
    assert group("chip_NVIDIA_H100_SXM5_80GB") == ["h100x4"]
    assert group("chip_NVIDIA_GeForce_RTX_3090") == ["rtx3080_3090"]


def test_docs_fleet_recipe(fleet):
    play = [b for b in recipes(read("docs", "fleet.md")) if b.startswith("- name:")]
    assert len(play) == 1
    output = run_play(fleet, play[0], "--limit", ",".join(names(fleet, FEW)))
    # The lab's GPUs are simulated down to NVML: tinygrad finds no CUDA device, so the backend is cpu.
    assert '"msg": "4 GPUs, backend cpu"' in output and '"msg": "0 GPUs, backend cpu"' in output, output[-3000:]


def test_docs_fleet_ansible_cfg_recipe(fleet):
    """The ansible.cfg setting and the group_vars line of docs/fleet.md, with a play that only gathers."""
    fleet_md = read("docs", "fleet.md")
    (setting,) = [b for b in blocks(fleet_md, "ini") if "facts_modules" in b]
    (group_vars,) = [b for b in blocks(fleet_md, "yaml") if b.startswith("# group_vars/all.yml")]
    config = read("ansible.cfg").replace("[defaults]\n", setting, 1)
    path = os.path.join(fleet.dir, "ansible.cfg")
    with open(path, "w") as handle:
        handle.write(config)
    os.makedirs(os.path.join(fleet.dir, "group_vars"), exist_ok=True)
    with open(os.path.join(fleet.dir, "group_vars", "all.yml"), "w") as handle:
        handle.write(group_vars)
    try:
        check_ansible_cfg_recipe(fleet, path)
    finally:
        shutil.rmtree(os.path.join(fleet.dir, "group_vars"))


def check_ansible_cfg_recipe(fleet, path):
    hosts = names(fleet, FEW)
    output = run_play(fleet, "- name: Gather\n  hosts: gpu_hosts\n  gather_facts: true\n  tasks: []\n",
                      "--limit", ",".join(hosts), ANSIBLE_CONFIG=path, ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(
                          fleet.dir, "cfg-facts"))
    assert sorted(recap(output)) == sorted(hosts)
    env = fleet.environment(ANSIBLE_CONFIG=path, ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(fleet.dir, "cfg-facts"))
    proc = fleet.ansible([",".join(hosts), "-m", "ansible.builtin.debug", "-a",
                          "var=ansible_facts.device_capabilities.nvml.status", "-o"], env=env)
    assert sorted(re.findall(r'"ansible_facts.device_capabilities.nvml.status": "(\w+)"', proc.stdout)) == \
        ["library_not_found", "ok"], proc.stdout[-3000:]
    proc = fleet.ansible([hosts[0], "-m", "ansible.builtin.debug", "-a", "var=ansible_facts_parallel", "-o"], env=env)
    assert '"ansible_facts_parallel": false' in proc.stdout, proc.stdout


def test_module_examples(fleet):
    """device_facts' EXAMPLES: its tasks in a play, its play as it is."""
    written = yaml.safe_load(examples("module", "device_facts"))
    tasks = [e for e in written if "hosts" not in e]
    plays = [e for e in written if "hosts" in e]
    assert len(plays) == 1 and plays[0]["vars"]["ansible_facts_modules"][1] == "gpufleet.exo.device_facts"
    hosts = ",".join(names(fleet, FEW))
    run_play(fleet, yaml.safe_dump([dict(name="EXAMPLES", hosts="gpu_hosts", gather_facts=False, tasks=tasks)]),
             "--limit", hosts)
    output = run_play(fleet, yaml.safe_dump(plays), "--limit", hosts)
    assert all(r["ok"] == "1" and r["failed"] == "0" for r in recap(output).values()), output[-3000:]
    statuses = cached(fleet, names(fleet, FEW), "ansible_facts.device_capabilities.nvml.status")
    assert sorted(statuses.values()) == ["library_not_found", "ok"]
