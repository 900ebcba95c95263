# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet report costs the controller, by fleet size.

    .venv/bin/python benchmarks/fleet_report.py [--hosts 10,50,500] [--rounds 5]

The hosts are the real H100 host of tests/fixtures/real-h100 with 1 to 8 copies of its GPU (new
UUIDs and indices), every tenth without a driver. For each size, interleaved over the rounds: the
filter fleet_capacity (the node planner on every host, exo's ring for every model) and the filter
fleet_report_html (the page with its plot). Prints the medians and the cost per host, and the ratio
of the cost per host at each size to that at the smallest.
"""
from __future__ import absolute_import, division, print_function

import argparse
import copy
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, ".build", "collections"), REPO]

from ansible_collections.gpufleet.exo.plugins.filter import fleet_capacity as plugin  # noqa: E402


def hostvars(count):
    with open(os.path.join(REPO, "tests", "fixtures", "real-h100", "device_facts.json")) as handle:
        real = json.load(handle)
    hosts = {}
    for n in range(count):
        facts = copy.deepcopy(real)
        gpu = facts["gpus"][0]
        facts["gpus"] = [dict(copy.deepcopy(gpu), index=i, minor=i, uuid="GPU-%08x-0000-0000-0000-%012x" % (n, i),
                              pci_bus_id="0000:%02x:00.0" % (6 + i)) for i in range(1 + n % 8)]
        if n % 10 == 9:
            facts["driver_needed"] = True
        hosts["gpu%03d" % n] = {"ansible_facts": {"device_capabilities": facts}}
    return hosts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="10,50,500")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.hosts.split(",")]
    fleets = dict((size, hostvars(size)) for size in sizes)
    times = dict((size, {"fleet_capacity": [], "fleet_report_html": []}) for size in sizes)
    for _round in range(args.rounds):
        for size in sizes:
            started = time.perf_counter()
            report = plugin.fleet_capacity(sorted(fleets[size]), fleets[size])
            middle = time.perf_counter()
            plugin.fleet_report_html(report)
            times[size]["fleet_capacity"].append(middle - started)
            times[size]["fleet_report_html"].append(time.perf_counter() - middle)
    base = sizes[0]
    print("%6s %-18s %10s %14s %10s" % ("hosts", "filter", "median s", "ms per host", "vs %d" % base))
    for size in sizes:
        for name, runs in sorted(times[size].items()):
            median = statistics.median(runs)
            per_host = median / size
            ratio = per_host / (statistics.median(times[base][name]) / base)
            print("%6d %-18s %10.3f %14.2f %10.2f" % (size, name, median, 1000 * per_host, ratio))


if __name__ == "__main__":
    main()
