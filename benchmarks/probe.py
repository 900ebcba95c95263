# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What device_facts costs, side by side with Ansible's own modules, in one interleaved run.

    make bench                      (or: .venv/bin/python benchmarks/probe.py --rounds 7)

Prints medians and ratios against `ansible localhost -m ping`. Targets: device_facts without the
tinygrad stage at most 1.15x ping; with it, at most tinygrad's own selection cost above that; the
in-process probe of 8 simulated GPUs under 50 ms.
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
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from tests.simulated import nvml as simnvml  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe  # noqa: E402

BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))

IN_PROCESS = r"""
import json, sys, time
sys.path.insert(0, %(collections)r)
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import gather
started = time.perf_counter()
gather(tinygrad=False)
first = (time.perf_counter() - started) * 1000.0
# A long-lived caller has nvidia-ml-py imported once; each stage's child then inherits it.
import pynvml
samples = []
for dummy in range(%(rounds)d):
    started = time.perf_counter()
    facts = gather(tinygrad=False)
    samples.append((time.perf_counter() - started) * 1000.0)
assert len(facts["gpus"]) == 8 and facts["nvml"]["status"] == "ok", facts["nvml"]
print(json.dumps({"first": first, "samples": samples}))
"""


def ansible(module, args=""):
    command = [os.path.join(BIN, "ansible"), "localhost", "-m", module, "-o"]
    return command + (["-a", args] if args else [])


def timed(command, env=None):
    started = time.perf_counter()
    subprocess.run(command, env=env or ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()

    commands = {
        "ping": ansible("ansible.builtin.ping"),
        "setup": ansible("ansible.builtin.setup"),
        "device_facts tinygrad=false": ansible("gpufleet.exo.device_facts", "tinygrad=false"),
        "device_facts": ansible("gpufleet.exo.device_facts"),
        "tinygrad selection alone": [sys.executable, "-c", tinygrad_probe.SCRIPT],
    }
    samples = dict((name, []) for name in commands)
    for name, command in commands.items():  # warm caches once, untimed
        timed(command)
    for dummy in range(options.rounds):
        for name, command in commands.items():  # interleaved, so drift hits every command alike
            samples[name].append(timed(command))

    workdir = tempfile.mkdtemp(prefix="gpufleet-bench-")
    gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, cc=(9, 0), health=simnvml.HEALTHY_H100) for dummy in range(8)]
    config = simnvml.write_config(os.path.join(workdir, "nvml.conf"), gpus)
    env = dict(os.environ, **simnvml.environment(simnvml.build("current"), config))
    script = IN_PROCESS % {"collections": os.path.join(REPO, ".build", "collections"), "rounds": 5 * options.rounds}
    output = subprocess.run([sys.executable, "-c", script], env=env, check=True, stdout=subprocess.PIPE).stdout
    in_process = json.loads(output.decode())
    samples["in-process probe, 8 simulated GPUs"] = in_process["samples"]

    medians = dict((name, statistics.median(values)) for name, values in samples.items())
    ping = medians["ping"]
    print("%-38s %10s %8s   (%d rounds, interleaved)" % ("", "median ms", "x ping", options.rounds))
    for name, median in medians.items():
        print("%-38s %10.1f %8.2f" % (name, median, median / ping))
    extra = medians["device_facts"] - medians["device_facts tinygrad=false"]
    print()
    print("device_facts tinygrad=false / ping: %.2f (target <= 1.15)" % (medians["device_facts tinygrad=false"] / ping))
    print("tinygrad stage adds %.0f ms; the selection alone costs %.0f ms (target: adds no more than that)"
          % (extra, medians["tinygrad selection alone"]))
    print("in-process probe of 8 simulated GPUs: %.1f ms (target < 50); the first call, which also imports "
          "nvidia-ml-py: %.1f ms" % (medians["in-process probe, 8 simulated GPUs"], in_process["first"]))


if __name__ == "__main__":
    main()
