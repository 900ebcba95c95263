# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the health watcher costs idle: CPU (a share of one core) and resident memory.

    .venv/bin/python benchmarks/health_watcher.py --seconds 60 --gpus 4

The watcher as its unit runs it (default tick and poll) over simulated H100s (the simulated
libnvidia-ml under the real nvidia-ml-py), with a stand-in systemctl that says every instance is
active. CPU is the watcher's user and system time plus that of the children it waited for (the
systemctl it runs every poll), over the measured seconds, after a few seconds of start-up. The
simulated library polls its events file every 100 ms where NVIDIA's sleeps in the kernel: the
figure is an upper bound of the loop's own cost.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.simulated import nvml as simnvml  # noqa: E402

PACKAGE = "ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher"
SYSTEMCTL = "#!/bin/sh\n[ \"$1\" = is-active ] && { shift; for u in \"$@\"; do echo active; done; }\nexit 0\n"
WARMUP_S = 5


def cpu_seconds(pid):
    """utime + stime + cutime + cstime of /proc/PID/stat, in seconds."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / float(os.sysconf("SC_CLK_TCK"))


def memory_kib(pid):
    with open("/proc/%d/status" % pid) as handle:
        return dict((line.split(":")[0], int(line.split()[1])) for line in handle if line.startswith(("VmRSS", "VmHWM")))


def measure(tmp, gpus, seconds):
    lib = simnvml.build()
    spec = simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, health=dict(simnvml.HEALTHY_H100, recovery_action=0))
    config = simnvml.write_config(os.path.join(tmp, "nvml.conf"), [spec] * gpus)
    fake = os.path.join(tmp, "systemctl")
    with open(fake, "w") as handle:
        handle.write(SYSTEMCTL)
    os.chmod(fake, 0o755)
    for name in ("events", "kernel.log"):
        open(os.path.join(tmp, name), "w").close()
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".build", "collections"),
               **simnvml.environment(lib, config, os.path.join(tmp, "events")))
    proc = subprocess.Popen([sys.executable, "-m", PACKAGE, "--state", os.path.join(tmp, "state.json"),
                             "--metrics", os.path.join(tmp, "metrics.prom"), "--systemctl", fake,
                             "--kernel", "file:" + os.path.join(tmp, "kernel.log")],
                            env=env, stdout=subprocess.DEVNULL)
    try:
        time.sleep(WARMUP_S)
        cpu0, wall0 = cpu_seconds(proc.pid), time.time()
        time.sleep(seconds)
        cpu1, wall1 = cpu_seconds(proc.pid), time.time()
        memory = memory_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    return {"gpus": gpus, "seconds": round(wall1 - wall0, 1),
            "cpu_percent_of_one_core": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 3),
            "rss_mib": round(memory["VmRSS"] / 1024.0, 1), "peak_rss_mib": round(memory["VmHWM"] / 1024.0, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--gpus", type=int, default=4)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="health-watcher-") as tmp:
        print(json.dumps(measure(tmp, opts.gpus, opts.seconds), indent=1))


if __name__ == "__main__":
    main()
