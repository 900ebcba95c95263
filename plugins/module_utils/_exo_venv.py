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
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

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


def install(params, run, put, check_mode):
    """Make exo's virtualenv and put exo, its requirements, the patches, the marker and the probe's
    packages into it, in that order. Returns the module's result without "changed" reasons folded:
    {"changed", "exo_changed", "requirements", "commands"}.

    run(argv) -> (rc, stdout, stderr) runs a command; put(path, content) -> changed writes a file
    (mode 0644), in check mode only saying whether it would change. Check mode may have no
    virtualenv yet: it then only says that it would be made.
    """
    venv = params["path"]
    python = os.path.join(venv, "bin", "python")
    commands = []

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
            "created": created, "requirements": requirements, "commands": commands}
