# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPUs of a host get an exo instance, and why the others do not.

candidates() turns NVML's GPUs into candidates (a GPU in MIG mode stands for its MIG devices),
skipping those that cannot be pinned, are too sick for exo_node_gpu_health or are in MIG mode
without exo_node_mig; choose() keeps those exo_node_gpus names (all, when it is empty) with at
least exo_node_min_memory_mib; cpu_reason() says why a host falls back to its CPU. docs/node.md
says the same in words.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.exo.plugins.module_utils.probe.health import VERDICTS
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.pci import sysfs_bus_id
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import amd


def _label(gpu):
    return "GPU %s (%s, %s)" % (gpu["index"], gpu["uuid"], gpu["pci_bus_id"])


def _health(label, gpu, worst):
    """(why the GPU is too sick to run, or None; a warning about its health, or None)."""
    found = (gpu.get("health") or {}).get("verdict") or "ok"  # facts from before health was probed
    if found == "ok":
        return None, None
    said = "%s: health %s: %s" % (label, found, "; ".join(gpu["health"].get("reasons") or ()))
    if VERDICTS.index(found) > VERDICTS.index(worst):
        return "%s (exo_node_gpu_health is %s)" % (said, worst), None
    return None, said


def candidates(gpus, use_mig, worst_health):
    """(candidates, skipped, warnings) in NVML index order; a GPU in MIG mode stands for its MIG devices."""
    candidates, skipped, warnings = [], [], []
    for gpu in gpus:
        mig = gpu.get("mig") or {}
        label = _label(gpu)
        too_sick, health_warning = _health(label, gpu, worst_health)
        if health_warning:
            warnings.append(health_warning)
        if bool(mig.get("enabled")) != bool(mig.get("pending")):
            warnings.append("%s: MIG mode changes to %s at the next GPU reset; this run uses the current mode"
                            % (label, "on" if mig.get("pending") else "off"))
        if gpu["minor"] is None or gpu["uuid"] is None:
            skipped.append("%s: NVML gave no %s, so it cannot be pinned and confined"
                           % (label, "minor number" if gpu["minor"] is None else "UUID"))
        elif too_sick:
            skipped.append(too_sick)
        elif mig.get("enabled") and not use_mig:
            skipped.append("%s: MIG mode is on; set exo_node_mig: true to run one node per MIG device" % label)
        elif mig.get("enabled"):
            devices = [d for d in mig.get("devices") or [] if d.get("uuid")]
            if not devices:
                skipped.append("%s: MIG mode is on but no MIG device is created" % label)
            for device in devices:
                candidates.append({"kind": "mig", "name": device["uuid"], "gpu": gpu, "mig": device,
                                   "memory_mib": device.get("memory_mib"),
                                   "label": "MIG device %s of %s" % (device["uuid"], label)})
        else:
            candidates.append({"kind": "gpu", "name": gpu["uuid"], "gpu": gpu, "mig": None,
                               "memory_mib": gpu["memory_mib"], "label": label})
    return candidates, skipped, warnings


def _bus_id(text):
    """A PCI bus id as the facts write it (0000:3b:00.0), from any form a user writes, or None."""
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0000"] + parts
    if len(parts) != 3 or not re.match(r"^[0-9a-f]+$", parts[0]):
        return None
    return sysfs_bus_id(":".join(parts))


def _matches(entry, gpus, amd_gpus):
    """What an exo_node_gpus entry names: [("gpu", gpu, None)], [("mig", gpu, device)] or [("amd", gpu, None)]."""
    key = str(entry).strip().lower()
    bus = _bus_id(key)
    found = []
    for gpu in gpus:
        if ((gpu["uuid"] or "").lower() == key or (key.isdigit() and gpu["index"] == int(key))
                or (bus is not None and (gpu["pci_bus_id"] or "").lower() == bus)):
            found.append(("gpu", gpu, None))
        for device in (gpu.get("mig") or {}).get("devices") or []:
            if (device.get("uuid") or "").lower() == key:
                found.append(("mig", gpu, device))
    # An AMD GPU has no UUID and no NVML index: its PCI bus id or its instance name names it.
    found += [("amd", gpu, None) for gpu in amd_gpus if key == amd.name(gpu) or bus == gpu["bus_id"]]
    return found


def _listed(gpus, amd_gpus):
    """The GPUs of the host, as an error lists them."""
    return "; ".join(["%s %s %s" % (g["index"], g["uuid"], g["pci_bus_id"]) for g in gpus]
                     + ["%s (AMD)" % g["bus_id"] for g in amd_gpus])


