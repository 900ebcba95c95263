# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health watcher as its unit runs it, over the simulated libnvidia-ml and the real nvidia-ml-py:
faults injected through the events file and the kernel's log drain exactly the affected GPU's
instance and bring it back through the health gate; application errors and floods drain nothing.

systemctl is a stand-in that records each call and answers is-active from what it was told."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import REPO
from tests.simulated import nvml

pytest.importorskip("pynvml")

PACKAGE = "ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher"
SYSTEMCTL = """#!/bin/sh
# A stand-in for systemctl: records each call; a stopped unit is a file in its directory.
here=$(dirname "$0")
echo "$*" >> "$here/calls"
case "$1" in
  is-active) shift; for unit in "$@"; do [ -e "$here/$unit" ] && echo inactive || echo active; done ;;
  stop) touch "$here/$3" ;;
  start) rm -f "$here/$3" ;;
esac
"""
# A stand-in for nvidia-smi: records each call; a reset (-r -i BUS) tells the simulated driver that
# the GPU no longer asks for a recovery action, or hangs where the file "hang" exists.
NVIDIA_SMI = """#!/bin/sh
here=$(dirname "$0")
echo "$*" >> "$here/calls"
if [ "$1" = -r ]; then
  [ -e "$here/hang" ] && exec sleep 600
  index=$(grep -n "^$3$" "$here/buses" | cut -d: -f1)
  echo "set $((index - 1)) recovery_action=0" >> "$SIMULATED_NVML_EVENTS"
  echo "GPU $3 was successfully reset."
fi
"""
GPUS = [nvml.gpu("NVIDIA H100 80GB HBM3", 81559, health=dict(nvml.HEALTHY_H100, recovery_action=0)),
        # the second GPU's driver reports no recovery action: the hold time lets it back
        nvml.gpu("NVIDIA H100 80GB HBM3", 81559, health=nvml.HEALTHY_H100)]
UUIDS = [spec["uuid"] for spec in nvml.resolved(GPUS)]
UNITS = ["exo@%s.service" % uuid for uuid in UUIDS]
DEADLINE = 60


class Host:
    def __init__(self, tmp, lib, **options):
        self.tmp = tmp
        self.events = str(tmp / "nvml.events")
        self.kernel = str(tmp / "kernel.log")
        open(self.kernel, "w").close()
        fake = tmp / "systemctl" / "systemctl"
        fake.parent.mkdir(exist_ok=True)
        fake.write_text(SYSTEMCTL)
        fake.chmod(0o755)
        self.calls = fake.parent / "calls"
        smi = tmp / "nvidia-smi" / "nvidia-smi"
        smi.parent.mkdir(exist_ok=True)
        smi.write_text(NVIDIA_SMI)
        smi.chmod(0o755)
        (smi.parent / "buses").write_text("".join(g["pci_bus_id"] + "\n" for g in nvml.resolved(GPUS)))
        self.smi = smi.parent
        config = nvml.write_config(str(tmp / "nvml.conf"), GPUS)
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".build", "collections"),
                   **nvml.environment(lib, config, self.events))
        settings = dict({"--hold-s": 3, "--settle-s": 0, "--flood-window-s": 60, "--tick-s": 0.2, "--poll-s": 1},
                        **options)
        args = [a for pair in settings.items() for a in ((pair[0], str(pair[1])) if pair[1] is not True else (pair[0],))]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", PACKAGE, "--state", str(tmp / "state.json"), "--metrics", str(tmp / "m.prom"),
             "--kernel", "file:" + self.kernel, "--systemctl", str(fake), "--nvidia-smi", str(smi)] + args,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.until(lambda: os.path.exists(str(tmp / "m.prom")), "the first metrics file")

    def state(self):
        try:
            with open(str(self.tmp / "state.json")) as handle:
                return dict((g["uuid"], g) for g in json.load(handle)["gpus"])
        except (OSError, ValueError):
            return {}

    def actions(self):
        calls = self.calls.read_text().splitlines() if self.calls.exists() else []
        return [c for c in calls if not c.startswith("is-active")]

    def until(self, condition, what):
        deadline = time.time() + DEADLINE
        while not condition():
            assert self.proc.poll() is None, "the watcher ended: %s" % self.proc.stdout.read()
            assert time.time() < deadline, "no %s within %ds; state %s" % (what, DEADLINE, self.state())
            time.sleep(0.2)

    def smi_calls(self):
        calls = self.smi / "calls"
        return calls.read_text().splitlines() if calls.exists() else []

    def log_kernel(self, *lines):
        with open(self.kernel, "a") as handle:
            handle.write("".join(line + "\n" for line in lines))

    def close(self):
        self.proc.terminate()
        return self.proc.communicate(timeout=30)[0]


