# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each XID asks of a GPU: the classification table, one row per XID, each with its source.

The classes, in order of severity (CLASSES): `application` never takes a GPU out of its ring (the
fault belongs to one process, or is informational); `drain` takes it out until the health gate
lets it back; `reset` and `reboot` take it out too and say what would clear the fault (the
watcher never resets nor reboots in this release). An XID the table does not list drains: a fault
nobody classified is not known to be harmless, and the health gate brings the GPU back once it
holds still.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

CLASSES = ("application", "drain", "reset", "reboot")  # in order of severity
DRAINING = CLASSES[1:]
UNLISTED = "drain"

CATALOG = "NVIDIA Xid catalog, https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
DEVICE_PLUGIN = ("NVIDIA k8s-device-plugin, ignoredXids (internal/rm/health.go): 'Application errors: "
                 "the GPU should still be healthy'")
HEALTH_VALIDATION = "NVIDIA Health Validation Xid checks, https://docs.nvidia.com/health-validation/reference/checks/xid.md"
MEMORY_GUIDE = ("NVIDIA GPU memory error management, error recovery and response flags, "
                "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html")
REMAPPED_ROWS = ("nvmlDeviceGetRemappedRows (NVML API): 'A pending remapping won't affect future work on the GPU "
                 "since error-containment and dynamic page blacklisting will take care of that'")

# (xid, name, class, source): the source says why the row is in its class.
TABLE = (
    (13, "Graphics Engine Exception", "application", DEVICE_PLUGIN),
    (31, "GPU memory page fault", "application", DEVICE_PLUGIN),
    (43, "GPU stopped processing", "application", DEVICE_PLUGIN),
    (45, "Preemptive cleanup, due to previous errors", "application", DEVICE_PLUGIN),
    (68, "Video processor exception", "application", DEVICE_PLUGIN),
    (109, "Context switch timeout", "application", DEVICE_PLUGIN + " (109 since v0.15)"),
    (94, "Contained ECC error", "application",
     CATALOG + " (immediate action RESTART_APP); NVIDIA/gpu-operator#1065: 'Xid 94 is essentially an "
     "application error and should not disable the device'"),
    (63, "Row remapping recorded (page retirement on older parts)", "application",
     REMAPPED_ROWS + "; the probe's verdict reports the pending remap as degraded"),
    (92, "High single-bit ECC error rate", "application",
     CATALOG + " (single-bit errors are corrected; no action on the GPU)"),
    (46, "GPU stopped processing", "reset", HEALTH_VALIDATION + " (gpu_xid_46: drain, reset_gpu)"),
    (48, "Double-bit ECC error", "reset", HEALTH_VALIDATION + " (gpu_xid_48: drain, reset_gpu); " + CATALOG),
    (61, "Internal micro-controller breakpoint/warning", "reset", CATALOG + " (RESET_GPU)"),
    (62, "Internal micro-controller halt", "reset", CATALOG + " (RESET_GPU)"),
    (64, "Row remapping failure", "reset", CATALOG + " (RESET_GPU, then service if it recurs); " + MEMORY_GUIDE),
    (74, "NVLink error", "reset", CATALOG + " (RESET_GPU for most link faults)"),
    (95, "Uncontained ECC error", "reset", CATALOG + " (RESET_GPU); " + MEMORY_GUIDE),
    (119, "GSP RPC timeout", "reset", CATALOG + " (RESET_GPU)"),
    (120, "GSP error", "reset", CATALOG + " (RESET_GPU)"),
    (140, "Unrecovered ECC error", "reset", CATALOG + " (RESET_GPU)"),
    (79, "GPU has fallen off the bus", "reboot", CATALOG + " (RESTART_BM: the node is rebooted)"),
)

BY_XID = dict((row[0], {"xid": row[0], "name": row[1], "class": row[2], "source": row[3]}) for row in TABLE)

# Faults NVML reports without an XID, classed like the XID that says the same.
EVENT_CLASSES = {
    "ecc_double_bit": BY_XID[48]["class"],  # nvmlEventTypeDoubleBitEccError: the same fault as XID 48
    "lost": BY_XID[79]["class"],            # NVML_ERROR_GPU_IS_LOST: the same fault as XID 79
}


def classify(xid):
    """The row of an XID; an unlisted XID drains (see the module's docstring)."""
    return BY_XID.get(xid) or {"xid": xid, "name": "unlisted", "class": UNLISTED,
                               "source": "not in the table: drains until the health gate lets it back"}


def severest(classes):
    """The severest of some classes, or None for none."""
    ranked = [CLASSES.index(c) for c in classes]
    return CLASSES[max(ranked)] if ranked else None
