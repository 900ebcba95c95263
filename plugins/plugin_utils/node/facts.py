# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node planner reads of device_capabilities (FACTS_READ, for device_facts_check.check_facts)
and why facts of that shape may still be unusable (cuda_start_problems()); whether the facts at hand are
the ones that count or only preview the plan (to_plan()); and the driver's MIG minors.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# What the planner reads of the facts (device_facts_check.check_facts): object is any value.
FACTS_READ = {
    "hint": "gather them with gpufleet.exo.device_facts from this collection before the role",
    "keys": {"nvml": dict, "gpus": list, "host": object, "tinygrad": object, "backend": object},
    "sections": {"nvml": {"status": object}},
    "entries": {"gpus": dict.fromkeys(("index", "uuid", "name", "minor", "memory_mib", "pci_bus_id", "mig"), object)},
}


def cuda_start_problems(facts):
    """Why facts that device_facts_check.check_facts() accepts still describe no usable GPU: they were
    gathered where CUDA cannot start (backend, exo's view)."""
    init_error = (facts.get("visible") or {}).get("cuda_init_error")
    if init_error:
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


# exo_node_refresh_facts: whether the facts at hand count as they are. Left out, the facts given count;
# the planner's settings, checked, always hold it (the role's default, auto, where it was not given).
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
