# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watcher's state file as facts: device_facts reads it, read-only, so that each GPU's drain
state, reason and time are in device_capabilities and the fleet report. A missing file (no watcher
on the host) or one that does not parse (half a file, another version, garbage) never fails the
facts: they say which it was, and no GPU is said to be drained that the file does not show.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json

from . import report, xids

STATE_PATH = "/run/gpufleet-exo-health/state.json"
# What a GPU's record keeps in the facts: (key in the state file, types it may have). A value of
# another type is dropped (None): the file may come from an older or broken watcher.
NUMBER = (int, float)
TEXT = (str,)
GPU_FIELDS = (
    ("healthy", (bool,)), ("needs", TEXT), ("reason", TEXT), ("since", NUMBER), ("last_fault", NUMBER),
    ("instance", TEXT), ("stopped_by_watcher", (bool,)), ("breaker", TEXT), ("remedy", TEXT), ("reset_at", NUMBER),
)
NEEDS = ("none",) + xids.DRAINING


def _typed(value, types):
    # a bool is an int to Python: a number field never takes one
    if isinstance(value, bool) and bool not in types:
        return None
    return value if isinstance(value, types) else None


def gpu_facts(record):
    """One GPU's record as facts, each field checked; None where the record is not a dict with a UUID."""
    if not isinstance(record, dict) or not isinstance(record.get("uuid"), str):
        return None
    facts = dict((key, _typed(record.get(key), types)) for key, types in GPU_FIELDS)
    facts["needs"] = facts["needs"] if facts["needs"] in NEEDS else None
    counts = record.get("xids") if isinstance(record.get("xids"), dict) else {}
    facts["xids"] = dict((c, counts[c]) for c in xids.CLASSES if _typed(counts.get(c), (int,)) is not None)
    facts["resets"] = len([t for t in record.get("resets") or [] if _typed(t, NUMBER) is not None]) \
        if isinstance(record.get("resets"), list) else 0
    facts["drained"] = facts["healthy"] is False
    return record["uuid"], facts


def parse(text):
    """{"status", "message", "updated", "gpus": {uuid: facts}} from the state file's text (None: absent)."""
    if text is None:
        return {"status": "absent", "message": None, "updated": None, "gpus": {}}
    try:
        state = json.loads(text)
    except ValueError as exc:
        return {"status": "unreadable", "message": "not JSON: %s" % exc, "updated": None, "gpus": {}}
    if not isinstance(state, dict) or state.get("version") != report.STATE_VERSION or \
            not isinstance(state.get("gpus"), list):
        return {"status": "unreadable", "updated": None, "gpus": {},
                "message": "not a version %d state file" % report.STATE_VERSION}
    gpus = dict(filter(None, (gpu_facts(g) for g in state["gpus"])))
    return {"status": "read", "message": None, "updated": _typed(state.get("updated"), NUMBER), "gpus": gpus}


def read(path):
    """parse() of the file at path; absent where it is missing, unreadable where it cannot be read."""
    try:
        with open(path) as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        if getattr(exc, "errno", None) == errno.ENOENT:
            return parse(None)
        return {"status": "unreadable", "message": str(exc), "updated": None, "gpus": {}}
    except UnicodeDecodeError as exc:
        return {"status": "unreadable", "message": str(exc), "updated": None, "gpus": {}}
    return parse(text)


def annotate(capabilities, watcher):
    """device_capabilities with the watcher's view: `health_watcher` (status, when written, the
    drained GPUs' UUIDs) and each GPU's `watcher` (its record, or None where not watched)."""
    gpus = []
    for gpu in capabilities.get("gpus") or []:
        gpus.append(dict(gpu, watcher=watcher["gpus"].get(gpu.get("uuid"))) if isinstance(gpu, dict) else gpu)
    summary = {"status": watcher["status"], "message": watcher["message"], "updated": watcher["updated"],
               "drained": sorted(u for u, g in watcher["gpus"].items() if g["drained"])}
    return dict(capabilities, gpus=gpus, health_watcher=summary)
