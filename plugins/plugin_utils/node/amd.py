# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which AMD GPUs of a host get an exo instance, and the environment that pins each to its GPU.

An AMD GPU (an entry of the facts' ``amd`` list) gets an instance when the facts say it can be driven
(no ``unusable_reason``) and the installed tinygrad drives it (TINYGRAD: its AMD backend loads and
accepts the GPU's gfx target). docs/tinygrad.md ("AMD GPUs") has the sources behind every row.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re


# What each tinygrad release does with AMD GPUs, from the row's version up to the next row's.
# loads: whether its AMD backend imports once installed; gfx: the half-open ranges of gfx targets
# (major, minor, stepping) its AMD device accepts (runtime/ops_amd.py, "Unsupported arch").
TINYGRAD = [
    # exo's pin ec120ce6b9ce reports 0.10.0 and, like 0.10.1 and 0.10.2, imports
    # tinygrad.runtime.autogen.am, which its package does not ship: Device["AMD"] raises
    # ModuleNotFoundError. A real 0.10.0 is told apart only by a backends check that says ok.
    ("0.10.0", {"loads": False, "gfx": [((10, 3, 0), (12, 0, 0))]}),
    ("0.10.3", {"loads": True, "gfx": [((9, 4, 2), (13, 0, 0))]}),
    ("0.13.0", {"loads": True, "gfx": [((9, 4, 2), (9, 4, 3)), ((9, 5, 0), (9, 5, 1)), ((11, 0, 0), (13, 0, 0))]}),
]
# What a backends check of tinygrad's AMD backend (device_facts' backends: [amd]) says of loading.
CHECKED = {"ok": True, "failed": False}
# Under DevicePolicy=closed, amdkfd hides the topology nodes of the GPUs the unit may not open
# (their gpu_id read fails with EPERM, which tinygrad skips): the unit's own GPU is tinygrad's
# AMD GPU 0, whatever its host-wide kfd_index (docs/tinygrad.md, "Confinement changes the list").
CONFINED_INDEX = 0
# What an AMD instance may open besides its own render node, and the groups that own those device
# nodes on Debian, Ubuntu and the RHEL family (udev: /dev/kfd and renderD* are render's, video's before).
DEVICES = ["/dev/kfd rw"]
GROUPS = ["render", "video"]
HOW_TO_RUN = ("set exo_node_tinygrad_requirement to a tinygrad whose AMD backend works (tinygrad>=0.10.3, "
              "see docs/node.md \"AMD GPUs\")")


# An AMD instance's name: the prefix and the GPU's PCI bus id, which a unit name and a path can hold.
PREFIX = "amd-"


def name(gpu):
    return PREFIX + gpu["bus_id"].replace(":", "-")


def is_name(instance):
    return instance.startswith(PREFIX)


def label(gpu):
    return "AMD GPU %s (%s)" % (gpu["bus_id"], gpu.get("chip") or gpu.get("name") or "unknown chip")


def _gfx(text):
    """(major, minor, stepping) of a gfx target such as gfx1100 or gfx90a; None where there is none."""
    digits = (text or "")[3:]
    if len(digits) < 3 or not digits[:-2].isdigit():
        return None
    try:
        return int(digits[:-2]), int(digits[-2], 16), int(digits[-1], 16)
    except ValueError:
        return None


def _version(text):
    """The release numbers of a version ("0.10.1.dev20250129" -> (0, 10, 1)), () where there are none."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(part) for part in match.group(1).split(".")[:3]) if match else ()


def _row(version):
    """The TINYGRAD row of a version (the first row for one that cannot be read: as exo's own)."""
    found = TINYGRAD[0][1]
    for first, row in TINYGRAD:
        if _version(version) >= _version(first):
            found = row
    return found


def support(tinygrad):
    """(row, why not): the TINYGRAD row of exo's tinygrad, and why its AMD backend cannot run (None: it can)."""
    row = _row(tinygrad.get("version"))
    if env(tinygrad) is None:
        return row, "the variables that select tinygrad's AMD backend are unknown for tinygrad in %s (%s)" % (
            tinygrad.get("python", "?"), tinygrad.get("reason") or "not probed")
    check = (tinygrad.get("backends") or {}).get("amd") or {}
    loads = CHECKED.get(check.get("status"), row["loads"])
    if loads:
        return row, None
    if check.get("status") == "failed":
        return row, "tinygrad %s in %s failed its AMD check: %s" % (
            tinygrad.get("version"), tinygrad.get("python"), check.get("reason"))
    return row, ("tinygrad %s in %s cannot load its AMD backend (exo's own tinygrad, 0.10.1 and 0.10.2 lack "
                 "tinygrad.runtime.autogen.am)" % (tinygrad.get("version"), tinygrad.get("python")))


def _gfx_reason(gpu, row, tinygrad):
    target = _gfx(gpu.get("gfx_target"))
    if target is None or any(low <= target < high for low, high in row["gfx"]):
        return None
    return "tinygrad %s does not drive %s (\"Unsupported arch\")" % (tinygrad.get("version"), gpu["gfx_target"])


def _refused(gpu):
    """Whether a GPU the facts call unusable is a fault of the host to fix, not a choice: amdgpu and KFD
    drive it, but its render node is missing. A GPU passed through or left to another driver is skipped."""
    return gpu["driver"] == "amdgpu" and gpu.get("kfd_node") is not None and gpu.get("render_node") is None


def candidates(amd_gpus, tinygrad):
    """(candidates, skipped, refused), in bus order. tinygrad None: not known yet (a preview), every usable
    GPU is a candidate. refused: {bus id: why} of the GPUs that would run but for a fault of the host
    (gpu_choice.choose() refuses them unless exo_node_gpus leaves them out). Where exo's tinygrad cannot
    drive AMD GPUs at all, every one is skipped with what to set, and the host runs as without them.
    """
    found, skipped, refused = [], [], {}
    row, cannot = support(tinygrad) if tinygrad is not None else (None, None)
    for gpu in amd_gpus:
        why = gpu.get("unusable_reason")
        gfx = _gfx_reason(gpu, row, tinygrad) if row is not None and not cannot else None
        if why and _refused(gpu) and not cannot:
            refused[gpu["bus_id"]] = why
        elif why:
            skipped.append("%s: %s" % (label(gpu), why))
        elif cannot:
            skipped.append("%s: %s; %s" % (label(gpu), cannot, HOW_TO_RUN))
        elif gfx:
            skipped.append("%s: %s; set exo_node_tinygrad_requirement to a tinygrad that does (docs/tinygrad.md)"
                           % (label(gpu), gfx))
        else:
            found.append({"kind": "amd", "name": name(gpu), "gpu": gpu, "mig": None,
                          "memory_mib": gpu["memory_mib"], "label": label(gpu)})
    return found, skipped, refused


def notes(host, amd_gpus, tinygrad):
    """Warnings: AMD GPUs that the host's driver serves and exo's tinygrad cannot drive, and what to set."""
    served = [gpu for gpu in amd_gpus if not gpu.get("unusable_reason")]
    cannot = support(tinygrad)[1] if tinygrad is not None and served else None
    if not cannot:
        return []
    return ["host %s: %s run%s no exo instance: %s; %s" % (
        host, ", ".join(label(gpu) for gpu in served), "s" if len(served) == 1 else "", cannot, HOW_TO_RUN)]


def env(tinygrad):
    """The variables that force tinygrad's AMD backend onto the unit's own GPU, or None if unknown."""
    select = (tinygrad.get("select_env") or {}).get("amd")
    if not select:
        return None
    found = dict((var, str(value).replace("{index}", str(CONFINED_INDEX))) for var, value in select.items())
    visible = (tinygrad.get("visible_devices_env") or {}).get("amd")
    if visible:
        found[visible] = str(CONFINED_INDEX)
    return found