@pytest.fixture
def host(tmp_path, nvml_lib):
    made = []

    def start(**options):
        made.append(Host(tmp_path, nvml_lib, **options))
        return made[-1]
    yield start
    for each in made:
        each.close()


def test_a_draining_xid_takes_exactly_its_gpu_out_until_the_driver_says_none(host):
    h = host()
    nvml.inject(h.events, nvml.set_keys(0, recovery_action=1), nvml.xid(0, 48))
    h.until(lambda: h.state()[UUIDS[0]]["needs"] == "reset", "drain on XID 48")
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[0]], "stop of the first instance")
    assert h.state()[UUIDS[1]]["healthy"]
    time.sleep(2)  # past settle_s and hold_s's first turns: the driver still asks for a reset
    assert not h.state()[UUIDS[0]]["healthy"]
    nvml.inject(h.events, nvml.set_keys(0, recovery_action=0))
    h.until(lambda: h.state()[UUIDS[0]]["healthy"], "the gate to open")
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[0], "start --no-block " + UNITS[0]], "the start")
    log = h.close()
    assert "stop %s: XID 48 (Double-bit ECC error) from nvml: needs reset" % UNITS[0] in log
    assert "start %s: back: the driver reports recovery action none" % UNITS[0] in log


def test_a_kernel_xid_line_and_a_lost_gpu_hold_it_out_until_nvml_answers_and_the_hold_passes(host):
    h = host()
    bus = nvml.resolved(GPUS)[1]["pci_bus_id"]  # 00000000:28:00.0, as the driver writes it: 0000:28:00
    nvml.inject(h.events, nvml.set_keys(1, lost=1))
    h.log_kernel("4,1893,269516977,-;NVRM: Xid (PCI:0000:%s): 79, GPU has fallen off the bus." % bus[9:14])
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[1]], "stop of the second instance")
    h.until(lambda: h.state()[UUIDS[1]]["needs"] == "reboot", "a reboot asked for")
    time.sleep(4)  # past hold_s: NVML does not answer, the GPU stays out
    assert not h.state()[UUIDS[1]]["healthy"]
    nvml.inject(h.events, nvml.set_keys(1, lost=0))
    h.until(lambda: h.actions()[-1] == "start --no-block " + UNITS[1], "the start")
    assert h.state()[UUIDS[1]]["healthy"]


def test_a_gpu_lost_without_an_event_is_found_by_the_poll(host):
    h = host()
    nvml.inject(h.events, nvml.set_keys(0, lost=1))
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[0]], "stop of the lost GPU's instance")
    assert h.state()[UUIDS[0]]["reason"].startswith("the GPU lost"), "the state is written before the stop"


def test_application_errors_and_a_flood_change_nothing(host):
    h = host()
    nvml.inject(h.events, [nvml.xid(0, x) for x in (13, 31, 43, 45, 68, 109, 94)] * 20)
    h.log_kernel(*["NVRM: Xid (PCI:0000:18:00): 13, pid=7, Graphics SM Warp Exception"] * 200)
    h.until(lambda: h.state().get(UUIDS[0], {}).get("xids", {}).get("application") == 7, "7 application faults")
    time.sleep(1)
    state = h.state()
    assert state[UUIDS[0]]["xids"]["application"] == 7, "a flood of one XID counts once, from both sources"
    assert (state[UUIDS[0]]["healthy"], state[UUIDS[1]]["healthy"]) == (True, True)
    assert h.actions() == []


def test_a_restarted_watcher_remembers_the_instance_it_stopped(host):
    h = host(**{"--hold-s": 600})
    nvml.inject(h.events, nvml.xid(1, 119))
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[1]], "stop on XID 119")
    h.close()
    again = host(**{"--hold-s": 0})
    again.until(lambda: again.actions()[-1] == "start --no-block " + UNITS[1], "the start")


