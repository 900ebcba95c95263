# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The wheelhouse's record (plugins/plugin_utils/node/wheelhouse.py): requirements.txt in pip's hash
format, and each way the wheels can differ from it, named with what to do."""

import hashlib

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheelhouse

WHEELS = {"exo-0.0.1-py3-none-any.whl": b"exo wheel",
          "charset_normalizer-3.4.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": b"charset",
          "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": b"numpy"}


def digest(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def built(tmp_path):
    for name, data in WHEELS.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "exo-wheelhouse.yml").write_text("exo_node_source: path\n")
    (tmp_path / wheelhouse.RECORD).write_text(wheelhouse.record_text(str(tmp_path)))
    return tmp_path


def test_the_record_is_each_wheel_by_name_and_version_with_its_sha256_in_pips_format(built):
    lines = [line for line in (built / wheelhouse.RECORD).read_text().splitlines() if not line.startswith("#")]
    assert lines == [
        "charset_normalizer==3.4.0 --hash=sha256:%s" % digest(b"charset"),
        "exo==0.0.1 --hash=sha256:%s" % digest(b"exo wheel"),
        "numpy==2.0.0 --hash=sha256:%s" % digest(b"numpy"),
    ]
    assert wheelhouse.problems(str(built), verify=True) == []


def test_builds_of_one_version_for_several_platforms_share_a_line(built):
    (built / "numpy-2.0.0-cp312-cp312-musllinux_1_1_x86_64.whl").write_bytes(b"numpy musl")
    text = wheelhouse.record_text(str(built))
    assert "numpy==2.0.0 --hash=sha256:%s" % " --hash=sha256:".join(sorted([digest(b"numpy"), digest(b"numpy musl")])) in text


@pytest.mark.parametrize("name, words", [
    ("numpy-1.26.4-cp312-cp312-manylinux_2_17_x86_64.whl", ["numpy-2.0.0-cp312", "version 1.26.4", "keep one"]),
    ("numpy.whl", ["numpy.whl is not named as a wheel"]),
])
def test_a_wheelhouse_pip_could_not_install_whole_is_not_recorded(built, name, words):
    (built / name).write_bytes(b"other")
    with pytest.raises(ValueError) as raised:
        wheelhouse.record_text(str(built))
    for word in words:
        assert word in str(raised.value)


def test_a_wheel_changed_after_the_build_is_named_with_both_hashes_and_what_to_do(built):
    wheel = built / "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    wheel.write_bytes(b"numpy, tampered")
    # By name alone (what every evaluation of the planner costs) nothing differs...
    assert wheelhouse.problems(str(built)) == []
    # ...by content it does.
    found = wheelhouse.problems(str(built), verify=True)
    assert found == ["%s changed after the wheelhouse was built: its sha256 is %s, requirements.txt records %s; %s, "
                     "and find out what changed it" % (wheel.name, digest(b"numpy, tampered"), digest(b"numpy"),
                                                       wheelhouse.REBUILD)]
    assert "scripts/exo-wheelhouse.py" in found[0]


def test_a_wheel_added_after_the_build_is_named(built):
    (built / "evil-1.0-py3-none-any.whl").write_bytes(b"evil")
    (built / "numpy-2.0.0-cp312-cp312-musllinux_1_1_x86_64.whl").write_bytes(b"numpy musl")
    found = wheelhouse.problems(str(built))
    assert found[0].startswith("evil-1.0-py3-none-any.whl is not in its requirements.txt: it was added after the "
                               "wheelhouse was built; remove it, or build the wheelhouse again")
    # Another build of a recorded version is caught by its content.
    assert len(found) == 1
    assert [p.split(":")[0] for p in wheelhouse.problems(str(built), verify=True)[1:]] == [
        "numpy-2.0.0-cp312-cp312-musllinux_1_1_x86_64.whl changed after the wheelhouse was built"]


def test_a_recorded_wheel_that_is_gone_is_named(built):
    (built / "exo-0.0.1-py3-none-any.whl").unlink()
    assert wheelhouse.problems(str(built)) == [
        "requirements.txt records exo==0.0.1, but no wheel of it is in the wheelhouse; " + wheelhouse.REBUILD]


def test_a_wheelhouse_without_a_record_is_refused(tmp_path):
    (tmp_path / "exo-0.0.1-py3-none-any.whl").write_bytes(b"exo")
    found = wheelhouse.problems(str(tmp_path))
    assert len(found) == 1
    assert found[0].startswith("has no readable requirements.txt, the sha256 of each of its wheels")
    assert found[0].endswith(wheelhouse.REBUILD)
    assert wheelhouse.record_id(str(tmp_path)) == ""


def test_the_record_is_read_as_pip_reads_it(tmp_path):
    (tmp_path / "exo-0.0.1-py3-none-any.whl").write_bytes(b"exo")
    (tmp_path / "six-1.16.0-py2.py3-none-any.whl").write_bytes(b"six")
    (tmp_path / wheelhouse.RECORD).write_text(
        "# a comment\n\nexo==0.0.1 \\\n    --hash sha256:%s  # exo's own\nsix==1.16.0 --hash=sha256:%s --hash=sha256:%s\n"
        % (digest(b"exo"), "0" * 64, digest(b"six")))
    assert wheelhouse.problems(str(tmp_path), verify=True) == []


@pytest.mark.parametrize("line", ["exo>=0.0.1 --hash=sha256:" + "0" * 64, "exo==0.0.1", "exo==0.0.1 --hash=md5:" + "0" * 32,
                                  'exo==0.0.1 ; python_version < "3.13" --hash=sha256:' + "0" * 64])
def test_a_line_the_role_cannot_check_is_named_with_its_number(tmp_path, line):
    (tmp_path / "exo-0.0.1-py3-none-any.whl").write_bytes(b"exo")
    (tmp_path / wheelhouse.RECORD).write_text("# header\n" + line + "\n")
    found = wheelhouse.problems(str(tmp_path))
    assert found[0].startswith("requirements.txt line 2 (%s) is not name==version --hash=sha256:<64 hex digits>"
                               % line[:80])


def test_the_record_id_follows_the_content_of_the_wheels(built):
    first = wheelhouse.record_id(str(built))
    assert first == digest((built / wheelhouse.RECORD).read_bytes())
    (built / "exo-0.0.1-py3-none-any.whl").write_bytes(b"exo rebuilt under the same name")
    (built / wheelhouse.RECORD).write_text(wheelhouse.record_text(str(built)))
    assert wheelhouse.record_id(str(built)) != first
