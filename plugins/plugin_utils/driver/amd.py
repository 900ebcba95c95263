# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the AMD GPUs of a host lack for an exo instance, said and never installed.

tinygrad's AMD backend (what exo runs on an AMD GPU) needs no ROCm: the amdgpu kernel driver bound to the
GPU, KFD (/dev/kfd) listing it, its render node, and the firmware amdgpu loads. The driver role installs
none of it: amdgpu and KFD come with the distribution's kernel, and whether to take the distribution's
firmware or AMD's own packages is the operator's choice. So `findings` names each AMD GPU that lacks one
and what to do, from the facts gpufleet.exo.device_facts reports (`amd`, docs/facts.md) and the packages
installed; the NVIDIA decision (cases.py) counts NVIDIA devices only, so AMD GPUs never get NVIDIA packages.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils.probe.conclusions import PASSTHROUGH_DRIVER

# What an AMD GPU needs, in the order amdgpu brings it up: (lacks(gpu), finding). A GPU's finding is the
# first need it lacks: the later ones follow from the earlier (no KFD node without amdgpu, ...).
NEEDS = (
    (lambda gpu: gpu["driver"] != "amdgpu",
     "is bound to %(bound)s, not amdgpu: load the amdgpu kernel module (modprobe amdgpu), remove any blacklist "
     "of it (/etc/modprobe.d, modprobe.blacklist= on the kernel command line) and read dmesg for amdgpu's errors"),
    (lambda gpu: gpu["kfd_node"] is None,
     "has amdgpu but /dev/kfd does not serve it (no KFD topology node has its PCI address): boot a kernel built "
     "with CONFIG_HSA_AMD (the distributions' kernels are) and read dmesg for kfd's errors; a display-only part "
     "has no KFD and cannot serve exo"),
    (lambda gpu: gpu["render_node"] is None,
     "has no render node in /sys/class/drm (KFD names renderD%(render_minor)s): check that udev created "
     "/dev/dri/renderD%(render_minor)s and that amdgpu initialised the GPU (dmesg)"),
)


def _describe(gpu):
    return "AMD GPU %s%s" % (gpu["bus_id"], " (%s)" % gpu["chip"] if gpu.get("chip") else "")


def _lacking(gpu):
    """The finding of the first need the GPU lacks, or None."""
    values = dict(gpu, bound="no kernel driver" if gpu["driver"] == "none" else gpu["driver"],
                  render_minor="N" if gpu.get("render_minor") is None else gpu["render_minor"])
    return next((finding % values for lacks, finding in NEEDS if lacks(gpu)), None)


def _firmware(host, table, packages, gpus):
    """The finding for the firmware amdgpu loads, or None when installed or when the packages are unknown."""
    if not gpus or packages is None:
        return None
    named = ", ".join(gpu["bus_id"] for gpu in gpus)
    if table is None:
        return ("host %s: AMD GPU %s: this role knows the firmware package of Debian, Ubuntu and the RHEL family "
                "only; make sure the firmware amdgpu loads (/lib/firmware/amdgpu) is installed" % (host, named))
    firmware = table["amd_firmware"]
    if any(name in packages for name in firmware["packages"]):
        return None
    return "host %s: AMD GPU %s: the firmware amdgpu loads is not installed: %s" % (host, named, firmware["advice"])


def findings(host, caps, table, packages):
    """{gpus, passthrough, findings}: the AMD GPUs the host drives, those passed through (left alone), and
    what they lack, one line each naming the host, the GPU and what to do."""
    amd = caps["amd"]
    managed = [gpu for gpu in amd if gpu["driver"] != PASSTHROUGH_DRIVER]
    lacking = [(gpu, _lacking(gpu)) for gpu in managed]
    said = ["host %s: %s %s" % (host, _describe(gpu), finding) for gpu, finding in lacking if finding]
    firmware = _firmware(host, table, packages, managed)
    return {
        "gpus": [gpu["bus_id"] for gpu in managed],
        "passthrough": [gpu["bus_id"] for gpu in amd if gpu["driver"] == PASSTHROUGH_DRIVER],
        "findings": said + ([firmware] if firmware else []),
    }
