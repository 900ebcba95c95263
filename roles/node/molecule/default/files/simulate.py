# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Simulated hosts for the node role's molecule scenario.

    python3 simulate.py REPO_ROOT OUTDIR

An AMD GPU of a host (its "amd" list) is a PCI device driven by amdgpu with its KFD topology node and
render node in the simulated /sys; prepare.yml makes /dev/kfd and its /dev/dri/renderD<minor>.

Writes, for each simulated host of HOSTS: OUTDIR/HOST/nvml.conf (for the simulated
libnvidia-ml.so.1 of tests/simulated) and OUTDIR/HOST/root/ (a simulated /sys and /proc for the
probe's rootfs option, with the same GPUs on the PCI bus), the same for the host after a GPU was
removed (nvml-removed.conf, root-removed/), OUTDIR/lib/libnvidia-ml.so.1, and OUTDIR/hosts.json:
what verify.yml expects of each host, written from these specifications and not from the role.
"""

import hashlib
import json
import os
import shutil
import sys
import uuid

# Each host: its GPUs in NVML index order (None: no NVIDIA library at all), the index of the
# GPU that verify.yml pulls out of it, and its AMD GPUs in bus order.
HOSTS = {
    "gf-node-cpu": {"gpus": None, "remove": None},
    # Two Radeon RX 7900 (gfx1100, which tinygrad 0.14 drives), KFD numbering the second on the bus first,
    # as amdgpu's probe order may: each instance must still get its own render node and tinygrad's GPU 0.
    "gf-node-amd2": {
        "gpus": None,
        "remove": None,
        "amd": [dict(bus="0000:c1:00.0", vram_gib=24, kfd_node=2, gpu_id=17240, minor=129, numa=0, cpus="0"),
                dict(bus="0000:c3:00.0", vram_gib=20, kfd_node=1, gpu_id=40911, minor=128, numa=0, cpus="1")],
    },
    "gf-node-gpu1": {
        "gpus": [dict(name="NVIDIA A100-SXM4-40GB", memory_mib=40960, bus="0000:3b:00.0", minor=0, cc=(8, 0),
                      numa=0, cpus="0-1")],
        "remove": None,
    },
    # Minor numbers deliberately out of index order: /dev/nvidiaN follows the minor, not the index.
    "gf-node-gpu4": {
        "gpus": [
            dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, bus="0000:18:00.0", minor=0, cc=(9, 0),
                 numa=0, cpus="0"),
            dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, bus="0000:2a:00.0", minor=1, cc=(9, 0),
                 numa=0, cpus="0"),
            dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, bus="0000:9a:00.0", minor=3, cc=(9, 0),
                 numa=0, cpus="1"),
            dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, bus="0000:ab:00.0", minor=2, cc=(9, 0),
                 numa=0, cpus="1"),
        ],
        "remove": 1,
    },
}
NUMA = ["0-%d" % max((os.cpu_count() or 1) - 1, 0)]


def uuid_of(host, spec):
    """A UUID per host and PCI slot, so the same GPU keeps its UUID when another one leaves."""
    digest = hashlib.sha256(("%s %s" % (host, spec["bus"])).encode()).digest()[:16]
    return "GPU-%s" % uuid.UUID(bytes=digest)


def cpu_ranges(text):
    """(first, last) of each part of a CPU list such as "0-3,8"."""
    for part in text.split(","):
        first, last = part.partition("-")[::2]
        yield int(first), int(last or first)


def fit_cpus(text):
    """The CPU list as written, with CPUs this machine lacks folded onto its last one: CPUAffinity=
    naming only absent CPUs would keep an instance from starting."""
    top = (os.cpu_count() or 1) - 1
    parts = []
    for first, last in cpu_ranges(text):
        first, last = min(first, top), min(last, top)
        parts.append(str(first) if first == last else "%d-%d" % (first, last))
    return ",".join(parts)


def cpu_numbers(text):
    return [cpu for first, last in cpu_ranges(text) for cpu in range(first, last + 1)]


# KFD's gfx_target_version of the Radeon RX 7900 (gfx1100).
GFX1100 = 110000


def amd_devices(sysfs, amd):
    """The PCI devices of the AMD GPUs, with their KFD topology nodes and render nodes."""
    return [sysfs.amd_gpu(a["bus"], device_id="0x744c", vram_bytes=a["vram_gib"] * 1024 ** 3, numa_node=a["numa"],
                          cpu_list=a["cpus"], kfd=sysfs.kfd_node(a["kfd_node"], a["gpu_id"], GFX1100),
                          render_minor=a["minor"]) for a in amd]


def amd_expected(amd):
    """What verify.yml expects of each AMD GPU's instance; its name is the role's (amd- and the bus id)."""
    return [{"name": "amd-" + a["bus"].replace(":", "-"), "bus": a["bus"], "render_minor": a["minor"],
             "numa": a["numa"], "cpus": cpu_numbers(a["cpus"])} for a in amd]


def write_host(nvml, sysfs, directory, host, specs, suffix, amd=()):
    specs = [dict(s, cpus=fit_cpus(s["cpus"])) for s in specs] if specs is not None else None
    amd = [dict(a, cpus=fit_cpus(a["cpus"])) for a in amd]
    root = os.path.join(directory, "root" + suffix)
    if os.path.isdir(root):
        shutil.rmtree(root)
    pci = [sysfs.nvidia_gpu(s["bus"], numa_node=s["numa"], cpu_list=s["cpus"]) for s in specs or []]
    sysfs.write_tree(root, pci=pci + amd_devices(sysfs, amd), numa=NUMA,
                     modules=(["nvidia"] if specs else []) + (["amdgpu"] if amd else []),
                     cpu_model="Simulated EPYC", memory_kib=8 * 1024 * 1024)
    if specs is not None:
        gpus = [nvml.gpu(s["name"], s["memory_mib"], uuid=uuid_of(host, s), pci_bus_id=s["bus"], minor=s["minor"],
                         cc=s["cc"], numa_node=s["numa"], cpu_affinity=s["cpus"]) for s in specs]
        nvml.write_config(os.path.join(directory, "nvml%s.conf" % suffix), gpus)
    return [{"index": i, "uuid": uuid_of(host, s), "minor": s["minor"], "bus": s["bus"], "numa": s["numa"],
             "cpus": cpu_numbers(s["cpus"])} for i, s in enumerate(specs or [])]


def main(repo_root, outdir):
    sys.path.insert(0, repo_root)
    from tests.simulated import nvml, sysfs

    os.makedirs(os.path.join(outdir, "lib"), exist_ok=True)
    shutil.copy2(os.path.join(nvml.build(), nvml.LIBRARY_NAME), os.path.join(outdir, "lib", nvml.LIBRARY_NAME))
    expected = {}
    for host, spec in HOSTS.items():
        directory = os.path.join(outdir, host)
        os.makedirs(directory, exist_ok=True)
        amd = spec.get("amd", [])
        before = write_host(nvml, sysfs, directory, host, spec["gpus"], "", amd)
        after = before
        if spec["remove"] is not None:
            remaining = [g for i, g in enumerate(spec["gpus"]) if i != spec["remove"]]
            after = write_host(nvml, sysfs, directory, host, remaining, "-removed", amd)
        amd = amd_expected([dict(a, cpus=fit_cpus(a["cpus"])) for a in amd])
        # The instances in slot order: NVIDIA's, then AMD's; the CPU instance where there is neither.
        names = [[g["uuid"] for g in gpus] + [a["name"] for a in amd] or ["cpu"] for gpus in (before, after)]
        expected[host] = {"nvml": spec["gpus"] is not None, "gpus": before, "gpus_after_removal": after,
                          "amd": amd, "names": names[0], "names_after_removal": names[1],
                          "removed": before[spec["remove"]]["uuid"] if spec["remove"] is not None else None}
    with open(os.path.join(outdir, "hosts.json"), "w") as handle:
        json.dump(expected, handle, indent=2, sort_keys=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: simulate.py REPO_ROOT OUTDIR")
    main(sys.argv[1], sys.argv[2])
