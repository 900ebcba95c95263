# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The report page (plugins/plugin_utils/fleet/report.py) on a fleet given as data;
tests/integration/test_fleet_report.py opens the page of a whole playbook run in a browser."""

import sys

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.exo.plugins.filter import fleet_capacity as plugin
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import report as fleet_report


def gpu_host(memory_mib, host="h", ring=""):
    """capacity.fleet()'s entry for a host of ring whose planner gave one GPU instance of memory_mib."""
    instance = {"node_id": host + "-GPU-1", "name": "GPU-1", "kind": "gpu", "gpu_index": 0,
                "capabilities": {"chip": "NVIDIA <H100>", "memory": memory_mib}}
    facts = {"backend": "cuda", "nvml": {"status": "ok", "driver_version": "580.159.04"}, "driver_needed": False,
             "host": {"memory_mib": 128887}, "exo": {"chip": "NVIDIA <H100>", "memory": memory_mib},
             "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "chip": "NVIDIA <H100>", "memory_mib": memory_mib,
                       "flops": {"fp16": 989.5, "fp32": 67.0, "source": "table"}}]}
    return {"host": host, "facts": facts, "plan": {"instances": [instance], "errors": []}, "ring": ring}


def one_gpu_fleet(memory_mib):
    """capacity.fleet() over one host whose planner gave one GPU instance of memory_mib."""
    return capacity.fleet([gpu_host(memory_mib)])


def test_the_page_says_what_is_served_and_escapes_what_it_shows():
    page = fleet_report.html(dict(one_gpu_fleet(81559), generated="2026-11-23T07:00:00Z"), title="lab & co")
    assert page.startswith("<!DOCTYPE html>") and "<title>lab &amp; co</title>" in page
    assert 'This fleet serves <b id="served">7</b> of 11 models; the largest is <b id="largest">llama-3.1-8b</b>' in page
    assert "NVIDIA &lt;H100&gt;" in page and "NVIDIA <H100>" not in page.split("<svg", maxsplit=1)[0]
    assert "layers 0-79 need" in page  # what the 70B models miss, in the table
    assert page.count("<svg") == 1


def test_a_fleet_that_serves_nothing_says_so():
    page = fleet_report.html(one_gpu_fleet(2048))
    assert 'serves <b id="served">0</b> of 11 models' in page


def test_without_matplotlib_the_filter_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what Python then does: import fails
    with pytest.raises(AnsibleFilterError, match=r"needs matplotlib on the controller \(import of matplotlib halted; "
                                                 r"None in sys.modules\); install it with pip install -r requirements.txt"):
        plugin.fleet_report_html(one_gpu_fleet(81559))


# What a broken or hostile host can put in its facts or its inventory name: the report still renders
# and shows the value as text. matplotlib reads "$...$" as math and "_{" as a subscript.
ODD_HOSTS = ["gpu$1", "rack_$x^2$", "a$b_{c", "{{ name }}", "h<&>", "bad$\\frac{$math"]
# (health reasons as a host published them, as the report shows them)
ODD_REASONS = [(["ECC"], ["ECC"]), ([1, None], ["1"]), ([{"code": 2}], ['{"code": 2}']), ("not a list", ["not a list"]),
               (None, []), (7, ["7"])]


@pytest.mark.parametrize("host, reasons, shown", [(h, r, s) for h, (r, s) in zip(ODD_HOSTS, ODD_REASONS)])
def test_the_report_survives_odd_host_names_and_health_reasons(host, reasons, shown):
    instance = {"node_id": "n", "name": "GPU-1", "kind": "gpu", "gpu_index": 0,
                "capabilities": {"chip": "NVIDIA H100", "memory": 81559}}
    facts = {"backend": "cuda", "nvml": {"status": "ok"}, "driver_needed": False, "host": {"memory_mib": 1024},
             "exo": {"chip": "NVIDIA H100", "memory": 81559},
             "gpus": [{"index": 0, "name": "NVIDIA H100", "memory_mib": 81559,
                       "health": {"verdict": "degraded", "reasons": reasons}}]}
    report = capacity.fleet([{"host": host, "facts": facts, "plan": {"instances": [instance], "errors": []}}])
    assert report["hosts"][0]["gpus"][0]["health_reasons"] == shown
    page = fleet_report.html(report)
    assert fleet_report.escape(host) in page.split("<svg", maxsplit=1)[0]
    assert ">%s (1)<" % fleet_report.escape(host) in page  # the plot's label, as given


