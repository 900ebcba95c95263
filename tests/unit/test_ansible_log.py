# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/ansible_log.py: which deprecation warnings of a log are the collection's own (the suite fails on those),
and which tasks failed (printed last where a scenario failed)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from tests import ansible_log
from tests.helpers import REPO

WARNING = "[DEPRECATION WARNING]: INJECT_FACTS_AS_VARS default to `True` is deprecated."
CASES = [
    # (log, the warnings found, how many are the collection's own)
    ("ok: [h1]\n", [], 0),
    (WARNING + "\nOrigin: %s/playbooks/verify.yml:17:9\n" % REPO,
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.", REPO + "/playbooks/verify.yml")], 1),
    ("\x1b[1;35m" + WARNING + "\x1b[0m\n\x1b[1;35mOrigin: %s/roles/node/tasks/units.yml:3\x1b[0m\n" % REPO,
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.", REPO + "/roles/node/tasks/units.yml")], 1),
    # molecule frames each line of ansible-playbook's output
    ("  \x1b[2m│\x1b[0m " + WARNING + "\n  \x1b[2m│\x1b[0m Origin: %s/roles/node/molecule/serve/verify.yml:5:3\n" % REPO,
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.", REPO + "/roles/node/molecule/serve/verify.yml")], 1),
    (WARNING + "\nOrigin: /usr/lib/python3/dist-packages/ansible_collections/containers/podman/x.yml:1:1\n",
     [("INJECT_FACTS_AS_VARS default to `True` is deprecated.",
       "/usr/lib/python3/dist-packages/ansible_collections/containers/podman/x.yml")], 0),
    ("[DEPRECATION WARNING]: gpufleet.exo.node_plan: an option is deprecated.\n",
     [("gpufleet.exo.node_plan: an option is deprecated.", None)], 1),
    ("[DEPRECATION WARNING]: something of ansible-core.\nok: [h1]\n", [("something of ansible-core.", None)], 0),
]


@pytest.mark.parametrize("log,found,own", CASES)
def test_the_collections_own_deprecations(log, found, own):
    assert ansible_log.warnings(log) == found
    assert sum(ansible_log.ours(message, origin) for message, origin in found) == own


def test_the_exit_status_says_whether_any_is_ours(tmp_path):
    for case in CASES:
        path = tmp_path / "log"
        path.write_text(case[0])
        assert ansible_log.main(["deprecations", str(path)]) == (1 if case[2] else 0), case[0]


def test_a_link_to_the_repository_counts_as_the_repository(tmp_path):
    link = tmp_path / "exo"
    os.symlink(REPO, str(link))
    assert ansible_log.ours("x", str(link / "roles" / "node" / "tasks" / "main.yml"))


# A molecule log: each line in molecule's frame, coloured.
FRAMED = "".join("  \x1b[2m│\x1b[0m %s\n" % line for line in """\
TASK [Send one short completion through the ring] ******************************
fatal: [gf-serve-a]: FAILED! => {"changed": false, "msg": "exo answered HTTP 500"}
...ignoring

TASK [Check it answered] *****************************************
ok: [gf-serve-b]
fatal: [gf-serve-a]: FAILED! => {
    "assertion": "answer.chunks == verify_answer.chunks",
    "changed": false,
    "msg": "A after B [\\"Hello\\"], A fresh [\\"Hi\\"]"
}

RUNNING HANDLER [Restart exo] ******
failed: [gf-serve-b] (item=cpu) => {"ansible_loop_var": "item", "msg": "timed out"}
PLAY RECAP *********************************************************************
""".splitlines())
FAILED_TASKS = [
    ("TASK [Check it answered]", 'fatal: [gf-serve-a]: FAILED! => { "assertion": "answer.chunks == verify_answer.chunks", '
     '"changed": false, "msg": "A after B [\\"Hello\\"], A fresh [\\"Hi\\"]" }'),
    ("RUNNING HANDLER [Restart exo]",
     'failed: [gf-serve-b] (item=cpu) => {"ansible_loop_var": "item", "msg": "timed out"}'),
]


def test_the_failed_tasks_of_a_molecule_log_each_on_one_line_the_ignored_left_out():
    assert ansible_log.failures(FRAMED) == FAILED_TASKS


def test_the_failures_printed_are_the_last_and_cut_short(tmp_path, capsys, monkeypatch):
    path = tmp_path / "log"
    path.write_text(FRAMED)
    monkeypatch.setattr(ansible_log, "LAST_FAILURES", 1)
    monkeypatch.setattr(ansible_log, "FAILURE_CHARS", 40)
    assert ansible_log.main(["failures", str(path)]) == 0
    assert capsys.readouterr().out == "RUNNING HANDLER [Restart exo]: %s\n" % FAILED_TASKS[1][1][:40]


def test_an_unknown_command_is_refused_with_the_usage(capsys):
    assert ansible_log.main(["failed"]) == 2
    assert "usage: python tests/ansible_log.py {deprecations,failures} LOG..." in capsys.readouterr().err
