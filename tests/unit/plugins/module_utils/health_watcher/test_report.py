# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metrics file, read back by Prometheus's own text parser (prometheus_client), and the state file."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import decide, report, xids
from tests.helpers import REPO

SETTINGS = {"flood_window_s": 60, "hold_s": 300, "settle_s": 10}


def two_gpus():
    healthy = dict(decide.new_gpu("GPU-b", "0000:4b:00.0", 1), instance="active")
    faulty = dict(decide.new_gpu("GPU-a", "0000:3b:00.0", 0), instance="active")
    faulty = decide.observe(faulty, {"gpu": "GPU-a", "kind": "xid", "xid": 48}, 0, SETTINGS)[0]
    faulty = decide.observe(faulty, {"gpu": "GPU-a", "kind": "xid", "xid": 13}, 0, SETTINGS)[0]
    faulty = dict(decide.drain(faulty, 0, SETTINGS)[0], instance="inactive")
    return {"GPU-a": faulty, "GPU-b": healthy}


def parsed(gpus):
    units = dict((u, "exo@%s.service" % u) for u in gpus)
    text = report.metrics(gpus, 1700000000.5, units, {"GPU-a": True, "GPU-b": False})
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = (family.type, sample.value)
    return samples


def test_prometheus_parses_every_metric_with_its_type_and_labels():
    samples = parsed(two_gpus())
    assert samples[("gpufleet_exo_gpu_healthy", (("gpu", "GPU-a"), ("pci_bus_id", "0000:3b:00.0")))] == ("gauge", 0)
    assert samples[("gpufleet_exo_gpu_healthy", (("gpu", "GPU-b"), ("pci_bus_id", "0000:4b:00.0")))] == ("gauge", 1)
    assert samples[("gpufleet_exo_gpu_needs", (("action", "reset"), ("gpu", "GPU-a")))] == ("gauge", 1)
    assert samples[("gpufleet_exo_gpu_needs", (("action", "none"), ("gpu", "GPU-a")))] == ("gauge", 0)
    assert samples[("gpufleet_exo_gpu_xids_total", (("class", "reset"), ("gpu", "GPU-a")))] == ("counter", 1)
    assert samples[("gpufleet_exo_gpu_xids_total", (("class", "application"), ("gpu", "GPU-a")))] == ("counter", 1)
    assert samples[("gpufleet_exo_instance_active", (("gpu", "GPU-a"), ("unit", "exo@GPU-a.service")))] == ("gauge", 0)
    assert samples[("gpufleet_exo_instance_active", (("gpu", "GPU-b"), ("unit", "exo@GPU-b.service")))] == ("gauge", 1)
    assert samples[("gpufleet_exo_watcher_nvml_events", (("gpu", "GPU-b"),))] == ("gauge", 0)
    assert samples[("gpufleet_exo_watcher_updated_seconds", ())] == ("gauge", 1700000000.5)


def test_every_metric_written_is_declared():
    names = set(name for name, dummy in parsed(two_gpus()))
    declared = set(m[0] for m in report.METRICS)
    assert names == declared


def test_the_state_file_restores_what_the_watcher_did():
    gpus = two_gpus()
    saved = json.loads(report.state_json(gpus, 5))
    listed = {"GPU-a": decide.new_gpu("GPU-a", "0000:3b:00.0", 0), "GPU-new": decide.new_gpu("GPU-new")}
    restored = report.restore(saved, listed)
    assert (restored["GPU-a"]["healthy"], restored["GPU-a"]["stopped_by_watcher"]) == (False, True)
    assert restored["GPU-new"] == listed["GPU-new"]
    assert sorted(restored) == ["GPU-a", "GPU-new"]


def test_a_state_file_of_another_version_is_ignored():
    saved = dict(json.loads(report.state_json(two_gpus(), 5)), version=0)
    listed = {"GPU-a": decide.new_gpu("GPU-a")}
    assert report.restore(saved, listed) == listed


def docs():
    with open(os.path.join(REPO, "docs", "health.md")) as handle:
        return handle.read()


def test_docs_list_every_metric_with_its_type():
    documented = re.findall(r"^\| `(gpufleet_exo_[a-z_]+)` \| (gauge|counter) \|", docs(), re.M)
    assert documented == [(name, kind) for name, kind, dummy_help, dummy_labels in report.METRICS]


def test_docs_list_each_class_with_the_xids_of_the_table():
    for cls in ("application", "reset", "reboot"):
        row = re.search(r"^\| `%s` \| ([^|]*) \|" % cls, docs(), re.M).group(1)
        listed = sorted(int(n) for n in re.findall(r"\b(\d+)\b", row))
        assert listed == sorted(x for x, dummy, c, dummy_source in xids.TABLE if c == cls), cls
