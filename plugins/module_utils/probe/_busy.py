# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Busy GPUs: a GPU that NVML sees healthy while other processes hold its memory.

Opening a GPU is not free: a CUDA context took 518 MiB on a real H100 (exo with tinygrad, driver
580). On a GPU that serves (an exo node with a large model), that memory may be what the serving
process needs next, and where too little is free the open fails, which once made the probe report
a serving H100 as a CPU host (tests/fixtures/real-h100/busy_gpu.txt). So a busy GPU is never opened
by the probe, and NVML, which reads the driver's state without a context, is trusted for it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# An idle GPU shows what the driver reserves as used: 480 MiB on the real H100. More than this
# means some process holds memory, even one NVML cannot list (another container's PID namespace).
IDLE_USED_MIB = 1024
# A context needs about 518 MiB; with less than this free the open fails or takes the last of it.
MIN_FREE_MIB = 1024


def reason(gpu):
    """Why opening ``gpu`` (a ``gpus`` entry of the facts) could take memory a running process needs.

    None for an idle GPU, and for one whose memory NVML did not report (nothing to go on).
    """
    used, free, processes = gpu.get("memory_used_mib"), gpu.get("memory_free_mib"), gpu.get("processes")
    found = []
    if processes:
        held = sum(p["used_memory_mib"] or 0 for p in processes)
        found.append("%d compute process%s (pid %s) hold%s %d MiB" % (
            len(processes), "" if len(processes) == 1 else "es", ", ".join(str(p["pid"]) for p in processes),
            "s" if len(processes) == 1 else "", held))
    elif used is not None and used > IDLE_USED_MIB:
        found.append("%d MiB in use by processes NVML does not list (another container?)" % used)
    if free is not None and free < MIN_FREE_MIB:
        found.append("%d MiB free, less than the %d MiB a context needs" % (free, MIN_FREE_MIB))
    return "; ".join(found) or None


def busy_gpus(gpus):
    """The busy GPUs as (gpu, reason); hidden ones too, since tinygrad's probe opens GPU 0 of the host."""
    return [(gpu, gpu["busy_reason"]) for gpu in gpus if gpu.get("busy")]


def describe(busy):
    """One phrase for a list of (gpu, reason)."""
    return "; ".join("GPU %d (%s) is busy: %s" % (gpu["index"], gpu["uuid"], why) for gpu, why in busy)
