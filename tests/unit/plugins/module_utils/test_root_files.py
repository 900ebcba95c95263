# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The writers exo_proxy and exo_service hand to their steps (plugins/module_utils/_root_files.py), over a
module that answers as AnsibleModule does for a user who may not change owners: owners are recorded."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _root_files as root_files


class Module:
    """AnsibleModule's part the writers use; set_owner/group record the path and change nothing."""

    def __init__(self, check_mode):
        self.check_mode, self.owned = check_mode, []

    def set_owner_if_different(self, path, owner, changed):
        self.owned.append((path, owner))
        return changed

    def set_group_if_different(self, path, group, changed):
        return changed

    def set_mode_if_different(self, path, mode, changed):
        if (os.stat(path).st_mode & 0o7777) == int(mode, 8):
            return changed
        if not self.check_mode:
            os.chmod(path, int(mode, 8))
        return True

    @staticmethod
    def atomic_move(src, dest):
        os.replace(src, dest)


def writers(check_mode):
    return root_files.writers(Module(check_mode))


# name: (what is there: None, a text or "dir"; the call; check mode; changed; what is there after)
CASES = {
    "a new file": (None, ("put", "x\n", "0644"), False, True, "x\n"),
    "the same file": ("x\n", ("put", "x\n", "0644"), False, False, "x\n"),
    "a changed file": ("old\n", ("put", "x\n", "0644"), False, True, "x\n"),
    "a changed file, check mode": ("old\n", ("put", "x\n", "0644"), True, True, "old\n"),
    "a new directory": (None, ("directory", "0755"), False, True, "dir"),
    "a new directory, check mode": (None, ("directory", "0755"), True, True, None),
    "a directory there": ("dir", ("directory", "0755"), False, False, "dir"),
    "a directory removed": ("dir", ("remove",), False, True, None),
    "a file removed, check mode": ("x\n", ("remove",), True, True, "x\n"),
    "nothing to remove": (None, ("remove",), False, False, None),
}


def there(path):
    return "dir" if os.path.isdir(path) else root_files.read(path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_writer_says_whether_it_changed_and_changes_nothing_in_check_mode(tmp_path, name):
    before, (verb, *args), check_mode, changed, after = CASES[name]
    path = str(tmp_path / "it")
    if before == "dir":
        os.makedirs(os.path.join(path, "sub"), mode=0o755)
    elif before is not None:
        with open(path, "w") as handle:
            handle.write(before)
        os.chmod(path, 0o644)
    assert writers(check_mode)[verb](path, *args) == changed
    assert there(path) == after


@pytest.mark.parametrize("own", [True, False])
def test_a_directory_is_made_roots_only_where_asked(tmp_path, own):
    module = Module(False)
    root_files.writers(module)["directory"](str(tmp_path / "d"), "0755", own=own)
    assert module.owned == ([(str(tmp_path / "d"), "root")] if own else [])
