# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_ring_key does on the host (plugins/module_utils/_ring_key.py): keys in a
directory of the test's own, made and read by the simulated wg (tests/simulated/wg.py), whose keys are
X25519 keys as WireGuard's. The role's tunnel with the real wg runs in the molecule cluster scenario."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import stat
import subprocess

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils._ring_key import KeyFailed, ring_key
from tests.simulated import wg as simwg


def run(argv, data=None):
    """AnsibleModule.run_command's answer (data ends with a newline, as it sends it)."""
    proc = subprocess.run(argv, input=None if data is None else data + "\n", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def wg(tmp_path):
    return simwg.install(str(tmp_path))


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_key_is_made_once_root_s_alone_and_only_its_public_half_answered(tmp_path, wg):
    path = str(tmp_path / "ring" / "private.key")
    made = ring_key(path, wg, run, check_mode=False)
    with open(path) as handle:
        private = handle.read()
    assert made == {"changed": True, "public_key": simwg.public_key(private)}
    assert mode(path) == 0o600 and mode(os.path.dirname(path)) == 0o700
    assert private.strip() not in str(made)
    assert ring_key(path, wg, run, check_mode=False) == dict(made, changed=False)
    assert os.listdir(os.path.dirname(path)) == ["private.key"]


def test_check_mode_makes_no_key_and_reads_one_that_exists(tmp_path, wg):
    path = str(tmp_path / "ring" / "private.key")
    assert ring_key(path, wg, run, check_mode=True) == {"changed": True, "public_key": ""}
    assert not os.path.exists(os.path.dirname(path))
    made = ring_key(path, wg, run, check_mode=False)
    assert ring_key(path, wg, run, check_mode=True) == dict(made, changed=False)
    # wg only shown installed: no answer, no failure
    assert ring_key(path, None, run, check_mode=True) == {"changed": False, "public_key": ""}


def test_a_key_wg_refuses_fails_without_showing_it(tmp_path, wg):
    path = tmp_path / "private.key"
    path.write_text("not a key")
    with pytest.raises(KeyFailed) as failed:
        ring_key(str(path), wg, run, check_mode=False)
    assert str(failed.value) == "wg pubkey failed (rc 1): Key is not the correct length or format"
