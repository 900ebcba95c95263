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


def h100(i, minor=None, memory_mib=81559, name="NVIDIA H100 80GB HBM3", mig=None, **usage):
    return simnvml.gpu(name, memory_mib, uuid=uuid(i), pci_bus_id=bus(i), minor=i if minor is None else minor,
                       cc=(9, 0), numa_node=i // 2, cpu_affinity="%d-%d" % (8 * i, 8 * i + 7), mig=mig,
                       **usage)


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
    # GPU 0 serves (an exo node, pid 4242, holds all but 63 MiB, as on the real H100 of
    # busy_gpu.txt); GPU 1 is idle with what the real idle H100 shows as used.
    "busy": ([h100(0, memory_used_mib=81496, processes=[(4242, 81016)]), h100(1, memory_used_mib=480)], {}),
}

# The real host of tests/fixtures/real-h100 (as nvidia-smi -q, nvidia-smi --query-gpu and its sysfs showed
# it; that record, host.txt, is not in this repository: it holds the GPU's serial number): one H100 at
# 0000:00:06.0 in a Firecracker VM, driver 580.159.04, CUDA 13.0. NVML gives no NUMA node for it
# (NOT_SUPPORTED here) and MIG is supported but off. Its health answers are those of health.json there:
# ECC on without errors, no remapped rows, persistence on, default compute mode, PCIe 5 x16 of 5 x16,
# 35 C, clocks idle; retired pages and the fabric not supported.
REAL_H100_UUID = "GPU-af19d7dd-02be-25eb-14d1-c456b69ba1fa"
REAL_H100_HEALTH = dict(ecc=(1, 1, 0, 0), remapped_rows=(0, 0, 0, 0), persistence_mode=1, compute_mode=0,
                        pcie=(5, 5, 16, 16), temperature_c=35, clock_event_reasons=1)
HOSTS["real_h100"] = ([simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=REAL_H100_UUID, pci_bus_id="00000000:00:06.0",
                                   minor=0, cc=(9, 0), cpu_affinity="0-15", mig=dict(current=0, pending=0, devices=[]),
                                   pci_device_id=0x2330, health=REAL_H100_HEALTH)],
                      {"driver_version": "580.159.04", "cuda_version": 13000})
# Hosts whose /sys and /proc are not the generic layout of write(), by name: the real H100's has the
# GPU without a NUMA node (numa_node -1) and local to all 16 CPUs, one NUMA node, the virtio
# devices and host bridge beside it, the nvidia and nvidia_uvm modules, and its CPU and memory.
SYSFS = {
    "real_h100": dict(pci=[simsysfs.nvidia_gpu("0000:00:06.0", cpu_list="0-15")], numa=["0-15"],
                      modules=("nvidia", "nvidia_uvm"), cpu_model="Intel(R) Xeon(R) Processor",
                      memory_kib=128887 * 1024,
                      extra_devices=(("0000:00:00.0", "0x8086", "0x060000"), ("0000:00:01.0", "0x1af4", "0x018000"),
                                     ("0000:00:02.0", "0x1af4", "0x018000"), ("0000:00:03.0", "0x1af4", "0x020000"),
                                     ("0000:00:04.0", "0x1af4", "0xffff00"), ("0000:00:05.0", "0x1af4", "0xffff00"))),
}


def write(tmp, name, nvml_lib, gpus=None, config=None):
    """Lay out a simulated host under tmp: (environment for the probe, rootfs)."""
    if gpus is None and name in HOSTS:
        gpus, config = HOSTS[name]
    root = os.path.join(tmp, name)
    if name in SYSFS:
        simsysfs.write_tree(root, **SYSFS[name])
    else:
        simsysfs.write_tree(root, pci=[simsysfs.nvidia_gpu(bus(i), numa_node=i // 2,
                                                           cpu_list="%d-%d" % (8 * i, 8 * i + 7))
                                       for i in range(len(gpus or []))], numa=["0-15", "16-31"])
    env = {}
    if gpus is not None:
        path = simnvml.write_config(os.path.join(tmp, name + ".nvml.conf"), gpus, **(config or {}))
        env = simnvml.environment(nvml_lib, path)
    return env, root


