# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small readers for sysfs and procfs files, relative to a root so that a simulated host can be read."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os


def path(rootfs, *parts):
    return os.path.join(rootfs, *[p.lstrip("/") for p in parts])


def read_text(filename):
    """The stripped content of a small file, or None when it is missing or unreadable."""
    try:
        with open(filename, "rb") as handle:
            return handle.read(65536).decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return None


def read_int(filename, base=10):
    text = read_text(filename)
    try:
        return int(text, base)
    except (TypeError, ValueError):
        return None
