# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What device_facts costs, side by side with Ansible's own modules, in one interleaved run.

    make bench                      (or: .venv/bin/python benchmarks/probe.py --rounds 7)

Prints medians and ratios against `ansible localhost -m ping`, each command run in turn in every
round: ping, setup, device_facts without tinygrad, with tinygrad on a first gathering (its answer
not kept: tinygrad_cache=false, which is what a first gathering costs), with tinygrad on a re-gather
of the unchanged host (the kept answer), and tinygrad's selection alone. Then, over the simulated
libnvidia-ml with 8 GPUs: the NVML stage as the probe runs it (a child process with its deadline)
against a C program that does what `nvidia-smi -L` does (load the library, init, name and UUID of
each GPU, shut down) as a process of its own, the stage's parts (the child's start, its imports,
nvmlInit, the queries, nvmlShutdown, the answer's way back), and the in-process probe.
`--nvml` prints the NVML figures alone.

Targets (issue 23): device_facts without tinygrad at most 1.0x ping; with tinygrad on a re-gather at
most 1.05x ping; the NVML stage at most twice the nvidia-smi -L equivalent; the in-process probe of 8
simulated GPUs under 50 ms.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import resource
import shutil
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

# What `nvidia-smi -L` does, as a process of its own: load the library, init, each GPU's name and UUID, shut down.
SMI_L = r"""
#include <dlfcn.h>
#include <stdio.h>
typedef int (*init_t)(void);
typedef int (*count_t)(unsigned int *);
typedef int (*handle_t)(unsigned int, void **);
typedef int (*text_t)(void *, char *, unsigned int);
int main(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    unsigned int count = 0;
    if (!lib || ((init_t)dlsym(lib, "nvmlInit_v2"))() != 0) return 1;
    ((count_t)dlsym(lib, "nvmlDeviceGetCount_v2"))(&count);
    for (unsigned int i = 0; i < count; i++) {
        void *device;
        char name[96], uuid[96];
        ((handle_t)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"))(i, &device);
        ((text_t)dlsym(lib, "nvmlDeviceGetName"))(device, name, sizeof name);
        ((text_t)dlsym(lib, "nvmlDeviceGetUUID"))(device, uuid, sizeof uuid);
        printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
    }
    return ((init_t)dlsym(lib, "nvmlShutdown"))();
}
"""

# The NVML stage as gather() runs it: a child process, forked, with the deadline; timed in a process
# that has imported what the module's process has (Ansible's module_utils.basic, the probe).
NVML_STAGE = r"""
import json, sys, time
sys.path.insert(0, %(collections)r)
import ansible.module_utils.basic
from ansible_collections.gpufleet.exo.plugins.module_utils import probe
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _deadline as deadline
probe.import_nvml_shaping()  # as gather() does where an NVIDIA GPU is on the bus
samples = []
for dummy in range(%(rounds)d):
    started = time.perf_counter()
    outcome = deadline.run_stages({"nvml": deadline.Stage(func=probe._nvml_query)}, 10.0)["nvml"]
    samples.append((time.perf_counter() - started) * 1000.0)
    assert outcome.ok and len(outcome.value["gpus"]) == 8, outcome.message
print(json.dumps(samples))
"""

