# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watcher's loop: NVML's events and the kernel's XID lines in, decide.step, systemctl and the
two files out. Everything it decides is in decide.py; this file only reads, waits and writes.

It is a program of its own, not a module: there is no AnsibleModule to run commands or log through,
hence the subprocess calls and prints that pylint's ansible-bad-function is told to allow.

Two threads feed one queue: one waits in nvmlEventSetWait_v2 (a second at a time, so that it sees
the stop), one follows the kernel's log. The main thread takes the queue every `tick_s`, asks NVML
about the GPUs it holds out, and every `poll_s` about the others (a GPU can be lost without an
event) and about the instances' units.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import ctypes
import json
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

from . import decide, kernel, report
from ..probe import _nvml, health

NVML_TIMEOUT = 10  # NVML_ERROR_TIMEOUT: nvmlEventSetWait_v2 found no event
RECOVERY_ACTION_FIELD = 230  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
WAIT_MS = 1000


class Nvml:
    """The GPUs NVML lists, their events, and what NVML answers about one of them now."""

    def __init__(self, pynvml):
        self.nvml = pynvml
        pynvml.nvmlInit()
        self.handles, self.gpus, self.by_address = {}, [], {}
        for index in range(pynvml.nvmlDeviceGetCount()):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                uuid = _nvml._text(pynvml.nvmlDeviceGetUUID(handle))
                bus_id = _nvml._text(pynvml.nvmlDeviceGetPciInfo(handle).busId)
            except pynvml.NVMLError as exc:
                _log("GPU %d: not watched, NVML does not answer for it: %s" % (index, exc))
                continue
            self.handles[uuid] = handle
            # An event names its GPU by handle; a lost GPU no longer answers for its UUID.
            self.by_address[ctypes.cast(handle, ctypes.c_void_p).value] = uuid
            self.gpus.append({"uuid": uuid, "index": index, "pci_bus_id": bus_id})
        self.kinds = (
            (pynvml.nvmlEventTypeXidCriticalError, "xid"),
            (pynvml.nvmlEventTypeDoubleBitEccError, "ecc_double_bit"),
            (getattr(pynvml, "nvmlEventTypeGpuUnavailableError", 0), "lost"),
        )
        self.events = pynvml.nvmlEventSetCreate()
        self.registered = dict((uuid, self._register(handle)) for uuid, handle in self.handles.items())

    def _register(self, handle):
        """Whether the GPU's events reach the watcher: parts and drivers without them answer
        NOT_SUPPORTED, and then only the kernel's lines tell of its XIDs."""
        try:
            wanted = sum(mask for mask, dummy in self.kinds)
            supported = self.nvml.nvmlDeviceGetSupportedEventTypes(handle) & wanted
            if supported:
                self.nvml.nvmlDeviceRegisterEvents(handle, supported, self.events)
            return bool(supported)
        except self.nvml.NVMLError:
            return False

    def wait(self):
        """The next fault NVML reports, or None after WAIT_MS without one."""
        try:
            data = self.nvml.nvmlEventSetWait_v2(self.events, WAIT_MS)
        except self.nvml.NVMLError as exc:
            if exc.value != NVML_TIMEOUT:
                time.sleep(WAIT_MS / 1000.0)  # an event set that fails keeps failing: do not spin
            return None
        kind = next((name for mask, name in self.kinds if mask and data.eventType & mask), None)
        uuid = self.by_address.get(ctypes.cast(data.device, ctypes.c_void_p).value)
        if kind is None or uuid is None:
            return None
        fault = {"gpu": uuid, "kind": kind, "source": "nvml"}
        if kind == "xid":
            fault["xid"] = int(data.eventData)
        return fault

    def recovery_action(self, handle):
        try:
            value = self.nvml.nvmlDeviceGetFieldValues(handle, [RECOVERY_ACTION_FIELD])[0]
        except (self.nvml.NVMLError, AttributeError):
            return None  # an older driver or nvidia-ml-py: the gate falls back to the hold time
        return value.value.uiVal if value.nvmlReturn == 0 else None

    def answer(self, uuid):
        """What the health gate reads: does NVML answer, the probe's verdict, the recovery action."""
        session = _nvml._Session(self.nvml)
        handle = self.handles[uuid]
        facts = health.shape(health.query(session, "GPU %s " % uuid, handle))
        answers = session.call("", "nvmlDeviceGetPciInfo", handle) is not None and not facts["lost"]
        return {"answers": answers, "verdict": facts["verdict"] if answers else None,
                "recovery_action": self.recovery_action(handle) if answers else None}

    def lost(self, uuid):
        """A cheap liveness check of a serving GPU: a GPU off the bus answers GPU_IS_LOST."""
        try:
            self.nvml.nvmlDeviceGetPciInfo(self.handles[uuid])
        except self.nvml.NVMLError as exc:
            return exc.value == _nvml.GPU_LOST
        return False


