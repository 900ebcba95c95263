# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether device_capabilities can be planned from: check_facts(), and the driver's MIG minors.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

FACT_KEYS = ("schema_version", "nvml", "gpus", "host", "tinygrad", "backend")
GPU_KEYS = ("index", "uuid", "name", "minor", "memory_mib", "pci_bus_id", "mig")


def check_facts(facts):
    """Problems with device_capabilities that make them unusable; an empty list when they follow schema 1."""
    hint = "gather them with gpufleet.exo.device_facts from this collection before the role (docs/facts.md)"
    if not isinstance(facts, dict):
        return ["ansible_facts.device_capabilities is %s, not the facts of gpufleet.exo.device_facts; %s"
                % (show(facts)[:80], hint)]
    missing = [key for key in FACT_KEYS if key not in facts]
    if missing:
        return ["ansible_facts.device_capabilities lacks %s; %s" % (", ".join(missing), hint)]
    if facts["schema_version"] != 1:
        return ["ansible_facts.device_capabilities has schema_version %s; this role reads 1; %s"
                % (show(facts["schema_version"]), hint)]
    if not isinstance(facts["nvml"], dict) or "status" not in facts["nvml"] or not isinstance(facts["gpus"], list):
        return ["ansible_facts.device_capabilities.nvml or .gpus is malformed; %s" % hint]
    for gpu in facts["gpus"]:
        lacking = [key for key in GPU_KEYS if not isinstance(gpu, dict) or key not in gpu]
        if lacking:
            return ["ansible_facts.device_capabilities.gpus entry %s lacks %s; %s"
                    % (show(gpu)[:80], ", ".join(lacking), hint)]
    init_error = (facts.get("visible") or {}).get("cuda_init_error")
    if init_error:
        # Facts gathered where CUDA cannot start describe no usable GPU (backend, exo's view).
        return ["the device facts were gathered where %s; name each GPU once in CUDA_VISIBLE_DEVICES, or unset it, "
                "where the facts are gathered (the play's environment, the remote account's shell) and gather "
                "them again" % init_error["reason"]]
    return []


def mig_minors(text):
    """The driver's /proc/driver/nvidia-caps/mig-minors: lines like "gpu0/gi1/access 21"."""
    minors = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            minors[fields[0]] = fields[1]
    return minors
