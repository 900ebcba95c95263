# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A wheelhouse of exo and what it needs, built on the controller, with the sha256 of every wheel.

Shared by scripts/exo-wheelhouse.py (a wheelhouse the operator builds and gives as exo_node_wheelhouse)
and the action gpufleet.exo.exo_wheelhouse (the one the node role builds for any other source), so
that both hold exactly what the role installs. exo and tinygrad are built here, where pip may run a
source package's build as the operator; everything else is downloaded as wheels for the hosts'
Python and platform. The hosts then install from it binary-only, with --require-hashes: no source
package is ever built on a host, as root.

A build is stamped with what went into it: a second build with the same inputs, whose wheels are
still as recorded, does nothing. Standard library only: the script loads this file by its path.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import fcntl
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

HERE = os.path.dirname(os.path.realpath(__file__))
REQUIREMENTS_CODE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "module_utils", "_exo_requirements.py")
RECORD_CODE = os.path.join(HERE, "wheelhouse.py")
STAMP = ".exo-wheelhouse.json"
# manylinux levels from the oldest to the one the target's glibc allows; pip takes each tag it is given
# literally, so every level is listed.
MANYLINUX_MINORS = (5, 12, 17, 24, 26, 27, 28, 31, 34, 35, 36, 39)
LEGACY_MANYLINUX = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}
# The oldest glibc of the platforms the node role lists is 2.34 (EL 9); 2.28 also covers Debian 10 and EL 8.
GLIBC = "2.28"
# What a directory's identity leaves out: what a build or an editor leaves in it.
SCRATCH = re.compile(r"(^|/)(\.git|build|dist|__pycache__|[^/]*\.egg-info)(/|$)")


class Failure(Exception):
    """The wheelhouse cannot be built; the message says why."""


class Changed(Failure):
    """Wheels of a wheelhouse changed since it was built; the message names each."""


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORD = _load("gpufleet_exo_wheelhouse_record", RECORD_CODE)
REQUIREMENTS = _load("gpufleet_exo_requirements", REQUIREMENTS_CODE)