def _follow_file(path, put, stop):
    """A regular file or FIFO, as tail -f follows it: for tests and staging (docs/health.md)."""
    with open(path, "r") as handle:
        if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            handle.seek(0, os.SEEK_END)
        while not stop.is_set():
            line = handle.readline()
            if line:
                put(line)
            else:
                time.sleep(0.5)


def _follow_kmsg(path, put, stop):
    """/dev/kmsg from its end: each read returns one record. Without it (a container), NVML's
    events are all the watcher sees."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        _log("the kernel's XID lines are not read: %s" % exc)
        return
    os.lseek(fd, 0, os.SEEK_END)
    while not stop.is_set():
        try:
            put(os.read(fd, 8192).decode("utf-8", "replace"))
        except OSError:  # EPIPE: records overwritten before they were read; go on from the next
            continue


def _follow_journal(dummy_path, put, stop):
    proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
        ["journalctl", "--dmesg", "--follow", "--lines=0", "--output=cat"], stdout=subprocess.PIPE, universal_newlines=True)
    for line in proc.stdout:
        if stop.is_set():
            break
        put(line)
    proc.terminate()


KERNEL_SOURCES = {"kmsg": (_follow_kmsg, "/dev/kmsg"), "journal": (_follow_journal, None)}


def kernel_reader(source):
    """(function, path) for --kernel: kmsg, journal, none, or file:PATH."""
    if source == "none":
        return None
    if source.startswith("file:"):
        return _follow_file, source[len("file:"):]
    return KERNEL_SOURCES[source]


def _write(path, text):
    """Atomically, so that node_exporter and the facts never read half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(partial, 0o644)
    os.replace(partial, path)


def _load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _log(message):
    print(message, flush=True)  # pylint: disable=ansible-bad-function # stdout is the journal under systemd