def _entry_candidates(host, text, kind, gpu, device, candidates, skipped, refused):
    """(candidates, errors): what one matched exo_node_gpus entry runs."""
    if kind == "mig":
        matches = [c for c in candidates if c["name"] == device["uuid"]]
        if not matches:
            return [], ["host %s: exo_node_gpus entry %r is a MIG device; set exo_node_mig: true to run it" % (host, text)]
        return matches, []
    if kind == "amd":
        matches = [c for c in candidates if c["kind"] == "amd" and c["gpu"]["bus_id"] == gpu["bus_id"]]
        reasons = [refused[gpu["bus_id"]]] if gpu["bus_id"] in refused else [s for s in skipped if gpu["bus_id"] in s]
        key = amd.label(gpu)
    else:
        matches = [c for c in candidates if c["kind"] != "amd" and c["gpu"]["index"] == gpu["index"]]
        reasons = [s for s in skipped if (gpu["uuid"] or "?").lower() in s.lower()]
        key = "GPU %s" % gpu["uuid"]
    if not matches:
        return [], ["host %s: exo_node_gpus entry %r names %s, which cannot run a node: %s"
                    % (host, text, key, "; ".join(reasons) or "no usable candidate")]
    return matches, []


def choose(host, gpus, candidates, skipped, requested, min_memory, amd_gpus=(), refused=None):
    """(chosen, errors): the candidates to run, NVIDIA's in NVML order, then AMD's in bus order.

    amd_gpus: the facts' AMD GPUs; refused: {bus id: why} of those whose host must be fixed first (amd.py),
    an error unless exo_node_gpus leaves them out.
    """
    refused = refused or {}
    if not gpus and not refused and not any(c["kind"] == "amd" for c in candidates):
        # A fleet-wide list does not break hosts without GPUs, nor those whose AMD GPUs exo's tinygrad
        # cannot drive (amd.py): the fallback decides, and says why.
        return [], []
    if not requested:
        errors = ["host %s: %s cannot run an exo instance: %s; fix it (the driver role's findings say how), or list "
                  "the GPUs to run in exo_node_gpus without it" % (host, amd.label(gpu), refused[gpu["bus_id"]])
                  for gpu in amd_gpus if gpu["bus_id"] in refused]
        chosen = []
        for c in candidates:
            if (c["memory_mib"] or 0) >= min_memory:
                chosen.append(c)
            else:
                skipped.append("%s: %s MiB is below exo_node_min_memory_mib %d" % (c["label"], c["memory_mib"], min_memory))
        if candidates and not chosen:
            # A setting, not the hardware, would leave every GPU idle and run exo on the CPU.
            return [], errors + [
                "host %s: exo_node_min_memory_mib %d is above the memory of every GPU here (the largest has "
                "%s MiB), which would run exo on this host's CPU and leave its GPUs idle; lower "
                "exo_node_min_memory_mib for this host, or leave the host out of the node role"
                % (host, min_memory, max(c["memory_mib"] or 0 for c in candidates))]
        return chosen, errors
    names, errors = set(), []
    for entry in requested:
        text = str(entry).strip()
        found = _matches(text, gpus, amd_gpus)
        if not found:
            errors.append("host %s: exo_node_gpus entry %r matches no GPU here; the GPUs NVML sees are: %s" % (
                host, text, _listed(gpus, amd_gpus)))
        for kind, gpu, device in found:
            matches, more = _entry_candidates(host, text, kind, gpu, device, candidates, skipped, refused)
            errors += more
            for c in matches:
                if (c["memory_mib"] or 0) < min_memory:
                    errors.append("host %s: exo_node_gpus entry %r names %s with %s MiB, below exo_node_min_memory_mib %d"
                                  % (host, text, c["label"], c["memory_mib"], min_memory))
                else:
                    names.add(c["name"])
    # NVML order, then the bus order of AMD GPUs, whatever the order of the list.
    return [c for c in candidates if c["name"] in names], errors


def cpu_reason(facts, nvml_ok, gpus, skipped, requested, amd_skipped=()):
    """Why the host falls back to its CPU; amd_skipped: why its AMD GPUs got no instance (in skipped as well)."""
    nvml = facts["nvml"]
    if not nvml_ok:
        why = "NVML: %s%s" % (nvml.get("status"), " (%s)" % nvml["message"] if nvml.get("message") else "")
        if facts.get("fallback_reason"):
            why += "; the probe says: " + facts["fallback_reason"]
    elif not gpus:
        why = "NVML sees no GPU"
    else:
        why = "no GPU qualifies: " + "; ".join(skipped)
    if amd_skipped and not (nvml_ok and gpus):
        why += "; " + "; ".join(amd_skipped)
    if requested:
        why = "exo_node_gpus asks for %s but this host has no GPU: %s" % (", ".join(str(r) for r in requested), why)
    return why
