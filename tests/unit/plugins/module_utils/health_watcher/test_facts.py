# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watcher's state file read into the device facts, from tables of cases: a missing file, garbage,
another version, records with fields of the wrong type, and the GPUs annotated."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import decide, facts, report


def held(uuid="GPU-a"):
    return dict(decide.new_gpu(uuid, "0000:3b:00.0", 0), healthy=False, needs="reset", reason="XID 48 from nvml",
                since=100.0, last_fault=100.0, instance="inactive", stopped_by_watcher=True, resets=[90.0])


STATE = report.state_json({"GPU-a": held(), "GPU-b": decide.new_gpu("GPU-b")}, 120.0)
PARSED = [
    # (text, status, drained GPUs, message starts)
    (None, "absent", [], None),
    (STATE, "read", ["GPU-a"], None),
    ("", "unreadable", [], "not JSON"),
    ('{"version": 1, "gpus": [', "unreadable", [], "not JSON"),  # half a file
    ("[]", "unreadable", [], "not a version 1 state file"),
    ('{"version": 2, "gpus": []}', "unreadable", [], "not a version 1 state file"),
    ('{"version": 1, "gpus": {"GPU-a": {}}}', "unreadable", [], "not a version 1 state file"),
    # records that are not records, or have no UUID, are left out; the others are read
    ('{"version": 1, "gpus": [7, null, {"healthy": false}, {"uuid": "GPU-c", "healthy": false}]}', "read", ["GPU-c"],
     None),
]


@pytest.mark.parametrize("text, status, drained, message", PARSED)
def test_parse(text, status, drained, message):
    parsed = facts.parse(text)
    assert parsed["status"] == status
    assert sorted(u for u, g in parsed["gpus"].items() if g["drained"]) == drained
    assert (parsed["message"] or "").startswith(message or "")
    assert (parsed["message"] is None) is (message is None)


FIELDS = [
    # (record's changes, facts expected among the GPU's)
    ({}, {"healthy": False, "drained": True, "needs": "reset", "reason": "XID 48 from nvml", "since": 100.0,
          "instance": "inactive", "stopped_by_watcher": True, "resets": 1,
          "xids": {"application": 0, "drain": 0, "reset": 0, "reboot": 0}}),
    # wrong types are dropped, never passed on
    ({"since": "yesterday", "needs": "explode", "reason": 7, "healthy": "no"},
     {"since": None, "needs": None, "reason": None, "healthy": None, "drained": False}),
    ({"since": True}, {"since": None}),  # a bool is no time
    ({"xids": {"reset": 2, "drain": "many", "other": 1}, "resets": "lots"}, {"xids": {"reset": 2}, "resets": 0}),
    ({"resets": [1.0, "x", 2]}, {"resets": 2}),
]


@pytest.mark.parametrize("changes, expected", FIELDS)
def test_gpu_fields_are_checked(changes, expected):
    uuid, got = facts.gpu_facts(dict(json.loads(report.state_json({"GPU-a": held()}, 0))["gpus"][0], **changes))
    assert uuid == "GPU-a"
    assert dict((k, got[k]) for k in expected) == expected


def test_annotate_puts_each_gpus_record_on_it():
    capabilities = {"gpus": [{"uuid": "GPU-a", "index": 0}, {"uuid": "GPU-x", "index": 1}], "backend": "cuda"}
    after = facts.annotate(capabilities, facts.parse(STATE))
    assert after["health_watcher"] == {"status": "read", "message": None, "updated": 120.0, "drained": ["GPU-a"]}
    assert after["gpus"][0]["watcher"]["reason"] == "XID 48 from nvml"
    assert after["gpus"][1]["watcher"] is None and after["backend"] == "cuda"
    assert "watcher" not in capabilities["gpus"][0], "the facts given are not changed"


@pytest.mark.parametrize("write, status", [
    (None, "absent"),
    (STATE, "read"),
    (b"\xff\xfe garbage", "unreadable"),
])
def test_read(tmp_path, write, status):
    path = tmp_path / "state.json"
    if write is not None:
        path.write_bytes(write if isinstance(write, bytes) else write.encode())
    assert facts.read(str(path))["status"] == status


def test_read_a_directory_is_unreadable(tmp_path):
    parsed = facts.read(str(tmp_path))
    assert parsed["status"] == "unreadable" and parsed["message"]
