#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a wheelhouse from which the node role installs exo on hosts without GitHub or an index.

    scripts/exo-wheelhouse.py [--python 3.12] [--exo SOURCE] [--tinygrad SOURCE] DEST

DEST receives wheels of exo and tinygrad (built from SOURCE: an archive, a directory or a URL pip
accepts; by default exo's repository at the role's pinned commit and tinygrad at the commit exo
pins), the wheels of what exo needs at run time for the target Python and platform (exo's declared
requirements as the role filters them, plugins/module_utils/_exo_requirements.py),
requirements.txt, every wheel with its sha256 in pip's hash format (the role installs with
--require-hashes from it and refuses a wheel changed or added later), and exo-wheelhouse.yml, the
role variables that install from it. pip runs with a CPython of the target
version (this interpreter, python3.X on PATH, or pyenv's) when it downloads, so that it evaluates the
markers of exo's requirements for the hosts; the package index (and GitHub for the default sources) is needed on this
machine only.

A second run with the same inputs, and wheels still as recorded, does nothing; one whose wheels
changed since builds again. `--record-only DEST` writes requirements.txt for the wheels already in
DEST and nothing else, for a wheelhouse assembled by other means. See docs/node.md, "Installing exo".
"""

import argparse
import importlib.util
import os
import platform
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BUILD_CODE = os.path.join(REPO, "plugins", "plugin_utils", "node", "wheel_build.py")
ROLE_DEFAULTS = os.path.join(REPO, "roles", "node", "defaults", "main.yml")
VARS_FILE = "exo-wheelhouse.yml"


# The build itself, shared with the node role's own build of a wheelhouse (gpufleet.exo.exo_wheelhouse),
# loaded by its path: this script runs without the collection installed.
_SPEC = importlib.util.spec_from_file_location("wheel_build", BUILD_CODE)
BUILD = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(BUILD)
Failure = BUILD.Failure


def role_defaults():
    """The node role's defaults that decide what is installed, so that the wheelhouse matches the role."""
    try:
        import yaml
    except ImportError:
        raise Failure("PyYAML is missing: run this script with the Python that runs Ansible")
    with open(ROLE_DEFAULTS) as handle:
        defaults = yaml.safe_load(handle)
    return {"exo": "git+%s@%s" % (defaults["exo_node_git_url"], defaults["exo_node_git_version"]),
            "skip": defaults["exo_node_skip_requirements"], "replace": defaults["exo_node_replace_requirements"],
            "add": defaults["exo_node_add_requirements"]}


def vars_text(dest, built, args):
    return "\n".join([
        "# Written by scripts/exo-wheelhouse.py: the node role's variables that install exo from this",
        "# wheelhouse (CPython %s, %s, glibc %s or later)." % (args.python, args.arch, args.glibc),
        "# exo from %s" % args.exo,
        "# tinygrad from %s" % (args.tinygrad or "the URL exo pins"),
        "exo_node_source: path",
        "exo_node_source_path: %s" % built["exo_wheel"],
        "exo_node_wheelhouse: %s" % dest,
        "exo_node_tinygrad_requirement: %s" % built["tinygrad_requirement"],
        "",
    ])


def build(args, defaults):
    dest = os.path.abspath(args.dest)
    built = BUILD.build(dest, args.exo, args.tinygrad, args.python, args.arch, args.glibc, defaults["skip"],
                        defaults["replace"], defaults["add"])
    path = os.path.join(dest, VARS_FILE)
    text = vars_text(dest, built, args)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def main(argv=None):
    try:
        defaults = role_defaults()
    except Failure as failure:
        print("exo-wheelhouse: %s" % failure, file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest", help="the wheelhouse directory (created; its wheels are replaced)")
    parser.add_argument("--python", default="3.12", help="the hosts' CPython, major.minor (default 3.12)")
    parser.add_argument("--exo", default=defaults["exo"],
                        help="exo's source: archive, directory or URL (default %(default)s)")
    parser.add_argument("--tinygrad", default="",
                        help="tinygrad's source: archive, directory or URL (default: the git URL exo pins)")
    parser.add_argument("--arch", default=platform.machine(), help="the hosts' machine (default %(default)s)")
    parser.add_argument("--glibc", default=BUILD.GLIBC,
                        help="the oldest glibc among the hosts (default %(default)s: Debian 10, EL 8, Ubuntu 20.04)")
    parser.add_argument("--record-only", action="store_true",
                        help="only write requirements.txt, the sha256 of each wheel already in DEST")
    args = parser.parse_args(argv)
    if args.record_only:
        try:
            BUILD.write_record(os.path.abspath(args.dest))
        except (Failure, OSError) as failure:
            print("exo-wheelhouse: %s" % failure, file=sys.stderr)
            return 1
        print("exo-wheelhouse: wrote %s" % os.path.join(args.dest, "requirements.txt"), file=sys.stderr)
        return 0
    if not re.match(r"^3\.[0-9]+$", args.python):
        parser.error("--python %r: give major.minor, for example 3.12" % args.python)
    if not re.match(r"^[0-9]+\.[0-9]+$", args.glibc):
        parser.error("--glibc %r: give major.minor, for example 2.28" % args.glibc)
    try:
        path = build(args, defaults)
    except Failure as failure:
        print("exo-wheelhouse: %s" % failure, file=sys.stderr)
        return 1
    with open(path) as handle:
        sys.stdout.write(handle.read())
    print("exo-wheelhouse: wrote %s; pass it to the play with -e @%s" % (path, path), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
