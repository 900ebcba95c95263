# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether device_capabilities can be planned from: check_facts(); whether the facts at hand are the
ones that count or only preview the plan (to_plan()); and the driver's MIG minors.
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


def _section(facts, key):
    """A section of the facts as a mapping; {} where the facts or the section are not one."""
    value = facts.get(key) if isinstance(facts, dict) else None
    return value if isinstance(value, dict) else {}


def gathered_with_exo(facts, settings):
    """Whether exo's interpreter gathered the facts: only it sees NVML through the nvidia-ml-py installed
    beside exo, and knows the tinygrad exo runs."""
    return (_section(facts, "nvml").get("status", "") != "not_installed"
            and _section(facts, "tinygrad").get("python", "") == "%s/bin/python" % settings.get("exo_node_install_dir"))


# exo_node_refresh_facts: whether the facts at hand count as they are. Left out (a plan outside the
# role), the facts given count.
COUNT_AS_THEY_ARE = {
    "never": lambda facts, settings: True,
    "auto": gathered_with_exo,
    "always": lambda facts, settings: False,
}


def ready(facts, settings):
    """Whether the facts at hand are the ones to plan from, with no need to gather them again."""
    count = COUNT_AS_THEY_ARE.get(settings.get("exo_node_refresh_facts", "never"), gathered_with_exo)
    return facts is not None and count(facts, settings)


def to_plan(facts, settings, regathered=False):
    """(facts, preview): the facts the plan reads, and whether that plan only previews the one that counts.

    The facts at hand count where ready() says so, and once the role has gathered them again with
    exo's interpreter after installing it (regathered; in check mode before exo is installed there is
    nothing to gather them with, and those at hand are all the run has). Otherwise they preview the
    plan, checked before the first change: where NVML did not answer in them at all (no nvidia-ml-py
    beside the interpreter that gathered them) they show no GPU, and the settings are checked alone.
    """
    if regathered or ready(facts, settings):
        return facts, False
    return (facts if _section(facts, "nvml").get("status", "not_installed") != "not_installed" else None), True


def mig_minors(text):
    """The driver's /proc/driver/nvidia-caps/mig-minors: lines like "gpu0/gi1/access 21"."""
    minors = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            minors[fields[0]] = fields[1]
    return minors
