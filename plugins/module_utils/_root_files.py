# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files the node role's host-side modules write as root (exo_files, exo_proxy, exo_service): read,
the writers the modules hand to their steps, each saying whether it changed (in check mode, would change),
and run_steps, which hands them over and answers for the module."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import tempfile

from ansible.module_utils.common.text.converters import to_bytes


def read(path):
    """The text of path, or None where it is no file."""
    if not os.path.isfile(path):
        return None
    with open(path, errors="replace") as handle:
        return handle.read()


class Invalid(Exception):
    """A file its validate command refused; its message says which file, the command and its answer."""


def writers(module):
    """{"directory": f(path, mode, own=True, owner="root", group="root"), "put": f(path, content, mode,
    owner="root", group="root", validate=None), "remove": f(path)}, each -> changed.

    Files are owner's and group's (root's unless given); a directory too where own, else an existing one
    keeps its owner (a directory another program owns, which the module only needs to be there).
    validate: a command with %s for a path, which must accept the new text (written beside path) before
    it replaces the file; a refusal raises Invalid and leaves the file as it was.
    """
    check = module.check_mode

    def owned(path, mode, changed, own=True, owner="root", group="root"):
        if not os.path.exists(path):
            return changed
        if own:
            changed = module.set_owner_if_different(path, owner, changed)
            changed = module.set_group_if_different(path, group, changed)
        return module.set_mode_if_different(path, mode, changed)

    def directory(path, mode, own=True, owner="root", group="root"):
        changed = not os.path.isdir(path)
        if changed and not check:
            os.makedirs(path, int(mode, 8))
        return owned(path, mode, changed, own, owner, group)

    def put(path, content, mode, owner="root", group="root", validate=None):
        changed = read(path) != content
        if changed and not check:
            fd, temp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_bytes(content))
            if validate:
                rc, out, err = module.run_command(validate % temp)
                if rc != 0:
                    os.remove(temp)
                    raise Invalid("%s: %s refused it (rc %d): %s" % (path, validate % temp, rc, (err or out).strip()))
            module.atomic_move(temp, path)
        return owned(path, mode, changed, owner=owner, group=group)

    def remove(path):
        if not os.path.lexists(path):
            return False
        if not check:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
        return True
    return {"directory": directory, "put": put, "remove": remove}


def write_all(directories, entries, files, diff):
    """Make the directories, then write the files (gpufleet.exo.exo_files): {"changed", "written": the paths
    made or changed (in check mode, that would be), in order, "diff": each file whose text changed, where diff}.

    directories: dicts of path and, optionally, owner, group and mode (0755); entries: dicts of dest and
    content and, optionally, owner, group, mode (0644) and validate; files: writers(module).
    """
    written = [d["path"] for d in directories
               if files["directory"](d["path"], d.get("mode") or "0755", owner=d.get("owner") or "root",
                                     group=d.get("group") or "root")]
    diffs = []
    for entry in entries:
        # put reads the file too; the text before is read again only for the diff.
        before = read(entry["dest"]) if diff else None
        if files["put"](entry["dest"], entry["content"], entry.get("mode") or "0644", owner=entry.get("owner") or "root",
                        group=entry.get("group") or "root", validate=entry.get("validate")):
            written.append(entry["dest"])
        if diff and before != entry["content"]:
            diffs.append({"before": before or "", "after": entry["content"], "before_header": entry["dest"],
                          "after_header": entry["dest"]})
    return {"changed": bool(written), "written": written, "diff": diffs}


def run_steps(module, present, absent, refused, **extra):
    """Call present or absent (module_utils steps: (params, run, files, check_mode)) as O(state) says, and
    exit with their result, its diff only where asked; refused, the steps' exception, fails the module."""
    files = writers(module)
    params = dict(module.params, **extra)
    try:
        if params["state"] == "present":
            result = present(params, module.run_command, files, module.check_mode)
        else:
            result = absent(params, module.run_command, files["remove"], module.check_mode)
    except refused as refusal:
        module.fail_json(msg=str(refusal))
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)
