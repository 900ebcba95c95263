# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gathering costs on a fleet: 10 and 50 lab hosts over real SSH, interleaved in one run.

    make bench-fleet       (or: .venv/bin/python benchmarks/fleet.py --sizes 10,50 --rounds 2 --forks 50)

Runs as root (network namespaces); the lab is tests/integration/fleet/lab.py, a mix of simulated
GPU hosts without the one whose NVML hangs (its 10 s deadline would add the same to every case that
runs device_facts). Cases, each from the controller in the lab's namespace:

    ping, setup, device_facts (tinygrad=false), device_facts (with tinygrad)   ad hoc, -m
    setup play             docs/facts.md's first gathering play without its two variables: setup alone
    recipe serial          docs/facts.md's first gathering play as written (ansible_facts_parallel: false)
    recipe parallel        the same play with ansible_facts_parallel: true (ansible-core's default)
    setup play pipelined, recipe serial pipelined   the same two with ANSIBLE_PIPELINING=True (docs/fleet.md)
    site.yml gathering     site.yml with --tags naming no task: only what its plays gather runs

Prints, per fleet size, the median wall time, ratios against ping and against the setup play,
the controller's CPU per host (user+sys of the Ansible processes, from getrusage of children) and
the hosts that failed or were unreachable in any round. Targets (issue 9): device_facts without
tinygrad at most 1.15x ping; the recipe loses no host and costs at most 1.6x the setup play in
wall time and in controller CPU. --json writes every sample; --cases picks cases by name (the
setup play and ping, which the ratios need, always run).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.integration.fleet import lab as fleetlab  # noqa: E402

with open(os.path.join(REPO, "docs", "facts.md")) as recipes:
    RECIPE = [b for b in re.findall(r"^```yaml\n(.*?)^```", recipes.read(), re.M | re.S) if "ansible_facts_modules" in b][0]
SETUP_PLAY = re.sub(r"  vars:\n(    .*\n)+", "", RECIPE)
PARALLEL = RECIPE.replace("ansible_facts_parallel: false", "ansible_facts_parallel: true")
assert "module_defaults" not in RECIPE, "docs/facts.md's first recipe changed: update benchmarks/fleet.py"
assert SETUP_PLAY != RECIPE and PARALLEL != RECIPE, "docs/facts.md's recipe changed shape: update benchmarks/fleet.py"


def cases(forks, plays):
    # ansible-core's default, without pipelining, unless the case says "pipelined": the repository's
    # ansible.cfg turns it on, and the lab's controller reads that file.
    unpiped, piped = ["env", "ANSIBLE_PIPELINING=False"], ["env", "ANSIBLE_PIPELINING=True"]
    adhoc = unpiped + [os.path.join(fleetlab.BIN, "ansible"), "gpu_hosts", "-f", str(forks), "-o", "-m"]
    play = [os.path.join(fleetlab.BIN, "ansible-playbook"), "-f", str(forks)]
    return [
        ("ping", adhoc + ["ansible.builtin.ping"]),
        ("setup", adhoc + ["ansible.builtin.setup"]),
        ("device_facts tinygrad=false", adhoc + ["gpufleet.exo.device_facts", "-a", "tinygrad=false"]),
        ("device_facts", adhoc + ["gpufleet.exo.device_facts"]),
        ("setup play", unpiped + play + [plays["setup"]]),
        ("recipe serial", unpiped + play + [plays["serial"]]),
        ("recipe parallel", unpiped + play + [plays["parallel"]]),
        ("setup play pipelined", piped + play + [plays["setup"]]),
        ("recipe serial pipelined", piped + play + [plays["serial"]]),
        # No task is tagged so: every play's gathering (tagged always) runs, nothing else. No sudo in
        # the lab; root becomes root with su.
        ("site.yml gathering", unpiped + play + [os.path.join(REPO, "site.yml"), "--tags", "bench_gathering_only",
                                                 "-e", "target=gpu_hosts", "-e", "ansible_become_method=su"]),
    ]


def failed_hosts(output):
    """Hosts that failed or were unreachable: ad hoc (oneline) and playbook recap forms."""
    bad = set(re.findall(r"^(\S+) \| (?:FAILED|UNREACHABLE)", output, re.M))
    for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)", output, re.M):
        if m.group(2) != "0" or m.group(3) != "0":
            bad.add(m.group(1))
    return sorted(bad)


