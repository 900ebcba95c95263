# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheelhouses the controller builds and packs (plugins/plugin_utils/node/wheel_build.py), with pip's part
replaced by wheels written here: the stamp, the refusal of a changed wheel, the archive, the messages."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fcntl
import os
import sys
import tarfile
import threading

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheel_build
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheelhouse as wheel_record

REQUEST = {"key": "k", "exo": "EXO", "tinygrad": "", "python": "3.12", "arch": "x86_64", "glibc": "2.28",
           "skip": [], "replace": {}, "add": [], "extra": ["psutil"], "index_url": ""}


@pytest.fixture
def builds(monkeypatch):
    """pip's part replaced: each build writes exo's and numpy's wheels; the list counts the builds."""
    made = []

    def build_into(work, python, exo, *_rest):
        made.append(exo)
        for name in ("exo-0.0.1-py3-none-any.whl", "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.whl"):
            with open(os.path.join(work, name), "w") as handle:
                handle.write(name)
        return {"exo_wheel": "exo-0.0.1-py3-none-any.whl", "tinygrad_requirement": ""}

    monkeypatch.setattr(wheel_build, "_build_into", build_into)
    monkeypatch.setattr(wheel_build, "find_interpreter", lambda release: sys.executable)
    return made


def source(tmp_path):
    directory = tmp_path / "exo-src"
    directory.mkdir(exist_ok=True)
    (directory / "setup.py").write_text("setup()")
    return dict(REQUEST, exo=str(directory))


def test_a_build_is_made_once_and_packed_once(tmp_path, builds):
    request = source(tmp_path)
    first = wheel_build.prepare(request, str(tmp_path / "cache"))
    assert first["errors"] == [] and first["changed"] is True and builds == [request["exo"]]
    assert first["wheelhouse"] == str(tmp_path / "cache" / "k")
    assert wheel_record.problems(first["wheelhouse"], verify=True) == []
    with tarfile.open(first["archive"]) as archive:
        assert sorted(archive.getnames()) == sorted(wheel_record.wheels(first["wheelhouse"]) + [wheel_record.RECORD])
    assert os.path.basename(first["archive"]) == wheel_record.record_id(first["wheelhouse"]) + ".tar"
    second = wheel_build.prepare(request, str(tmp_path / "cache"))
    assert second["changed"] is False and len(builds) == 1 and second["log"] == ["%s is up to date" % second["wheelhouse"]]
    # The source changed: built again.
    (tmp_path / "exo-src" / "setup.py").write_text("setup(name='exo')")
    assert wheel_build.prepare(request, str(tmp_path / "cache"))["changed"] is True and len(builds) == 2


