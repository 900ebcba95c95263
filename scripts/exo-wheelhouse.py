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
import glob
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REQUIREMENTS_CODE = os.path.join(REPO, "plugins", "module_utils", "_exo_requirements.py")
RECORD_CODE = os.path.join(REPO, "plugins", "plugin_utils", "node", "wheelhouse.py")
ROLE_DEFAULTS = os.path.join(REPO, "roles", "node", "defaults", "main.yml")
STAMP = ".exo-wheelhouse.json"
VARS_FILE = "exo-wheelhouse.yml"
# manylinux levels from the oldest to the one the target's glibc allows; pip takes each tag it is given
# literally, so every level is listed.
MANYLINUX_MINORS = (5, 12, 17, 24, 26, 27, 28, 31, 34, 35, 36, 39)
LEGACY_MANYLINUX = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}


class Failure(Exception):
    pass


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The wheelhouse's record of its wheels, as the node role reads it.
RECORD = load_module("wheelhouse", RECORD_CODE)


def write_record(dest):
    """requirements.txt beside the wheels, written last: a build that stops before has none, and the role refuses it."""
    try:
        text = RECORD.record_text(dest)
    except ValueError as exc:
        raise Failure("%s: %s" % (dest, exc))
    with open(os.path.join(dest, RECORD.RECORD), "w") as handle:
        handle.write(text)


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


def platforms(arch, glibc):
    major, minor = (int(part) for part in glibc.split("."))
    if major != 2:
        raise Failure("--glibc %s: only glibc 2.x is known" % glibc)
    tags = []
    for level in MANYLINUX_MINORS:
        if level <= minor:
            tags.append("manylinux_2_%d_%s" % (level, arch))
            if level in LEGACY_MANYLINUX:
                tags.append("%s_%s" % (LEGACY_MANYLINUX[level], arch))
    return tags


def source_identity(source):
    """What a source is, for the stamp: a local file by its content, a directory or URL by its name."""
    if os.path.isfile(source):
        return "sha256:" + RECORD.sha256(source)
    return os.path.abspath(source) if os.path.isdir(source) else source


