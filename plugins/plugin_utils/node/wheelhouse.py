# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of a wheelhouse's wheels, and whether the wheels are still the ones recorded.

scripts/exo-wheelhouse.py writes requirements.txt beside the wheels when it builds a wheelhouse: each
wheel's name==version with its sha256, in pip's own hash format. The node role installs from the
wheelhouse with `pip install --require-hashes -r requirements.txt`, so pip refuses a wheel whose
content differs, and the planner (install.py) refuses, before pip runs, a wheel changed, added or
missing since the build, naming it. Standard library only: the script loads this file by its path.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import re

RECORD = "requirements.txt"
REBUILD = ("build the wheelhouse again with scripts/exo-wheelhouse.py (docs/node.md, \"A wheelhouse for hosts "
           "without GitHub or a package index\")")
HEADER = ("# Written by scripts/exo-wheelhouse.py: every wheel of this wheelhouse with its sha256. The node role\n"
          "# installs from it with pip install --require-hashes --no-index -r requirements.txt; a wheel changed or\n"
          "# added after this was written is refused. Build the wheelhouse again rather than editing this file.\n")
# name==version, then each --hash (pip reads "--hash=sha256:H" and "--hash sha256:H" alike).
LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:\s+--hash[= ]sha256:[0-9a-f]{64})+)$")
HASH = re.compile(r"sha256:([0-9a-f]{64})")
# A wheel's file name: name-version(-build)?-python-abi-platform.whl (PEP 427).
WHEEL = re.compile(r"^([^-]+)-([^-]+)(?:-[0-9][^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def normalize(name):
    """A distribution's name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_key(filename):
    """(normalized name, version) of a wheel's file name, or None where it is not named as a wheel."""
    match = WHEEL.match(filename)
    return (normalize(match.group(1)), match.group(2)) if match else None


def wheels(directory):
    """The file names of the wheels in directory, sorted."""
    return sorted(name for name in os.listdir(directory)
                  if name.endswith(".whl") and os.path.isfile(os.path.join(directory, name)))


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def record_text(directory):
    """requirements.txt for the wheels in directory: one line per name and version, with the sha256 of
    each of its wheels. ValueError where a file is not named as a wheel or a name comes in two versions,
    which pip could not both install."""
    hashes, spelled = {}, {}
    for filename in wheels(directory):
        key = wheel_key(filename)
        if key is None:
            raise ValueError("%s is not named as a wheel (name-version-python-abi-platform.whl)" % filename)
        others = sorted(version for name, version in hashes if name == key[0] and version != key[1])
        if others:
            raise ValueError("%s and version %s of the same distribution are both here; keep one" % (filename, others[0]))
        hashes.setdefault(key, []).append(sha256(os.path.join(directory, filename)))
        spelled.setdefault(key, filename.split("-")[0])
    lines = ["%s==%s %s" % (spelled[key], key[1], " ".join("--hash=sha256:" + h for h in sorted(hashes[key])))
             for key in sorted(hashes)]
    return HEADER + "".join(line + "\n" for line in lines)


def read_record(text):
    """({(normalized name, version): set of sha256}, problems) from a requirements.txt's text."""
    recorded, problems = {}, []
    logical = re.sub(r"\\\n", " ", text)
    for number, line in enumerate(logical.split("\n"), 1):
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        match = LINE.match(line)
        if not match:
            problems.append("%s line %d (%s) is not name==version --hash=sha256:<64 hex digits>, as "
                            "scripts/exo-wheelhouse.py writes it; %s" % (RECORD, number, line[:80], REBUILD))
            continue
        recorded.setdefault((normalize(match.group(1)), match.group(2)), set()).update(HASH.findall(match.group(3)))
    return recorded, problems


def problems(directory, verify=False):
    """What differs between the wheels in directory and its requirements.txt, each naming the wheel and what
    to do: a record missing or unreadable, a wheel not recorded (added since), a recorded one absent, and with
    verify (a read of every wheel) a wheel whose sha256 is not the recorded one (changed since)."""
    path = os.path.join(directory, RECORD)
    try:
        with open(path) as handle:
            recorded, found = read_record(handle.read())
    except (IOError, OSError, UnicodeDecodeError) as exc:
        return ["has no readable %s, the sha256 of each of its wheels, which pip on the hosts needs to install with "
                "--require-hashes (%s); %s" % (RECORD, getattr(exc, "strerror", None) or exc, REBUILD)]
    present = set()
    for filename in wheels(directory):
        key = wheel_key(filename)
        if key not in recorded:
            found.append("%s is not in its %s: it was added after the wheelhouse was built; remove it, or %s"
                         % (filename, RECORD, REBUILD))
            continue
        present.add(key)
        if verify:
            digest = sha256(os.path.join(directory, filename))
            if digest not in recorded[key]:
                found.append("%s changed after the wheelhouse was built: its sha256 is %s, %s records %s; %s, and "
                             "find out what changed it"
                             % (filename, digest, RECORD, " or ".join(sorted(recorded[key])), REBUILD))
    for name, version in sorted(set(recorded) - present):
        found.append("%s records %s==%s, but no wheel of it is in the wheelhouse; %s" % (RECORD, name, version, REBUILD))
    return found


def record_id(directory):
    """The sha256 of requirements.txt: the wheelhouse by the content of its wheels, for the virtualenv's
    marker ("" where there is none)."""
    path = os.path.join(directory, RECORD)
    return sha256(path) if os.path.isfile(path) else ""
