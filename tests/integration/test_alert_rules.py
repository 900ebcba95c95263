# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's Prometheus alert rules (roles/node/files/gpufleet_exo_alerts.yml) under promtool, Prometheus's
own rule checker and tester (Debian's package prometheus; tests/run.sh installs it): every rule fires on the series
written here, when it should and not before, with the labels and annotations an operator gets; and every metric a
rule reads is one the collection exports (the health watcher's file, an instance's /metrics)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import report
from tests.helpers import REPO

RULES = os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_alerts.yml")
SPEC = importlib.util.spec_from_file_location("gpufleet_exo_patches",
                                              os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.py"))
patches = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(patches)
with open(RULES) as _handle:
    RULE_TABLE = dict((rule["alert"], rule) for group in yaml.safe_load(_handle)["groups"] for rule in group["rules"])

GPU = {"instance": "gpu01:9100", "job": "node", "gpu": "GPU-5b1f", "pci_bus_id": "0000:3B:00.0"}
NODE = {"instance": "gpu01:52415", "job": "exo", "node_id": "gpu01-GPU-5b1f"}
# (alert, input series {labels: values}, [(minute, fires, $value)]): the series as the watcher's file and an
# instance's /metrics give them, one sample a minute in promtool's expanding notation.
CASES = [
    ("GpufleetExoGpuOut", {'gpufleet_exo_gpu_healthy{%s}': "1 1 0x10"},
     [(5, False, None), (8, True, "0")]),
    ("GpufleetExoGpuNeedsReboot", {'gpufleet_exo_gpu_needs{%s,action="reboot"}': "0 0 1x5",
                                   'gpufleet_exo_gpu_needs{%s,action="reset"}': "1x7"},
     [(1, False, None), (3, True, "1")]),
    ("GpufleetExoBreakerOpen", {'gpufleet_exo_gpu_breaker_open{%s}': "0 1x5"}, [(0, False, None), (2, True, "1")]),
    # A process that started again three times within 30 minutes; before the third, nothing.
    ("GpufleetExoInstanceRestarting", {'gpufleet_exo_instance_started_seconds{%s}': "100x4 400x4 700x4 1000x4"},
     [(12, False, None), (16, True, "3")]),
    ("GpufleetExoRingMemberMissing", {'gpufleet_exo_ring_members{%s}': "2 2 1x10",
                                      'gpufleet_exo_ring_members_expected{%s}': "2x12"},
     [(3, False, None), (5, True, "1")]),
    # Refusals counted once in a while: an alert while one is in the last five minutes.
    ("GpufleetExoQueueFull", {'gpufleet_exo_requests_total{%s,outcome="refused"}': "0 0 0 3 3x10",
                              'gpufleet_exo_requests_total{%s,outcome="answered"}': "0+5x14"},
     [(2, False, None), (4, True, "3.75"), (13, False, None)]),
]


def labels_of(series):
    """The watcher's labels for its GPU metrics, an instance's for its own."""
    return GPU if all(name.startswith("gpufleet_exo_gpu_") for name in series) else NODE


def rendered(template, labels, value):
    """An annotation as Prometheus renders the rules' templates, which use only $labels.NAME and $value."""
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda match: labels[match.group(1)], template)
    return text.replace("{{ $value }}", value)


def promtool_test(alert, series, checks):
    labels = labels_of(series)
    inner = ",".join('%s="%s"' % item for item in sorted(labels.items()))
    rule = RULE_TABLE[alert]
    tests = []
    for minute, fires, value in checks:
        expected = []
        if fires:
            # The firing series' own labels: those the rule's selector names.
            selected = dict(re.findall(r'(\w+)="([^"]*)"', rule["expr"]))
            expected.append({"exp_labels": dict(labels, **dict(selected, **rule["labels"])),
                             "exp_annotations": dict((k, rendered(v, labels, value)) for k, v in rule["annotations"].items())})
        tests.append({"eval_time": "%dm" % minute, "alertname": alert, "exp_alerts": expected})
    return {"interval": "1m", "name": alert,
            "input_series": [{"series": name % inner, "values": values} for name, values in series.items()],
            "alert_rule_test": tests}


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("no promtool: Debian's package prometheus has it (tests/run.sh installs it)")
    return path


def test_the_rules_are_valid(promtool):
    proc = subprocess.run([promtool, "check", "rules", RULES], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0 and "SUCCESS: %d rules found" % len(RULE_TABLE) in proc.stdout, proc.stdout


def test_every_rule_fires_when_it_should_and_not_before(promtool, tmp_path):
    assert sorted(case[0] for case in CASES) == sorted(RULE_TABLE)
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [RULES], "evaluation_interval": "1m",
                                     "tests": [promtool_test(*case) for case in CASES]}))
    proc = subprocess.run([promtool, "test", "rules", str(tests)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_every_metric_a_rule_reads_is_one_the_collection_exports():
    exported = set(name for name, dummy, dummy, dummy in report.METRICS)
    exported.update(name for name, dummy, dummy in patches.INSTANCE_METRICS + patches.REQUEST_METRICS)
    read = set()
    for rule in RULE_TABLE.values():
        read.update(name for name in re.findall(r"\b(gpufleet_exo_\w+)", rule["expr"]))
    assert read and sorted(read - exported) == []
