# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The fleet report of playbooks/facts.yml, opened in a real headless Chromium.

The hosts are simulated: each inventory host runs its modules through its own interpreter wrapper
that loads the simulated libnvidia-ml (under the real nvidia-ml-py) with that host's GPUs, and the
probe reads that host's simulated /sys. The playbook runs as an operator runs it; the page it writes
is opened in Chromium (Debian's package; tests/run.sh installs it), whose DOM must show the numbers
of the JSON file and whose screenshot must not be blank. The screenshot is kept in
.build/fleet-report/ to be looked at. The filters' EXAMPLES and docs/fleet-report.md run as written.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from tests.helpers import REPO, examples, indent
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml

KEEP = os.path.join(REPO, ".build", "fleet-report")
GPUS = {
    "h100x4": (simhosts.FOUR, {}),
    "rtx": simhosts.FLEET_HOSTS["rtx"],
    "a100_mig": simhosts.HOSTS["mig"],
    "unknown": simhosts.HOSTS["unknown_part"],
    "no_gpu": (None, {}),
    "no_driver": simhosts.HOSTS["nvml_broken"],
    "reboot": simhosts.FLEET_HOSTS["reboot"],
}
# A ring by group (exo_node_ring in the group's variables); the other hosts make the unnamed ring of the play's.
RING = ("lab_a", ["h100x4", "rtx"])


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """An inventory of simulated hosts over the local connection, one interpreter wrapper each."""
    nvml_lib = simnvml.build("current")
    tmp = tmp_path_factory.mktemp("fleet")
    hosts = {}
    for name, (gpus, config) in GPUS.items():
        env, root = simhosts.write(str(tmp), name, nvml_lib, gpus, config)
        wrapper = tmp / (name + "-python")
        wrapper.write_text("#!/bin/sh\n# simulated host %s\n%sexec %s \"$@\"\n" % (
            name, "".join("export %s='%s'\n" % item for item in sorted(env.items())), sys.executable))
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": str(wrapper),
                       "device_facts_rootfs": root, "device_facts_tinygrad": False}
    path = tmp / "inventory.json"
    ring = {"hosts": dict((name, {}) for name in RING[1]), "vars": {"exo_node_ring": RING[0]}}
    path.write_text(json.dumps({"all": {"hosts": hosts, "children": {RING[0]: ring}}}))
    return str(path)


def playbook(args, cwd=REPO):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="8")
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook")] + args, cwd=cwd,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=600, check=False)


# A later play of the same run: which hosts hold the report, and what the controller's fact of it says.
LATER_PLAY = """
- name: Probe the devices and report
  ansible.builtin.import_playbook: %s

- name: Read the report in a later play
  hosts: all
  gather_facts: false
  tasks:
    - name: Say which hosts hold the report, and its models
      ansible.builtin.debug:
        msg: "{{ {'holding it': ansible_play_hosts_all | map('extract', hostvars) | selectattr('fleet_report', 'defined')
                  | map(attribute='inventory_hostname') | list,
                  'models': hostvars['localhost'].fleet_report.models | length} | to_json }}"
      run_once: true
"""


@pytest.fixture(scope="module")
def report(inventory, tmp_path_factory):
    """(json, html path, playbook output) of one run of playbooks/facts.yml, and a later play that reads the report."""
    out = tmp_path_factory.mktemp("reports")
    later = out / "later.yml"
    later.write_text(LATER_PLAY % os.path.join(REPO, "playbooks", "facts.yml"))
    proc = playbook(["-i", inventory, str(later), "-e", "fleet_report_dir=%s" % out])
    assert proc.returncode == 0, proc.stdout[-6000:]
    [json_path] = [str(p) for p in out.glob("fleet-*.json")]
    with open(json_path) as handle:
        data = json.load(handle)
    return data, json_path[:-len("json")] + "html", proc.stdout


def chromium(*args):
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium is not installed; tests/run.sh integration installs it")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          check=True).stdout