def find_interpreter(release):
    """A CPython major.minor to run pip with, so that pip evaluates the markers of exo's requirements
    (async-timeout for aiohttp before 3.11, for one) for the target and not for this interpreter."""
    if "%d.%d" % sys.version_info[:2] == release:
        return sys.executable
    candidates = [shutil.which("python" + release)]
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv, "versions", release + ".*", "bin", "python" + release)),
                         key=lambda path: [int(part) for part in re.findall(r"[0-9]+", path.split("versions")[-1])],
                         reverse=True)
    for candidate in candidates:
        if not candidate:
            continue
        proc = subprocess.run([candidate, "-m", "pip", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        if proc.returncode == 0 and re.search(r"\(python %s\)" % re.escape(release), proc.stdout):
            return candidate
    raise Failure("no CPython %s with pip found (python%s on PATH, or under %s/versions): pip evaluates the "
                  "markers of exo's requirements with the interpreter that runs it, so the wheelhouse for "
                  "CPython %s is built with one; install it, or run this script with it" % (release, release, pyenv, release))


def pip(python, *args):
    command = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"] + list(args)
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise Failure("pip %s failed (exit %d):\n%s" % (args[0], proc.returncode, tail))
    return proc.stdout


def build_wheel(python, source, directory):
    """Build one wheel, without dependencies, and return its path. exo and tinygrad are pure Python: the
    wheel is the same whichever interpreter builds it, and this one has a pip recent enough to build
    a project without pyproject.toml in isolation."""
    before = set(os.listdir(directory))
    pip(python, "wheel", "--no-deps", "--wheel-dir", directory, source)
    made = sorted(set(os.listdir(directory)) - before)
    if len(made) != 1 or not made[0].endswith(".whl"):
        raise Failure("building %s gave %s, not one wheel" % (source, made or "nothing"))
    return os.path.join(directory, made[0])


def wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if re.match(r"^[^/]+\.dist-info/METADATA$", n)]
        if len(names) != 1:
            raise Failure("%s has no single .dist-info/METADATA" % wheel)
        return archive.read(names[0]).decode("utf-8")


def vars_text(dest, exo_wheel, tinygrad_requirement, args):
    return "\n".join([
        "# Written by scripts/exo-wheelhouse.py: the node role's variables that install exo from this",
        "# wheelhouse (CPython %s, %s, glibc %s or later)." % (args.python, args.arch, args.glibc),
        "# exo from %s" % args.exo,
        "# tinygrad from %s" % args.tinygrad,
        "exo_node_source: path",
        "exo_node_source_path: %s" % os.path.join(dest, os.path.basename(exo_wheel)),
        "exo_node_wheelhouse: %s" % dest,
        "exo_node_tinygrad_requirement: %s" % tinygrad_requirement,
        "",
    ])


def build(args, defaults):
    dest = os.path.abspath(args.dest)
    exo_requirements = load_module("exo_requirements", REQUIREMENTS_CODE)
    errors = exo_requirements.check_settings(defaults["skip"], defaults["replace"], "", defaults["add"])
    if errors:
        raise Failure("; ".join(errors))
    python_tag = "cp" + args.python.replace(".", "")
    inputs = {"python": args.python, "arch": args.arch, "glibc": args.glibc, "skip": defaults["skip"],
              "replace": defaults["replace"], "add": defaults["add"], "exo": source_identity(args.exo),
              "tinygrad": source_identity(args.tinygrad or ""),
              "code": [source_identity(path) for path in (os.path.realpath(__file__), REQUIREMENTS_CODE, RECORD_CODE)]}
    stamp = os.path.join(dest, STAMP)
    if os.path.isfile(stamp) and os.path.isfile(os.path.join(dest, VARS_FILE)):
        with open(stamp) as handle:
            same = json.load(handle) == inputs
        changed = RECORD.problems(dest, verify=True) if same else []
        if same and not changed:
            print("exo-wheelhouse: %s is up to date" % dest, file=sys.stderr)
            return os.path.join(dest, VARS_FILE)
        for problem in changed:
            print("exo-wheelhouse: %s" % problem.split("; ")[0], file=sys.stderr)

    python = find_interpreter(args.python)
    os.makedirs(dest, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".exo-wheelhouse.", dir=dest)
    try:
        print("exo-wheelhouse: building exo from %s" % args.exo, file=sys.stderr)
        exo_wheel = build_wheel(sys.executable, args.exo, work)
        metadata = wheel_metadata(exo_wheel)
        # By default tinygrad comes from where exo's own requirement points (its git URL).
        declared = exo_requirements.requirements(metadata, defaults["skip"], defaults["replace"], "", defaults["add"])
        if not args.tinygrad:
            pinned = [r for r in declared["install"] if exo_requirements.normalize(exo_requirements.requirement_name(r)) == "tinygrad"]
            if len(pinned) != 1 or "@" not in pinned[0]:
                raise Failure("exo from %s does not name tinygrad by URL (%s); give --tinygrad" % (args.exo, pinned))
            args.tinygrad = pinned[0].split("@", 1)[1].strip()
        print("exo-wheelhouse: building tinygrad from %s" % args.tinygrad, file=sys.stderr)
        tinygrad_wheel = build_wheel(sys.executable, args.tinygrad, work)
        tinygrad_version = os.path.basename(tinygrad_wheel).split("-")[1]
        tinygrad_requirement = "tinygrad==%s" % tinygrad_version
        declared = exo_requirements.requirements(metadata, defaults["skip"], defaults["replace"], tinygrad_requirement,
                                                 defaults["add"])
        wanted = [r for r in declared["install"] if r != tinygrad_requirement]
        print("exo-wheelhouse: downloading %d requirements of exo for CPython %s with %s (left out: %s)"
              % (len(wanted), args.python, python, ", ".join(declared["skipped"]) or "none"), file=sys.stderr)
        target = ["--only-binary=:all:", "--python-version", args.python, "--implementation", "cp",
                  "--abi", python_tag]
        for tag in platforms(args.arch, args.glibc):
            target += ["--platform", tag]
        try:
            pip(python, "download", "--dest", work, *(target + wanted))
        except Failure as failure:
            raise Failure("%s\nexo's pins have wheels for CPython 3.10 to 3.12 only (numpy 2.0.0 has none for "
                          "3.13); the node role accepts the same range (exo_node_python_min_version, "
                          "exo_node_python_max_version)" % failure)
        for old in glob.glob(os.path.join(dest, "*.whl")) + [os.path.join(dest, RECORD.RECORD)]:
            if os.path.exists(old):
                os.remove(old)
        for wheel in glob.glob(os.path.join(work, "*.whl")):
            os.replace(wheel, os.path.join(dest, os.path.basename(wheel)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_record(dest)

    with open(os.path.join(dest, VARS_FILE), "w") as handle:
        handle.write(vars_text(dest, exo_wheel, tinygrad_requirement, args))
    with open(stamp, "w") as handle:
        json.dump(inputs, handle, indent=1, sort_keys=True)
    return os.path.join(dest, VARS_FILE)


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
    parser.add_argument("--glibc", default="2.28",
                        help="the oldest glibc among the hosts (default %(default)s: Debian 10, EL 8, Ubuntu 20.04)")
    parser.add_argument("--record-only", action="store_true",
                        help="only write requirements.txt, the sha256 of each wheel already in DEST")
    args = parser.parse_args(argv)
    if args.record_only:
        try:
            write_record(os.path.abspath(args.dest))
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