# (the GPU's watcher facts as device_facts gives them, the row's columns, listed as drained)
WATCHED = [
    (None, {}, False),
    ({"drained": True, "reason": "XID 48 (Double-bit ECC error) from nvml: needs reset", "since": 1795000000.0},
     {"watcher": "drained", "watcher_reason": ["XID 48 (Double-bit ECC error) from nvml: needs reset"],
      "watcher_since": "2026-11-18T11:06:40Z"}, True),
    ({"drained": False, "reason": "back: the driver reports recovery action none", "since": 1795000000},
     {"watcher": "serving", "watcher_reason": ["back: the driver reports recovery action none"],
      "watcher_since": "2026-11-18T11:06:40Z"}, False),
    # what a broken host may publish
    ({"drained": "yes", "reason": 7, "since": "later"}, {"watcher": "serving", "watcher_reason": ["7"],
                                                         "watcher_since": None}, False),
    ("garbage", {}, False),
]


@pytest.mark.parametrize("watcher, columns, listed", WATCHED)
def test_the_report_shows_what_the_health_watcher_holds_out(watcher, columns, listed):
    fleet = one_gpu_fleet(81559)
    gpu = dict(fleet["hosts"][0]["gpus"][0])
    for key in ("watcher", "watcher_reason", "watcher_since"):
        gpu.pop(key, None)
    fleet["hosts"][0]["gpus"][0] = dict(gpu, **capacity._watcher_columns(watcher))
    row = fleet["hosts"][0]["gpus"][0]
    assert dict((k, row[k]) for k in columns) == columns and set(columns) <= set(row)
    page = fleet_report.html(fleet)
    assert ('<ul id="drained"><li data-host="h" data-gpu="0">h GPU 0: XID 48' in page) is listed
    assert ('data-field="watcher">%s</td>' % columns["watcher"] in page) if columns else True


def test_the_facts_watcher_reaches_the_gpu_row():
    row = capacity._gpu_row({"index": 0, "watcher": {"drained": True, "reason": "r", "since": 0}})
    assert (row["watcher"], row["watcher_reason"], row["watcher_since"]) == ("drained", ["r"], "1970-01-01T00:00:00Z")


# (the ring, the cells of its row in the Rings table: its name as shown, hosts, nodes, memory, the largest, how many
# models it serves) for two H100 hosts in the ring "h100<&>" (a name shown as text), and one of 24 GiB in none.
RING_ROWS = [
    ("", {"ring": "(the play's hosts)", "hosts": "1", "nodes": "1", "memory_mib": "24576", "largest": "llama-3.1-8b",
          "models": "7"}),
    ("h100<&>", {"ring": "h100<&>", "hosts": "2", "nodes": "2", "memory_mib": "163118", "largest": "llama-3.3-70b",
                 "models": "11"}),
]


@pytest.mark.parametrize("ring, cells", RING_ROWS)
def test_the_page_shows_each_ring_and_what_it_serves(ring, cells):
    report = capacity.fleet([gpu_host(81559, "a1", "h100<&>"), gpu_host(24576, "u1"), gpu_host(81559, "a2", "h100<&>")])
    page = fleet_report.html(report)
    table = page[page.index('<table id="rings">'):]
    row = table[table.index('<tr class="ring" data-ring="%s">' % fleet_report.escape(ring)):]
    row = row[:row.index("</tr>")]
    assert row.count("<td") == len(cells)
    for field, text in cells.items():
        assert 'data-field="%s">%s</td>' % (field, fleet_report.escape(text)) in row, (field, row)
    assert '<tr class="host" data-host="a1"><td data-field="host">a1</td><td data-field="ring">h100&lt;&amp;&gt;</td>' in page
