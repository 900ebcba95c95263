# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Python makes exo's virtualenv on each platform the node role lists (meta/main.yml).

exo's pins install on CPython 3.10 to 3.12 (exo_node_python_min_version, _max_version). Each
distribution either ships such a Python as its python3, ships one as an extra package, or ships
none; choose() says which interpreter the role uses and what to install, and advice() what to do
where the interpreter given is out of range. docs/node.md ("Python") says the same in words.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.common.validation import check_type_bool

# (distribution, major version) -> what it ships. "python": its python3 and that Python's release;
# "extra": a newer CPython it packages besides (the package, the interpreter, its release), or None.
# EL covers RHEL and its rebuilds (ansible_facts.os_family RedHat).
PLATFORMS = {
    ("Debian", "12"): {"name": "Debian 12 (bookworm)", "python": ("/usr/bin/python3", "3.11"), "extra": None},
    ("Debian", "13"): {"name": "Debian 13 (trixie)", "python": ("/usr/bin/python3", "3.13"), "extra": None},
    ("Ubuntu", "22"): {"name": "Ubuntu 22.04 (jammy)", "python": ("/usr/bin/python3", "3.10"), "extra": None},
    ("Ubuntu", "24"): {"name": "Ubuntu 24.04 (noble)", "python": ("/usr/bin/python3", "3.12"), "extra": None},
    ("EL", "9"): {"name": "EL 9", "python": ("/usr/bin/python3", "3.9"),
                  "extra": ("python3.12", "/usr/bin/python3.12", "3.12")},
}
# Where no packaged Python fits: a CPython built for the host, as the test images do.
BUILD_ADVICE = ("install CPython %s (pyenv, or python.org's sources: ./configure --prefix=/opt/python/%s && make "
                "altinstall) and set exo_node_python to it, e.g. /opt/python/%s/bin/python%s")


def _release(text):
    return tuple(int(part) for part in str(text).split(".")[:2])


def platform(facts):
    """The PLATFORMS key of a host from its ansible_facts, or None for a platform the role does not list."""
    family = "EL" if facts.get("os_family") == "RedHat" else facts.get("distribution")
    key = (family, str(facts.get("distribution_major_version")))
    return key if key in PLATFORMS else None


def in_range(release, low, high):
    """Whether a major.minor release lies from low to high, both included."""
    return _release(low) <= _release(release) <= _release(high)


def choose(facts, python, distribution_python, low, high):
    """{"python", "packages", "release", "errors", "advice"}: the interpreter that makes exo's virtualenv.

    python: exo_node_python. distribution_python: exo_node_distribution_python, true to use the
    distribution's own CPython in range (its python3, or the extra package it ships). release is
    the release the table knows for the interpreter chosen (None for exo_node_python: ask it);
    advice what to do should exo_node_python be out of range.
    """
    found = {"python": python, "packages": [], "release": None, "errors": [], "advice": advice(facts, low, high)}
    try:
        wanted = check_type_bool(distribution_python)
    except TypeError:
        found["errors"].append("exo_node_distribution_python is %r; give true or false" % (distribution_python,))
        return found
    if not wanted:
        return found
    key = platform(facts)
    if key is None:
        found["errors"].append("exo_node_distribution_python is true but %s %s is not a platform of this role (%s); "
                               "set exo_node_python to a CPython %s to %s instead"
                               % (facts.get("distribution"), facts.get("distribution_major_version"),
                                  ", ".join(entry["name"] for entry in PLATFORMS.values()), low, high))
        return found
    entry = PLATFORMS[key]
    own_path, own_release = entry["python"]
    if in_range(own_release, low, high):
        found.update(python=own_path, release=own_release)
    elif entry["extra"] and in_range(entry["extra"][2], low, high):
        package, path, release = entry["extra"]
        found.update(python=path, release=release, packages=[package])
    else:
        found["errors"].append("exo_node_distribution_python is true but " + found["advice"])
    return found


def advice(facts, low, high):
    """What to do on this host when exo_node_python is out of range: the platform's own way first."""
    key = platform(facts)
    entry = PLATFORMS.get(key) if key else None
    if entry is None:
        return "point exo_node_python at a CPython %s to %s on the host" % (low, high)
    own_path, own_release = entry["python"]
    if in_range(own_release, low, high):
        return "%s's own %s is Python %s: set exo_node_python: %s (or exo_node_distribution_python: true)" % (
            entry["name"], own_path, own_release, own_path)
    if entry["extra"] and in_range(entry["extra"][2], low, high):
        package, path, release = entry["extra"]
        return ("%s packages Python %s as %s: set exo_node_distribution_python: true to install it and use %s"
                % (entry["name"], release, package, path))
    return "%s ships no CPython %s to %s (its python3 is %s): %s" % (
        entry["name"], low, high, own_release, BUILD_ADVICE % ((high,) * 4))
