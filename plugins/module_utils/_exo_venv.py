# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""exo's virtualenv on the host, as the module gpufleet.exo.exo_venv makes it: plain functions over a
runner of commands, so that the steps and their order read in one place.

exo goes in without its dependencies, then what it declares as _exo_requirements shapes it: pip
never resolves exo's own tinygrad requirement, a git URL, when the role says where tinygrad is.
Whether exo goes in at all is the controller's decision (the node planner compares the
virtualenv's marker with the source), given here as `install`.

pip runs as a command, not through ansible.builtin.pip: that module needs the packaging library on
the interpreter that runs it, which minimal Debian and Ubuntu hosts lack, and it decides "changed"
by matching names, which a forced reinstall of a staged source and requirements given as direct
references with markers defeat. The marker decides instead.

The collection's patches of exo (roles/node/files/gpufleet_exo_patches.py) change only the sources of exo
they were written against; check_patches() runs that file's own check (its table of sha256 and its
hashing: one definition) on the exo about to be installed, or the one installed, before anything changes.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import shutil

from ansible_collections.gpufleet.exo.plugins.module_utils._exo_requirements import requirements as shape

# The distribution that declares the exo command. Where a source replaced another, both
# distributions declare it; the newer wrote it.
EXO_COMMAND = re.compile(r"^exo\s*=", re.M)
# How deep below the virtualenv's lib/ the entry points lie: pythonX.Y/site-packages/NAME.dist-info/.
ENTRY_POINTS_DEPTH = 4
PURELIB = "import sysconfig; print(sysconfig.get_path('purelib'))"


class StepFailed(Exception):
    """A step that stops the install; its message is the module's."""


# What check_patches() answers where it did not look: no patches given, or in check mode an install still to come.
UNCHECKED = {"checked": None, "modules": [], "unknown": [], "warning": None}
# What runs without the patches; transformers' refusal of a model's code does not depend on exo's sources.
LOST = ("the refusal of models that were not placed (the API's and the downloader's) and of hub lookups offline, the "
        "end of a request whose ring broke, a busy member kept in its ring, each request's own KV cache and one model "
        "build per shard, the admission gate and its /metrics, and each instance's own device in the ring's view; "
        "transformers still runs no code of a model")
REFUSED = ("exo's modules that the collection's patches change are not the sources the patches were written "
           "against, so exo would run without them: %s. Nothing was installed or changed. Install an exo whose "
           "sources they know (the releases named), or run this one without them: unpatched (the node role's "
           "exo_node_exo_unpatched: true), which turns off %s")
UNPATCHED = ("exo runs without the collection's patches of %s (unpatched, the node role's exo_node_exo_unpatched): "
             "off are %s. %s")


def spec_wheels(spec):
    """What pip is given for exo as paths for the patches' check: spec's wheel, or the directory of the wheels beside
    the requirements file it names (--requirement=FILE, -r FILE, or FILE); None where it names neither."""
    path = re.sub(r"^(--requirement[= ]|-r ?)", "", (spec or "").strip()).strip()
    if not os.path.isfile(path):
        return None
    return [path] if path.endswith(".whl") else [os.path.dirname(os.path.abspath(path))]


def check_patches(params, run, check_mode, scratch):
    """Whether exo's sources are the ones the patches (params "files"[params "patches"]) were written against:
    UNCHECKED with "checked" "wheelhouse" (the exo pip is about to install, read from spec's wheels) or "virtualenv"
    (the one installed, where pip installs none), "modules" and "unknown" as the patches file's --check says, and
    "warning" where some are unknown and params "unpatched" lets exo run without them. StepFailed where they are
    unknown and it does not, or where they cannot be read. The patches file runs from scratch, a directory.

    This runs first, before the virtualenv is made, pip runs or any file of it is written: exo's sources are known
    here (the wheels are on the host, wheelhouse.yml copied them; an exo pip is not to install is the one the units
    run), and nothing the instances run has changed yet. The controller sees the wheels earlier, but not the exo a
    host runs on the runs that install none, whose sources a newer table of the patches may no longer know.
    """
    name = params.get("patches")
    venv_python = os.path.join(params["path"], "bin", "python")
    if not name:
        return dict(UNCHECKED)
    if name not in params["files"]:
        raise StepFailed("patches names %s, which is not one of files (%s)" % (name, ", ".join(sorted(params["files"]))))
    if params["install"]:
        # In check mode the host's wheelhouse is still the one of the last install.
        if check_mode:
            return dict(UNCHECKED)
        wheels, checked = spec_wheels(params.get("spec")), "wheelhouse"
        if wheels is None:
            raise StepFailed("exo's sources are checked against the patches before pip installs them, from the wheel "
                             "or the requirements file beside its wheels that spec names; spec %s is neither"
                             % json.dumps(params.get("spec")))
    elif os.path.exists(venv_python):
        wheels, checked = [], "virtualenv"
    else:
        return dict(UNCHECKED)
    script = os.path.join(scratch, name)
    with open(script, "w") as handle:
        handle.write(params["files"][name])
    # -I: the script's own table, not a copy the virtualenv imports; no environment variable changes the look.
    python = venv_python if os.path.exists(venv_python) else params["python"]
    rc, out, err = run([python, "-I", script, "--check"] + wheels)
    try:
        report = dict(UNCHECKED, checked=checked, **json.loads(out))
    except (TypeError, ValueError):
        report = None
    if rc != 0 or report is None:
        raise StepFailed("checking exo's sources against the patches (%s --check) failed (rc %s): %s"
                         % (name, rc, (err or out).strip()[-3000:]))
    if report["unknown"]:
        if not params.get("unpatched"):
            raise StepFailed(REFUSED % ("; ".join(report["unknown"]), LOST))
        names = [module["module"] for module in report["modules"] if not module["matches"]]
        report["warning"] = UNPATCHED % (", ".join(names), LOST, "; ".join(report["unknown"]))
    return report


