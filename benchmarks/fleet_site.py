# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What site.yml costs the controller as the fleet grows, against Ansible's floor, and what its planners cost per host.

    make bench-site        (or: .venv/bin/python benchmarks/fleet_site.py --sizes 1,10 --rounds 1
                                 --fleet-sizes 1000,10000 --calls 0, the defaults)

    benchmarks/fleet_site.py --no-planners --sizes 1,10,100       site.yml alone, up to 100 hosts
    benchmarks/fleet_site.py --no-site                            the planners alone
    benchmarks/fleet_site.py --no-site --one-ring 1000            and one ring of 1,000, for comparison

The defaults take about ten minutes on two busy cores: each site.yml run on 10 hosts two and a
half, the planners two and a half, of which the report's page for 10,000 hosts one and a half. --sizes 100 is ten times
the 10 hosts' runs. --no-site and --no-planners leave a part out.

The fleet is several rings, each an inventory group as docs/node.md ("Rings") has them: ring_00,
ring_01, ... of up to 8 hosts (--ring-size), consecutive and as even as they can be (10 hosts are
two rings of 5; 1,000 and 10,000 are rings of 8; one host is one ring of one), each group's
exo_node_ring its own name. No host sets exo_node_cluster_hosts: the role's default
(groups[exo_node_ring]) makes each host's ring, so a host reads its ring's hosts, not the fleet's.

site.yml: the probe, the driver role and the node role in check mode, over 1, 10 (--sizes) simulated
hosts on the local connection, in those rings. Each host is a simulated one of tests/simulated/hosts.py
(4, 1, 2 and 8 H100s in turn): its own /sys tree (device_facts_rootfs) and, through a small shell
wrapper that is its ansible_python_interpreter, its own simulated libnvidia-ml config;
its own exo_node_address and directories. The driver role only plans (exo_driver_plan_only); the
node role installs the stand-in of tests/standin, as the local inventory does.
Per size and round, interleaved (a different case first each round):

    site.yml --check            the whole main job
    site.yml --check, again     the same once more (see "second run" below)
    floor                       Ansible's floor on the same inventory: a play of as many tasks per host
                                as site.yml ran there, ansible.builtin.ping for each module it ran on
                                the host (each start of the host's interpreter, below: a loop's items
                                each count, and so does each of a task's modules, the facts' two) and a
                                trivial set_fact for each task that ran on the controller alone
                                (set_fact, debug, fail, include_*...), counted by a small callback; both
                                in site.yml's first run, means per host.

Prints per size the median wall time, the CPU seconds per host (user+sys of every process of the run)
and of those the hosts' (the modules') and the controller's, the peak resident memory of its largest
process, and site.yml against the floor in wall time, CPU and the controller's CPU. The CPU and the
peak are getrusage(RUSAGE_CHILDREN) of a parent forked for the one run: its peak is the largest since
that parent started, so the benchmark's own process could not give each run's.

The second run: a real run that is followed by one that changes nothing cannot be had here. Every
simulated host is this one machine: their units would all go to its /etc/systemd/system, their
firewall tables, tunnels and service account would be its own, each host overwriting the last (so a
second run would change them back), and this machine, which runs other jobs, would be changed.
So the check-mode run is measured twice. A check-mode run of a fresh host skips what depends on
what the install would have made; a steady-state run of a real fleet may run more tasks.

With the local connection the hosts' modules run on the controller: the CPU and memory figures count
them too. Their work is not the same as the floor's: a ping does next to nothing, where site.yml's
modules gather the standard facts, probe the devices, read the packages. So each host's interpreter
wrapper runs Python as its child and writes the CPU its children took (the shell's `times`): the
hosts' column, what a real fleet's hosts pay. The controller's column is the rest, what the controller
pays: Ansible's own work per task, the templating and the planners; "ctl xfl" compares it with the
floor's. Neither takes in what a real fleet adds (SSH, the network, the hosts' own disks and CPUs).

