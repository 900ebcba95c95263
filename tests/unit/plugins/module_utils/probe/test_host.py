# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host stage: CPUs, memory and NUMA nodes from procfs and sysfs, simulated or this machine's."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _host as host
from tests.simulated import sysfs as sim


def test_simulated_host_from_proc_and_sys(tmp_path):
    sim.write_tree(str(tmp_path), numa=["0-7", "8-15"], cpu_model="Simulated EPYC", memory_kib=64 * 1024 * 1024)
    facts = host.probe(str(tmp_path))
    assert facts == {"cpu_model": "Simulated EPYC", "cpus": 16, "memory_mib": 65536,
                     "numa_nodes": [{"node": 0, "cpu_list": "0-7"}, {"node": 1, "cpu_list": "8-15"}]}


def test_live_host_is_read_too():
    facts = host.probe("/")
    assert facts["cpus"] >= 1 and facts["memory_mib"] > 0 and facts["numa_nodes"]
