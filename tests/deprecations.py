# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own deprecation warnings in ansible-playbook logs: python tests/deprecations.py LOG...

ansible-core prints "[DEPRECATION WARNING]: ..." and, where it knows it, "Origin: FILE:LINE:COLUMN".
A warning whose origin is a file of this repository (the collection is installed as a link to it),
or that names the collection, is the collection's own: each is printed and the exit status is 1.
Others (ansible-core's, another collection's) are counted, not fatal: they are not ours to fix.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The escape sequences of a coloured log, which would hide the words.
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
ORIGIN_RE = re.compile(r"^Origin: (\S+?)(?::\d+)*$")


def warnings(text):
    """[(message, origin or None)] of each deprecation warning in a log."""
    found = []
    lines = ANSI_RE.sub("", text).splitlines()
    for number, line in enumerate(lines):
        if "[DEPRECATION WARNING]:" not in line:
            continue
        origin = None
        for following in lines[number + 1:number + 4]:
            match = ORIGIN_RE.match(following.strip())
            if match:
                origin = match.group(1)
                break
        found.append((line.split("[DEPRECATION WARNING]:", 1)[1].strip(), origin))
    return found


def ours(message, origin, repo=REPO):
    """Whether a warning is the collection's own."""
    inside = origin is not None and os.path.realpath(origin).startswith(os.path.realpath(repo) + os.sep)
    return inside or "gpufleet" in message or "gpufleet" in (origin or "")


def main(paths):
    own = others = 0
    for path in paths:
        with open(path, errors="replace") as handle:
            for message, origin in warnings(handle.read()):
                if ours(message, origin):
                    own += 1
                    print("%s: the collection's own deprecation warning: %s (%s)" % (path, message, origin))
                else:
                    others += 1
    if others:
        print("deprecations: %d warning(s) of ansible-core or other collections, not the collection's own" % others)
    return 1 if own else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
