# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel's XID lines, as the journal and /dev/kmsg write them, parsed into faults.

The NVIDIA driver logs `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.`;
older drivers leave out `PCI:`. /dev/kmsg prefixes each record with `priority,sequence,usec,flags;`
and continues long records on lines that start with a space. The driver names the GPU by PCI
address without its function; `gpu_by_bus` maps that to the GPU's UUID through NVML's bus ids.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?\): "
                      r"(\d+),\s*(.*)$")
KMSG_PREFIX = re.compile(r"^\d+,\d+,\d+,[^;]*;")


def bus_id(domain, bus, device):
    """The sysfs form (0000:3b:00.0) of a PCI address's parts, as the probe's facts write it."""
    return "%04x:%s:%s.0" % (int(domain, 16), bus.lower(), device.lower())


def parse(line):
    """{"xid", "pci_bus_id", "text"} for a kernel XID line in either form, else None."""
    # A /dev/kmsg record may carry its dictionary (" KEY=value" lines) after the message.
    line = KMSG_PREFIX.sub("", line.split("\n", 1)[0], count=1)
    match = XID_LINE.search(line)
    if not match:
        return None
    domain, bus, device, xid, text = match.groups()
    return {"xid": int(xid), "pci_bus_id": bus_id(domain, bus, device), "text": text.strip()}


def gpu_by_bus(gpus):
    """{sysfs bus id: uuid} for GPUs as the watcher lists them (their pci_bus_id in any form)."""
    table = {}
    for gpu in gpus:
        parts = re.match(r"^([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})", gpu.get("pci_bus_id") or "")
        if parts:
            table[bus_id(*parts.groups())] = gpu["uuid"]
    return table


def fault(line, gpus_by_bus):
    """The fault a kernel line reports on a GPU the watcher knows, else None."""
    parsed = parse(line)
    if parsed is None or parsed["pci_bus_id"] not in gpus_by_bus:
        return None
    return {"gpu": gpus_by_bus[parsed["pci_bus_id"]], "kind": "xid", "xid": parsed["xid"],
            "source": "kernel", "text": parsed["text"]}
