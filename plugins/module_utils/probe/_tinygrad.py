# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``tinygrad`` section of device_capabilities: which backend exo's tinygrad would select.

The question is answered in a child process of the interpreter whose tinygrad exo uses, by the
program in _tinygrad_child.py (``SCRIPT`` is its text, run as ``[python, "-c", SCRIPT]``);
``interpret()`` turns its answer into the section, with the environment that selects each backend
for that tinygrad version (``version_facts()``).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os


def _child():
    # Imported when first needed: AnsiballZ ships sources, so every module imported is compiled on
    # each run, and a gathering without the tinygrad stage needs none of the child's code.
    from . import _tinygrad_child
    return _tinygrad_child


def script():
    """The child's text. The child interpreter may not have the collection on its path, so it gets the
    file's text, read through this module's loader (under Ansible the package runs from a zip archive),
    neither imported nor compiled here."""
    path = os.path.join(os.path.dirname(__file__), "_tinygrad_child.py")
    return __loader__.get_data(path).decode("utf-8")


def __getattr__(name):
    """``SCRIPT`` (``script()``), read when first asked for (PEP 562)."""
    if name != "SCRIPT":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    return script()


def version_facts(version):
    """The ``tinygrad_child.VERSIONS`` facts for a tinygrad version string such as "0.10.0".

    Returns a copy with "first_version" (the row used) and "assumed" (see
    ``tinygrad_child.version_row``).
    """
    if version is not None and not isinstance(version, str):
        raise TypeError("tinygrad version must be a string like '0.10.0' or None, not %s %r"
                        % (type(version).__name__, version))
    first, facts, assumed = _child().version_row(version)
    result = copy.deepcopy(facts)
    result["first_version"] = first
    result["assumed"] = assumed
    return result


def interpret(raw, python=None):
    """Turn SCRIPT's output into the ``tinygrad`` section of docs/facts.md.

    ``raw`` is the decoded JSON object (or its text), or None when the child gave no result
    (killed at the deadline, crashed). ``python`` names the interpreter for that case.
    """
    if isinstance(raw, (bytes, str)):
        try:
            raw = json.loads(raw)
        except ValueError:
            return _failed(python, "tinygrad probe printed something that is not JSON: %r" % raw[:200])
    if raw is None:
        return _failed(python, "tinygrad probe gave no result (killed at the deadline or crashed)")
    if not isinstance(raw, dict):
        raise TypeError("interpret() takes the tinygrad probe's JSON object, its text or None, "
                        "not %s" % type(raw).__name__)
    installed = bool(raw.get("installed"))
    section = {
        "installed": installed,
        "version": raw.get("version"),
        "python": raw.get("python") or python,
        "backend": raw.get("backend"),
        "reason": raw.get("reason"),
        "select_env": None,
        "visible_devices_env": None,
        "guards": list(raw.get("guards") or []),
    }
    if installed:
        facts = version_facts(section["version"])
        section["select_env"] = facts["select_env"]
        section["visible_devices_env"] = facts["visible_devices_env"]
    return section


def stage_argv(python, mode=None, backend=None, gpu=None):
    """The child's command: the probe (mode None), ``version``, ``cuda`` (the CUDA driver's device list), or
    ``check`` of one backend on gpu."""
    argv = [python, "-c", script()]
    if mode in ("version", "cuda"):
        argv.append(mode)
    elif mode == "check":
        gpu = {"index": gpu["index"], "uuid": gpu["uuid"]} if gpu else None
        argv += ["check", json.dumps({"backend": backend, "gpu": gpu})]
    return argv


def check_entry(raw, gpu=None, failure=None):
    """One backend's entry in ``tinygrad.backends``, from the child's ``check`` answer.

    status: ok (it opened and computed 1 + 1), failed (``error`` holds tinygrad's exception, or
    what stopped the child), or skipped (``reason``: why it was not tried).
    """
    entry = {"status": "failed", "device": None, "gpu": gpu["uuid"] if gpu else None, "env": None,
             "error": None, "reason": None}
    if failure is not None:
        entry["error"] = failure
    elif not raw.get("installed"):
        entry["error"] = {"type": "NotInstalled", "message": raw.get("reason") or "tinygrad is not installed"}
    elif raw.get("error") is None and not raw.get("ok"):
        entry["error"] = {"type": "ImportError", "message": raw.get("reason") or "tinygrad gave no answer"}
    else:
        entry.update(device=raw.get("device"), env=raw.get("env"), error=raw.get("error"))
        if raw.get("ok"):
            entry["status"] = "ok"
    if entry["error"]:
        entry["reason"] = "%s: %s" % (entry["error"]["type"], entry["error"]["message"])
    return entry


def skipped_entry(gpu, reason):
    return {"status": "skipped", "device": None, "gpu": gpu["uuid"] if gpu else None, "env": None, "error": None,
            "reason": reason}


def _failed(python, reason):
    from . import TINYGRAD_UNKNOWN
    return dict(TINYGRAD_UNKNOWN, python=python, reason=reason, guards=[])