The planners: everything that runs per host over its ring or over the fleet, in-process, over 1,000
and 10,000 hosts (--fleet-sizes) in the same rings of 8. The hostvars are as a play has them: each
host's inventory exo_node_address and its group's exo_node_ring; its exo_node_instances from the
node_plan filter on recorded facts of tests/fixtures/simulated (its ring's tunnel decided first by
node_tunnel, as the preflight does), with the ring's name in each instance; its exo_node_ring_peer
with a public key (as tunnel.yml publishes it). A host's exo_node_cluster_hosts is what the role's
default gives, its ring's group. Per host, as the role (and verify.yml, for ring_capacity) calls
them: node_tunnel, node_plan, node_tunnel_ring, node_cluster (the ring's hosts and ring=its name),
node_firewall, ring_capacity (llama-3.1-70b); per fleet, once over every host: the fleet report,
fleet_capacity (as the filter is in the tree, with its rings) and fleet_report_html, shown per host
(their time over the hosts). Each is called once untimed first: what runs once in a process (an
import, matplotlib's fonts) is no cost per host.

A per-host planner is called on every host, in the inventory's order, each over all the hosts before
the next, as a play's tasks go, so that each ring's published data is read by its eight hosts in
turn at either size (--calls N: on N hosts spread over the fleet instead, quicker, but each then
finds its ring's data out of the CPU's caches, which costs more the larger the fleet). In a round
the per-host planners go through each fleet three times, the sizes in turn, and the least of the
three is the round's figure (another process on the machine only ever adds to it); the per-fleet
ones go once. Python's cycle collector is paused while they run: both fleets are in memory, and its
full passes would charge either with both. Prints CPU microseconds per host (median over the
rounds), the ratio 10,000/1,000 and whether it is flat, within 1.10: 1.0 is a cost per host that
stays flat, 10 one that grows with the fleet.

--one-ring adds, for comparison, fleets that are one ring of every host (no exo_node_ring: the
play's hosts, which the role's preflight refuses above exo_node_ring_max_hosts; the planners do
not check it, and the tunnel's network is a /16 for them): there each host reads every other, so
its cost grows with the fleet.

What it does not measure: SSH and real hosts (benchmarks/fleet.py measures gathering over SSH), a
run that installs or changes anything, the templating around the filters in a play (Ansible's
hostvars build a host's variables on each read; here they are plain dicts, so the in-process
figures are the filters' own cost, a floor of what they cost in a play), the driver role's install
paths, the real exo.
"""
from __future__ import absolute_import, division, print_function

import argparse
import base64
import contextlib
import gc
import hashlib
import ipaddress
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [p for p in (REPO, os.path.join(REPO, ".build", "collections")) if p not in sys.path]

from tests import helpers  # noqa: E402
from tests.simulated import hosts as simhosts  # noqa: E402
from tests.simulated import nvml as simnvml  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.filter import fleet_capacity as fleet_filters  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.filter import node_plan as node_filters  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.filter import node_tunnel as tunnel_filters  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.filter import ring_capacity as ring_filters  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings  # noqa: E402

# The simulated hosts, in turn: H100s four, one, two and eight to a host.
KINDS = ("four", "one", "two", "eight")
RING_SIZE = 8
# The most a planner's CPU per host may grow from the smallest fleet to the largest and still be flat.
FLAT = 1.10
# The model ring_capacity asks about (verify.yml asks for each of exo_node_models).
MODEL = "llama-3.1-70b"

# ---- site.yml over simulated hosts --------------------------------------------------------------

# Actions that run on the controller alone; every other task that ran is a module's round trip.
CONTROLLER_ACTIONS = frozenset(("set_fact", "debug", "fail", "assert", "group_by", "add_host", "meta", "include_tasks",
                                "include_role", "include_vars", "import_tasks", "import_role", "validate_argument_spec",
                                "set_stats", "pause"))

# A callback that counts, per host, the tasks (a loop's items each) that ran on the controller alone. The modules
# that ran on a host are counted by its interpreter (hosts_cpu), which sees each of a task's modules.
COUNTER = '''
import json, os
from ansible.plugins.callback import CallbackBase
CONTROLLER = %r


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_site_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.counts = {}

    def _count(self, result, *args, **kwargs):
        action = result._task.action.replace("ansible.builtin.", "").replace("ansible.legacy.", "")
        self.counts[result._host.get_name()] = self.counts.get(result._host.get_name(), 0) + (action in CONTROLLER)

    def _task(self, result, *args, **kwargs):
        if "results" not in result._result:  # a loop: its items were counted
            self._count(result)

    v2_runner_on_ok = v2_runner_on_failed = _task
    v2_runner_item_on_ok = v2_runner_item_on_failed = _count

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["FLEET_SITE_COUNTS"], "w") as handle:
            json.dump(self.counts, handle)
''' % (sorted(CONTROLLER_ACTIONS),)


def rings(names, most=RING_SIZE):
    """names in consecutive rings of at most `most`, as even in size as they can be."""
    count = -(-len(names) // most)
    return [names[i * len(names) // count:(i + 1) * len(names) // count] for i in range(count)]


def ring_groups(names, most=RING_SIZE):
    """{ring's inventory group: its hosts}: ring_00, ring_01, ... over rings(), each group's exo_node_ring its name."""
    return dict(("ring_%02d" % number, ring) for number, ring in enumerate(rings(names, most)))


def floor_play(host_tasks, controller_tasks):
    """Ansible's floor for that many tasks per host: ping for a module's round trip, set_fact for the controller's."""
    tasks = ["    - name: Round trip %d\n      ansible.builtin.ping:\n" % (n + 1) for n in range(host_tasks)]
    tasks += ["    - name: On the controller %d\n      ansible.builtin.set_fact:\n        floor_fact: %d\n" % (n + 1, n)
              for n in range(controller_tasks)]
    return "- name: Ansible's floor\n  hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(tasks)


def per_host(counts, round_trips):
    """(module round trips, tasks on the controller) per host, the means over the hosts, rounded: round_trips
    over all the hosts, counts the callback's {host: its tasks on the controller}."""
    return tuple(int(round(n / float(len(counts)))) for n in (round_trips, sum(counts.values())))


def recap(output):
    """{host: (ok, changed, unreachable, failed)} from a play recap."""
    return dict((m.group(1), tuple(int(n) for n in m.groups()[1:])) for m in re.finditer(
        r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output, re.M))


def interpreter(tmp, name, env, times):
    """A host's ansible_python_interpreter: this Python with the host's simulated libnvidia-ml in its environment
    (site.yml sets no environment of its own, and the local connection has the controller's), run as the child of
    a shell that then writes the CPU its children took (`times`) to a file of its own under times: the host's
    share of the run, the module's work, which a real fleet's hosts do and its controller does not."""
    path = os.path.join(tmp, name + ".python")
    with open(path, "w") as handle:
        exports = "".join("export %s=%s\n" % item for item in sorted(env.items()))
        handle.write("#!/bin/sh\n%s%s \"$@\"\nrc=$?\ntimes > %s/$$\nexit $rc\n" % (exports, sys.executable, times))
    os.chmod(path, 0o755)
    return path


def hosts_cpu(times):
    """(the CPU seconds the modules took on the hosts, how many modules ran there): from the children's line of
    each `times` the interpreters wrote ("0m1.250s 0m0.125s", user then system), one for each start."""
    total, names = 0.0, os.listdir(times)
    for name in names:
        with open(os.path.join(times, name)) as handle:
            lines = handle.read().splitlines()
        total += sum(int(m) * 60 + float(sec) for m, sec in re.findall(r"(\d+)m([0-9.]+)s", lines[1] if len(lines) > 1 else ""))
    return total, len(names)


def site_inventory(tmp, lib, count, ring_size, times):
    hosts, groups = {}, {}
    names = ["gpu%03d" % n for n in range(count)]
    for number, name in enumerate(names):
        env, root = simhosts.write(tmp, name, lib, *simhosts.HOSTS[KINDS[number % len(KINDS)]])
        paths = os.path.join(tmp, "paths", name)
        hosts[name] = {"ansible_python_interpreter": interpreter(tmp, name, env, times), "device_facts_rootfs": root,
                       "exo_node_address": str(ipaddress.ip_address("10.64.0.1") + number)}
        hosts[name].update(helpers.site_dirs(paths))
    # A group per ring that names itself in exo_node_ring: the role's default exo_node_cluster_hosts
    # (groups[exo_node_ring]) makes each host's ring, as docs/node.md ("Rings") has an inventory do it.
    for group, ring in ring_groups(names, ring_size).items():
        groups[group] = {"hosts": dict((name, hosts[name]) for name in ring), "vars": {"exo_node_ring": group}}
    return {"all": {"children": {"exo_nodes": {"children": groups}}, "vars": dict(
        helpers.SITE_HERE, exo_node_source="path", exo_node_source_path=os.path.join(REPO, "tests", "standin"),
        exo_node_exo_unpatched=True)}}


def measured(argv, env, log):
    """(rc, wall s, CPU s, peak RSS MiB) of a command and every process it starts. A forked parent runs it:
    RUSAGE_CHILDREN's peak is the largest process since its parent started, so each run needs a parent of its own."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            with open(log, "w") as out:
                started = time.perf_counter()
                rc = subprocess.call(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
                wall = time.perf_counter() - started
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            os.write(writer, json.dumps([rc, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0]).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as handle:
        answer = handle.read()
    os.waitpid(pid, 0)
    if not answer:
        raise SystemExit("the run of %s gave no figures" % " ".join(argv))
    return json.loads(answer)


CASES = ("site.yml --check", "site.yml --check, again", "floor")


def run_case(work, size, case, forks, floor):
    """One run of a case on the inventory of size hosts: its figures, the tasks counted per host."""
    counts = os.path.join(work, "counts-%d.json" % size)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS=str(forks), ANSIBLE_CALLBACK_PLUGINS=os.path.join(work, "callbacks"),
               ANSIBLE_CALLBACKS_ENABLED="fleet_site_count", FLEET_SITE_COUNTS=counts,
               ANSIBLE_LOCAL_TEMP=os.path.join(work, "ansible-tmp"))
    env.pop("LD_LIBRARY_PATH", None)
    play = os.path.join(REPO, "site.yml")
    if case == "floor":
        play = os.path.join(work, "floor-%d.yml" % size)
        with open(play, "w") as handle:
            handle.write(floor_play(*floor))
    log = os.path.join(work, "log-%d.txt" % size)
    times = os.path.join(work, "times-%d" % size)
    shutil.rmtree(times, ignore_errors=True)
    os.makedirs(times)
    rc, wall, cpu, peak = measured([os.path.join(helpers.BIN, "ansible-playbook"), "--check", "-i",
                                    os.path.join(work, "inventory-%d.json" % size), play], env, log)
    with open(log) as handle:
        output = handle.read()
    hosts = recap(output)
    bad = sorted(h for h, (ok, changed, unreachable, failed) in hosts.items() if unreachable or failed)
    if rc != 0 or bad or len(hosts) != size:
        raise SystemExit("%s on %d hosts: rc %d, %d hosts in the recap, failed %s:\n%s"
                         % (case, size, rc, len(hosts), bad, output[-4000:]))
    hosts, round_trips = hosts_cpu(times)
    with open(counts) as handle:
        return {"wall": wall, "cpu": cpu, "hosts": hosts, "peak": peak}, per_host(json.load(handle), round_trips)


def site_part(args, sizes):
    lib = simnvml.build("current")
    work = tempfile.mkdtemp(prefix="gpufleet-fleet-site-")
    samples, floors = {}, {}
    try:
        os.makedirs(os.path.join(work, "callbacks"))
        with open(os.path.join(work, "callbacks", "fleet_site_count.py"), "w") as handle:
            handle.write(COUNTER)
        for size in sizes:
            with open(os.path.join(work, "inventory-%d.json" % size), "w") as handle:
                json.dump(site_inventory(os.path.join(work, "hosts-%d" % size), lib, size, args.ring_size,
                                         os.path.join(work, "times-%d" % size)), handle)
        for round_ in range(args.rounds):
            for size in sizes:
                # The first round starts with site.yml, whose tasks the floor counts; later ones rotate.
                order = CASES[round_ % len(CASES):] + CASES[:round_ % len(CASES)]
                for case in order:
                    sample, tasks = run_case(work, size, case, args.forks, floors.get(size))
                    if case != "floor":
                        floors.setdefault(size, tasks)
                    samples.setdefault((size, case), []).append(sample)
                    print("round %d, %3d hosts, %-24s %7.1f s  CPU %6.1f s (hosts' %6.1f s)  peak %5.0f MiB"
                          % (round_ + 1, size, case, sample["wall"], sample["cpu"], sample["hosts"], sample["peak"]),
                          flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return site_rows(samples, floors, sizes, args.ring_size)


def site_rows(samples, floors, sizes, ring_size):
    """[(hosts, rings, tasks per host, case, wall s, CPU s per host, the hosts' part of it, the controller's, peak MiB,
    wall x floor, CPU x floor, controller's CPU x floor's)], medians."""
    rows = []
    for size in sizes:
        floor = dict((key, statistics.median(s[key] for s in samples[(size, "floor")])) for key in ("wall", "cpu", "hosts"))
        for case in CASES:
            wall, cpu, hosts, peak = [statistics.median(s[key] for s in samples[(size, case)])
                                      for key in ("wall", "cpu", "hosts", "peak")]
            rows.append((size, len(rings(list(range(size)), ring_size)), "%d+%d" % floors[size], case, wall, cpu / size,
                         hosts / size, (cpu - hosts) / size, peak, wall / floor["wall"], cpu / floor["cpu"],
                         (cpu - hosts) / (floor["cpu"] - floor["hosts"])))
    return rows


def print_site(rows, args):
    print("\nsite.yml in check mode over simulated hosts (local connection, forks %d, rings of up to %d), median of %d "
          "round(s); tasks per host: module round trips + controller-only tasks, the floor's too"
          % (args.forks, args.ring_size, args.rounds))
    print("%5s %5s %7s  %-24s %8s %10s %7s %7s %9s %8s %8s %8s"
          % ("hosts", "rings", "tasks", "case", "wall s", "CPU s/host", "hosts'", "ctl", "peak MiB", "wall xfl", "CPU xfl",
             "ctl xfl"))
    for row in rows:
        print("%5d %5d %7s  %-24s %8.1f %10.2f %7.2f %7.2f %9.0f %8.2f %8.2f %8.2f" % row)


# ---- the planners, in-process ----------------------------------------------------------------------

PER_HOST = ("node_tunnel", "node_plan", "node_tunnel_ring", "node_cluster", "node_firewall", "ring_capacity")
PER_FLEET = ("fleet_capacity", "fleet_report_html")
# Times a round goes through the per-host planners of each fleet.
PASSES = 3


def base_settings(named=True):
    """The role's variables as given, before the host's own (planner_fleet() checks them, as the role's preflight does)."""
    settings = dict(helpers.NODE_DEFAULTS, exo_node_refresh_facts="never")
    if not named:
        # One ring of the whole fleet (--one-ring): room for it in the tunnel's network (the default /24 holds 254
        # hosts). Its size is the preflight's to refuse, which the planners do not check again.
        settings.update(exo_node_ring_tunnel_network="10.213.0.0/16")
    return settings


def ring_key(name):
    """A WireGuard public key's form, one per host."""
    return base64.b64encode(hashlib.sha256(name.encode()).digest()).decode()


def planner_fleet(count, ring_size, named=True):
    """{host: what the role holds there} and the hostvars the role publishes, for count hosts in rings of ring_size.

    named: each ring an inventory group that exo_node_ring names (ring_groups()); else no exo_node_ring, the ring
    the play's hosts (--one-ring)."""
    facts = dict((kind, helpers.with_tinygrad(helpers.recorded_facts(kind))) for kind in KINDS)
    names = ["gpu%05d" % n for n in range(count)]
    groups = ring_groups(names, ring_size) if named else {"": names}
    group_of = dict((name, group) for group, ring in groups.items() for name in ring)
    base = base_settings(named)
    hosts, hostvars = {}, {}
    for number, name in enumerate(names):
        # The inventory's: the host's address, and its group's exo_node_ring.
        inventory = {"exo_node_address": str(ipaddress.ip_address("10.64.0.1") + number)}
        if named:
            inventory["exo_node_ring"] = group_of[name]
        # The role's defaults of the templates: exo_node_id_prefix is inventory_hostname, exo_node_cluster_hosts
        # groups[exo_node_ring] (the play's hosts without one). The ring's list is the group's, shared, as there.
        # Checked once, as the role's preflight checks them: the planners take the checked values.
        settings, errors = check_settings(
            dict(base, exo_node_id_prefix=name, exo_node_cluster_hosts=groups[group_of[name]], **inventory))
        if errors:
            raise SystemExit("host %s: %s" % (name, errors))
        tunnel = tunnel_filters.node_tunnel(settings, name)
        planned_settings = dict(settings, **tunnel["settings"])
        kind = facts[KINDS[number % len(KINDS)]]
        planned = node_filters.node_plan(kind, planned_settings, name)
        if planned["errors"] or tunnel["errors"]:
            raise SystemExit("host %s: %s" % (name, planned["errors"] + tunnel["errors"]))
        hosts[name] = {"settings": settings, "planned_settings": planned_settings, "tunnel": tunnel, "facts": kind,
                       "instances": planned["instances"], "ring": groups[group_of[name]], "ring_name": group_of[name]}
        hostvars[name] = dict(inventory, ansible_facts={
            "device_capabilities": kind, "exo_node_instances": planned["instances"],
            "exo_node_ring_peer": dict(tunnel["published"], public_key=ring_key(name))})
    return names, hosts, hostvars


def called(names, calls):
    """The hosts a per-host planner is called on: calls of them drawn over the fleet (the same on every run, and
    of every kind, which a stride would not give: the kinds come in turn), or all (calls 0, or no more hosts)."""
    if not calls or calls >= len(names):
        return list(names)
    return sorted(random.Random(0).sample(names, calls))


# The per-host planners, as the role (and verify.yml, for ring_capacity) calls them: each step takes a host's name,
# what the role holds there, the hostvars and what the steps before it gave that host (got), where it leaves its own.
STEPS = {
    "node_tunnel": lambda name, host, hostvars, got: got.update(
        tunnel=tunnel_filters.node_tunnel(host["settings"], name)),
    "node_plan": lambda name, host, hostvars, got: node_filters.node_plan(
        host["facts"], host["planned_settings"], name),
    "node_tunnel_ring": lambda name, host, hostvars, got: got.update(
        peers=tunnel_filters.node_tunnel_ring(got["tunnel"], name, hostvars)),
    # As roles/node/tasks/cluster.yml calls it: the ring's hosts, and its name.
    "node_cluster": lambda name, host, hostvars, got: got.update(cluster=node_filters.node_cluster(
        host["instances"], name, host["ring"], hostvars, models=host["settings"]["exo_node_models"],
        ring=host["ring_name"])),
    "node_firewall": lambda name, host, hostvars, got: node_filters.node_firewall(
        host["instances"], got["cluster"], host["planned_settings"], os_family="Debian",
        tunnel=dict(got["tunnel"], **got["peers"])),
    "ring_capacity": lambda name, host, hostvars, got: got.update(
        fit=ring_filters.ring_capacity(MODEL, host["ring"], hostvars)),
}


def checked_steps(got):
    """got, or an exit with what a host's planners refused: the figures are of plans that went through."""
    for name, given in sorted(got.items()):
        errors = given["peers"]["errors"] + given["cluster"]["errors"]
        if errors or given["fit"] is None:
            raise SystemExit("host %s: %s" % (name, errors))
    return got


def plan_fleet(names, hostvars):
    """{planner: CPU s} of the per-fleet ones over names."""
    clock = time.process_time
    started = clock()
    report = fleet_filters.fleet_capacity(names, hostvars)
    middle = clock()
    fleet_filters.fleet_report_html(report)
    done = clock()
    return {"fleet_capacity": middle - started, "fleet_report_html": done - middle}


def warm(names, hosts, hostvars):
    """Each planner once, untimed, on the first host and its ring: what a planner does once in a process (an import,
    matplotlib's fonts, a compiled pattern) is no cost per host, and would fall on the first fleet alone."""
    first, got = names[0], {}
    for planner in PER_HOST:
        STEPS[planner](first, hosts[first], hostvars, got)
    checked_steps({first: got})
    plan_fleet(hosts[first]["ring"], hostvars)


@contextlib.contextmanager
def collector_paused():
    """Python's cycle collector collected, then paused: a full pass of it costs with all the process holds (here
    every fleet built), not with the planner that happens to set it off."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def time_per_host(names, hosts, hostvars, calls):
    """({per-host planner: CPU µs per host} over the hosts called, how many were called). Each planner goes over
    every host called before the next starts, as a play's tasks do (the linear strategy)."""
    chosen = called(names, calls)
    got = dict((name, {}) for name in chosen)
    spent = {}
    clock = time.process_time
    for planner in PER_HOST:
        step = STEPS[planner]
        started = clock()
        for name in chosen:
            step(name, hosts[name], hostvars, got[name])
        spent[planner] = clock() - started
    checked_steps(got)
    return dict((name, 1e6 * total / len(chosen)) for name, total in spent.items()), len(chosen)


def planner_part(args, fleet_sizes, one_ring):
    """{(hosts, ring size): {planner: median µs per host}} and {(hosts, ring size): hosts called}.

    In a round, the per-host planners are timed PASSES times over each fleet, the fleets in turn (and the other way
    round on the next pass), so that the sizes are compared within seconds of each other; the least of a fleet's
    passes is its figure, as what other processes of the machine do only ever adds to it. The per-fleet ones then
    once over each fleet."""
    ringed = [(size, args.ring_size) for size in fleet_sizes]
    layouts = ringed + [(size, size) for size in one_ring]
    fleets, samples, chosen = {}, dict((layout, []) for layout in layouts), {}
    for round_ in range(args.rounds):
        for layout in layouts:
            if layout not in fleets:
                started = time.perf_counter()
                fleets[layout] = planner_fleet(*layout, named=layout in ringed)
                warm(*fleets[layout])
                print("planners: %d hosts in rings of %d built in %.1f s" % (layout + (time.perf_counter() - started,)),
                      flush=True)
        passes = dict((layout, []) for layout in layouts)
        for number in range(PASSES):
            for layout in (layouts if number % 2 == 0 else layouts[::-1]):
                with collector_paused():
                    sample, chosen[layout] = time_per_host(*fleets[layout], calls=args.calls)
                passes[layout].append(sample)
        for layout in layouts:
            sample = dict((name, min(p[name] for p in passes[layout])) for name in PER_HOST)
            names, _hosts, hostvars = fleets[layout]
            with collector_paused():
                fleet = plan_fleet(names, hostvars)
            sample.update((name, 1e6 * total / len(names)) for name, total in fleet.items())
            samples[layout].append(sample)
            print("round %d, planners, %5d hosts in rings of %5d: %s" % (
                round_ + 1, layout[0], layout[1], ", ".join("%s %.0f" % (n, sample[n]) for n in PER_HOST + PER_FLEET)),
                flush=True)
    medians = dict((layout, dict((name, statistics.median(s[name] for s in runs)) for name in PER_HOST + PER_FLEET))
                   for layout, runs in samples.items())
    return medians, chosen


def planner_rows(medians, ringed, one_ring):
    """[(planner, "host" or "fleet", [µs per host at each layout of ringed, then of one_ring], ratio of the largest
    ringed fleet to the smallest, or None)]."""
    rows = []
    for name in PER_HOST + PER_FLEET:
        values = [medians[layout][name] for layout in ringed + one_ring]
        ratio = values[len(ringed) - 1] / values[0] if len(ringed) > 1 and values[0] else None
        rows.append((name, "host" if name in PER_HOST else "fleet", values, ratio))
    return rows


def print_planners(medians, chosen, args, ringed, one_ring):
    print("\nthe planners in-process: CPU microseconds per host, median of %d round(s); per-host planners called on %s "
          "hosts; per-fleet ones once, over every host" % (args.rounds, ", ".join(
              "%d of %d" % (chosen[layout], layout[0]) for layout in ringed + one_ring)))
    heads = ["%d, rings of %d" % layout for layout in ringed] + ["%d, one ring" % layout[0] for layout in one_ring]
    ratio_head = "%d/%d" % (ringed[-1][0], ringed[0][0]) if len(ringed) > 1 else "ratio"
    print("%-18s %-9s " % ("planner", "called") + " ".join("%17s" % h for h in heads) + " %11s %5s"
          % (ratio_head, "flat"))
    for name, per, values, ratio in planner_rows(medians, ringed, one_ring):
        print("%-18s %-9s " % (name, "per " + per) + " ".join("%17.0f" % v for v in values)
              + " %11s %5s" % (("-", "-") if ratio is None else ("%.2f" % ratio, "yes" if ratio <= FLAT else "NO")))
    if len(ringed) > 1:
        print("%s: 1.0 is a cost per host that stays flat; %.0f, one that grows with the fleet. flat: within %.2f."
              % (ratio_head, float(ringed[-1][0]) / ringed[0][0], FLAT))
    if one_ring:
        print("One ring of every host (no exo_node_ring: the play's hosts, which the role refuses above "
              "exo_node_ring_max_hosts), for comparison: each host's cost grows with the ring, the fleet's with its "
              "square.")


def sizes_list(text):
    return [int(s) for s in text.split(",") if s.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="1,10", help="site.yml's fleet sizes, comma-separated (default 1,10)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--ring-size", type=int, default=RING_SIZE)
    parser.add_argument("--fleet-sizes", default="1000,10000", help="the planners' fleet sizes in rings (default 1000,10000)")
    parser.add_argument("--one-ring", default="", help="the planners' sizes as one ring of every host, for comparison "
                        "(the role refuses it; default none)")
    parser.add_argument("--calls", type=int, default=0, help="hosts a per-host planner is called on, spread over the "
                        "fleet (default 0: every host, in order)")
    parser.add_argument("--no-site", action="store_true")
    parser.add_argument("--no-planners", action="store_true")
    args = parser.parse_args()
    site = None if args.no_site else site_part(args, sizes_list(args.sizes))
    planners = None if args.no_planners else planner_part(args, sizes_list(args.fleet_sizes), sizes_list(args.one_ring))
    if site:
        print_site(site, args)
    if planners:
        print_planners(planners[0], planners[1], args, [(size, args.ring_size) for size in sizes_list(args.fleet_sizes)],
                       [(size, size) for size in sizes_list(args.one_ring)])


if __name__ == "__main__":
    main()
