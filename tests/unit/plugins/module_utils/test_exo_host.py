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
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_host as host


def run(argv, handle_exceptions=True):
    """AnsibleModule.run_command's answer, of a real process; a missing program raises where asked to, as it does."""
    if handle_exceptions and not shutil.which(argv[0]):
        return 127, "", "not found"
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def params(**given):
    return dict(dict(python=None, venv=None, marker=None, paths=[], modules=[], user=None, instances_dir=None,
                     mig_minors=None), **given)


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


def test_a_kernel_module_is_had_where_sysfs_lists_it_or_modprobe_finds_it(tmp_path, monkeypatch):
    # A simulated modprobe: finds "loadable" only, as `modprobe --dry-run` does a module of the kernel's tree.
    (tmp_path / "modprobe").write_text('#!/bin/sh\n[ "$1" = --dry-run ] && [ "$2" = loadable ]\n')
    os.chmod(str(tmp_path / "modprobe"), 0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    listed = sorted(os.listdir("/sys/module"))[:1]
    answer = host.kernel_modules(listed + ["loadable", "gpufleet_no_such_module"], run)
    assert answer == dict([(name, True) for name in listed] + [("loadable", True), ("gpufleet_no_such_module", False)])


def test_a_kernel_module_is_missing_where_there_is_no_modprobe(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert host.kernel_modules(["gpufleet_no_such_module"], run) == {"gpufleet_no_such_module": False}


def test_the_virtualenv_is_what_the_install_decides_from(tmp_path):
    venv = tmp_path / "exo"
    marker = venv / ".gpufleet-exo-source"
    answer = host.inspect(params(python=sys.executable, venv=str(venv), marker=str(marker)), run)
    assert answer["venv"] == {"python": False, "ensurepip": 0, "exe": False, "marker": ""}
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "exo"):
        os.symlink(sys.executable, str(venv / "bin" / name))
    marker.write_text("path /srv/wheelhouse/exo.whl\n")
    answer = host.inspect(params(python=sys.executable, venv=str(venv), marker=str(marker)), run)
    assert answer["venv"] == {"python": True, "ensurepip": None, "exe": True, "marker": "path /srv/wheelhouse/exo.whl"}
    missing = host.inspect(params(python=str(tmp_path / "python3.99"), venv=str(tmp_path / "other"), marker=None), run)
    assert missing["venv"]["ensurepip"] == 2


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
    ({}, {"python_version": None, "venv": None, "account": None, "existing": None, "mig_minors_text": None,
          "mig_minors_error": None, "found": {}, "modules": {}}),
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