def metric(h, name, **labels):
    with open(str(h.tmp / "m.prom")) as handle:
        text = handle.read()
    return [s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def test_the_docs_drill_runs_as_written(host):
    with open(os.path.join(REPO, "docs", "health.md")) as handle:
        blocks = re.findall(r"^```sh\n(.*?)^```", handle.read(), re.M | re.S)
    assert len(blocks) == 3
    h = host()

    def run(block):
        subprocess.run(["sh", "-c", block], env=dict(os.environ, SIMULATED_NVML_EVENTS=h.events), check=True)
    run(blocks[0])
    h.until(lambda: h.actions() == ["stop --no-block " + UNITS[0]], "the drill's stop")
    h.until(lambda: metric(h, "gpufleet_exo_gpu_healthy", gpu=UUIDS[0]) == [0], "the metric of a GPU held out")
    assert metric(h, "gpufleet_exo_gpu_needs", gpu=UUIDS[0], action="reset") == [1]
    run(blocks[1])
    h.until(lambda: h.actions()[-1] == "start --no-block " + UNITS[0], "the drill's start")
    h.until(lambda: h.state()[UUIDS[0]]["healthy"], "the GPU back")
    run(blocks[2])
    h.until(lambda: h.state()[UUIDS[0]]["xids"]["application"] == 1, "the application error, counted once")
    assert len(h.actions()) == 2 and h.state()[UUIDS[0]]["healthy"]


def test_the_cost_benchmark_reports_its_figures():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "health_watcher.py"), "--seconds", "1",
                           "--gpus", "2"], stdout=subprocess.PIPE, universal_newlines=True, check=True, timeout=120)
    figures = json.loads(proc.stdout)
    assert sorted(figures) == ["cpu_percent_of_one_core", "gpus", "peak_rss_mib", "rss_mib", "seconds"]
    assert figures["gpus"] == 2 and figures["rss_mib"] > 0


def test_only_the_gpus_given_are_watched(host):
    h = host(**{"--gpus": UUIDS[1]})
    assert sorted(h.state()) == [UUIDS[1]]
    nvml.inject(h.events, nvml.xid(0, 48), nvml.xid(1, 13))
    h.until(lambda: h.state()[UUIDS[1]]["xids"]["application"] == 1, "the second GPU's fault")
    assert h.actions() == [] and sorted(h.state()) == [UUIDS[1]]


def test_a_reset_where_allowed_brings_the_gpu_back_with_persistence_handled(host):
    h = host(**{"--reset": True, "--hold-s": 600})
    bus = nvml.resolved(GPUS)[0]["pci_bus_id"]
    nvml.inject(h.events, nvml.set_keys(0, recovery_action=1), nvml.xid(0, 48))
    h.until(lambda: h.actions()[-1:] == ["start --no-block " + UNITS[0]], "the start after the reset")
    assert h.actions() == ["stop --no-block " + UNITS[0], "start --no-block " + UNITS[0]]
    assert h.smi_calls() == ["-i %s -pm 0" % bus, "-r -i %s" % bus, "-i %s -pm 1" % bus]
    assert h.state()[UUIDS[0]]["healthy"] and len(h.state()[UUIDS[0]]["resets"]) == 1
    # the breaker: one reset a GPU an hour; the next fault stays out, reported
    nvml.inject(h.events, nvml.set_keys(0, recovery_action=1), nvml.xid(0, 95))
    h.until(lambda: (h.state()[UUIDS[0]].get("remedy") or "").endswith("reset_per_gpu_per_hour reached"),
            "the breaker's refusal")
    assert len(h.smi_calls()) == 3 and not h.state()[UUIDS[0]]["healthy"]
    assert metric(h, "gpufleet_exo_gpu_breaker_open", gpu=UUIDS[0]) == [1]
    assert metric(h, "gpufleet_exo_gpu_resets_last_hour", gpu=UUIDS[0]) == [1]


def test_a_hung_reset_is_given_up_on_and_the_gpu_reported_for_a_reboot(host):
    h = host(**{"--reset": True, "--hold-s": 600, "--reset-timeout-s": 1})
    (h.smi / "hang").write_text("")
    nvml.inject(h.events, nvml.xid(1, 48))
    h.until(lambda: h.state()[UUIDS[1]]["needs"] == "reboot", "a reboot asked for after the hung reset")
    assert h.state()[UUIDS[1]]["reason"].startswith("the reset failed (reset: ")
    assert h.actions() == ["stop --no-block " + UNITS[1]]
    # the watcher still watches: the other GPU's fault drains it too
    nvml.inject(h.events, nvml.xid(0, 13))
    h.until(lambda: h.state()[UUIDS[0]]["xids"]["application"] == 1, "a fault seen after the reset")


def test_without_reset_the_gpu_is_never_reset(host):
    h = host(**{"--hold-s": 600})
    nvml.inject(h.events, nvml.set_keys(0, recovery_action=1), nvml.xid(0, 48))
    h.until(lambda: (h.state()[UUIDS[0]].get("remedy") or "") == "not reset: resets are off (exo_node_health_reset)",
            "the refusal")
    assert h.smi_calls() == []
