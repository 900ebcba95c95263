# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run risky probe stages in child processes, each with a deadline.

A driver call can block in the kernel for minutes when a GPU falls off the bus, and a broken
library can segfault. Each stage therefore runs in its own child process; the parent waits for
all of them at once and abandons a child that misses the deadline (SIGKILL, never a blocking
wait: a child in uninterruptible sleep cannot be reaped until the kernel lets go of it).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import faulthandler
import json
import os
import select
import signal
import time


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
        time.sleep(0.005)


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


def run_stages(stages, timeout):
    """Run every stage of `stages` (name -> Stage) at once; return name -> Outcome.

    Returns within `timeout` seconds plus a few milliseconds whatever the stages do.
    """
    started = time.monotonic()
    deadline = started + timeout
    running = {}  # read fd -> (name, pid, chunks)
    outcomes = {}
    for name, stage in stages.items():
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
            outcomes[name] = _finish(stages[name], b"".join(chunks), _reap(pid), elapsed)

    for fd, (name, pid, _chunks) in running.items():
        # Kill the whole session: a command stage may have children of its own.
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.close(fd)
        _reap(pid, patience=0.05)
        outcomes[name] = Outcome(kind="timeout", message="no answer within %.1f s; stage abandoned" % timeout,
                                 elapsed_ms=(time.monotonic() - started) * 1000.0)
    return outcomes