class Watcher:
    def __init__(self, opts, nvml):
        self.opts, self.nvml = opts, nvml
        self.settings = {"flood_window_s": opts.flood_window_s, "hold_s": opts.hold_s,
                         "settle_s": opts.settle_s, "unit": opts.unit}
        # The GPUs the node role gave instances (--gpus), else all.
        watched = [g for g in nvml.gpus if not opts.gpus or g["uuid"] in opts.gpus]
        listed = dict((g["uuid"], decide.new_gpu(g["uuid"], g["pci_bus_id"], g["index"])) for g in watched)
        self.gpus = report.restore(_load(opts.state), listed)
        self.units = dict((u, decide.unit(g, self.settings)) for u, g in self.gpus.items())
        self.faults = queue.Queue()
        self.stop = threading.Event()
        self.polled = 0

    def systemctl(self, *args):
        return subprocess.run(  # pylint: disable=ansible-bad-function
            [self.opts.systemctl] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            check=False)

    def refresh_instances(self):
        names = [self.units[u] for u in sorted(self.gpus)]
        states = self.systemctl("is-active", *names).stdout.split() if names else []
        for uuid, active in zip(sorted(self.gpus), states):
            self.gpus[uuid] = dict(self.gpus[uuid], instance=active)

    def act(self, actions):
        for action in actions:
            done = self.systemctl(action["verb"], "--no-block", action["unit"])
            _log("gpu %s: %s %s: %s%s" % (action["gpu"], action["verb"], action["unit"], action["reason"],
                                          "" if done.returncode == 0 else " (systemctl failed: %s)" % done.stderr.strip()))

    def publish(self, now):
        _write(self.opts.state, report.state_json(self.gpus, now))
        _write(self.opts.metrics, report.metrics(self.gpus, now, self.units, self.nvml.registered))

    def turn(self, now, polling):
        faults = []
        while not self.faults.empty():
            faults.append(self.faults.get_nowait())
        if polling:
            faults += [{"gpu": u, "kind": "lost", "source": "nvml"} for u, g in self.gpus.items()
                       if g["healthy"] and self.nvml.lost(u)]
        answers = dict((u, self.nvml.answer(u)) for u, g in self.gpus.items() if not g["healthy"])
        before = self.gpus
        self.gpus, actions = decide.step(self.gpus, faults, answers, now, self.settings)
        # On disk before it is carried out: a watcher that dies between the two still knows, once
        # restarted, which instance it stopped.
        if polling or actions or self.gpus != before:
            self.publish(now)
        self.act(actions)
        if actions or polling:
            self.refresh_instances()
            self.publish(now)

    def _feed_nvml(self):
        while not self.stop.is_set():
            fault = self.nvml.wait()
            if fault is not None:
                self.faults.put(fault)

    def _feed_kernel(self, reader):
        by_bus = kernel.gpu_by_bus(self.nvml.gpus)

        def put(line):
            fault = kernel.fault(line, by_bus)
            if fault is not None:
                self.faults.put(fault)
        follow, path = reader
        follow(path, put, self.stop)

    def run(self):
        threading.Thread(target=self._feed_nvml, daemon=True).start()
        reader = kernel_reader(self.opts.kernel)
        if reader is not None:
            threading.Thread(target=self._feed_kernel, args=(reader,), daemon=True).start()
        self.refresh_instances()
        while not self.stop.is_set():
            now = time.time()
            polling = now - self.polled >= self.opts.poll_s
            self.polled = now if polling else self.polled
            self.turn(now, polling)
            self.stop.wait(self.opts.tick_s)


def options(argv):
    parser = argparse.ArgumentParser(prog="gpufleet-exo-health", description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--state", default="/run/gpufleet-exo-health/state.json")
    parser.add_argument("--metrics", default="/var/lib/prometheus/node-exporter/gpufleet_exo_health.prom")
    parser.add_argument("--kernel", default="kmsg", help="kmsg, journal, none, or file:PATH")
    parser.add_argument("--systemctl", default="systemctl")
    parser.add_argument("--unit", default=decide.DEFAULTS["unit"])
    parser.add_argument("--gpus", type=lambda text: [u for u in text.split(",") if u], default=[],
                        help="the UUIDs of the GPUs to watch, comma-separated; all by default")
    parser.add_argument("--tick-s", type=float, default=1.0)
    parser.add_argument("--poll-s", type=float, default=30.0)
    for name in ("flood_window_s", "hold_s", "settle_s"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=decide.DEFAULTS[name])
    parser.add_argument("--once", action="store_true", help="look once, write the files and exit")
    opts = parser.parse_args(argv)
    if opts.kernel not in KERNEL_SOURCES and opts.kernel != "none" and not opts.kernel.startswith("file:"):
        parser.error("--kernel %r: use kmsg, journal, none or file:PATH" % opts.kernel)
    return opts


def main(argv=None):
    opts = options(sys.argv[1:] if argv is None else argv)
    import pynvml  # only here: the decisions and their tests need no NVML
    watcher = Watcher(opts, Nvml(pynvml))
    signal.signal(signal.SIGTERM, lambda *dummy: watcher.stop.set())
    if opts.once:
        watcher.refresh_instances()
        watcher.turn(time.time(), True)
        return 0
    _log("watching %d GPUs (NVML events on %d); metrics in %s" % (
        len(watcher.gpus), sum(watcher.nvml.registered.values()), opts.metrics))
    watcher.run()
    return 0