# ---- the hosts whose facts the planners' unit tests read, as recorded in tests/fixtures/simulated ----

# The driver planner's hosts: what the PCI bus shows and which driver holds each device decide there,
# so each gives its /sys whole. name: (PCI devices, NVML config or None for no libnvidia-ml at all,
# Python running the probe or None for the tests' own).
GPU0 = "0000:3b:00.0"
GPU1 = "0000:4b:00.0"
DRIVER_H100 = simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, pci_bus_id=GPU0)
BARE_PYTHON = "/usr/bin/python3"  # a Python without nvidia-ml-py: the probe reports not_installed
DRIVER_HOSTS = {
    "no_gpu": ([], None, None),
    "amd_only": ([simsysfs.amd_gpu("0000:c1:00.0")], None, None),
    "no_driver": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, None),
    "not_loaded": ([simsysfs.nvidia_gpu(GPU0, driver="none")], {"gpus": [], "init_error": "DRIVER_NOT_LOADED"}, None),
    "nouveau": ([simsysfs.nvidia_gpu(GPU0, driver="nouveau")], None, None),
    "mismatch": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [], "init_error": "LIB_RM_VERSION_MISMATCH"},
                 None),
    "healthy": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [DRIVER_H100]}, None),
    "passthrough": ([simsysfs.nvidia_gpu(GPU0, driver="vfio-pci"), simsysfs.nvidia_gpu(GPU1, driver="vfio-pci")],
                    None, None),
    "half_passthrough": ([simsysfs.nvidia_gpu(GPU0, driver="vfio-pci"), simsysfs.nvidia_gpu(GPU1, driver="none")],
                         None, None),
    "gpu_lost": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [], "init_error": "GPU_IS_LOST"}, None),
    "bound_no_pynvml": ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], None, BARE_PYTHON),
    "unbound_no_pynvml": ([simsysfs.nvidia_gpu(GPU0, driver="none")], None, BARE_PYTHON),
}

# The fleet's other hosts, laid out by write() as HOSTS are: two GeForce parts, and an H100 whose
# driver waits for a reboot.
FLEET_HOSTS = {
    "rtx": ([simnvml.gpu("NVIDIA GeForce RTX 3080", 10240, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(8, 6)),
             simnvml.gpu("NVIDIA GeForce RTX 3090", 24576, uuid=uuid(1), pci_bus_id=bus(1), minor=1, cc=(8, 6))], {}),
    "reboot": ([h100(0)], {"init_error": "LIB_RM_VERSION_MISMATCH"}),
}

# A healthy, a degraded (PCIe x4 of x16) and an unusable (row remapping failed) H100, laid out by write().
SICK_UUIDS = tuple("GPU-%08x-0000-0000-0000-000000000000" % n for n in range(3))
SICK = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=SICK_UUIDS[0], health=simnvml.HEALTHY_H100),
        simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=SICK_UUIDS[1],
                    health=dict(simnvml.HEALTHY_H100, pcie=(5, 5, 4, 16))),
        simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=SICK_UUIDS[2],
                    health=dict(simnvml.HEALTHY_H100, remapped_rows=(0, 9, 0, 1)))]

# Two H100s whose NVLink fabric is in the given state (state, status, clique), with the NVSwitches given
# on the PCI bus and the nvidia module loaded: the driver role's services.
NVSWITCHES = ("0000:05:00.0", "0000:06:00.0")


def hgx_gpus(fabric):
    return [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, pci_bus_id=bus(i),
                        health=dict(simnvml.HEALTHY_H100, fabric=fabric)) for i in range(2)]


def hgx_tree(switches):
    return dict(pci=[simsysfs.nvidia_gpu(bus(i)) for i in range(2)] + [simsysfs.nvswitch(bus_id) for bus_id in switches],
                modules=("nvidia",))


def _tree_host(pci, nvml_config, python):
    """A DRIVER_HOSTS entry as a PROBED one."""
    nvml_config = nvml_config or {}
    config = dict((key, value) for key, value in nvml_config.items() if key != "gpus")
    return (nvml_config.get("gpus"), config, dict(pci=pci), python)


