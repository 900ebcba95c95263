# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Simulated hosts for the cluster scenario, written by the default scenario's simulate.py.

    python3 simulate_cluster.py REPO_ROOT OUTDIR

The same files as simulate.py writes (see its documentation), for this scenario's hosts: one with
an H100 and an L4, the second of which verify.yml pulls out, and one without any GPU or NVIDIA
library. Three unequal instances: exo splits a model's layers by the memory each describes.

For the rolling driver change (verify.yml, last), the GPU host's NVML after the GPU was pulled out,
as a simulated driver change leaves it (a container cannot load a kernel module: the change swaps
the simulated library's configuration): OUTDIR/HOST/nvml-upgraded.conf (another driver version,
healthy) and OUTDIR/HOST/nvml-unhealthy.conf (that version, with uncorrectable ECC errors on GPU 0).
"""

import importlib.util
import os
import sys

HOSTS = {
    "gf-cluster-cpu": {"gpus": None, "remove": None},
    "gf-cluster-gpu2": {
        "driver_changes": {"upgraded": None, "unhealthy": dict(ecc=(1, 1, 3, 3))},
        "gpus": [
            dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, bus="0000:18:00.0", minor=0, cc=(9, 0),
                 numa=0, cpus="0"),
            dict(name="NVIDIA L4", memory_mib=23034, bus="0000:2a:00.0", minor=1, cc=(8, 9),
                 numa=0, cpus="1"),
        ],
        "remove": 1,
    },
}


def load_simulate():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "default", "files", "simulate.py")
    spec = importlib.util.spec_from_file_location("simulate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPGRADED_DRIVER = "550.127.05"


def write_driver_changes(simulate, outdir):
    from tests.simulated import nvml
    for host, spec in HOSTS.items():
        remaining = [g for i, g in enumerate(spec["gpus"] or []) if i != spec["remove"]]
        for name, health in spec.get("driver_changes", {}).items():
            gpus = [nvml.gpu(s["name"], s["memory_mib"], uuid=simulate.uuid_of(host, s), pci_bus_id=s["bus"],
                             minor=s["minor"], cc=s["cc"], numa_node=s["numa"], cpu_affinity=simulate.fit_cpus(s["cpus"]),
                             health=health if i == 0 else None) for i, s in enumerate(remaining)]
            nvml.write_config(os.path.join(outdir, host, "nvml-%s.conf" % name), gpus, driver_version=UPGRADED_DRIVER)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: simulate_cluster.py REPO_ROOT OUTDIR")
    simulate = load_simulate()
    simulate.HOSTS = HOSTS
    simulate.main(sys.argv[1], sys.argv[2])
    write_driver_changes(simulate, sys.argv[2])
