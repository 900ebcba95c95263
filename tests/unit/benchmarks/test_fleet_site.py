# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/fleet_site.py without Ansible runs: the rings, the count of tasks and the floor made from it, the
recap read, the hosts' share of the CPU, the hosts a planner is called on and the table's ratio."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import subprocess

import yaml

from tests.helpers import REPO

SPEC = importlib.util.spec_from_file_location("fleet_site_bench", os.path.join(REPO, "benchmarks", "fleet_site.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_rings_are_consecutive_and_even_and_never_larger_than_asked():
    names = ["h%03d" % n for n in range(100)]
    made = bench.rings(names, 8)
    assert [len(r) for r in made] == [7, 8, 8, 7, 8, 8, 7, 8, 8, 7, 8, 8, 8]
    assert sum(made, []) == names
    assert bench.rings(["a"], 8) == [["a"]]
    assert [len(r) for r in bench.rings(names[:10], 8)] == [5, 5]
    assert bench.rings(names[:8], 8) == [names[:8]]


def test_the_floor_runs_as_many_tasks_per_host_as_counted():
    # 94 modules started on the 3 hosts' interpreters; the callback's tasks on the controller per host.
    assert bench.per_host({"a": 35, "b": 34, "c": 33}, 94) == (31, 34)
    play = yaml.safe_load(bench.floor_play(3, 2))
    assert play[0]["hosts"] == "all" and play[0]["gather_facts"] is False
    assert [sorted(t)[0] for t in play[0]["tasks"]] == ["ansible.builtin.ping"] * 3 + ["ansible.builtin.set_fact"] * 2


class Task(object):
    def __init__(self, action):
        self.action = action


class Host(object):
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class Result(object):
    def __init__(self, host, action, result):
        self._host, self._task, self._result = Host(host), Task(action), result


def test_the_counter_counts_each_item_of_a_loop_and_where_each_task_ran(tmp_path, monkeypatch):
    namespace = {}
    exec(compile(bench.COUNTER, "fleet_site_count.py", "exec"), namespace)  # pylint: disable=exec-used
    counter = namespace["CallbackModule"]()
    counter.v2_runner_on_ok(Result("a", "ansible.builtin.set_fact", {}))
    counter.v2_runner_on_ok(Result("a", "gpufleet.exo.exo_service", {}))
    counter.v2_runner_on_failed(Result("b", "debug", {}), ignore_errors=True)
    for item in range(3):
        counter.v2_runner_item_on_ok(Result("a", "ansible.builtin.debug", {"item": item}))
        counter.v2_runner_item_on_ok(Result("b", "ansible.builtin.template", {"item": item}))
    counter.v2_runner_on_ok(Result("a", "ansible.builtin.debug", {"results": [{}, {}, {}]}))
    monkeypatch.setenv("FLEET_SITE_COUNTS", str(tmp_path / "counts.json"))
    counter.v2_playbook_on_stats(None)
    # The controller's tasks, a loop's items each; the modules (exo_service, template) the hosts count.
    assert json.loads((tmp_path / "counts.json").read_text()) == {"a": 4, "b": 1}


def test_the_recap_gives_each_host_its_figures():
    output = ("PLAY RECAP ****\ngpu000                     : ok=52   changed=9    unreachable=0    failed=0    "
              "skipped=58   rescued=0    ignored=0\ngpu001 : ok=3 changed=0 unreachable=1 failed=2 skipped=0\n")
    assert bench.recap(output) == {"gpu000": (52, 9, 0, 0), "gpu001": (3, 0, 1, 2)}


def test_a_planner_is_called_on_the_same_hosts_of_every_kind_spread_over_the_fleet():
    names = ["h%05d" % n for n in range(10000)]
    chosen = bench.called(names, 200)
    assert len(set(chosen)) == 200 and chosen == sorted(chosen) and set(chosen) <= set(names)
    assert chosen == bench.called(names, 200)
    # the kinds come in turn, host by host: every one is called
    assert set(names.index(name) % len(bench.KINDS) for name in chosen) == set(range(len(bench.KINDS)))
    assert names.index(chosen[0]) < 1000 and names.index(chosen[-1]) > 9000
    assert bench.called(names[:100], 200) == names[:100]
    assert bench.called(names, 0) == names


def test_the_ratio_is_the_largest_fleet_in_rings_over_the_smallest():
    ringed, one = [(1000, 8), (10000, 8)], [(1000, 1000)]
    medians = {(1000, 8): dict((n, 10.0) for n in bench.PER_HOST + bench.PER_FLEET),
               (10000, 8): dict((n, 10.0) for n in bench.PER_HOST + bench.PER_FLEET),
               (1000, 1000): dict((n, 50.0) for n in bench.PER_HOST + bench.PER_FLEET)}
    medians[(10000, 8)]["node_cluster"] = 100.0
    rows = dict((name, (per, values, ratio)) for name, per, values, ratio in bench.planner_rows(medians, ringed, one))
    assert rows["node_cluster"] == ("host", [10.0, 100.0, 50.0], 10.0)
    assert rows["fleet_capacity"] == ("fleet", [10.0, 10.0, 50.0], 1.0)
    assert bench.planner_rows(medians, ringed[:1], one)[0][3] is None


def test_the_hosts_share_is_what_each_interpreters_children_took_and_each_start_a_module(tmp_path):
    times = tmp_path / "times"
    times.mkdir()
    # `times` of the wrapper's shell: its own CPU, then its children's (the module), user and system.
    (times / "101").write_text("0m0.001s 0m0.002s\n0m1.250s 0m0.125s\n")
    (times / "102").write_text("0m0.000s 0m0.000s\n1m2.500s 0m0.000s\n")
    cpu, started = bench.hosts_cpu(str(times))
    assert abs(cpu - (1.375 + 62.5)) < 1e-9 and started == 2
    # The wrapper runs this Python with the host's environment, passes its exit status on and adds its CPU.
    wrapper = bench.interpreter(str(tmp_path), "gpu000", {"GPUFLEET_SIM": "7"}, str(times))
    busy = "import os, sys; sum(range(3000000)); sys.exit(int(os.environ['GPUFLEET_SIM']))"
    assert subprocess.run([wrapper, "-c", busy], check=False).returncode == 7
    cpu, started = bench.hosts_cpu(str(times))
    assert started == 3 and cpu > 1.375 + 62.5
