# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts ad hoc on 50 lab hosts over real SSH (simulated hardware, lab.py): every host answers,
none fails, each reports its own hardware, and the host whose NVML hangs costs only its own deadline.
Then playbooks/facts.yml on the same 50 hosts: the fleet report an operator opens."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

from tests.integration.fleet import lab as fleetlab  # noqa: E402

HOSTS = 50
# A deadline check, not a speed check: room for a loaded 2-core controller.
MARGIN_S = 5.0

with open(os.path.join(fleetlab.REPO, "tests", "fixtures", "real-h100", "device_facts.json")) as handle:
    REAL_H100 = json.load(handle)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    with fleetlab.Lab(str(tmp_path_factory.mktemp("fleet50")), fleetlab.mix(HOSTS)) as lab:
        yield lab


def oneline_results(output):
    results = {}
    for line in output.splitlines():
        host, sep, rest = line.partition(" | ")
        if sep and " => " in rest:
            results[host] = (rest.split(" => ", 1)[0], json.loads(rest.split(" => ", 1)[1]))
    return results


@pytest.fixture(scope="module")
def ad_hoc(fleet):
    """One ad hoc run of device_facts on every host at once: (process, results by host)."""
    proc = fleet.ansible(["all", "-m", "gpufleet.exo.device_facts", "-a", "tinygrad=false", "-f", str(HOSTS), "-o"])
    return proc, oneline_results(proc.stdout)


def test_device_facts_ad_hoc_on_50_hosts(fleet, ad_hoc):
    proc, results = ad_hoc
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(results) == sorted(fleet.hosts)
    for name, (state, result) in results.items():
        kind = fleet.hosts[name]["kind"]
        want = fleetlab.expected(kind)
        caps = result["ansible_facts"]["device_capabilities"]
        assert state == "SUCCESS" and not result.get("failed"), (name, result)
        got = dict(status=caps["nvml"]["status"], backend=caps["backend"], names=[g["name"] for g in caps["gpus"]],
                   driver_needed=caps["driver_needed"])
        assert got == want, (name, caps)
        # The host's own /sys: its PCI bus, not the controller's (which has no GPU).
        assert len(caps["pci"]) == fleetlab.pci_gpus(kind), (name, caps["pci"])
        if kind == "nvml_hangs":
            assert fleetlab.HANG_TIMEOUT * 1000 <= caps["timings_ms"]["nvml"] < (fleetlab.HANG_TIMEOUT + MARGIN_S) * 1000
        else:
            assert caps["timings_ms"]["nvml"] < fleetlab.HANG_TIMEOUT * 1000, (name, caps["timings_ms"])


def test_each_kind_reports_its_hardware(fleet, ad_hoc):
    """One host of each kind, field by field: the 4x H100 host as the real H100 of tests/fixtures reports."""
    proc, by_host = ad_hoc
    results = {}
    for name, (dummy, result) in sorted(by_host.items()):
        results.setdefault(fleet.hosts[name]["kind"], result["ansible_facts"]["device_capabilities"])
    assert sorted(results) == sorted(fleetlab.KINDS), proc.stdout[-3000:] + proc.stderr[-3000:]

    h100 = results["h100x4"]
    real = REAL_H100["gpus"][0]
    keys = ("name", "chip", "memory_mib", "compute_capability", "architecture", "flops")
    assert [{k: g[k] for k in keys} for g in h100["gpus"]] == [{k: real[k] for k in keys}] * 4
    assert h100["gpus"][0]["pci_bus_id"] == real["pci_bus_id"]
    assert (h100["nvml"]["driver_version"], h100["nvml"]["cuda_driver_version"]) == \
        (REAL_H100["nvml"]["driver_version"], REAL_H100["nvml"]["cuda_driver_version"])
    assert h100["exo"]["memory"] == real["memory_mib"] and len(h100["visible"]["devices"]) == 4

    rtx = results["rtx3080_3090"]["gpus"]
    assert "10" in rtx[0]["chip"] and "3090" in rtx[1]["chip"]
    # exo uses the first visible GPU, and CUDA's default order (FASTEST_FIRST) puts the 3090 first.
    assert results["rtx3080_3090"]["exo"]["memory"] == 24576

    mig = results["a100_mig"]["gpus"][0]["mig"]
    assert mig["enabled"] and [d["memory_mib"] for d in mig["devices"]] == [40192, 19968]

    unknown = results["unknown_part"]["gpus"][0]
    assert unknown["chip"] is None and unknown["flops"]["source"] == "unknown"

    assert "reboot pending" in results["reboot_pending"]["driver_reason"]
    assert results["driver_missing"]["driver_needed"] and "has driver none" in results["driver_missing"]["driver_reason"]
    assert results["no_gpu"]["pci"] == [] and not results["no_gpu"]["driver_needed"]


