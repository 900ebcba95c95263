# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The writers exo_files, exo_proxy and exo_service hand to their steps (plugins/module_utils/_root_files.py), over a
module that answers as AnsibleModule does for a user who may not change owners: owners and groups are recorded."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shlex
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _root_files as root_files


class Module:
    """AnsibleModule's part the writers use; set_owner/group record the path and change nothing."""

    def __init__(self, check_mode):
        self.check_mode, self.owned, self.grouped = check_mode, [], []

    def set_owner_if_different(self, path, owner, changed):
        self.owned.append((path, owner))
        return changed

    def set_group_if_different(self, path, group, changed):
        self.grouped.append((path, group))
        return changed

    @staticmethod
    def run_command(command):
        """A validate command, run as AnsibleModule runs a string: split, no shell."""
        proc = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

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


JSON_CHECK = "%s -m json.tool %%s" % sys.executable


def test_a_file_its_check_refuses_is_not_written_and_the_refusal_says_where_and_why(tmp_path):
    path = tmp_path / "topology.json"
    path.write_text('{"peers": {}}\n')
    put = writers(False)["put"]
    with pytest.raises(root_files.Invalid) as refusal:
        put(str(path), '{"peers": ', "0640", validate=JSON_CHECK)
    message = str(refusal.value)
    assert message.startswith("%s: %s -m json.tool %s/tmp" % (path, sys.executable, tmp_path)), message
    assert "refused it (rc 1): Expecting" in message, message
    assert path.read_text() == '{"peers": {}}\n' and os.listdir(str(tmp_path)) == ["topology.json"]
    # The text it accepts is written.
    assert put(str(path), '{"peers": {"a": {}}}\n', "0640", validate=JSON_CHECK)
    assert path.read_text() == '{"peers": {"a": {}}}\n'


def test_write_all_makes_the_directories_then_writes_the_files_and_shows_each_text_that_changed(tmp_path):
    module = Module(False)
    conf, unit = tmp_path / "etc" / "exo", tmp_path / "exo@.service"
    unit.write_text("[Unit]\n")
    os.chmod(str(unit), 0o644)
    directories = [{"path": str(conf), "group": "exo", "mode": "0750", "owner": "root"}]
    entries = [{"dest": str(unit), "content": "[Unit]\n", "what": "unit"},
               {"dest": str(conf / "a.env"), "content": "A=1\n", "group": "exo", "mode": "0640", "instances": ["a"]}]
    result = root_files.write_all(directories, entries, root_files.writers(module), diff=True)
    assert result == {"changed": True, "written": [str(conf), str(conf / "a.env")],
                      "diff": [{"before": "", "after": "A=1\n", "before_header": str(conf / "a.env"),
                                "after_header": str(conf / "a.env")}]}
    assert (conf / "a.env").read_text() == "A=1\n" and oct(os.stat(str(conf / "a.env")).st_mode & 0o777) == "0o640"
    assert oct(os.stat(str(conf)).st_mode & 0o777) == "0o750"
    assert (str(conf), "exo") in module.grouped and (str(unit), "root") in module.grouped
    # Again: nothing to make or write, nothing shown.
    again = root_files.write_all(directories, entries, root_files.writers(Module(False)), diff=True)
    assert again == {"changed": False, "written": [], "diff": []}


def test_write_all_in_check_mode_says_what_it_would_write_and_writes_nothing(tmp_path):
    entries = [{"dest": str(tmp_path / "new" / "a.conf"), "content": "x\n"}]
    result = root_files.write_all([{"path": str(tmp_path / "new")}], entries, root_files.writers(Module(True)), diff=False)
    assert result == {"changed": True, "written": [str(tmp_path / "new"), str(tmp_path / "new" / "a.conf")], "diff": []}
    assert not os.path.exists(str(tmp_path / "new"))


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
