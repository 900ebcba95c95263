# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the watcher publishes: the state file (JSON, read by the facts) and the metrics file
(Prometheus text format, read by node_exporter's textfile collector). Both from the GPUs' records.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from . import xids

STATE_VERSION = 1
STATE_KEYS = ("uuid", "pci_bus_id", "index", "healthy", "needs", "reason", "since", "last_fault", "xids",
              "instance", "stopped_by_watcher", "counted", "breaker", "resets", "reset_at", "remedy")

# (name, type, help, labels): every metric the file holds; docs/health.md lists the same.
METRICS = (
    ("gpufleet_exo_gpu_healthy", "gauge",
     "1 while the GPU serves, 0 while the watcher holds it out of its ring", ("gpu", "pci_bus_id")),
    ("gpufleet_exo_gpu_needs", "gauge",
     "1 for what the GPU's faults ask for (none, drain, reset, reboot), 0 for the others", ("gpu", "action")),
    ("gpufleet_exo_gpu_xids_total", "counter",
     "faults seen on the GPU by class, floods merged (xids.py)", ("gpu", "class")),
    ("gpufleet_exo_gpu_resets_last_hour", "gauge",
     "resets the watcher did on the GPU within the last hour (the breaker's count)", ("gpu",)),
    ("gpufleet_exo_gpu_breaker_open", "gauge",
     "1 while the breaker keeps the watcher from draining or resetting the GPU its faults ask it to", ("gpu",)),
    ("gpufleet_exo_instance_active", "gauge",
     "1 while the GPU's exo instance unit is active", ("gpu", "unit")),
    ("gpufleet_exo_watcher_nvml_events", "gauge",
     "1 where NVML delivers the GPU's XID events to the watcher, 0 where only the kernel's lines reach it",
     ("gpu",)),
    ("gpufleet_exo_watcher_updated_seconds", "gauge",
     "when the watcher last wrote this file, in seconds since the epoch", ()),
)
NEEDS = ("none",) + xids.DRAINING


def state(gpus, now):
    """The state file's content: every GPU's record, by UUID order."""
    return {"version": STATE_VERSION, "updated": now,
            "gpus": [dict((k, gpus[u].get(k)) for k in STATE_KEYS) for u in sorted(gpus)]}


def state_json(gpus, now):
    return json.dumps(state(gpus, now), indent=1, sort_keys=True) + "\n"


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _sample(name, labels, value):
    inner = ",".join('%s="%s"' % (k, _escape(v)) for k, v in labels)
    return "%s{%s} %s" % (name, inner, value) if inner else "%s %s" % (name, value)


def _samples(gpu, units, events, now):
    uuid = gpu["uuid"]
    yield "gpufleet_exo_gpu_healthy", (("gpu", uuid), ("pci_bus_id", gpu.get("pci_bus_id") or "")), int(gpu["healthy"])
    for need in NEEDS:
        yield "gpufleet_exo_gpu_needs", (("gpu", uuid), ("action", need)), int(gpu["needs"] == need)
    for cls in xids.CLASSES:
        yield "gpufleet_exo_gpu_xids_total", (("gpu", uuid), ("class", cls)), gpu["xids"].get(cls, 0)
    yield "gpufleet_exo_gpu_resets_last_hour", (("gpu", uuid),), sum(1 for t in gpu.get("resets") or [] if now - t < 3600)
    yield "gpufleet_exo_gpu_breaker_open", (("gpu", uuid),), int(bool(gpu.get("breaker")) or _held_by_breaker(gpu))
    yield "gpufleet_exo_instance_active", (("gpu", uuid), ("unit", units[uuid])), int(gpu["instance"] == "active")
    yield "gpufleet_exo_watcher_nvml_events", (("gpu", uuid),), int(bool(events.get(uuid)))


def _held_by_breaker(gpu):
    return (gpu.get("remedy") or "").startswith("not reset: breaker open")


def metrics(gpus, now, units, events):
    """The metrics file's text. units: {uuid: unit name}; events: {uuid: NVML events registered}."""
    samples = {}
    for uuid in sorted(gpus):
        for name, labels, value in _samples(gpus[uuid], units, events, now):
            samples.setdefault(name, []).append(_sample(name, labels, value))
    samples["gpufleet_exo_watcher_updated_seconds"] = [_sample("gpufleet_exo_watcher_updated_seconds", (), "%.3f" % now)]
    lines = []
    for name, kind, help_text, dummy_labels in METRICS:
        lines += ["# HELP %s %s" % (name, help_text), "# TYPE %s %s" % (name, kind)] + samples.get(name, [])
    return "\n".join(lines) + "\n"


def restore(saved, gpus):
    """The records of the GPUs listed now, carried over from a state file written before (a
    watcher restarted while it held a GPU out must still know it did, to start its instance again)."""
    old = dict((g.get("uuid"), g) for g in (saved or {}).get("gpus", []) if isinstance(g, dict))
    if (saved or {}).get("version") != STATE_VERSION:
        return gpus
    restored = {}
    for uuid, gpu in gpus.items():
        kept = dict((k, old[uuid][k]) for k in STATE_KEYS if uuid in old and k in old[uuid])
        restored[uuid] = dict(gpu, **dict((k, v) for k, v in kept.items() if k not in ("pci_bus_id", "index")))
    return restored
