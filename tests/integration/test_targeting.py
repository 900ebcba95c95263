# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Targeting: docs/targeting.md's mixed fleet, its inventory and its commands run as written, over simulated hosts.

Each host of the page's inventory is a simulated host (tests/simulated/hosts.py) on a local
connection: its own Python interpreter, a wrapper that loads the simulated libnvidia-ml with that
host's GPUs, and its own simulated /sys. A second inventory source adds only that and the settings
that keep the run on this machine (paths under the test's folder, the driver role planning only).
The runs report through ansible.posix.json, so the tests see which play ran which task on which host.
The README's facts command runs over the same fleet.
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

from tests.helpers import REPO
from tests.simulated import hosts as simhosts

# The page's hosts, as simulated hosts (its inventory's comments say what each has).
SIMULATED = {"gpu-a": "four", "gpu-b": "nvml_broken", "cpu-a": "cpu_only", "gpu-t": "one"}
PLAYS = {"probe": "Probe devices", "driver": "Install the NVIDIA driver where the facts say it is needed",
         "node": "Run one exo node per chosen GPU, or one CPU node"}


def docs_examples():
    """docs/targeting.md's mixed-fleet inventory and the site commands that follow it."""
    with open(os.path.join(REPO, "docs", "targeting.md")) as handle:
        text = handle.read()
    inventory = re.search(r"```yaml\n(# inventory\.yml\n.*?)```", text, re.S).group(1)
    commands = re.findall(r"^(ansible-playbook -i inventory\.yml gpufleet\.exo\.site --.*?)(?:\s+#.*)?$", text, re.M)
    return inventory, commands


def simulated_interpreter(tmp, name, env):
    """A host's Python: the test's own interpreter with the host's simulated NVML in its environment."""
    path = os.path.join(tmp, name, "python")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n%sexec %s \"$@\"\n" % (
            "".join("export %s=%s\n" % (key, shlex.quote(value)) for key, value in sorted(env.items())),
            shlex.quote(sys.executable)))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, nvml_lib):
    tmp = str(tmp_path_factory.mktemp("targeting"))
    inventory, commands = docs_examples()
    with open(os.path.join(tmp, "inventory.yml"), "w") as handle:
        handle.write(inventory)
    hosts = {}
    for name, host in SIMULATED.items():
        env, root = simhosts.write(tmp, name, nvml_lib, *simhosts.HOSTS[host])
        hosts[name] = {"ansible_python_interpreter": simulated_interpreter(tmp, name, env), "device_facts_rootfs": root}
    paths = os.path.join(tmp, "paths", "{{ inventory_hostname }}")
    simulation = {"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local",
        # Root here already; the plays' become would need sudo, which this machine lacks.
        "ansible_become": False,
        "device_facts_tinygrad": False,
        "exo_driver_plan_only": True,
        "exo_node_refresh_facts": "never",
        "exo_node_manage_packages": False,
        "exo_node_python": sys.executable,
        "exo_node_python_max_version": "%d.%d" % sys.version_info[:2],
        "exo_node_install_dir": paths + "/install",
        "exo_node_config_dir": paths + "/config",
        "exo_node_data_dir": paths + "/data",
    }}}
    # facts.yml writes a fleet report on every run.
    simulation["all"]["vars"]["fleet_report_dir"] = os.path.join(tmp, "reports")
    os.makedirs(os.path.join(tmp, "reports"))
    with open(os.path.join(tmp, "simulation.json"), "w") as handle:
        json.dump(simulation, handle)
    return tmp, commands


def run(fleet, command):
    """Run a command of the page over the simulated fleet: (ansible-playbook's exit status, its JSON report)."""
    tmp = fleet[0]
    args = shlex.split(command)
    assert args[:3] == ["ansible-playbook", "-i", "inventory.yml"], command
    assert args[3] in ("gpufleet.exo.site", "gpufleet.exo.facts"), command
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="4", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build", "collections"))
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + args[1:]
                          + ["-i", "simulation.json"], cwd=tmp, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600, check=False)
    if "--list-tags" in args:
        return proc.returncode, proc.stdout + proc.stderr
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON report: %s\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:]))


def readme_command(playbook):
    """The README's one command that runs the playbook on inventory.yml."""
    with open(os.path.join(REPO, "README.md")) as handle:
        found = re.findall(r"^(ansible-playbook -i inventory\.yml gpufleet\.exo\.%s(?: .*?)?)(?:\s+#.*)?$" % playbook,
                           handle.read(), re.M)
    assert len(found) == 1, "the README has no single command for gpufleet.exo.%s: %s" % (playbook, found)
    return found[0]


def command(fleet, *parts):
    found = [c for c in fleet[1] if all(p in c.split() for p in parts)]
    assert len(found) == 1, "docs/targeting.md has no single command with %s: %s" % (parts, fleet[1])
    return found[0]


def task_name(task):
    """The task's own name, without the role's."""
    return task["task"]["name"].split(" : ", 1)[-1]


def ran(report, play):
    """{task name: set of hosts it ran on (not skipped)} in the play of that name."""
    tasks = {}
    for entry in report["plays"]:
        if entry["play"]["name"] == PLAYS[play]:
            for task in entry["tasks"]:
                hosts = set(h for h, r in task["hosts"].items() if not r.get("skipped"))
                tasks.setdefault(task_name(task), set()).update(hosts)
    return tasks


def failures(report):
    return [(entry["play"]["name"], task["task"]["name"], host, result.get("msg"))
            for entry in report["plays"] for task in entry["tasks"] for host, result in task["hosts"].items()
            if result.get("failed") or result.get("unreachable")]


def hosts_of(tasks):
    return set().union(*tasks.values()) if tasks else set()


