# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/deprecations.py: which deprecation warnings of a log are the collection's own (the suite fails on those)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from tests import deprecations
from tests.helpers import REPO

WARNING = "[DEPRECATION WARNING]: INJECT_FACTS_AS_VARS default to `True` is deprecated."
CASES = [
    # (log, the warnings found, how many are the collection's own)
    ("ok: [h1]\n", [], 0),
    (WARNING + "\nOrigin: %s/playbooks/verify.yml:17:9\n" % REPO,
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.", REPO + "/playbooks/verify.yml")], 1),
    ("\x1b[1;35m" + WARNING + "\x1b[0m\n\x1b[1;35mOrigin: %s/roles/node/tasks/units.yml:3\x1b[0m\n" % REPO,
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.", REPO + "/roles/node/tasks/units.yml")], 1),
    (WARNING + "\nOrigin: /usr/lib/python3/dist-packages/ansible_collections/containers/podman/x.yml:1:1\n",
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.",
       "/usr/lib/python3/dist-packages/ansible_collections/containers/podman/x.yml")], 0),
    ("[DEPRECATION WARNING]: gpufleet.exo.node_plan: an option is deprecated.\n",
     [("gpufleet.exo.node_plan: an option is deprecated.", None)], 1),
    ("[DEPRECATION WARNING]: something of ansible-core.\nok: [h1]\n", [("something of ansible-core.", None)], 0),
]


@pytest.mark.parametrize("log,found,own", CASES)
def test_the_collections_own_deprecations(log, found, own):
    assert deprecations.warnings(log) == found
    assert sum(deprecations.ours(message, origin) for message, origin in found) == own


def test_the_exit_status_says_whether_any_is_ours(tmp_path):
    for case in CASES:
        path = tmp_path / "log"
        path.write_text(case[0])
        assert deprecations.main([str(path)]) == (1 if case[2] else 0), case[0]


def test_a_link_to_the_repository_counts_as_the_repository(tmp_path):
    link = tmp_path / "exo"
    os.symlink(REPO, str(link))
    assert deprecations.ours("x", str(link / "roles" / "node" / "tasks" / "main.yml"))