# AMD hosts: the GPUs with their KFD topology nodes and render nodes, the amdgpu module loaded. On amd_two
# KFD numbered the second GPU on the bus first (its nodes follow amdgpu's probe order, not the bus): tinygrad's
# first AMD GPU is then 0000:c3:00.0. Both are 0x744c, told apart by VRAM.
AMD0 = "0000:c1:00.0"
AMD1 = "0000:c3:00.0"
AMD_NUMA = ["0-15", "16-31"]


def amd_tree(*gpus, **extra):
    """write_tree's arguments for a host with these AMD GPUs (and extra's PCI devices, NVIDIA ones)."""
    return dict(pci=list(extra.get("before", ())) + list(gpus), numa=AMD_NUMA,
                modules=tuple(extra.get("modules", ())) + ("amdgpu",))


def mi300x(bus_id, node, gpu_id, render_minor=128, numa_node=0, **kwargs):
    return simsysfs.amd_gpu(bus_id, numa_node=numa_node, cpu_list=AMD_NUMA[numa_node],
                            kfd=simsysfs.kfd_node(node, gpu_id), render_minor=render_minor, **kwargs)


def radeon_7900(bus_id, vram_gib, node, gpu_id, render_minor, numa_node):
    return simsysfs.amd_gpu(bus_id, device_id="0x744c", vram_bytes=vram_gib * 1024 ** 3, numa_node=numa_node,
                            cpu_list=AMD_NUMA[numa_node], kfd=simsysfs.kfd_node(node, gpu_id, 110000),
                            render_minor=render_minor)


AMD_HOSTS = {
    "amd_one": (None, {}, amd_tree(mi300x(AMD0, 1, 53987)), None),
    "amd_two": (None, {}, amd_tree(radeon_7900(AMD0, 24, 2, 17240, 129, 0), radeon_7900(AMD1, 20, 1, 40911, 128, 1)),
                None),
    # An H100 (NVML index 0, the simulated libnvidia-ml) beside an MI300X.
    "amd_nvidia": ([h100(0)], {}, amd_tree(mi300x(AMD0, 1, 53987, numa_node=1),
                                           before=[simsysfs.nvidia_gpu(bus(0), numa_node=0, cpu_list="0-7")],
                                           modules=("nvidia",)), None),
    # The first GPU passed through to a guest (no KFD node, no render node), the second serving.
    "amd_vfio": (None, {}, amd_tree(simsysfs.amd_gpu(AMD0, driver="vfio-pci", numa_node=0, cpu_list=AMD_NUMA[0]),
                                    mi300x(AMD1, 1, 53987, numa_node=1)), None),
    # KFD names render node 128, which /sys/class/drm lacks (udev or a container left it out).
    "amd_no_render": (None, {}, amd_tree(simsysfs.amd_gpu(AMD0, numa_node=0, cpu_list=AMD_NUMA[0],
                                                          kfd=simsysfs.kfd_node(1, 53987, render_minor=128))), None),
}

# name: (GPUs for the simulated NVML or None for no libnvidia-ml, its config, sysfs.write_tree's arguments
# or None for write()'s layout, the Python that runs the probe or None for the tests' own).
PROBED = dict((name, HOSTS[name] + (None, None))
              for name in ("one", "two", "four", "eight", "mig", "t4_and_h100", "unknown_part", "cpu_only",
                           "nvml_broken"))
PROBED.update((name, spec + (None, None)) for name, spec in FLEET_HOSTS.items())
PROBED.update((name, _tree_host(*spec)) for name, spec in DRIVER_HOSTS.items())
PROBED.update({
    "sick": (SICK, {}, None, None),
    "hgx": (hgx_gpus((3, 0, 1)), {}, hgx_tree(NVSWITCHES), None),
    "hgx_fabric_down": (hgx_gpus((2, 0, 0)), {}, hgx_tree(NVSWITCHES), None),
    "hgx_driver_not_loaded": (hgx_gpus((3, 0, 1)), {"init_error": "DRIVER_NOT_LOADED"}, hgx_tree(NVSWITCHES), None),
    "two_h100": (hgx_gpus((0, 0, 0)), {}, hgx_tree(()), None),
})
PROBED.update(AMD_HOSTS)