def result(report, play, task, host):
    for entry in report["plays"]:
        if entry["play"]["name"] == PLAYS[play]:
            for item in entry["tasks"]:
                if task_name(item) == task and host in item["hosts"]:
                    return item["hosts"][host]
    raise AssertionError("%s did not run on %s" % (task, host))


def test_list_tags_shows_plays_and_phases(fleet):
    rc, output = run(fleet, command(fleet, "--list-tags"))
    assert rc == 0, output
    plays = dict(re.findall(r"play #\d+ \((.*?)\): (.*?)\tTAGS: \[(.*?)\]", output)[i][1:] for i in range(4))
    assert plays[PLAYS["probe"]] == "facts"
    assert plays[PLAYS["driver"]] == "driver" and plays[PLAYS["node"]] == "node"
    task_tags = [set(t.split(", ")) for t in re.findall(r"TASK TAGS: \[(.*?)\]", output)]
    assert {"facts", "always"} <= task_tags[0]
    for tags in task_tags[2:4]:
        assert {"preflight", "install", "configure"} <= tags


def test_preflight_checks_the_fleet_and_changes_nothing(fleet):
    rc, report = run(fleet, command(fleet, "--tags", "preflight"))
    assert rc == 0, failures(report)
    assert all(s["changed"] == 0 and s["failures"] == 0 for s in report["stats"].values()), report["stats"]
    assert hosts_of(ran(report, "probe")) == set(SIMULATED)
    # The facts put the hosts with NVIDIA hardware in a group; only exo_nodes among them get the driver play.
    assert ran(report, "probe")["Group the hosts whose facts show NVIDIA hardware"] == {"gpu-a", "gpu-b", "gpu-t"}
    assert hosts_of(ran(report, "driver")) == {"gpu-a", "gpu-b"}
    assert hosts_of(ran(report, "node")) == {"gpu-a", "gpu-b", "cpu-a"}
    decisions = dict((h, result(report, "driver", "Publish the decision and the plan", h)["ansible_facts"]
                      ["exo_driver_decision"]["action"]) for h in ("gpu-a", "gpu-b"))
    assert decisions["gpu-b"] == "install" and decisions["gpu-a"] != "install"
    # The plans: four GPU instances; a CPU instance where no GPU is usable, only on hosts meant to run exo.
    kinds = dict((h, [i["kind"] for i in result(report, "node", "Publish the instances of this host", h)
                      ["ansible_facts"]["exo_node_instances"]]) for h in ("gpu-a", "gpu-b", "cpu-a"))
    assert kinds == {"gpu-a": ["gpu"] * 4, "gpu-b": ["cpu"], "cpu-a": ["cpu"]}
    # Neither the install nor the configure phase ran.
    names = set(ran(report, "node")) | set(ran(report, "driver"))
    assert not names & {"Install exo, what it needs and the collection's patches into its virtualenv",
                        "Write the units and each instance's settings", "Remove the instances that left and the files the settings turned off",
                        "Install the packages of the plan", "Load the driver, rebooting where that is needed and allowed"}
    assert "Read the role's variables, check them and choose exo's Python" in names and "Decide from the device facts" in names


def test_driver_tag_and_limit_run_the_driver_play_alone_on_one_host(fleet):
    rc, report = run(fleet, command(fleet, "--tags", "driver", "--limit"))
    assert rc == 0, failures(report)
    assert set(report["stats"]) == {"gpu-b"}
    assert hosts_of(ran(report, "probe")) == {"gpu-b"}
    assert "Show what this host can compute" not in ran(report, "probe")
    assert hosts_of(ran(report, "driver")) == {"gpu-b"}
    # The node play runs ansible-core's check of the role's arguments alone, the one task tagged always:
    # none of the role's own phases.
    node = ran(report, "node")
    assert node and all(name.startswith("Validating arguments against arg spec 'main'") for name in node), node


def test_a_group_outside_exo_nodes_is_probed_and_left_alone(fleet):
    rc, report = run(fleet, command(fleet, "--tags", "node", "--limit", "training"))
    assert rc == 0, failures(report)
    assert set(report["stats"]) == {"gpu-t"} and report["stats"]["gpu-t"]["changed"] == 0
    assert hosts_of(ran(report, "probe")) == {"gpu-t"}
    assert hosts_of(ran(report, "driver")) == set() and hosts_of(ran(report, "node")) == set()


def test_the_readme_facts_command_probes_every_host_and_writes_the_report(fleet):
    reports = os.path.join(fleet[0], "reports")
    for name in os.listdir(reports):  # the site runs above write theirs here too
        os.remove(os.path.join(reports, name))
    rc, report = run(fleet, readme_command("facts"))
    assert rc == 0, failures(report)
    assert hosts_of(ran(report, "probe")) == set(SIMULATED)
    assert ran(report, "probe")["Group the hosts whose facts show NVIDIA hardware"] == {"gpu-a", "gpu-b", "gpu-t"}
    assert all(s["changed"] == 0 and s["failures"] == 0 for s in report["stats"].values()), report["stats"]
    written = sorted(os.listdir(reports))
    assert [re.sub(r"\d{8}T\d{6}Z", "STAMP", name) for name in written] == ["fleet-STAMP.html", "fleet-STAMP.json"]
    with open(os.path.join(reports, written[1])) as handle:
        hosts = dict((h["host"], h) for h in json.load(handle)["hosts"])
    # The report holds every host of the inventory, as its simulated hardware is.
    assert sorted(hosts) == sorted(SIMULATED)
    assert [len(hosts[h]["gpus"]) for h in ("gpu-a", "gpu-t", "cpu-a")] == [4, 1, 0]
    assert hosts["gpu-b"]["driver_needed"] is True
