# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tinygrad stage's answer, kept between gatherings while nothing that decides it has changed.

Opening every tinygrad backend in turn costs about a second on every gathering, and a re-gather of
an unchanged host would only learn the same answer again. ``inputs()`` lists what decides it: the
probe's own child program, the host's boot, its GPUs on the PCI bus with their kernel drivers,
the NVIDIA driver's version and its GPUs' UUIDs, bus ids and whether they are busy, the
interpreter whose tinygrad is asked (its file), the environment that reaches the child (except
the variables in SESSION_ENV), the backends asked for and the user. tinygrad's own version is
covered by the directories the child imports from: the child records their modification times
(``install``), and installing, upgrading or removing a package in one changes its time.

Only root's answers are kept, in a directory only root can write (the package's CACHE_DIRECTORY: a tmpfs, emptied at
reboot); a directory or file that another user could have written is ignored, never trusted.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os
import stat
import time

from . import _sysfs as sysfs
# Bumped when the cached section's shape changes, so that an older collection's entries are not read.
FORMAT = 1

# Variables that a login or the connection sets anew each time and that select no device: left
# out of the key, so that a re-gather over a new SSH connection or through sudo can match.
SESSION_ENV = frozenset((
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "XDG_SESSION_ID", "PWD", "OLDPWD",
    "SHLVL", "_", "SUDO_COMMAND", "TERM", "MAIL", "LS_COLORS",
))


def _stat_signature(path):
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except (OSError, TypeError):
        return None
    return [real, info.st_size, info.st_mtime_ns, info.st_ino]


def inputs(rootfs, python, script, environ, backends, tinygrad, pci_devices, nvml_facts, gpus):
    """Everything that decides the tinygrad stage's answer, as a JSON-able value."""
    return {
        "format": FORMAT,
        "script": hashlib.sha256(script.encode("utf-8")).hexdigest(),
        "rootfs": os.path.realpath(rootfs),
        "boot_id": sysfs.read_text(sysfs.path(rootfs, "/proc/sys/kernel/random/boot_id")),
        "user": os.geteuid(),
        "python": python,
        "interpreter": _stat_signature(python),
        "environment": dict((k, v) for k, v in environ.items() if k not in SESSION_ENV),
        "tinygrad": bool(tinygrad),
        "backends": sorted(backends),
        "pci": [[d["bus_id"], d["vendor_id"], d["device_id"], d["driver"]] for d in pci_devices],
        "nvml": [nvml_facts["status"], nvml_facts["driver_version"]] if nvml_facts else None,
        "gpus": [[g["uuid"], g["pci_bus_id"], g.get("busy"), [m["uuid"] for m in g["mig"]["devices"]]]
                 for g in gpus],
    }


def _owned_by_root(info, kind):
    return kind(info.st_mode) and info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _path(directory, key):
    # One file per interpreter and rootfs: a changed input replaces the entry rather than adding one.
    name = hashlib.sha256(json.dumps([key["rootfs"], key["python"]]).encode("utf-8")).hexdigest()[:32]
    return os.path.join(directory, name + ".json")


def _install_unchanged(install):
    for path, mtime in install:
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            now = None
        if now != mtime:
            return False
    return True


def load(directory, key):
    """The entry kept for this key ({"since", "tinygrad", ...}) while it still holds; else None."""
    path = _path(directory, key)
    try:
        if not _owned_by_root(os.lstat(directory), stat.S_ISDIR):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not _owned_by_root(os.fstat(fd), stat.S_ISREG):
            return None
        with os.fdopen(fd, "r") as handle:
            fd = None
            entry = json.load(handle)
    except ValueError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    if not isinstance(entry, dict) or entry.get("key") != key or not _install_unchanged(entry.get("install") or []):
        return None
    return entry


def save(directory, key, install, section):
    """Keep the answer for this key; a directory that is not root's own is left alone."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not _owned_by_root(os.lstat(directory), stat.S_ISDIR):
            return
        path = _path(directory, key)
        partial = "%s.%d.new" % (path, os.getpid())
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return  # the cache is a saving for the next gathering; this one's answer stands without it
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"key": key, "install": install, "since": time.time(), "tinygrad": section}, handle)
        os.rename(partial, path)
    except (OSError, ValueError, TypeError):
        try:
            os.unlink(partial)
        except OSError:
            pass


def since_text(since):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
