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


class Answering(Module):
    """A module that run_steps answers through: its params, whether a diff was asked, and how it ended."""

    def __init__(self, state, diff):
        super().__init__(check_mode=False)
        self.params, self._diff, self.ended = {"state": state}, diff, None

    def run_command(self, argv):
        return 0, "", ""

    def exit_json(self, **result):
        self.ended = ("exit", result)

    def fail_json(self, msg):
        self.ended = ("fail", msg)
        raise SystemExit(1)  # as AnsibleModule does: nothing after it runs


class Refused(Exception):
    pass


def step(name):
    """A present or absent step that answers with what it was given, or refuses where told to."""
    def called(params, run, files, check_mode):
        if params.get("refuse"):
            raise Refused("%s refused" % name)
        return {"changed": True, "step": name, "extra": params["extra"], "files": sorted(files) if isinstance(files, dict)
                else files.__name__, "diff": {"before": ""}}
    return called


# name: (state, diff asked, extra params, how the module ends)
RUN_CASES = {
    "present": ("present", False, {"extra": 1},
                ("exit", {"changed": True, "step": "present", "extra": 1, "files": ["directory", "put", "remove"]})),
    "absent, only the remover": ("absent", False, {"extra": 2},
                                 ("exit", {"changed": True, "step": "absent", "extra": 2, "files": "remove"})),
    "the diff where asked": ("present", True, {"extra": 3},
                             ("exit", {"changed": True, "step": "present", "extra": 3,
                                       "files": ["directory", "put", "remove"], "diff": {"before": ""}})),
    "a refusal fails the module": ("absent", False, {"extra": 4, "refuse": True}, ("fail", "absent refused")),
}


@pytest.mark.parametrize("name", sorted(RUN_CASES))
def test_run_steps_calls_the_step_of_the_state_and_answers_for_the_module(name):
    state, diff, extra, ended = RUN_CASES[name]
    module = Answering(state, diff)
    try:
        root_files.run_steps(module, step("present"), step("absent"), Refused, **extra)
    except SystemExit:
        pass
    assert module.ended == ended
