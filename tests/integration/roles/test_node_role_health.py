# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role on a host with a sick GPU, through ansible-playbook: a simulated host (three H100s on
the simulated libnvidia-ml: healthy, degraded, unusable) probed by the real gpufleet.exo.device_facts,
then the role's planning tasks (node_tasks.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

from tests.helpers import NODE_TASKS as PLAYBOOK, run_playbook, tinygrad_facts as tinygrad
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml
from tests.simulated.hosts import uuid


def h100(i, **health):
    return simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=uuid(i), pci_bus_id=simhosts.bus(i), minor=i, cc=(9, 0),
                       health=dict(simnvml.HEALTHY_H100, **health))


SICK = [h100(0), h100(1, persistence_mode=0), h100(2, ecc=(1, 1, 7, 7))]


def test_sick_gpu_gets_no_instance_and_the_run_says_why(tmp_path, nvml_lib):
    tmp = str(tmp_path)
    env, root = simhosts.write(tmp, "sick", nvml_lib, SICK, {})
    host = {"case_rootfs": root, "case_env": env, "case_tasks": "select.yml", "case_tinygrad": tinygrad("0.10.0"),
            "ansible_python_interpreter": sys.executable}
    # ansible_host: the IP exo_node_address falls back to, as the role's firewall needs.
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_host": "127.0.0.1",
                                  "exo_node_mig_minors_path": os.path.join(tmp, "mig-minors")},
                         "hosts": {"sick": host}}}
    proc, results = run_playbook(tmp, inventory, PLAYBOOK, ["sick"])
    assert results["sick"]["ok"], proc.stdout[-4000:]
    assert [i["name"] for i in results["sick"]["instances"]] == [uuid(0), uuid(1)]
    said = proc.stdout.split("Say what the plan left out")[1]
    assert uuid(2) in said and "7 uncorrectable ECC errors" in said, said[:3000]
    assert uuid(1) in said and "persistence mode is off" in said, said[:3000]
