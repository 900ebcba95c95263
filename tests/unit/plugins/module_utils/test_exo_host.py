# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_host_inspect looks at (plugins/module_utils/_exo_host.py), on this machine: real
interpreters, paths, passwd entries and files of the test's own; its EXAMPLES run through ansible-playbook
in tests/integration/roles/test_node_examples.py, and the role's use in the molecule scenarios."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import pwd
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_host as host


def run(argv, handle_exceptions=True):
    """AnsibleModule.run_command's answer, of a real process; a missing program raises as it does."""
    assert handle_exceptions is False
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def params(**given):
    return dict(dict(python=None, paths=[], user=None, instances_dir=None, mig_minors=None), **given)


def test_python_version_is_what_the_interpreter_says():
    answer = host.python_version(sys.executable, run)
    assert answer == {"rc": 0, "stdout": "Python %d.%d.%d" % sys.version_info[:3], "stderr": ""}


def test_a_missing_interpreter_is_an_answer_that_says_why(tmp_path):
    answer = host.python_version(str(tmp_path / "python3.99"), run)
    assert answer["rc"] == 2 and "No such file or directory" in answer["msg"] and answer["stdout"] == ""


def test_found_follows_links_and_a_broken_one_is_missing(tmp_path):
    (tmp_path / "file").write_text("x")
    os.symlink(str(tmp_path / "file"), str(tmp_path / "link"))
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "broken"))
    paths = [str(tmp_path / name) for name in ("file", "link", "broken", "gone")]
    assert host.found(paths) == dict(zip(paths, (True, True, False, False)))


def test_account_is_getents_entry_after_the_name():
    entry = pwd.getpwuid(os.getuid())
    assert host.account(entry.pw_name) == [entry.pw_passwd, str(entry.pw_uid),
                                           str(entry.pw_gid), entry.pw_gecos, entry.pw_dir, entry.pw_shell]
    assert host.account("no-such-user-gpufleet") is None


def test_existing_are_the_env_files_only(tmp_path):
    for name in ("gpu1.env", "gpu0.env", ".hidden.env", "gpu0.env.bak", "notes.txt"):
        (tmp_path / name).write_text("EXO_HOME=/x\n")
    (tmp_path / "dir.env").mkdir()
    os.symlink(str(tmp_path / "gpu0.env"), str(tmp_path / "planted.env"))
    assert host.existing(str(tmp_path)) == [str(tmp_path / "gpu0.env"), str(tmp_path / "gpu1.env")]
    assert host.existing(str(tmp_path / "absent")) == []


@pytest.mark.parametrize("given, expected", [
    ({}, {"python_version": None, "account": None, "existing": None, "mig_minors_text": None, "mig_minors_error": None,
          "found": {}}),
    ({"mig_minors": "minors"}, {"mig_minors_text": "gpu0/gi1/access 21\n", "mig_minors_error": None}),
    ({"mig_minors": "absent"}, {"mig_minors_text": None}),
])
def test_each_part_is_looked_at_only_where_asked(tmp_path, given, expected):
    (tmp_path / "minors").write_text("gpu0/gi1/access 21\n")
    given = dict((key, str(tmp_path / value)) for key, value in given.items())
    answer = host.inspect(params(**given), run)
    assert dict((key, answer[key]) for key in expected) == expected
    if given.get("mig_minors", "").endswith("absent"):
        assert "No such file or directory" in answer["mig_minors_error"]