def test_a_second_build_of_one_wheelhouse_waits_for_the_first_and_builds_nothing(tmp_path, builds):
    # As the role's forks build one wheelhouse for many hosts, or a play runs beside scripts/exo-wheelhouse.py.
    request = source(tmp_path)
    dest = str(tmp_path / "cache" / "k")
    os.makedirs(os.path.dirname(dest))
    results = []
    second = threading.Thread(target=lambda: results.append(wheel_build.build(dest, request["exo"], log=lambda line: None)))
    with open(dest + ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        second.start()
        second.join(0.5)
        assert second.is_alive() and builds == [], "a build went on while another held the wheelhouse"
        # The first build's own work, under its lock.
        wheel_build._build(dest, request["exo"], "", "3.12", "x86_64", wheel_build.GLIBC, (), {}, (), (), "",
                           lambda line: None, True)
    second.join(10)
    assert builds == [request["exo"]] and results[0]["built"] is False


def test_a_wheel_changed_in_the_cache_is_refused_by_the_role_and_built_again_by_the_script(tmp_path, builds):
    request = source(tmp_path)
    built = wheel_build.prepare(request, str(tmp_path / "cache"))
    wheel = os.path.join(built["wheelhouse"], "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.whl")
    recorded = wheel_record.sha256(wheel)
    with open(wheel, "w") as handle:
        handle.write("tampered")
    refused = wheel_build.prepare(request, str(tmp_path / "cache"))
    assert refused["archive"] is None and len(builds) == 1
    assert refused["errors"] == [
        "the controller's wheelhouse %s: numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.whl changed after the wheelhouse "
        "was built: its sha256 is %s, requirements.txt records %s; remove %s and run again to build it anew, and find "
        "out what changed it" % (built["wheelhouse"], wheel_record.sha256(wheel), recorded, built["wheelhouse"])]
    # scripts/exo-wheelhouse.py builds it again instead.
    again = wheel_build.build(built["wheelhouse"], request["exo"], log=lambda line: None)
    assert again["built"] is True and wheel_record.problems(built["wheelhouse"], verify=True) == []


def test_a_wheelhouse_given_is_read_whole_and_packed_only_as_recorded(tmp_path):
    given = tmp_path / "given"
    given.mkdir()
    (given / "exo-0.0.1-py3-none-any.whl").write_text("exo")
    (given / wheel_record.RECORD).write_text(wheel_record.record_text(str(given)))
    request = {"key": "given-x", "wheelhouse": str(given)}
    assert wheel_build.prepare(request, str(tmp_path / "cache"), check_mode=True) == {
        "wheelhouse": str(given), "archive": None, "tinygrad_requirement": None, "errors": [], "log": [], "changed": False}
    assert not os.path.exists(str(tmp_path / "cache"))
    (given / "exo-0.0.1-py3-none-any.whl").write_text("exo, changed")
    refused = wheel_build.prepare(request, str(tmp_path / "cache"))
    assert refused["archive"] is None and len(refused["errors"]) == 1
    assert refused["errors"][0].startswith('exo_node_wheelhouse "%s" exo-0.0.1-py3-none-any.whl changed after the '
                                           'wheelhouse was built' % given)


def test_check_mode_builds_nothing(tmp_path, builds):
    found = wheel_build.prepare(source(tmp_path), str(tmp_path / "cache"), check_mode=True)
    assert builds == [] and found["archive"] is None and found["changed"] is False


def test_a_source_the_controller_cannot_build_says_what_to_do(tmp_path):
    found = wheel_build.prepare(dict(REQUEST, exo=str(tmp_path / "nonexistent"), python="%d.%d" % sys.version_info[:2]),
                                str(tmp_path / "cache"))
    assert len(found["errors"]) == 1 and found["archive"] is None
    assert found["errors"][0].startswith("exo's wheelhouse for %s on CPython %d.%d could not be built on the "
                                         "controller: pip wheel failed" % ((tmp_path / "nonexistent",) + sys.version_info[:2]))
    assert found["errors"][0].endswith(wheel_build.CANNOT_BUILD) and "give it as exo_node_wheelhouse" in wheel_build.CANNOT_BUILD


# exo's requirements as the role shapes them, tinygrad given: where tinygrad is built from ("" : downloaded with the rest).
TINYGRAD = [
    (["tinygrad @ git+https://github.com/tinygrad/tinygrad.git@ec12"], "", "git+https://github.com/tinygrad/tinygrad.git@ec12"),
    (["tinygrad @ git+https://github.com/tinygrad/tinygrad.git@ec12"], "tinygrad==0.10.0", "tinygrad==0.10.0"),
    (["tinygrad"], "", ""),
    (["numpy==2.0.0"], "", ""),
]


@pytest.mark.parametrize("declared, given, built_from", TINYGRAD)
def test_tinygrad_is_built_from_what_is_given_else_from_exos_own_url(declared, given, built_from):
    assert wheel_build._tinygrad_source({"install": declared}, "EXO", given) == built_from


def test_a_directory_is_named_by_its_content_less_what_a_build_leaves(tmp_path):
    (tmp_path / "setup.py").write_text("setup()")
    before = wheel_build.source_identity(str(tmp_path))
    for scratch in ("build/lib/x.py", "exo.egg-info/PKG-INFO", ".git/HEAD", "exo/__pycache__/x.pyc"):
        (tmp_path / scratch).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / scratch).write_text("x")
    assert wheel_build.source_identity(str(tmp_path)) == before
    (tmp_path / "exo").joinpath("main.py").write_text("print()")
    assert wheel_build.source_identity(str(tmp_path)) != before
    assert wheel_build.source_identity("git+https://example.org/exo.git@abc") == "git+https://example.org/exo.git@abc"
