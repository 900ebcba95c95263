# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's decision table: its cases, which one a host is in (classify), and the decision
the role publishes for it (exo_driver_decision); FACTS_READ says what they read of device_capabilities.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe.conclusions import DRIVER_MISSING, nvidia_gpus

# The decision table: case -> (action, reason). The first case that applies wins (see classify).
#   none     nothing to do
#   leave    GPUs passed through to guests: never touched
#   install  install (or complete) the driver and load it
#   upgrade  move a healthy host to the pinned branch (exo_driver_allow_upgrade)
#   reboot   a reboot is pending: reinstalling would not help
#   report   the driver is there but NVML fails: a person has to look, nothing is installed
CASES = {
    "no_hardware": ("none", "no NVIDIA GPU on the PCI bus"),
    "passthrough": ("leave", "every NVIDIA GPU is bound to vfio-pci (passed through to a guest)"),
    "version_mismatch": ("reboot", "the nvidia kernel module loaded is not the version of the installed libraries "
                                   "(Driver/library version mismatch): a driver update waits for a reboot, not reinstalling"),
    "nouveau": ("install", "nouveau holds the GPU, the NVIDIA driver is not installed"),
    "library_not_found": ("install", "the NVIDIA user-space library libnvidia-ml.so.1 is not installed"),
    "driver_not_loaded": ("install", "libnvidia-ml is installed but the nvidia kernel module is not loaded"),
    "unbound": ("install", "the NVIDIA GPU has no kernel driver bound"),
    "bound_unchecked": ("none", "the nvidia kernel driver is bound to every GPU; NVML was not asked because "
                                "nvidia-ml-py is missing on the probe's Python"),
    "ok": ("none", "the driver is loaded and NVML answers"),
    "branch_differs": ("none", "the driver works but runs another branch than exo_driver_branch; "
                               "exo_driver_allow_upgrade is false"),
    "upgrade": ("upgrade", "the driver runs another branch than exo_driver_branch and exo_driver_allow_upgrade is true"),
    "unhealthy": ("report", "the driver is installed but NVML fails; reinstalling would not fix that"),
}
# NVML states that mean a driver is present and in use but something else is wrong.
UNHEALTHY = ("no_permission", "gpu_lost", "timeout", "error")
# What the decision reads of the facts (device_facts_check.check_facts): object is any value.
FACTS_READ = {
    "hint": "gather them again with gpufleet.exo.device_facts from this collection (exo_driver_probe: always makes the "
            "role run it)",
    "keys": {"pci": list, "nvml": dict, "gpus": list, "driver_needed": bool, "driver_reason": str, "amd": list},
    "sections": {"nvml": {"status": str, "message": object, "driver_version": object}},
    "entries": {"pci": {"bus_id": str, "vendor": str, "driver": str},
                "amd": {"bus_id": str, "driver": str, "chip": object, "kfd_node": object, "render_minor": object,
                        "render_node": object}},
}
# ansible_virtualization_type values of containers: they share their host's kernel, so the kernel
# module can only come from that host.
CONTAINER_TYPES = ("container", "containerd", "docker", "podman", "lxc", "openvz", "systemd-nspawn", "wsl")


def in_container(facts):
    return (facts.get("virtualization_role") == "guest"
            and facts.get("virtualization_type") in CONTAINER_TYPES)


def classify(caps, branch, allow_upgrade):
    """The case of the decision table for these device facts.

    A pending reboot and a working NVML come first; otherwise the probe's own verdict,
    driver_needed, says whether the driver is missing, and the facts say which part.
    """
    managed, passthrough = nvidia_gpus(caps["pci"])
    status = caps["nvml"]["status"]
    if not managed and not passthrough:
        return "no_hardware"
    if not managed:
        return "passthrough"
    if status == "version_mismatch":
        return "version_mismatch"
    if status == "ok":
        running = (caps["nvml"]["driver_version"] or "").split(".")[0]
        if not branch or running == branch:
            return "ok"
        return "upgrade" if allow_upgrade else "branch_differs"
    if caps["driver_needed"]:
        if any(device["driver"] == "nouveau" for device in managed):
            return "nouveau"
        if status in DRIVER_MISSING:
            return status
        return "unbound"
    if status in UNHEALTHY:
        return "unhealthy"
    return "bound_unchecked"


def decision(facts, case):
    caps = facts["device_capabilities"]
    managed, passthrough = nvidia_gpus(caps["pci"])
    drivers = []
    for device in managed:
        if device["driver"] not in drivers:
            drivers.append(device["driver"])
    action, reason = CASES[case]
    return {
        "case": case,
        "action": action,
        "reason": reason,
        "nvml_status": caps["nvml"]["status"],
        "nvml_message": caps["nvml"]["message"],
        "driver_version": caps["nvml"]["driver_version"],
        "gpus": [device["bus_id"] for device in managed],
        "drivers": drivers,
        "passthrough": [device["bus_id"] for device in passthrough],
        "nouveau": [device["bus_id"] for device in managed if device["driver"] == "nouveau"],
        "nvml_gpus": len(caps["gpus"]),
        "container": facts.get("virtualization_type") if in_container(facts) else None,
    }