def measure(lab, command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = lab.run(command, timeout=1800)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    reasons = sorted(set(m[:160] for m in re.findall(r"^fatal: \[\S+\]: \w+! => (.*)$", proc.stdout, re.M)))
    return dict(wall_s=wall, cpu_s=cpu, failed=failed_hosts(proc.stdout), reasons=reasons, rc=proc.returncode,
                tail=(proc.stdout + proc.stderr)[-600:] if proc.returncode else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50", help="fleet sizes, comma-separated (default 10,50)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--json", help="write every sample to this file")
    parser.add_argument("--cases", help="case names, comma-separated (default: all)")
    args = parser.parse_args()
    wanted = None if not args.cases else set(args.cases.split(",")) | {"ping", "setup play"}
    known = [name for name, dummy in cases(args.forks, {"setup": "", "serial": "", "parallel": ""})]
    if wanted and wanted - set(known):
        parser.error("--cases: no case %s; the cases are %s" % (", ".join(sorted(wanted - set(known))), ", ".join(known)))
    sizes = [int(s) for s in args.sizes.split(",")]
    if os.geteuid() != 0:
        parser.error("the lab creates network namespaces: run as root")

    # Stopped with SIGTERM (or SIGINT, which background jobs ignore), the labs still go away.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by signal %d" % signum))
    work = tempfile.mkdtemp(prefix="fleet-bench-")
    plays = {}
    for name, text in (("setup", SETUP_PLAY), ("serial", RECIPE), ("parallel", PARALLEL)):
        plays[name] = os.path.join(work, name + ".yml")
        with open(plays[name], "w") as handle:
            handle.write(text)
    labs = {}
    samples = {}
    try:
        for size in sizes:
            labs[size] = fleetlab.Lab(os.path.join(work, "lab%d" % size), fleetlab.mix(size, hung=0)).__enter__()
        names = [name for name, dummy in cases(args.forks, plays) if wanted is None or name in wanted]
        for round_ in range(args.rounds):
            for size in sizes:
                order = [case for case in cases(args.forks, plays) if case[0] in names]
                shift = round_ % len(order)  # a different case first each round: drift spreads evenly
                for name, command in order[shift:] + order[:shift]:
                    sample = measure(labs[size], command)
                    samples.setdefault((size, name), []).append(sample)
                    if args.json:  # as it goes: a run cut short still leaves its samples
                        write_json(args.json, dict(forks=args.forks, rounds=args.rounds, samples=[
                            dict(hosts=k[0], case=k[1], samples=v) for k, v in samples.items()]))
                    print("round %d, %d hosts, %-28s %7.1f s  cpu %6.1f s  failed %d%s" % (
                        round_ + 1, size, name, sample["wall_s"], sample["cpu_s"], len(sample["failed"]),
                        "  rc %d: %s" % (sample["rc"], sample["tail"][-200:]) if sample["rc"] and not sample["failed"]
                        else ""), flush=True)
    finally:
        for lab in labs.values():
            lab.close()
        shutil.rmtree(work, ignore_errors=True)

    rows = []
    for size in sizes:
        def median(name, key):
            return statistics.median(s[key] for s in samples[(size, name)])
        ping, setup = median("ping", "wall_s"), median("setup play", "wall_s")
        setup_cpu = median("setup play", "cpu_s")
        print("\n%d hosts, forks %d, %d round(s); median wall, ratio to ping and to the setup play, "
              "controller CPU per host" % (size, args.forks, args.rounds))
        print("%-28s %8s %8s %8s %10s %10s %s" % ("case", "wall s", "x ping", "x setup", "cpu ms/h", "cpu x set",
                                                  "failed hosts"))
        for name in names:
            wall, cpu = median(name, "wall_s"), median(name, "cpu_s")
            failed = sorted(set(h for s in samples[(size, name)] for h in s["failed"]))
            print("%-28s %8.1f %8.2f %8.2f %10.0f %10.2f %s" % (
                name, wall, wall / ping, wall / setup, cpu / size * 1000, cpu / setup_cpu, len(failed)))
            rows.append(dict(hosts=size, case=name, wall_s=wall, x_ping=wall / ping, x_setup_play=wall / setup,
                             cpu_ms_per_host=cpu / size * 1000, cpu_x_setup_play=cpu / setup_cpu,
                             failed_hosts=failed, samples=samples[(size, name)]))
            for reason in sorted(set(r for s in samples[(size, name)] for r in s["reasons"]))[:3]:
                print("    failed: %s" % reason)
    if args.json:
        write_json(args.json, dict(forks=args.forks, rounds=args.rounds, rows=rows))


def write_json(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=1)


if __name__ == "__main__":
    main()
