# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _deadline
from ansible_collections.gpufleet.exo.plugins.module_utils.probe._deadline import Stage, run_stages

# Generous: the host is shared and noisy; this only proves the stage was abandoned, not speed.
MARGIN = 5.0


def test_value_comes_back_and_stdout_noise_is_kept_out():
    def noisy():
        print("library chatter")
        os.write(1, b"more chatter from C\n")
        return {"answer": 42}
    outcome = run_stages({"s": Stage(func=noisy)}, 10)["s"]
    assert outcome.ok and outcome.value == {"answer": 42}


def test_exception_costs_only_the_stage():
    def broken():
        raise RuntimeError("library exploded")
    outcomes = run_stages({"bad": Stage(func=broken), "good": Stage(func=lambda: 1)}, 10)
    assert outcomes["bad"].kind == "error" and "library exploded" in outcomes["bad"].message
    assert outcomes["good"].value == 1


def test_segfault_is_reported_as_crash():
    outcome = run_stages({"s": Stage(func=lambda: os.kill(os.getpid(), signal.SIGSEGV))}, 10)["s"]
    assert outcome.kind == "crash" and "SIGSEGV" in outcome.message


def test_hung_stage_is_abandoned_within_the_deadline():
    def hang():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
    # Long enough for the quick stage's child to end under load (the matrix runs this suite at nice 19
    # beside a scenario: a 1 s deadline once abandoned it too).
    deadline = 5.0
    started = time.monotonic()
    outcomes = run_stages({"hang": Stage(func=hang), "quick": Stage(func=lambda: "done")}, deadline)
    assert time.monotonic() - started < deadline + MARGIN
    assert outcomes["hang"].kind == "timeout"
    assert outcomes["quick"].value == "done"


def test_command_stage_and_its_children_are_killed_at_the_deadline(tmp_path):
    marker = tmp_path / "child.pid"
    script = "echo $$ > %s; sleep 600 & wait" % marker
    # 5 s: the shell must have written its pid before the deadline, under load too.
    outcome = run_stages({"cmd": Stage(argv=["/bin/sh", "-c", script])}, 5.0)["cmd"]
    assert outcome.kind == "timeout"
    pid = int(marker.read_text())
    # The shell is killed with its session: gone, or dead and not yet reaped. On a loaded machine at nice 19
    # (the matrix runs this suite beside serve) its end can take more than a moment to show.
    end = time.monotonic() + 10
    while not dead(pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert dead(pid)


def dead(pid):
    """Whether the process is gone or a zombie (killed, its parent not yet told)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def test_command_stage_prints_json():
    argv = [sys.executable, "-c", "import json; print(json.dumps({'backend': 'CPU'}))"]
    assert run_stages({"cmd": Stage(argv=argv)}, 10)["cmd"].value == {"backend": "CPU"}


def test_missing_command_is_an_error_not_an_exception():
    outcome = run_stages({"cmd": Stage(argv=["/nonexistent/python"])}, 10)["cmd"]
    assert outcome.kind == "error" and "/nonexistent/python" in outcome.message


def test_garbage_output_is_an_error():
    outcome = run_stages({"cmd": Stage(argv=["/bin/echo", "not json"])}, 10)["cmd"]
    assert outcome.kind == "error" and "not JSON" in outcome.message


def test_stage_needs_func_or_argv():
    with pytest.raises(ValueError):
        Stage()


def test_a_stage_whose_abandoned_child_still_runs_is_not_started_again(tmp_path):
    # A live process stands for a child stuck in the kernel: the record names its pid and start time.
    stuck = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "nvml.json").write_text(json.dumps({"pid": stuck.pid, "start_time": _deadline._start_time(stuck.pid),
                                                        "abandoned": 1795550000.0}))
        marker = tmp_path / "started"
        outcome = run_stages({"nvml": Stage(func=lambda: marker.write_text("x"))}, 10, str(tmp_path))["nvml"]
        assert not marker.exists()
        assert outcome.kind == "timeout" and outcome.message.startswith(
            "not started: the child an earlier run abandoned at 2026-11-24T19:53:20Z (pid %d) still runs" % stuck.pid)
    finally:
        stuck.kill()
        stuck.wait()
    # Once it is gone the stage runs again, and its record goes.
    assert run_stages({"nvml": Stage(func=lambda: 1)}, 10, str(tmp_path))["nvml"].value == 1
    assert not (tmp_path / "nvml.json").exists()


def test_a_pid_reused_by_another_process_is_not_the_abandoned_child(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"pid": os.getpid(), "start_time": "1", "abandoned": 0}))
    assert run_stages({"s": Stage(func=lambda: 1)}, 10, str(tmp_path))["s"].value == 1


def test_a_child_that_outlives_its_kill_is_recorded(tmp_path, monkeypatch):
    # Simulated: the kernel does not release the killed child (a driver call in uninterruptible sleep).
    monkeypatch.setattr(_deadline, "_reap", lambda pid, patience=0.2: None)
    outcome = run_stages({"tinygrad": Stage(func=lambda: time.sleep(30))}, 0.5, str(tmp_path / "state"))["tinygrad"]
    assert outcome.kind == "timeout"
    record = json.loads((tmp_path / "state" / "tinygrad.json").read_text())
    assert set(record) == {"pid", "start_time", "abandoned"} and record["pid"] > 0
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o700"
    os.kill(record["pid"], signal.SIGKILL)
    os.waitpid(record["pid"], 0)


def test_children_that_answered_are_reaped_without_a_wait():
    # The parent takes a child's answer when its pipe closes and reaps the child if it is gone already;
    # one still exiting is reaped by a later run, so none is left a zombie.
    pids = [run_stages({"s": Stage(func=os.getpid)}, 10)["s"].value for dummy in range(5)]
    end = time.monotonic() + 10
    while _deadline._EXITING and time.monotonic() < end:
        run_stages({}, 0)
        time.sleep(0.01)
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
