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
        self.handles, self.gpus, self.by_address, self.architectures = {}, [], {}, {}
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
            self.architectures[uuid] = self._optional(pynvml.nvmlDeviceGetArchitecture, handle)
        self.kinds = (
            (pynvml.nvmlEventTypeXidCriticalError, "xid"),
            (pynvml.nvmlEventTypeDoubleBitEccError, "ecc_double_bit"),
            (getattr(pynvml, "nvmlEventTypeGpuUnavailableError", 0), "lost"),
        )
        self.events = pynvml.nvmlEventSetCreate()
        self.registered = dict((uuid, self._register(handle)) for uuid, handle in self.handles.items())

    def _optional(self, function, handle):
        try:
            return function(handle)
        except self.nvml.NVMLError:
            return None

    def persistent(self, uuid):
        """Whether persistence mode is on: it holds the GPU, and a reset is refused until it is off."""
        handle = self.handles.get(uuid)
        return handle is not None and self._optional(self.nvml.nvmlDeviceGetPersistenceMode, handle) == 1

    def close(self):
        """Let go of every GPU: nvidia-smi refuses to reset a GPU that a monitoring client holds."""
        try:
            self.nvml.nvmlEventSetFree(self.events)
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError as exc:
            _log("NVML did not shut down cleanly before a reset: %s" % exc)

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
        handle = self.handles.get(uuid)
        if handle is None:  # not found again after a reset
            return {"answers": False, "verdict": None, "recovery_action": None}
        facts = health.shape(health.query(session, "GPU %s " % uuid, handle))
        answers = session.call("", "nvmlDeviceGetPciInfo", handle) is not None and not facts["lost"]
        return {"answers": answers, "verdict": facts["verdict"] if answers else None,
                "recovery_action": self.recovery_action(handle) if answers else None}

    def lost(self, uuid):
        """A cheap liveness check of a serving GPU: a GPU off the bus answers GPU_IS_LOST."""
        if uuid not in self.handles:
            return True
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


# The decisions' settings that the command line sets (decide.DEFAULTS).
SETTINGS = ("flood_window_s", "hold_s", "settle_s", "unit", "max_out_share", "reset", "reset_per_gpu_per_hour",
            "reset_per_host_per_hour", "reset_timeout_s", "nvidia_smi")
FABRIC_MANAGER = "nvidia-fabricmanager.service"

KERNEL_SOURCES = {"kmsg": (_follow_kmsg, "/dev/kmsg"), "journal": (_follow_journal, None)}


def kernel_reader(source):
    """(function, path) for --kernel: kmsg, journal, none, or file:PATH."""
    if source == "none":
        return None
    if source.startswith("file:"):
        return _follow_file, source[len("file:"):]
    return KERNEL_SOURCES[source]


# The metrics go to node_exporter's textfile directory, which another user may own: that user can
# swap root's new file for a link at any moment. So root opens the directory once, without following
# a link, and reaches the file only through that descriptor and the file's own: it creates the file
# (O_EXCL, O_NOFOLLOW), sets its mode (fchmod, never chmod by path) and renames it there.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_MODE = 0o644  # node_exporter reads the metrics as its own user
NAME_TRIES = 10


def _temp_name(name):
    """The name of the file before its rename: new each time, so the directory's owner cannot plant it."""
    return ".%s.%s" % (name, os.urandom(8).hex())