def provider_metadata(venv):
    """The METADATA text of the distribution that provides the exo command in venv, or None where none does."""
    top = os.path.join(venv, "lib")
    found = []
    for root, dirs, files in os.walk(top):
        if root[len(top):].count(os.sep) >= ENTRY_POINTS_DEPTH - 1:
            dirs[:] = []
        if "entry_points.txt" in files:
            path = os.path.join(root, "entry_points.txt")
            with open(path, errors="replace") as handle:
                if EXO_COMMAND.search(handle.read()):
                    found.append((os.stat(path).st_mtime, path))
    if not found:
        return None
    newest = sorted(found, key=lambda entry: entry[0])[-1][1]
    with open(os.path.join(os.path.dirname(newest), "METADATA"), errors="replace") as handle:
        return handle.read()


def inspect(params, run):
    """What the node planner decides the install from (the filter gpufleet.exo.node_install's venv):
    {"python": the virtualenv's interpreter exists, "ensurepip": the rc of `PYTHON -m ensurepip
    --version` where the virtualenv is still to be made (else None), "exe": bin/exo exists, "marker":
    the source the marker names, "" where there is none}.

    Debian's own Pythons make a virtualenv only with python3.X-venv, which carries ensurepip; other
    builds (pyenv, python.org, EL) have it built in. A Python not installed yet (in check mode, or before
    the role installs it: the node role looks before its install) cannot: rc 2, as for a command not found.
    """
    venv = params["path"]
    exists = os.path.exists(os.path.join(venv, "bin", "python"))
    ensurepip = None
    if not exists:
        ensurepip = run([params["python"], "-m", "ensurepip", "--version"])[0] if shutil.which(params["python"]) else 2
    marker = ""
    if params["marker"] and os.path.isfile(params["marker"]):
        with open(params["marker"], errors="replace") as handle:
            marker = handle.read().strip()
    return {"python": exists, "ensurepip": ensurepip, "exe": os.path.exists(os.path.join(venv, "bin", "exo")),
            "marker": marker}


def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def install(params, run, put, check_mode, scratch=None):
    """Check exo's sources against the patches (check_patches(), in scratch), then make exo's virtualenv and put
    exo, its requirements, the patches, the marker and the probe's packages into it, in that order. Returns the
    module's result without "changed" reasons folded: {"changed", "exo_changed", "requirements", "commands",
    "patches"}.

    run(argv) -> (rc, stdout, stderr) runs a command; put(path, content) -> changed writes a file
    (mode 0644), in check mode only saying whether it would change. Check mode may have no
    virtualenv yet: it then only says that it would be made.
    """
    venv = params["path"]
    python = os.path.join(venv, "bin", "python")
    commands = []
    patches = check_patches(params, run, check_mode, scratch)

    # Every command of the install, pip's and the one that makes the virtualenv.
    def step(argv, what):
        commands.append(argv)
        rc, out, err = run(argv)
        if rc != 0:
            raise StepFailed("%s failed (rc %s): %s" % (what, rc, (err or out).strip()[-3000:]))
        return out

    changed = created = not os.path.exists(python)
    if created and not check_mode:
        step([params["python"], "-m", "venv", venv], "making exo's virtualenv")
    installed = bool(params["install"]) and not check_mode
    if installed:
        step(params["pip"] + ["--force-reinstall", "--no-deps", params["spec"]], "installing exo without its dependencies")
    metadata = provider_metadata(venv) if os.path.isdir(venv) else None
    requirements = None
    if metadata is not None:
        requirements = shape(metadata, params["skip_requirements"], params["replace_requirements"],
                             params["tinygrad_requirement"], params["add_requirements"])
        if requirements["errors"]:
            raise StepFailed("; ".join(requirements["errors"]))
    required = installed and bool(requirements and requirements["install"])
    if required:
        step(params["pip"] + requirements["install"], "installing what exo needs at run time")
    # The collection's patches of exo go where its packages go; the virtualenv is asked, and in
    # check mode may not exist to ask yet.
    patched = False
    rc, out, err = run([python, "-c", PURELIB]) if os.path.exists(python) else (1, "", "no virtualenv yet")
    if rc != 0 and not check_mode:
        raise StepFailed("exo's virtualenv %s does not say where its packages go: %s" % (venv, (err or out).strip()))
    if rc == 0:
        for name in sorted(params["files"]):
            patched = put(os.path.join(out.strip(), name), params["files"][name]) or patched
    marked = put(params["marker"], params["source_id"] + "\n")
    # pip leaves installed packages alone (no index is asked) and says so; exo's own pins win.
    probed = False
    if params["probe_packages"] and not check_mode:
        out = step(params["pip"] + params["probe_packages"], "installing what the device probe needs")
        probed = "Successfully installed" in out
    if not check_mode and not executable(os.path.join(venv, "bin", "exo")):
        raise StepFailed("%s/bin/exo is not an executable after the install; see what pip installed in %s"
                         % (venv, venv))
    exo_changed = installed or required or patched
    return {"changed": changed or exo_changed or marked or probed, "exo_changed": exo_changed,
            "created": created, "requirements": requirements, "commands": commands, "patches": patches}
