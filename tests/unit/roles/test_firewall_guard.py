# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall unit's guard (roles/node/files/firewall_guard.py): which lines of nft's monitor concern
the table, and that the table is loaded again when it is gone or changed, and only then. nft is a fake
here that keeps the one table in a file; the cluster scenario flushes a real ruleset."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import subprocess
import sys
import textwrap
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "node", "files"))
import firewall_guard as guard  # noqa: E402  pylint: disable=wrong-import-position

# "flush" beside the table file: the next listing of a loaded table finds a flush landed just before it.
# "monitor" writes lines about other tables, every few milliseconds, for as long as it runs.
FAKE_NFT = """\
#!%s
import os, shutil, sys, time
state, log = %r, %r
flush = state + ".flush"
with open(log, "a") as handle:
    handle.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["-f", "-"]:
    text = sys.stdin.read()
    if text.startswith("create table") and os.path.exists(state):
        sys.exit(1)
    open(state, "w").write(text)
elif sys.argv[1] == "-f":
    shutil.copy(sys.argv[2], state)
elif sys.argv[1:3] == ["list", "table"]:
    if os.path.exists(flush) and os.path.exists(state):
        os.remove(flush)
        os.remove(state)
    try:
        sys.stdout.write(open(state).read())
    except IOError:
        sys.exit(1)
elif sys.argv[1] == "monitor":
    while True:
        sys.stdout.write("add element ip filter f2b { 192.0.2.7 }\\n")
        sys.stdout.flush()
        time.sleep(0.005)
"""


@pytest.fixture
def nft(tmp_path, monkeypatch):
    """(the table file, the fake's table, the log of its calls)."""
    state, log, path = tmp_path / "state", tmp_path / "log", tmp_path / "firewall.nft"
    fake = tmp_path / "nft"
    fake.write_text(FAKE_NFT % (sys.executable, str(state), str(log)))
    fake.chmod(0o755)
    path.write_text("table inet gpufleet_exo { chain input { } }\n")
    monkeypatch.setattr(guard, "NFT", str(fake))
    return path, state, log


def loads(log):
    return [line for line in log.read_text().splitlines() if line.startswith("-f")] if log.exists() else []


def test_a_removed_table_is_created_again_in_one_transaction_that_only_adds(nft):
    path, state, log = nft
    path.write_text("table inet gpufleet_exo\ndelete table inet gpufleet_exo\ntable inet gpufleet_exo { chain input { } }\n")
    assert guard.restore("inet", "gpufleet_exo", str(path)) == (
        "create table inet gpufleet_exo\ntable inet gpufleet_exo { chain input { } }\n")
    assert loads(log) == ["-f -"]
    # where it is back already (another load came first), the whole file replaces it
    assert guard.restore("inet", "gpufleet_exo", str(path)) == path.read_text()
    assert loads(log) == ["-f -", "-f -", "-f %s" % path]


# Lines of nft's monitor: whether they concern the table, and whether they say it is gone.
@pytest.mark.parametrize("text, concerned, gone", [
    ("delete table inet gpufleet_exo\n", True, True),
    ("# new generation 12 by process 40 (nft)\ndelete table inet gpufleet_exo\nadd table ip filter\n", True, True),
    ("add element ip filter f2b { 192.0.2.7 }\ndelete rule inet gpufleet_exo output handle 9\n", True, False),
    ("delete rule inet gpufleet_exo output handle 9\n", True, False),
    # the guard's own load: the file deletes the table and adds it again, in one transaction
    ("delete table inet gpufleet_exo\nadd table inet gpufleet_exo\nadd chain inet gpufleet_exo input\n", True, False),
    ("# new generation 12 by process 40 (nft)\n", False, False),
    ("delete table inet gpufleet_exo2\n", False, False),
    ("delete table ip gpufleet_exo\n", False, False),
])
def test_only_lines_about_the_table_concern_it_and_a_removal_is_told_apart(text, concerned, gone):
    assert guard.concerns(text, "inet", "gpufleet_exo") is concerned
    assert guard.deleted(text, "inet", "gpufleet_exo") is gone


@pytest.mark.parametrize("now, reloaded", [
    (None, True),                                   # flushed away
    ("table inet gpufleet_exo { }\n", True),        # its rules deleted
    ("table inet gpufleet_exo { chain input { } }\n", False),
])
def test_the_table_is_loaded_again_when_gone_or_changed_and_only_then(nft, now, reloaded):
    path, state, log = nft
    wanted = path.read_text()
    if now is not None:
        state.write_text(now)
    assert guard.keep("inet", "gpufleet_exo", str(path), wanted) == wanted
    assert state.read_text() == wanted
    assert bool(loads(log)) is reloaded


def test_a_table_nft_refuses_stops_the_guard_with_nfts_message(nft, tmp_path):
    fake = tmp_path / "nft"
    fake.write_text(textwrap.dedent("""\
        #!/bin/sh
        echo "Error: syntax error, unexpected junk" >&2
        exit 1
        """))
    with pytest.raises(SystemExit, match="nft -f .* failed: Error: syntax error"):
        guard.load(str(nft[0]))


def test_a_flush_between_the_load_and_its_listing_loads_again_and_never_keeps_no_table(nft):
    path, state, log = nft
    (state.parent / "state.flush").write_text("")
    wanted = path.read_text()
    # the table is gone, and a second flush lands right after the guard loads it again
    assert guard.keep("inet", "gpufleet_exo", str(path), wanted) == wanted
    assert state.read_text() == wanted and len(loads(log)) == 2
    assert guard.loaded("inet", "gpufleet_exo", str(path)) == wanted


def test_the_check_runs_on_its_own_clock_while_the_monitor_talks_of_other_tables(nft, tmp_path):
    path, state, log = nft
    script = ("import sys; sys.path.insert(0, %r); import firewall_guard as g; g.NFT = %r; g.CHECK_EVERY = 0.2; "
              "g.main(['inet', 'gpufleet_exo', %r])" % (os.path.dirname(guard.__file__), guard.NFT, str(path)))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # the guard's first load done and recorded
        assert proc.stdout.readline().decode().startswith("keeping table inet gpufleet_exo")
        deadline = time.monotonic() + 20
        # removed without a line of the monitor's about it
        state.unlink()
        while not state.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state.exists(), "the table was not loaded again within 20 s while the monitor talked"
    finally:
        proc.kill()
        proc.wait()
    assert len(loads(log)) >= 2
