# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import signal
import sys
import time

import pytest

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
    started = time.monotonic()
    outcomes = run_stages({"hang": Stage(func=hang), "quick": Stage(func=lambda: "done")}, 1.0)
    assert time.monotonic() - started < 1.0 + MARGIN
    assert outcomes["hang"].kind == "timeout"
    assert outcomes["quick"].value == "done"


def test_command_stage_and_its_children_are_killed_at_the_deadline(tmp_path):
    marker = tmp_path / "child.pid"
    script = "echo $$ > %s; sleep 600 & wait" % marker
    outcome = run_stages({"cmd": Stage(argv=["/bin/sh", "-c", script])}, 1.0)["cmd"]
    assert outcome.kind == "timeout"
    pid = int(marker.read_text())
    time.sleep(0.2)
    with pytest.raises(OSError):
        os.kill(pid, 0)  # the shell is gone, killed with its session


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
