# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPUs a CUDA process would see, by CUDA's rules for CUDA_VISIBLE_DEVICES.

- Unset: every GPU. Set but empty: none.
- Entries, comma-separated: a CUDA index, a GPU UUID ("GPU-..." or a unique prefix of one), a MIG
  device UUID ("MIG-..." or a unique prefix) or the legacy "MIG-GPU-<uuid>/<gi>/<ci>".
- The first entry that names no device (or one already named) ends the list: "0,2,-1,1" gives 0, 2.
- Visible devices are numbered from 0 in the order given.
- Indices count in CUDA_DEVICE_ORDER: PCI_BUS_ID is PCI bus order, as NVML and nvidia-smi; the default
  FASTEST_FIRST puts faster parts first (bus order among equals), so only UUIDs are safe to pin by.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

ORDERS = ("FASTEST_FIRST", "PCI_BUS_ID")


def cuda_order(gpus, device_order):
    """The GPUs in CUDA's enumeration order."""
    by_bus = sorted(gpus, key=lambda gpu: gpu.get("pci_bus_id") or "")
    if device_order == "PCI_BUS_ID":
        return by_bus
    # CUDA's "fastest" heuristic is undocumented; peak FP32 is the closest published proxy.
    return sorted(by_bus, key=lambda gpu: -((gpu.get("flops") or {}).get("fp32") or 0.0))


def _unique(candidates):
    return candidates[0] if len(candidates) == 1 else None


def _match(entry, order):
    """The (gpu, mig_device) an entry names, or None when it names nothing."""
    if entry.isdigit():
        position = int(entry)
        return (order[position], None) if position < len(order) else None
    if entry.startswith("MIG-GPU-"):
        parts = entry[len("MIG-"):].split("/")
        if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
            return None
        ids = [int(parts[1]), int(parts[2])]
        gpu = _unique([gpu for gpu in order if gpu.get("uuid") == parts[0]])
        mig = gpu and _unique([m for m in gpu["mig"]["devices"]
                               if [m.get("gpu_instance_id"), m.get("compute_instance_id")] == ids])
        return (gpu, mig) if mig else None
    if entry.startswith("MIG-"):
        found = _unique([(gpu, mig) for gpu in order for mig in (gpu.get("mig") or {}).get("devices", [])
                         if (mig.get("uuid") or "").startswith(entry)])
        return found
    if entry.startswith("GPU-"):
        gpu = _unique([gpu for gpu in order if (gpu.get("uuid") or "").startswith(entry)])
        return (gpu, None) if gpu is not None else None
    return None


def resolve(gpus, cuda_visible_devices=None, device_order=None):
    """The visible section of the facts for these GPUs (shaped GPU entries) and this environment."""
    device_order = device_order if device_order in ORDERS else "FASTEST_FIRST"
    order = cuda_order(gpus, device_order)
    invalid = None
    if cuda_visible_devices is None:
        chosen = [(gpu, None) for gpu in order]
    else:
        chosen = []
        for entry in (cuda_visible_devices.split(",") if cuda_visible_devices.strip() else []):
            found = _match(entry.strip(), order)
            if found is None or found in chosen:
                invalid = entry
                break
            chosen.append(found)
    return {
        "cuda_visible_devices": cuda_visible_devices,
        "device_order": device_order,
        "devices": [{"cuda_index": position, "index": gpu["index"], "uuid": gpu.get("uuid"),
                     "mig_uuid": mig.get("uuid") if mig else None}
                    for position, (gpu, mig) in enumerate(chosen)],
        "invalid_entry": invalid,
    }
