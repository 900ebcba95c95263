# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run risky probe stages in child processes, each with a deadline.

A driver call can block in the kernel for minutes when a GPU falls off the bus, and a broken
library can segfault. Each stage therefore runs in its own child process; the parent waits for
all of them at once and abandons a child that misses the deadline (SIGKILL, never a blocking
wait: a child in uninterruptible sleep cannot be reaped until the kernel lets go of it). Such a
child is recorded in a state directory; while it lives, later runs do not start that stage again
beside it, they report it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import faulthandler
import json
import os
import select
import signal
import time


# Where root's probe records the stages it abandoned: a tmpfs, emptied by the reboot that frees them.
STATE_DIR = "/run/gpufleet-exo/stages"


class Stage:
    """A stage is either a function forked from this process or a command to execute.

    A function returns a JSON-serialisable value. A command prints one JSON value on stdout.
    """

    def __init__(self, func=None, argv=None, env=None):
        if (func is None) == (argv is None):
            raise ValueError("a Stage needs exactly one of func or argv")
        self.func = func
        self.argv = argv
        self.env = env


class Outcome:
    """What a stage gave back: `value` when it succeeded, else `kind` and `message`."""

    def __init__(self, value=None, kind=None, message=None, elapsed_ms=0.0):
        self.value = value
        self.kind = kind
        self.message = message
        self.elapsed_ms = elapsed_ms

    @property
    def ok(self):
        return self.kind is None


def _start(stage):
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(write_fd)
        return pid, read_fd
    try:  # child
        os.close(read_fd)
        # Nothing a library prints may reach the module's stdout, which carries its JSON result.
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # A crash here is reported by the parent; a fault handler would write past the redirection.
        faulthandler.disable()
        # Its own session, so that a timeout kills whatever the stage started too.
        os.setsid()
        if stage.argv is not None:
            os.dup2(write_fd, 1)
            try:
                os.execve(stage.argv[0], stage.argv, stage.env if stage.env is not None else os.environ)
            except OSError as exc:
                payload = {"error": "cannot run %s: %s" % (stage.argv[0], exc)}
        else:
            try:
                payload = {"value": stage.func()}
            except BaseException as exc:  # pylint: disable=broad-except
                payload = {"error": "%s: %s" % (type(exc).__name__, exc)}
        data = json.dumps(payload).encode("utf-8")
        while data:
            data = data[os.write(write_fd, data):]
        # The answer is complete: the parent has it now, not once the exit has released every file
        # and mapping (a driver's file may take long to release).
        os.close(write_fd)
    finally:
        os._exit(0)


def _describe_exit(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "signal %d" % sig
        return "crash", "stage process died from %s" % name
    return "error", "stage process exited with status %d and no result" % os.WEXITSTATUS(status)


# Children that gave their answer and were still exiting: reaped at the next run, never waited for.
_EXITING = []


def _reap_exiting():
    for pid in list(_EXITING):
        if _reap(pid, patience=0) is not None:
            _EXITING.remove(pid)


def _reap(pid, patience=0.2):
    """Collect a finished child's exit status without ever blocking for long."""
    end = time.monotonic() + patience
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= end:
            return None
        # The pipe's end comes a moment before the exit status: a short wait, not a scheduler tick.
        time.sleep(0.0005)


def _finish(stage, raw, status, elapsed_ms):
    if raw:
        try:
            payload = json.loads(raw.decode("utf-8"))
        except ValueError:
            return Outcome(kind="error", message="stage wrote output that is not JSON: %r" % raw[:200],
                           elapsed_ms=elapsed_ms)
        if stage.argv is not None and not (isinstance(payload, dict) and set(payload) == {"error"}):
            return Outcome(value=payload, elapsed_ms=elapsed_ms)
        if "error" in payload:
            return Outcome(kind="error", message=payload["error"], elapsed_ms=elapsed_ms)
        return Outcome(value=payload["value"], elapsed_ms=elapsed_ms)
    if status is None:
        return Outcome(kind="error", message="stage process closed its output without a result",
                       elapsed_ms=elapsed_ms)
    kind, message = _describe_exit(status)
    return Outcome(kind=kind, message=message, elapsed_ms=elapsed_ms)


def _start_time(pid):
    """The kernel's start time of a live process (field 22 of /proc/PID/stat), which a reused pid does not share."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, TypeError, ValueError):
        return None


def _abandoned(state_dir, name):
    """The record of this stage's child that an earlier run abandoned, while that child lives; else None."""
    path = os.path.join(state_dir, name + ".json")
    try:
        with open(path) as handle:
            record = json.load(handle)
        if _start_time(record["pid"]) == record["start_time"]:
            return record
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        os.unlink(path)
    except OSError:
        pass
    return None


def _record(state_dir, name, pid):
    try:
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        path = os.path.join(state_dir, name + ".json")
        with open(path + ".new", "w") as handle:
            json.dump({"pid": pid, "start_time": _start_time(pid), "abandoned": time.time()}, handle)
        os.rename(path + ".new", path)
    except OSError:
        pass  # a record is a courtesy to the next run; this run's answer stands without it


def run_stages(stages, timeout, state_dir=None):
    """Run every stage of `stages` (name -> Stage) at once; return name -> Outcome.

    Returns within `timeout` seconds plus a few milliseconds whatever the stages do. With
    `state_dir`, a stage whose child an earlier run abandoned is not started while that child lives
    (its outcome is a timeout that says so), and a child abandoned now is recorded there.
    """
    started = time.monotonic()
    deadline = started + timeout
    _reap_exiting()
    running = {}  # read fd -> (name, pid, chunks)
    outcomes = {}
    for name, stage in stages.items():
        record = _abandoned(state_dir, name) if state_dir else None
        if record:
            outcomes[name] = Outcome(kind="timeout", message=(
                "not started: the child an earlier run abandoned at %s (pid %d) still runs, likely stuck in "
                "the kernel; it ends with the device's reset or a reboot"
                % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record["abandoned"])), record["pid"])))
            continue
        try:
            pid, fd = _start(stage)
        except OSError as exc:
            outcomes[name] = Outcome(kind="error", message="could not start stage: %s" % exc)
            continue
        running[fd] = (name, pid, [])

    while running:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready = select.select(list(running), [], [], left)[0]
        for fd in ready:
            name, pid, chunks = running[fd]
            data = os.read(fd, 65536)
            if data:
                chunks.append(data)
                continue
            os.close(fd)
            del running[fd]
            elapsed = (time.monotonic() - started) * 1000.0
            raw = b"".join(chunks)
            # With an answer the exit status says nothing more: the child is reaped if it is gone already.
            status = _reap(pid, patience=0 if raw else 0.2)
            if status is None and raw:
                _EXITING.append(pid)
            outcomes[name] = _finish(stages[name], raw, status, elapsed)

    for fd, (name, pid, _chunks) in running.items():
        # Kill the whole session: a command stage may have children of its own.
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(fd)
        if _reap(pid, patience=0.05) is None and state_dir:
            _record(state_dir, name, pid)
        outcomes[name] = Outcome(kind="timeout", message="no answer within %.1f s; stage abandoned" % timeout,
                                 elapsed_ms=(time.monotonic() - started) * 1000.0)
    return outcomes
