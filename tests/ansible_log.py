# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an ansible-playbook or molecule log says, for the suite's stage scripts (tests/run.sh).

python tests/ansible_log.py deprecations LOG...: the collection's own deprecation warnings.
ansible-core prints "[DEPRECATION WARNING]: ..." and, where it knows it, "Origin: FILE:LINE:COLUMN".
A warning whose origin is a file of this repository (the collection is installed as a link to it),
or that names the collection, is the collection's own: each is printed and the exit status is 1.
Others (ansible-core's, another collection's) are counted, not fatal: they are not ours to fix.

python tests/ansible_log.py failures LOG: the last tasks that failed, and how, each on one line. The suite
prints them where a scenario failed, and the last of them again after its stage table: CI keeps only the
end of its output.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The escape sequences of a coloured log, which would hide the words.
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
# molecule frames each line of ansible-playbook's output in a box: "  │ TASK [...]".
FRAME_RE = re.compile(r"^\s*│ ?")
FAILURE_RE = re.compile(r"^(fatal|failed): \[")
# How much is printed: enough for an assertion's fail_msg, on the last hosts that failed.
FAILURE_CHARS = 3000
LAST_FAILURES = 3
ORIGIN_RE = re.compile(r"^Origin: (\S+?)(?::\d+)*$")


def plain(text):
    """The log's lines, without colours or molecule's frame."""
    return [FRAME_RE.sub("", line) for line in ANSI_RE.sub("", text).splitlines()]


def warnings(text):
    """[(message, origin or None)] of each deprecation warning in a log."""
    found = []
    lines = plain(text)
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


def failures(text):
    """[(task, what ansible-playbook printed of its failure)] of each failure not ignored (ignore_errors)."""
    found = []
    lines = plain(text)
    task = None
    number = 0
    while number < len(lines):
        line = lines[number]
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.rstrip("* ")
        if not FAILURE_RE.match(line):
            number += 1
            continue
        # The failure's result: its first line, then, where it is a dict, up to the dict's closing brace.
        block = [line.strip()]
        number += 1
        if line.rstrip().endswith("{"):
            while number < len(lines) and lines[number].rstrip() != "}":
                block.append(lines[number].strip())
                number += 1
            block.append("}")
            number += 1
        following = next((rest.strip() for rest in lines[number:] if rest.strip()), "")
        if following != "...ignoring":
            found.append((task, " ".join(block)[:FAILURE_CHARS]))
    return found


def report_deprecations(paths):
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


def report_failures(paths):
    for path in paths:
        with open(path, errors="replace") as handle:
            for task, failure in failures(handle.read())[-LAST_FAILURES:]:
                print("%s: %s" % (task, failure))
    return 0


COMMANDS = {"deprecations": report_deprecations, "failures": report_failures}


def main(argv):
    if not argv or argv[0] not in COMMANDS:
        print("usage: python tests/ansible_log.py {%s} LOG..." % ",".join(sorted(COMMANDS)), file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