def tree_digest(directory):
    """The sha256 of a directory's files, by relative path and content, less SCRATCH."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            relative = os.path.relpath(path, directory)
            if SCRATCH.search(relative) or not os.path.isfile(path):
                continue
            digest.update(("%s\0%s\n" % (relative, RECORD.sha256(path))).encode("utf-8"))
    return digest.hexdigest()


def source_identity(source):
    """What a source is: a local file or directory by its content, anything else (URL, requirement) by its text."""
    if os.path.isfile(source):
        return "sha256:" + RECORD.sha256(source)
    if os.path.isdir(source):
        return "tree:" + tree_digest(source)
    return source


def platforms(arch, glibc):
    major, minor = (int(part) for part in glibc.split("."))
    if major != 2:
        raise Failure("glibc %s: only glibc 2.x is known" % glibc)
    tags = []
    for level in MANYLINUX_MINORS:
        if level <= minor:
            tags.append("manylinux_2_%d_%s" % (level, arch))
            if level in LEGACY_MANYLINUX:
                tags.append("%s_%s" % (LEGACY_MANYLINUX[level], arch))
    return tags


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
    raise Failure("no CPython %s with pip found on the controller (python%s on PATH, or under %s/versions): pip "
                  "evaluates the markers of exo's requirements with the interpreter that runs it, so the wheelhouse "
                  "for CPython %s is built with one; install it there" % (release, release, pyenv, release))


def pip(python, *args):
    command = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"] + list(args)
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-15:])
        raise Failure("pip %s failed (exit %d):\n%s" % (args[0], proc.returncode, tail))
    return proc.stdout


def build_wheel(python, source, directory, index=()):
    """Build one wheel, without dependencies, and return its path. exo and tinygrad are pure Python: the
    wheel is the same whichever interpreter builds it, and this one has a pip recent enough to build
    a project without pyproject.toml in isolation. A directory is built from a copy: setuptools leaves
    build/ and egg-info/ in the tree it builds."""
    if os.path.isdir(source):
        copy = os.path.join(directory, ".source")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info"))
        source = copy
    before = set(os.listdir(directory))
    try:
        pip(python, "wheel", "--no-deps", "--wheel-dir", directory, *(list(index) + [source]))
    finally:
        if source.endswith("/.source"):
            shutil.rmtree(source, ignore_errors=True)
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


def _tinygrad_source(declared, exo, tinygrad):
    """Where tinygrad is built from: tinygrad as given, else the URL of exo's own requirement; "" where exo
    names tinygrad without a URL (pip downloads it with the rest)."""
    if tinygrad:
        return tinygrad
    pinned = [r for r in declared["install"] if REQUIREMENTS.normalize(REQUIREMENTS.requirement_name(r)) == "tinygrad"]
    if len(pinned) == 1 and "@" in pinned[0]:
        return pinned[0].split("@", 1)[1].strip()
    if len(pinned) > 1:
        raise Failure("exo from %s names tinygrad %d times (%s); give tinygrad's source" % (exo, len(pinned), pinned))
    return ""


def _up_to_date(dest, inputs):
    """(the stamp's outputs where dest was built from inputs, else None; what changed in its wheels since)."""
    try:
        with open(os.path.join(dest, STAMP)) as handle:
            stamp = json.load(handle)
    except (IOError, OSError, ValueError):
        return None, []
    if stamp.get("inputs") != inputs:
        return None, []
    return stamp.get("outputs"), RECORD.problems(dest, verify=True)


def build(dest, exo, tinygrad="", python="3.12", arch="x86_64", glibc=GLIBC, skip=(), replace=None, add=(),
          extra=(), index_url="", log=None, rebuild_changed=True):
    """Build (or find up to date) the wheelhouse dest for CPython python on arch. Returns {"exo_wheel": its
    path, "tinygrad_requirement": name==version or "" where exo needs none, "built": whether it built}.

    exo: its source for pip (an archive, a directory, a URL, or a requirement of index_url's); tinygrad: a
    source of tinygrad, else the URL exo pins; skip, replace, add: exo's requirements as the role shapes
    them; extra: more requirements the hosts install from it (the device probe's packages). A wheelhouse
    whose wheels changed since it was built is built again, or with rebuild_changed false refused, each
    changed wheel named.
    """
    log = log or (lambda line: print("exo-wheelhouse: " + line, file=sys.stderr))
    replace = replace or {}
    errors = REQUIREMENTS.check_settings(skip, replace, "", add)
    if errors:
        raise Failure("; ".join(errors))
    dest = os.path.abspath(dest)
    # Two builds of one wheelhouse at once (two plays, or a play beside scripts/exo-wheelhouse.py) would
    # replace each other's wheels half way: the second waits, then finds the first's build up to date.
    with _locked(dest):
        return _build(dest, exo, tinygrad, python, arch, glibc, skip, replace, add, extra, index_url, log,
                      rebuild_changed)


@contextlib.contextmanager
def _locked(dest):
    """An exclusive lock on dest (a file beside it, so that the wheelhouse holds only what it records)."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest + ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _build(dest, exo, tinygrad, python, arch, glibc, skip, replace, add, extra, index_url, log, rebuild_changed):
    index = ["--index-url", index_url] if index_url else []
    inputs = {"python": python, "arch": arch, "glibc": glibc, "skip": list(skip), "replace": replace,
              "add": list(add), "extra": list(extra), "index": index_url, "exo": source_identity(exo),
              "tinygrad": source_identity(tinygrad),
              "code": [source_identity(path) for path in (os.path.realpath(__file__), REQUIREMENTS_CODE, RECORD_CODE)]}
    outputs, changed = _up_to_date(dest, inputs)
    if outputs and changed and not rebuild_changed:
        raise Changed("the controller's wheelhouse %s: %s; remove %s and run again to build it anew, and find out "
                      "what changed it" % (dest, "; ".join(p.split("; ")[0] for p in changed), dest))
    if outputs and not changed:
        log("%s is up to date" % dest)
        return dict(outputs, exo_wheel=os.path.join(dest, outputs["exo_wheel"]), built=False)
    for problem in changed:
        log(problem.split("; ")[0])
    target_python = find_interpreter(python)
    os.makedirs(dest, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".exo-wheelhouse.", dir=dest)
    try:
        outputs = _build_into(work, target_python, exo, tinygrad, python, platforms(arch, glibc),
                              (skip, replace, add), list(extra), index, log)
        for old in glob.glob(os.path.join(dest, "*.whl")) + [os.path.join(dest, RECORD.RECORD)]:
            if os.path.exists(old):
                os.remove(old)
        for wheel in glob.glob(os.path.join(work, "*.whl")):
            os.replace(wheel, os.path.join(dest, os.path.basename(wheel)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_record(dest)
    with open(os.path.join(dest, STAMP), "w") as handle:
        json.dump({"inputs": inputs, "outputs": outputs}, handle, indent=1, sort_keys=True)
    return dict(outputs, exo_wheel=os.path.join(dest, outputs["exo_wheel"]), built=True)


def _build_into(work, target_python, exo, tinygrad, python, tags, shaping, extra, index, log):
    """The wheels into work: exo's and tinygrad's built, the rest downloaded as wheels for the target."""
    skip, replace, add = shaping
    log("building exo from %s" % exo)
    exo_wheel = build_wheel(sys.executable, exo, work, index)
    metadata = wheel_metadata(exo_wheel)
    declared = REQUIREMENTS.requirements(metadata, skip, replace, "", add)
    tinygrad_source = _tinygrad_source(declared, exo, tinygrad)
    tinygrad_requirement = ""
    if tinygrad_source:
        log("building tinygrad from %s" % tinygrad_source)
        tinygrad_wheel = build_wheel(sys.executable, tinygrad_source, work, index)
        tinygrad_requirement = "tinygrad==%s" % os.path.basename(tinygrad_wheel).split("-")[1]
        declared = REQUIREMENTS.requirements(metadata, skip, replace, tinygrad_requirement, add)
    wanted = [r for r in declared["install"] if r != tinygrad_requirement] + extra
    log("downloading %d requirements of exo for CPython %s with %s (left out: %s)"
        % (len(wanted), python, target_python, ", ".join(declared["skipped"]) or "none"))
    target = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
              "--abi", "cp" + python.replace(".", "")]
    for tag in tags:
        target += ["--platform", tag]
    try:
        pip(target_python, "download", "--dest", work, *(index + target + wanted))
    except Failure as failure:
        raise Failure("%s\nexo's pins have wheels for CPython 3.10 to 3.12 only (numpy 2.0.0 has none for "
                      "3.13); the node role accepts the same range (exo_node_python_min_version, "
                      "exo_node_python_max_version)" % failure)
    return {"exo_wheel": os.path.basename(exo_wheel), "tinygrad_requirement": tinygrad_requirement}


def write_record(dest):
    """requirements.txt beside the wheels, written last: a build that stops before has none, and the role refuses it."""
    try:
        text = RECORD.record_text(dest)
    except ValueError as exc:
        raise Failure("%s: %s" % (dest, exc))
    with open(os.path.join(dest, RECORD.RECORD), "w") as handle:
        handle.write(text)


def archive(directory, archives):
    """The wheels and requirements.txt of directory in one tar under archives, named by the record's sha256: one
    transfer to a host rather than one per wheel. Returns (its path, whether it was written now)."""
    path = os.path.join(archives, RECORD.record_id(directory) + ".tar")
    if os.path.isfile(path):
        return path, False
    os.makedirs(archives, exist_ok=True)
    partial = tempfile.NamedTemporaryFile(dir=archives, suffix=".partial", delete=False)
    try:
        with tarfile.open(fileobj=partial, mode="w") as tar:
            for name in RECORD.wheels(directory) + [RECORD.RECORD]:
                tar.add(os.path.join(directory, name), arcname=name)
        partial.close()
        os.chmod(partial.name, 0o644)
        os.replace(partial.name, path)
    finally:
        partial.close()
        if os.path.exists(partial.name):
            os.remove(partial.name)
    return path, True


# What to do where the controller cannot build: the two ways out.
CANNOT_BUILD = ("the controller builds exo's wheelhouse itself, so that hosts install only hash-checked wheels, and "
                "needs to reach exo's source and the package index for it: give it that access, or build a "
                "wheelhouse where they are reachable with scripts/exo-wheelhouse.py and give it as exo_node_wheelhouse "
                "(docs/node.md, \"A wheelhouse for hosts without GitHub or a package index\")")


def prepare(request, cache, check_mode=False):
    """One wheelhouse of the node role on the controller, as install.steps() asked for it (its "wheels"): the one
    given (request "wheelhouse", exo_node_wheelhouse), every wheel read and checked against its record, or one
    built under cache for the request. Returns {"wheelhouse", "archive", "tinygrad_requirement", "errors", "log",
    "changed"}; the archive is packed only from wheels as recorded. In check mode nothing is built or packed."""
    found = {"wheelhouse": request.get("wheelhouse"), "archive": None, "tinygrad_requirement": None, "errors": [],
             "log": [], "changed": False}
    if found["wheelhouse"]:
        found["errors"] = ["exo_node_wheelhouse %s %s" % (json.dumps(found["wheelhouse"]), problem)
                           for problem in RECORD.problems(found["wheelhouse"], verify=True)]
    if check_mode or found["errors"]:
        return found
    if not found["wheelhouse"]:
        found["wheelhouse"] = os.path.join(cache, request["key"])
        try:
            built = build(found["wheelhouse"], request["exo"], request["tinygrad"], request["python"], request["arch"],
                          request["glibc"], request["skip"], request["replace"], request["add"], request["extra"],
                          request["index_url"], log=found["log"].append, rebuild_changed=False)
        except Changed as changed:
            found["errors"].append(str(changed))
            return found
        except (Failure, OSError) as failure:
            found["errors"].append("exo's wheelhouse for %s on CPython %s could not be built on the controller: %s. %s"
                                   % (request["exo"], request["python"], failure, CANNOT_BUILD))
            return found
        found.update(tinygrad_requirement=built["tinygrad_requirement"], changed=built["built"])
    found["archive"], packed = archive(found["wheelhouse"], os.path.join(cache, "archives"))
    found["changed"] = found["changed"] or packed
    return found
