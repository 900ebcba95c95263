# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What a running process sees of the GPUs: its environment, and the NVIDIA device nodes its
device cgroup lets it open.

    python3 process_view.py PID

Reads /proc/PID/environ, then moves itself into the devices cgroup of PID (cgroup v1, as in the
test containers) and opens every /dev/nvidia* node for reading and writing. Prints
{"environ": {...}, "devices": {path: outcome}} as JSON: ENXIO means the cgroup allows the node
(no driver is behind it), EPERM that the cgroup denies it.
"""

import errno
import glob
import json
import os
import sys


def environ(pid):
    with open("/proc/%d/environ" % pid, "rb") as handle:
        entries = handle.read().decode("utf-8", "replace").split("\0")
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


def devices_cgroup(pid):
    with open("/proc/%d/cgroup" % pid) as handle:
        for line in handle:
            dummy, controllers, path = line.rstrip("\n").split(":", 2)
            if "devices" in controllers.split(","):
                return os.path.join("/sys/fs/cgroup/devices", path.lstrip("/"))
    raise SystemExit("process %d has no devices cgroup" % pid)


def devices(pid):
    with open(os.path.join(devices_cgroup(pid), "cgroup.procs"), "w") as handle:
        handle.write(str(os.getpid()))
    outcome = {}
    for path in sorted(glob.glob("/dev/nvidia*")):
        if os.path.isdir(path):
            continue
        try:
            os.close(os.open(path, os.O_RDWR))
            outcome[path] = "opened"
        except OSError as error:
            outcome[path] = errno.errorcode.get(error.errno, str(error.errno))
    return outcome


if __name__ == "__main__":
    process = int(sys.argv[1])
    view = {"environ": environ(process)}
    view["devices"] = devices(process)
    print(json.dumps(view, sort_keys=True))