def _write(path, text):
    """Atomically, so that node_exporter and the facts never read half a file; by descriptor, so that
    root writes and changes the mode of its own new file only, whatever the directory's owner plants."""
    directory, name = os.path.split(os.path.abspath(path))
    dir_fd = os.open(directory, DIR_FLAGS)
    try:
        for dummy in range(NAME_TRIES):
            temp = _temp_name(name)
            try:
                fd = os.open(temp, NEW_FLAGS, FILE_MODE, dir_fd=dir_fd)
                break
            except FileExistsError:  # taken, a link planted there among others: never opened, another name
                continue
        else:
            raise FileExistsError("%s: %d new names for the file were all taken" % (directory, NAME_TRIES))
        try:
            with os.fdopen(fd, "w") as handle:
                os.fchmod(fd, FILE_MODE)  # whatever the umask
                handle.write(text)
                handle.flush()
                os.fsync(fd)
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(temp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def run_with_deadline(argv, timeout_s):
    """(ended, text): a command that may hang in the driver (a reset), given up on after
    timeout_s. A process stuck in the kernel survives SIGKILL until the driver lets go, so it is
    not waited for: ended is False and the watcher goes on."""
    try:
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    except OSError as exc:
        return False, "%s: %s" % (argv[0], exc)
    try:
        output = proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return False, "%s did not end within %ss" % (" ".join(argv), timeout_s)
    text = " ".join(output.split())
    return proc.returncode == 0, text if proc.returncode == 0 else "exit %d: %s" % (proc.returncode, text)


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
        self.settings = dict((name, getattr(opts, name)) for name in SETTINGS)
        self.nvml_lock = threading.Lock()  # the event thread waits on the NVML a reset closes
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

    def act(self, actions, now):
        for action in actions:
            if action["verb"] == "reset":
                self.reset(action, now)
                continue
            done = self.systemctl(action["verb"], "--no-block", action["unit"])
            _log("gpu %s: %s %s: %s%s" % (action["gpu"], action["verb"], action["unit"], action["reason"],
                                          "" if done.returncode == 0 else " (systemctl failed: %s)" % done.stderr.strip()))

    def platform(self):
        """What a reset must know of the host (decide.fabric_refusal)."""
        nvswitch = any(name.startswith("nvidia-nvswitch") for name in os.listdir("/dev"))
        fabric = self.systemctl("is-active", FABRIC_MANAGER).stdout.strip() == "active" if nvswitch else False
        return {"nvswitch": nvswitch, "fabric_manager": fabric, "architectures": self.nvml.architectures}

    def reset(self, action, now):
        """Carry out a reset (decide.reset_commands) with NVML let go, then open NVML again."""
        uuid = action["gpu"]
        commands = decide.reset_commands(self.gpus[uuid], self.nvml.persistent(uuid), self.settings)
        _log("gpu %s: reset: %s" % (uuid, action["reason"]))
        ended, detail = True, "nvidia-smi -r ended"
        with self.nvml_lock:
            self.nvml.close()
            for name, argv in commands:
                if name == "reset" and not ended:
                    continue  # persistence stayed on: the reset would be refused
                done, text = run_with_deadline(argv, self.opts.reset_timeout_s)
                _log("gpu %s: %s: %s%s" % (uuid, name, " ".join(argv), "" if done else " failed: " + text))
                if name != "persistence on" and not done:
                    ended, detail = False, "%s: %s" % (name, text)
                elif name == "reset":
                    detail = text or detail
            # On disk before NVML opens again: a watcher that fails there and restarts still
            # counts this reset against the breaker.
            self.gpus[uuid] = decide.reset_done(self.gpus[uuid], now, ended, detail)
            _log("gpu %s: %s" % (uuid, self.gpus[uuid]["remedy"]))
            self.publish(now)
            self.nvml = Nvml(self.nvml.nvml)

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
        resettable = any(g["needs"] == "reset" and not g["healthy"] for g in self.gpus.values())
        platform = self.platform() if self.settings["reset"] and resettable else {}
        self.gpus, actions = decide.step(self.gpus, faults, answers, now, self.settings, platform)
        self._log_changes(before)
        # On disk before it is carried out: a watcher that dies between the two still knows, once
        # restarted, which instance it stopped.
        if polling or actions or self.gpus != before:
            self.publish(now)
        self.act(actions, now)
        if actions or polling:
            self.refresh_instances()
            self.publish(now)

    def _log_changes(self, before):
        """Why a GPU is held in by the breaker, or not reset: once, when it changes."""
        for uuid, gpu in sorted(self.gpus.items()):
            for key in ("breaker", "remedy"):
                if gpu.get(key) and gpu.get(key) != before.get(uuid, {}).get(key) and gpu[key] != "resetting":
                    _log("gpu %s: %s" % (uuid, gpu[key]))

    def _feed_nvml(self):
        while not self.stop.is_set():
            with self.nvml_lock:
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
    parser.add_argument("--max-out-share", type=float, default=decide.DEFAULTS["max_out_share"],
                        help="the most of the host's GPUs held out at once, a share in (0, 1]")
    parser.add_argument("--reset", action="store_true", help="reset a GPU whose fault asks for a reset")
    for name in ("reset_per_gpu_per_hour", "reset_per_host_per_hour"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=decide.DEFAULTS[name])
    parser.add_argument("--reset-timeout-s", type=float, default=decide.DEFAULTS["reset_timeout_s"])
    parser.add_argument("--nvidia-smi", default=decide.DEFAULTS["nvidia_smi"])
    parser.add_argument("--once", action="store_true", help="look once, write the files and exit")
    opts = parser.parse_args(argv)
    if not 0 < opts.max_out_share <= 1:
        parser.error("--max-out-share %s: give a share of the host's GPUs above 0 and at most 1, e.g. 0.5"
                     % opts.max_out_share)
    for name in ("reset_per_gpu_per_hour", "reset_per_host_per_hour", "reset_timeout_s"):
        if getattr(opts, name) < 0:
            parser.error("--%s %s: give 0 or more" % (name.replace("_", "-"), getattr(opts, name)))
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
