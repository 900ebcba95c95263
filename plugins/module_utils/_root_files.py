# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files the node role's host-side modules write as root (exo_proxy, exo_service): read, the
writers the modules hand to their steps, each saying whether it changed (in check mode, would change),
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


def writers(module):
    """{"directory": f(path, mode, own=True), "put": f(path, content, mode), "remove": f(path)}, each -> changed.

    Files are root's; a directory too where own, else an existing one keeps its owner (a directory
    another program owns, which the module only needs to be there).
    """
    check = module.check_mode

    def owned(path, mode, changed, own=True):
        if not os.path.exists(path):
            return changed
        if own:
            changed = module.set_owner_if_different(path, "root", changed)
            changed = module.set_group_if_different(path, "root", changed)
        return module.set_mode_if_different(path, mode, changed)

    def directory(path, mode, own=True):
        changed = not os.path.isdir(path)
        if changed and not check:
            os.makedirs(path, int(mode, 8))
        return owned(path, mode, changed, own)

    def put(path, content, mode):
        changed = read(path) != content
        if changed and not check:
            fd, temp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(to_bytes(content))
            module.atomic_move(temp, path)
        return owned(path, mode, changed)

    def remove(path):
        if not os.path.lexists(path):
            return False
        if not check:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
        return True
    return {"directory": directory, "put": put, "remove": remove}


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
