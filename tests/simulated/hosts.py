# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Simulated hosts for the node role's tests: GPUs for the simulated NVML and the /sys to go with them.

HOSTS maps a name to the GPUs NVML reports there (None: no libnvidia-ml at all) and the keyword
arguments of nvml.write_config (an NVML error, for example). write() lays out one host and returns
the probe's environment and rootfs, so that tests run gpufleet.exo.device_facts on it and plan
from the facts it really reports.
"""

import os

from tests.simulated import nvml as simnvml
from tests.simulated import sysfs as simsysfs


def bus(i):
    return "0000:%02x:00.0" % (0x18 + 0x10 * i)


def uuid(i):
    return "GPU-%08x-1111-2222-3333-444455556666" % (0x9b7c0000 + i)


def h100(i, minor=None, memory_mib=81559, name="NVIDIA H100 80GB HBM3", mig=None):
    return simnvml.gpu(name, memory_mib, uuid=uuid(i), pci_bus_id=bus(i), minor=i if minor is None else minor,
                       cc=(9, 0), numa_node=i // 2, cpu_affinity="%d-%d" % (8 * i, 8 * i + 7), mig=mig)


MIG = dict(current=1, pending=1, devices=[
    dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000001", memory_mib=40192, gi=1, ci=0),
    dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000002", memory_mib=9856, gi=7, ci=0)])
# What the NVIDIA driver writes in /proc/driver/nvidia-caps/mig-minors for the MIG devices above.
MIG_MINORS = ("config 1\nmonitor 2\ngpu0/gi1/access 21\ngpu0/gi1/ci0/access 22\n"
              "gpu0/gi7/access 81\ngpu0/gi7/ci0/access 82\n")
# GPUs 2 and 3 have minors 3 and 2: the device node follows the minor, not the index.
FOUR = [h100(0), h100(1), h100(2, minor=3), h100(3, minor=2)]

HOSTS = {
    "one": ([h100(0)], {}),
    "two": ([h100(0), h100(1)], {}),
    "four": (FOUR, {}),
    "eight": ([h100(i) for i in range(8)], {}),
    "mig": ([simnvml.gpu("NVIDIA A100-SXM4-80GB", 81920, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(8, 0),
                         numa_node=0, mig=MIG)], {}),
    "t4_and_h100": ([simnvml.gpu("Tesla T4", 15360, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(7, 5)), h100(1)], {}),
    "unknown_part": ([simnvml.gpu("NVIDIA Future GPU 1", 65536, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(12, 0))],
                     {}),
    "cpu_only": (None, {}),
    "nvml_broken": ([h100(0)], {"init_error": "DRIVER_NOT_LOADED"}),
}


def write(tmp, name, nvml_lib, gpus=None, config=None):
    """Lay out a simulated host under tmp: (environment for the probe, rootfs)."""
    if gpus is None and name in HOSTS:
        gpus, config = HOSTS[name]
    root = os.path.join(tmp, name)
    simsysfs.write_tree(root, pci=[simsysfs.nvidia_gpu(bus(i), numa_node=i // 2, cpu_list="%d-%d" % (8 * i, 8 * i + 7))
                                   for i in range(len(gpus or []))], numa=["0-15", "16-31"])
    env = {}
    if gpus is not None:
        path = simnvml.write_config(os.path.join(tmp, name + ".nvml.conf"), gpus, **(config or {}))
        env = simnvml.environment(nvml_lib, path)
    return env, root
