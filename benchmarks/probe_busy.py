# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What waiting for NVML, a busy GPU and backend checks cost the probe, in one interleaved run.

    .venv/bin/python benchmarks/probe_busy.py --rounds 5

device_facts on a simulated H100 (the simulated libnvidia-ml under the real nvidia-ml-py) with this
interpreter's tinygrad, each case as a whole module run, medians and ratios against the baseline:

- baseline: the H100 seen by NVML but not on the simulated PCI bus, so tinygrad runs beside NVML;
- nvml_first: the H100 on the bus too, so tinygrad starts once NVML has answered (plugins/module_utils/probe/_busy.py);
- busy: the same with the GPU held by another process: tinygrad is asked its version only;
- backends_cpu: nvml_first plus the check of the CPU backend (a device open and a compile).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.simulated import hosts as simhosts  # noqa: E402
from tests.simulated import nvml as simnvml  # noqa: E402
from tests.simulated import sysfs as simsysfs  # noqa: E402

MODULE = os.path.join(REPO, "plugins", "modules", "device_facts.py")
COLLECTIONS = os.path.join(REPO, ".build", "collections")


def case(tmp, name, gpu, on_bus, args):
    root = os.path.join(tmp, name)
    simsysfs.write_tree(root, pci=[simsysfs.nvidia_gpu(simhosts.bus(0))] if on_bus else [], numa=["0-15"])
    config = simnvml.write_config(os.path.join(tmp, name + ".conf"), [gpu])
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, **simnvml.environment(simnvml.build(), config))
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict(args, rootfs=root, timeout=60)}, handle)
    return [sys.executable, MODULE, path], env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    idle = simhosts.h100(0, memory_used_mib=480)
    busy = simhosts.HOSTS["busy"][0][0]
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "baseline": case(tmp, "baseline", idle, False, {}),
            "nvml_first": case(tmp, "nvml_first", idle, True, {}),
            "busy": case(tmp, "busy", busy, True, {}),
            "backends_cpu": case(tmp, "backends_cpu", idle, True, {"backends": ["cpu"]}),
        }
        times = dict((name, []) for name in cases)
        for dummy in range(options.rounds):
            for name, (argv, env) in cases.items():
                started = time.monotonic()
                out = subprocess.run(argv, env=env, stdout=subprocess.PIPE, check=True).stdout
                times[name].append((time.monotonic() - started) * 1000.0)
                facts = json.loads(out)["ansible_facts"]["device_capabilities"]
                assert facts["nvml"]["status"] == "ok", facts["nvml"]
    base = statistics.median(times["baseline"])
    print("case           median ms   ratio to baseline   (%d rounds, interleaved)" % options.rounds)
    for name, values in times.items():
        median = statistics.median(values)
        print("%-14s %9.0f   %6.2fx" % (name, median, median / base))


if __name__ == "__main__":
    main()