# The NVML stage's parts, in the same process: the child's start (fork), what it imports (the probe's
# _nvml and health, which gather() imports before the fork, and nvidia-ml-py), nvmlInit, the queries, nvmlShutdown, and
# the answer's way back to the parent. And what compiling _nvml and health from source costs, which
# AnsiballZ's archive makes the module pay at every import.
NVML_PARTS = r"""
import json, statistics, sys, time
sys.path.insert(0, %(collections)r)
import ansible.module_utils.basic
from ansible_collections.gpufleet.exo.plugins.module_utils import probe
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _deadline as deadline
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _nvml as source
probe.import_nvml_shaping()  # as gather() does where an NVIDIA GPU is on the bus

def stage():
    marks = [("child started", time.perf_counter())]
    from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _nvml, health
    marks.append(("import the probe's _nvml, health", time.perf_counter()))
    import pynvml
    marks.append(("import nvidia-ml-py", time.perf_counter()))
    init, shutdown = pynvml.nvmlInit, pynvml.nvmlShutdown
    def timed_init():
        init()
        marks.append(("nvmlInit", time.perf_counter()))
    def timed_shutdown():
        marks.append(("queries", time.perf_counter()))
        shutdown()
        marks.append(("nvmlShutdown", time.perf_counter()))
    pynvml.nvmlInit, pynvml.nvmlShutdown = timed_init, timed_shutdown
    value = _nvml.query()
    return {"value": value, "marks": marks}

parts = {}
for dummy in range(%(rounds)d):
    started = time.perf_counter()
    outcome = deadline.run_stages({"nvml": deadline.Stage(func=stage)}, 10.0)["nvml"]
    ended = time.perf_counter()
    assert outcome.ok and len(outcome.value["value"]["gpus"]) == 8, outcome.message
    last = started
    marks = outcome.value["marks"] + [("the answer back in the parent (JSON, exit)", ended)]
    for name, at in marks:
        parts.setdefault(name, []).append((at - last) * 1000.0)
        last = at
    parts.setdefault("the stage in all", []).append((ended - started) * 1000.0)
compile_ms = []
for dummy in range(%(rounds)d):
    started = time.perf_counter()
    for path in (source.__file__, source.__file__.replace("_nvml.py", "health.py")):
        with open(path) as handle:
            compile(handle.read(), path, "exec")
    compile_ms.append((time.perf_counter() - started) * 1000.0)
medians = [(name, statistics.median(values)) for name, values in parts.items()]
print(json.dumps({"parts": medians, "compile": statistics.median(compile_ms)}))
"""
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


