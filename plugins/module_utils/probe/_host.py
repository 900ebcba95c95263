# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's CPUs, NUMA nodes and memory: /proc and /sys, and psutil on a live host whose /proc lacks them."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import re

from . import _sysfs as sysfs

MIB = 1024 * 1024
# /proc/cpuinfo names the CPU differently per architecture (x86, arm64, POWER).
CPU_MODEL_KEYS = ("model name", "Model", "Hardware", "cpu")


def _cpuinfo(rootfs):
    text = sysfs.read_text(sysfs.path(rootfs, "/proc/cpuinfo")) or ""
    fields = {}
    processors = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key == "processor":
            processors += 1
        fields.setdefault(key, value.strip())
    model = next((fields[key] for key in CPU_MODEL_KEYS if fields.get(key)), None)
    return model, processors


def _numa_nodes(rootfs):
    nodes = []
    for directory in glob.glob(sysfs.path(rootfs, "/sys/devices/system/node/node[0-9]*")):
        match = re.search(r"node(\d+)$", directory)
        if match:
            nodes.append({"node": int(match.group(1)),
                          "cpu_list": sysfs.read_text(os.path.join(directory, "cpulist")) or None})
    return sorted(nodes, key=lambda node: node["node"])


def _meminfo_total_mib(rootfs):
    for line in (sysfs.read_text(sysfs.path(rootfs, "/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def _psutil_figures():
    """(cpus, memory_mib) from psutil, or (None, None) without it."""
    try:
        import psutil
    except ImportError:
        return None, None
    return psutil.cpu_count(logical=True), psutil.virtual_memory().total // MIB


def probe(rootfs="/"):
    model, processors = _cpuinfo(rootfs)
    cpus, memory_mib = processors or None, _meminfo_total_mib(rootfs)
    # psutil reads these same files on Linux; importing it costs more than reading them, so it is
    # asked only on a live host whose /proc does not say.
    if os.path.realpath(rootfs) == "/" and (cpus is None or memory_mib is None):
        figures = _psutil_figures()
        cpus = cpus or figures[0] or os.cpu_count()
        memory_mib = memory_mib if memory_mib is not None else figures[1]
    return {
        "cpu_model": model,
        "cpus": cpus,
        "numa_nodes": _numa_nodes(rootfs),
        "memory_mib": memory_mib,
    }
