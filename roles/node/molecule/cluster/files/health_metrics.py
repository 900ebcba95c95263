# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What node_exporter served, read by Prometheus's own text parser (prometheus_client), on the
controller: the page on stdin, the health watcher's samples out as JSON.

    python3 health_metrics.py < metrics.txt

prints {"types": {family: type}, "values": {"NAME|GPU|ACTION-OR-CLASS": value}} for the families named
gpufleet_exo_* (GPU and ACTION-OR-CLASS empty where the sample has no such label), so that health.yml
asserts on what a real scraper reads.
"""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def watcher_samples(text):
    types, values = {}, {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("gpufleet_exo_"):
            continue
        types[family.name] = family.type
        for sample in family.samples:
            labels = sample.labels
            key = "|".join((sample.name, labels.get("gpu", ""), labels.get("action", labels.get("class", ""))))
            values[key] = sample.value
    return {"types": types, "values": values}


if __name__ == "__main__":
    json.dump(watcher_samples(sys.stdin.read()), sys.stdout, sort_keys=True)