def test_the_report_of_50_hosts_says_what_the_fleet_serves_and_on_which_ring(fleet, tmp_path):
    out = str(tmp_path / "reports")
    proc = fleet.playbook([os.path.join("playbooks", "facts.yml"), "-f", str(HOSTS), "-e", "fleet_report_dir=" + out],
                          env=fleet.environment(ANSIBLE_GATHER_TIMEOUT="60"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    [path] = glob.glob(os.path.join(out, "fleet-*.json"))
    with open(path) as handle:
        report = json.load(handle)
    assert sorted(h["host"] for h in report["hosts"]) == sorted(fleet.hosts)
    left_out = dict((e["host"], e["reason"]) for e in report["excluded"])
    assert left_out == dict((name, {"driver_missing": "driver_needed", "reboot_pending": "pending_reboot"}[h["kind"]])
                            for name, h in fleet.hosts.items() if h["kind"] in ("driver_missing", "reboot_pending"))
    # The ring of every node breaks for a model with fewer layers than the fleet has nodes; the report
    # names the ring of the largest nodes that serves each one instead: the H100s first.
    ordered = report["nodes"]
    for model in report["models"]:
        if len(ordered) > model["layers"]:
            assert not model["serves"] and model["empty"], model["model"]
        ring = model["fewest_nodes"]
        assert ring and ring <= model["layers"], model["model"]
        if not model["serves"]:
            assert model["missing"][0].startswith("serves on a ring of the fleet's %d largest node(s): %s %s" % (
                ring, ordered[0]["host"], ordered[0]["label"])), model["missing"]
    assert "h100x4" in ordered[0]["host"]
    # No host names a ring (exo_node_ring): they are all the unnamed ring of the play's hosts, which
    # serves what the fleet as one ring serves.
    assert report["rings"] == [{"ring": "", "hosts": [h["host"] for h in report["hosts"]], "nodes": len(ordered),
                                "memory_mib": sum(n["memory_mib"] for n in ordered),
                                "models": [m["model"] for m in report["models"] if m["serves"]],
                                "largest": report["largest"], "excluded": [e["host"] for e in report["excluded"]]}]
    assert "ring (the play's hosts): %d hosts, serves %d of %d models; the largest: %s" % (
        HOSTS, len(report["rings"][0]["models"]), len(report["models"]), report["largest"] or "none") in proc.stdout
    fewer = [m for m in report["models"] if not m["serves"] and m["fewest_nodes"]]
    assert re.search(r"serves \d+ of %d models;.*; %d more on a ring of fewer, larger nodes"
                     % (len(report["models"]), len(fewer)), proc.stdout, re.S), proc.stdout[-3000:]
    page = path[:-len("json")] + "html"
    with open(page) as handle:
        text = handle.read()
    assert '<b id="fewer">%d</b> more serve on a ring of fewer, larger nodes' % len(fewer) in text
    browser = shutil.which("chromium")
    if browser:  # kept for a person to look at, as the report test keeps its page
        keep = os.path.join(fleetlab.REPO, ".build", "fleet-report")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(page, os.path.join(keep, "fleet-50-hosts.html"))
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1280,1600", "--screenshot=" + os.path.join(keep, "fleet-50-hosts.png"),
                        "file://" + page], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=True)
