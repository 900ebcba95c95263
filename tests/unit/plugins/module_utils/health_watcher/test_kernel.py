# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel's XID lines in the forms the journal and /dev/kmsg write them, mapped to GPUs."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import kernel

LINES = [
    # journalctl -k -o cat (the form of NVIDIA/open-gpu-kernel-modules#1151)
    ("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
     {"xid": 79, "pci_bus_id": "0000:2b:00.0", "text": "GPU has fallen off the bus."}),
    # journalctl -k in its short form, with a pid and a process name
    ("May 18 19:02:39 node1 kernel: NVRM: Xid (PCI:0000:CB:00): 13, pid='<unknown>', name=<unknown>, "
     "Graphics SM Warp Exception",
     {"xid": 13, "pci_bus_id": "0000:cb:00.0", "text": "pid='<unknown>', name=<unknown>, Graphics SM Warp Exception"}),
    # /dev/kmsg: priority,sequence,microseconds,flags; then the message
    ("4,1893,269516977,-;NVRM: Xid (PCI:0000:3b:00): 48, pid=1896, DBE (double bit error) ECC error\n",
     {"xid": 48, "pci_bus_id": "0000:3b:00.0", "text": "pid=1896, DBE (double bit error) ECC error"}),
    # a /dev/kmsg record with its dictionary lines
    ("4,1894,269516978,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n SUBSYSTEM=pci\n"
     " DEVICE=+pci:0000:3b:00.0\n",
     {"xid": 79, "pci_bus_id": "0000:3b:00.0", "text": "GPU has fallen off the bus."}),
    # older drivers, without PCI:
    ("[ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007",
     {"xid": 3, "pci_bus_id": "0000:01:00.0", "text": "C 00000005 SC 00000007"}),
    # not XID lines
    ("NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae", None),
    (" SUBSYSTEM=pci", None),
    ("", None),
]


@pytest.mark.parametrize("line, expected", LINES)
def test_parse(line, expected):
    assert kernel.parse(line) == expected


GPUS = [{"uuid": "GPU-a", "pci_bus_id": "00000000:2B:00.0"}, {"uuid": "GPU-b", "pci_bus_id": "0000:3b:00.0"},
        {"uuid": "GPU-c", "pci_bus_id": None}]


def test_bus_ids_in_nvmls_and_sysfs_forms_map_to_uuids():
    assert kernel.gpu_by_bus(GPUS) == {"0000:2b:00.0": "GPU-a", "0000:3b:00.0": "GPU-b"}


@pytest.mark.parametrize("line, expected", [
    ("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
     {"gpu": "GPU-a", "kind": "xid", "xid": 79, "source": "kernel", "text": "GPU has fallen off the bus."}),
    ("NVRM: Xid (PCI:0000:99:00): 79, a GPU the watcher does not know", None),
    ("an unrelated line", None),
])
def test_fault(line, expected):
    assert kernel.fault(line, kernel.gpu_by_bus(GPUS)) == expected
