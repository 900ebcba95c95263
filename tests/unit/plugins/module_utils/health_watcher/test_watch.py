# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the health watcher, root, writes its files (plugins/module_utils/health_watcher/watch.py, _write)
in a directory another user owns, node_exporter's textfile directory: whatever that user plants
there, and whenever, root writes and changes the mode of no file but its own new one."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import os
import stat

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import watch

NAME = "gpufleet_exo_health.prom"
SECRET = "root:$6$hash:19000:0:99999:7:::\n"


@pytest.fixture
def textfile(tmp_path):
    """(the metrics' path in a directory of its own, a file of root's outside it that a link can point at)."""
    (tmp_path / "textfile").mkdir()
    outside = tmp_path / "shadow"
    outside.write_text(SECRET)
    outside.chmod(0o600)
    return str(tmp_path / "textfile" / NAME), outside


def untouched(outside):
    assert outside.read_text() == SECRET
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600


def written(path, text):
    """path is a file of its own (no link) with text, readable by node_exporter, and nothing else is left."""
    assert not os.path.islink(path)
    with open(path) as handle:
        assert handle.read() == text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_the_file_is_written_with_its_mode_whatever_the_umask(textfile):
    path, dummy = textfile
    before = os.umask(0o077)
    try:
        watch._write(path, "a 1\n")
        watch._write(path, "a 2\n")
    finally:
        os.umask(before)
    written(path, "a 2\n")
    assert os.listdir(os.path.dirname(path)) == [NAME]


def test_a_link_planted_at_the_files_temporary_name_is_left_alone_and_another_name_taken(textfile, monkeypatch):
    path, outside = textfile
    planted = os.path.join(os.path.dirname(path), ".planted")
    os.symlink(str(outside), planted)
    names = iter([".planted", ".fresh"])
    monkeypatch.setattr(watch, "_temp_name", lambda name: next(names))
    watch._write(path, "a 1\n")
    untouched(outside)
    written(path, "a 1\n")
    assert os.readlink(planted) == str(outside)


def test_a_link_at_the_files_own_name_is_replaced_not_written_through(textfile):
    path, outside = textfile
    os.symlink(str(outside), path)
    watch._write(path, "a 1\n")
    untouched(outside)
    written(path, "a 1\n")


def test_a_link_in_place_of_the_directory_is_refused(textfile, tmp_path):
    path, outside = textfile
    os.symlink(str(tmp_path), str(tmp_path / "elsewhere"))
    with pytest.raises(OSError) as refused:
        watch._write(str(tmp_path / "elsewhere" / "shadow"), "a 1\n")
    assert refused.value.errno in (errno.ENOTDIR, errno.ELOOP)  # O_DIRECTORY's answer, or O_NOFOLLOW's
    untouched(outside)


# What root calls on its new file, by path or by descriptor, each a moment at which the directory's
# owner can swap the file for a link.
STEPS = ("chmod", "fchmod", "write", "fsync", "close", "rename", "replace")


def test_the_file_swapped_for_a_link_at_any_step_leaves_the_links_target_alone(textfile, monkeypatch):
    path, outside = textfile
    directory = os.path.dirname(path)
    swapped = []

    def swap():
        """What the directory's owner does: each new file of root's there becomes a link to outside."""
        for name in os.listdir(directory):
            entry = os.path.join(directory, name)
            if name != NAME and not os.path.islink(entry):
                os.unlink(entry)
                os.symlink(str(outside), entry)
                swapped.append(name)

    def swapping_before(real):
        def call(*args, **kwargs):
            swap()
            return real(*args, **kwargs)
        return call
    for step in STEPS:
        monkeypatch.setattr(os, step, swapping_before(getattr(os, step)))
    watch._write(path, "a 1\n")
    monkeypatch.undo()
    assert swapped
    untouched(outside)