def timed(command, env=None, outputs=None, cpu=None):
    """Milliseconds the command took; its output is appended to outputs, and the CPU milliseconds of its
    process tree (user and system) to cpu, when given."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(command, env=env or ENV, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - started) * 1000.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if outputs is not None:
        outputs.append(proc.stdout.decode("utf-8", "replace"))
    if cpu is not None:
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0)
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--nvml", action="store_true", help="only the NVML stage's figures (5 x rounds runs)")
    options = parser.parse_args()
    if options.nvml:
        print("\n".join(nvml_figures(5 * options.rounds)[0]))
        return

    ping = ansible("ansible.builtin.ping")
    commands = {
        "ping": ping,
        "setup": ansible("ansible.builtin.setup"),
        "device_facts tinygrad=false": ansible("gpufleet.exo.device_facts", "tinygrad=false"),
        "device_facts, first gathering": ansible("gpufleet.exo.device_facts", "tinygrad_cache=false"),
        "device_facts, re-gather": ansible("gpufleet.exo.device_facts"),
        "tinygrad selection alone": [sys.executable, "-c", tinygrad_probe.SCRIPT],
    }
    samples = dict((name, []) for name in commands)
    cpu = dict((name, []) for name in commands)
    for name, command in commands.items():  # warm caches once (and keep tinygrad's answer), untimed
        timed(command)
    regathers = []
    names = list(commands)
    for number in range(options.rounds):
        # Interleaved, so drift hits every command alike, and rotated each round: what a heavy command
        # leaves behind (a busy CPU, the tinygrad child's exit) falls on a different one each time.
        for name in names[number % len(names):] + names[:number % len(names)]:
            outputs = regathers if name == "device_facts, re-gather" else None
            samples[name].append(timed(commands[name], outputs=outputs, cpu=cpu[name]))
    # A package installed into the interpreter's directories meanwhile (by other work on a shared
    # machine) rightly voids the kept answer: count how many re-gathers really reused it.
    reused = sum('"cached": true' in output for output in regathers)

    nvml_lines, samples["in-process probe, 8 simulated GPUs"] = nvml_figures(5 * options.rounds)

    medians = dict((name, statistics.median(values)) for name, values in samples.items())
    cpu_medians = dict((name, statistics.median(values)) for name, values in cpu.items())
    ping = medians["ping"]
    # On a shared machine wall time swings with the others' load; the CPU the commands' processes spent
    # swings less, and says the same where the machine is idle.
    print("%-38s %10s %8s %10s %8s   (%d rounds, interleaved, rotated)"
          % ("", "median ms", "x ping", "CPU ms", "x ping", options.rounds))
    for name, median in medians.items():
        line = "%-38s %10.1f %8.2f" % (name, median, median / ping)
        if name in cpu_medians:
            line += " %10.1f %8.2f" % (cpu_medians[name], cpu_medians[name] / cpu_medians["ping"])
        print(line)
    print()
    print("device_facts tinygrad=false / ping: %.2f, CPU %.2f (target <= 1.0)"
          % (medians["device_facts tinygrad=false"] / ping,
             cpu_medians["device_facts tinygrad=false"] / cpu_medians["ping"]))
    print("device_facts re-gather / ping: %.2f, CPU %.2f (target <= 1.05; %d of %d re-gathers reused the kept "
          "answer); first gathering / ping: %.2f" % (
              medians["device_facts, re-gather"] / ping, cpu_medians["device_facts, re-gather"] / cpu_medians["ping"],
              reused, len(regathers), medians["device_facts, first gathering"] / ping))
    print("the tinygrad stage adds %.0f ms on a first gathering; the selection alone costs %.0f ms"
          % (medians["device_facts, first gathering"] - medians["device_facts tinygrad=false"],
             medians["tinygrad selection alone"]))
    print("\n".join(nvml_lines))


def nvml_figures(rounds):
    """(lines to print, the in-process probe's samples): the NVML stage, its parts, the nvidia-smi -L
    equivalent and the in-process probe, over the simulated libnvidia-ml with 8 GPUs."""
    workdir = tempfile.mkdtemp(prefix="gpufleet-bench-")
    gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, cc=(9, 0), health=simnvml.HEALTHY_H100) for dummy in range(8)]
    config = simnvml.write_config(os.path.join(workdir, "nvml.conf"), gpus)
    env = dict(os.environ, **simnvml.environment(simnvml.build("current"), config))
    smi = build_smi_l(workdir)
    nvml = dict(collections=os.path.join(REPO, ".build", "collections"), rounds=rounds)

    def run(script):
        return json.loads(subprocess.run([sys.executable, "-c", script % nvml], env=env, check=True,
                                         stdout=subprocess.PIPE).stdout.decode())
    stage = run(NVML_STAGE)
    smi_samples = [timed([smi], env) for dummy in range(rounds)]
    parts = run(NVML_PARTS)
    in_process = run(IN_PROCESS)
    lines = ["NVML stage, 8 simulated GPUs: %.1f ms; nvidia-smi -L equivalent (a C process): %.1f ms; ratio %.2f "
             "(target <= 2)" % (statistics.median(stage), statistics.median(smi_samples),
                                statistics.median(stage) / statistics.median(smi_samples)),
             "the NVML stage's parts (medians of %d runs; the first part is the fork, the child's start):" % rounds]
    lines += ["  %-44s %6.1f ms" % (name, median) for name, median in parts["parts"]]
    lines.append("  %-44s %6.1f ms (under AnsiballZ, paid once: by the parent, before the child is forked)"
                 % ("compiling _nvml and health from source", parts["compile"]))
    lines.append("in-process probe of 8 simulated GPUs: %.1f ms (target < 50); the first call, which also imports "
                 "nvidia-ml-py: %.1f ms" % (statistics.median(in_process["samples"]), in_process["first"]))
    return lines, in_process["samples"]


def build_smi_l(workdir):
    """The nvidia-smi -L equivalent, compiled from SMI_L."""
    source = os.path.join(workdir, "smi_l.c")
    with open(source, "w") as handle:
        handle.write(SMI_L)
    target = os.path.join(workdir, "smi_l")
    compiler = shutil.which("gcc") or shutil.which("cc")
    subprocess.run([compiler, "-O2", "-o", target, source, "-ldl"], check=True)
    return target


if __name__ == "__main__":
    main()