class Cells(HTMLParser):
    """The data-field cells of every row that has one of the given attributes, by row key."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.rows, self.ids, self._row, self._field, self._id = {}, {}, None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr":
            key = tuple(attrs[k] for k in ("data-model", "data-host", "data-gpu", "data-ring") if k in attrs)
            self._row = (attrs.get("class", "").split(" ")[0],) + key if key else None
            if self._row:
                self.rows[self._row] = {}
        elif tag == "td" and self._row and "data-field" in attrs:
            self._field = attrs["data-field"]
            self.rows[self._row][self._field] = ""
        elif "id" in attrs:
            self._id = attrs["id"]
            self.ids[self._id] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self._field = None
        elif tag == "tr":
            self._row = None
        else:
            self._id = None

    def handle_data(self, data):
        if self._field:
            self.rows[self._row][self._field] += data
        if self._id:
            self.ids[self._id] += data


def shown(value):
    return "" if value is None else "yes" if value is True else "no" if value is False else str(value)


def test_the_playbook_keeps_its_summary_and_says_what_the_fleet_serves(report):
    data, output = report[0], report[2]
    assert "memory exo can place layers in:" in output and "hosts needing a driver:" in output
    served = [m["model"] for m in data["models"] if m["serves"]]
    assert "serves %d of %d models;" % (len(served), len(data["models"])) in output
    assert "the largest: %s" % data["largest"] in output
    for ring in data["rings"]:
        assert "ring %s: %d hosts, serves %d of %d models; the largest: %s" % (
            ring["ring"] or "(the play's hosts)", len(ring["hosts"]), len(ring["models"]), len(data["models"]),
            ring["largest"] or "none") in output, output[-3000:]


def test_the_report_is_the_controllers_fact_and_no_hosts(report):
    data, dummy, output = report
    said = output.split("TASK [Say which hosts hold the report, and its models]")[1]
    # Each host's variables would otherwise carry the whole fleet's report into every later task of the host.
    found = re.search(r'holding it\\?": (\[.*?\]), \\?"models\\?": (\d+)', said)
    assert found and found.groups() == ("[]", str(len(data["models"]))), said[:2000]


def test_the_json_holds_every_host_as_its_simulated_hardware_is(report):
    data = report[0]
    hosts = dict((h["host"], h) for h in data["hosts"])
    assert sorted(hosts) == sorted(GPUS)
    assert [g["memory_mib"] for g in hosts["h100x4"]["gpus"]] == [81559] * 4
    assert len(hosts["h100x4"]["instances"]) == 4 and len(hosts["rtx"]["instances"]) == 2
    assert (hosts["reboot"]["excluded"], hosts["reboot"]["pending_reboot"]) == ("pending_reboot", True)
    assert (hosts["no_driver"]["excluded"], hosts["no_driver"]["driver_needed"]) == ("driver_needed", True)
    assert hosts["no_gpu"]["instances"][0]["kind"] == "cpu" and hosts["no_gpu"]["instances"][0]["dtype_bytes"] == 4
    assert [g["flops_source"] for g in hosts["h100x4"]["gpus"]] == ["table"] * 4
    assert data["largest"] and len(data["nodes"]) == sum(len(h["instances"]) for h in hosts.values())
    rings = dict((r["ring"], r) for r in data["rings"])
    assert sorted(rings) == ["", RING[0]] and sorted(rings[RING[0]]["hosts"]) == sorted(RING[1])
    assert sorted(rings[""]["hosts"]) == sorted(set(GPUS) - set(RING[1]))
    assert rings[RING[0]]["nodes"] == 6 and rings[RING[0]]["largest"] == "llama-3.3-70b"
    assert sorted(rings[""]["excluded"]) == ["no_driver", "reboot"] and rings[RING[0]]["excluded"] == []
    assert all(hosts[name]["ring"] == ring for ring, r in rings.items() for name in r["hosts"])


def test_chromium_shows_the_numbers_of_the_json(report):
    data, page = report[0], report[1]
    parser = Cells()
    parser.feed(chromium("--dump-dom", "file://" + page))
    assert parser.ids["largest"] == data["largest"]
    assert parser.ids["served"] == str(len([m for m in data["models"] if m["serves"]]))
    for m in data["models"]:
        row = parser.rows[("serves" if m["serves"] else "short", m["model"])]
        assert row.pop("missing") == "".join(m["missing"])  # one line each, <br> between
        for field, text in row.items():
            assert text == shown(m[field]), (m["model"], field, text)
        assert len(row) == 10
    for h in data["hosts"]:
        row = parser.rows[("host", h["host"])]
        assert row.pop("instances") == str(len(h["instances"]))
        assert row.pop("excluded_reason") == (h["excluded_reason"] or "yes")
        for field, text in row.items():
            assert text == shown(h[field]), (h["host"], field, text)
        for g in h["gpus"]:
            row = parser.rows[("gpu", h["host"], str(g["index"]))]
            assert (row.pop("host"), row.pop("health_reasons")) == (h["host"], "".join(g.get("health_reasons", [])))
            assert row.pop("watcher_reason") == "".join(g.get("watcher_reason", []))
            for field, text in row.items():
                assert text == shown(g.get(field)), (h["host"], g["index"], field, text)
    for r in data["rings"]:
        row = parser.rows[("ring", r["ring"])]
        assert row == {"ring": r["ring"] or "(the play's hosts)", "hosts": str(len(r["hosts"])), "nodes": str(r["nodes"]),
                       "memory_mib": str(r["memory_mib"]), "largest": shown(r["largest"]),
                       "models": str(len(r["models"]))}, r["ring"]


def test_the_page_is_self_contained_and_the_screenshot_is_not_blank(report):
    from matplotlib import image
    page = report[1]
    with open(page) as handle:
        text = handle.read()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', text) and "<script" not in text
    assert text.count("<svg") == 1 and "llama-3.3-70b" in text[text.index("<svg"):]
    os.makedirs(KEEP, exist_ok=True)
    shot = os.path.join(KEEP, "fleet-report.png")
    shutil.copy(page, os.path.join(KEEP, "fleet-report.html"))
    if os.path.exists(shot):
        os.remove(shot)
    chromium("--window-size=1280,2600", "--screenshot=" + shot, "file://" + page)
    pixels = image.imread(shot)[:, :, :3]
    ink = (pixels.sum(axis=2) < 2.7).mean()   # anything darker than near-white
    green = ((pixels[:, :, 1] > 0.4) & (pixels[:, :, 0] < 0.3)).mean()
    assert ink > 0.03 and green > 0.001, (ink, green)


def test_the_filter_examples_run_as_written(inventory, tmp_path):
    play = ("- name: Run the examples\n  hosts: all\n  gather_facts: false\n  tasks:\n"
            "    - name: Gather the device facts\n      gpufleet.exo.device_facts:\n"
            "        tinygrad: false\n        rootfs: \"{{ device_facts_rootfs }}\"\n"
            + "".join(indent(examples("filter", name)) for name in ("fleet_capacity", "fleet_report_html")))
    path = tmp_path / "examples.yml"
    path.write_text(play)
    proc = playbook(["-i", inventory, str(path), "-e", "report_dir=%s" % tmp_path])
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert re.search(r'"msg": "\[.*llama-3.3-70b.*\]; largest llama-3', proc.stdout), proc.stdout[-3000:]
    assert re.search(r'"msg": \{\s*"": "llama-3.1-8b",\s*"lab_a": "llama-3.3-70b"\s*\}', proc.stdout), proc.stdout[-3000:]
    assert (tmp_path / "fleet.html").read_text().startswith("<!DOCTYPE html>")


def test_the_documented_run_writes_the_report_where_the_docs_say(inventory, tmp_path):
    with open(os.path.join(REPO, "docs", "fleet-report.md")) as handle:
        doc = handle.read()
    command = re.search(r"```sh\n(ansible-playbook [^\n]*)\n```", doc).group(1)
    os.symlink(os.path.join(REPO, "playbooks"), str(tmp_path / "playbooks"))
    argv = command.split()
    shutil.copy(inventory, str(tmp_path / argv[argv.index("-i") + 1]))  # JSON is YAML too
    proc = playbook(argv[1:], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-6000:]
    written = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert [re.sub(r"\d{8}T\d{6}Z", "STAMP", name) for name in written] == ["fleet-STAMP.html", "fleet-STAMP.json"]
    with open(str(tmp_path / "reports" / written[1])) as handle:
        assert json.load(handle)["headroom"] == 0.15
