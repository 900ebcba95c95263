# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo.exo_venv's check of exo's sources against the collection's patches (plugins/module_utils/_exo_venv.py,
check_patches()): the role's gpufleet_exo_patches.py run for real with --check, on a wheelhouse of the test's own or
in a virtualenv of the test's own; pip and the virtualenv's making as a runner that records each command. The whole
install with real pip is tests/integration/test_exo_venv.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_venv as exo_venv
from tests.helpers import REPO

with open(os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.py")) as _handle:
    PATCHES_FILE = _handle.read()
# exo's device_capabilities.py as no release has it.
CHANGED = "async def device_capabilities():\n    return None\n"
CHANGED_SHA256 = hashlib.sha256(CHANGED.encode()).hexdigest()
KNOWN = "sha256 d0498756e39b7f132a127eb7561394c20086ec229a1430a733520fe38b8c4d73 of exo e4238f9ef"


class Host(object):
    """The host's commands: the patches' check runs for real; making the virtualenv leaves bin/python and bin/exo, pip
    installs nothing, and the virtualenv says its purelib is purelib."""

    def __init__(self, purelib):
        self.purelib, self.calls = str(purelib), []

    def __call__(self, argv):
        self.calls.append(argv)
        if "--check" in argv:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                  check=False)
            return proc.returncode, proc.stdout, proc.stderr
        if argv[1:3] == ["-m", "venv"]:
            os.makedirs(os.path.join(argv[3], "bin"))
            for name in ("python", "exo"):
                with open(os.path.join(argv[3], "bin", name), "w") as handle:
                    handle.write("#!/bin/sh\n")
                os.chmod(os.path.join(argv[3], "bin", name), 0o755)
            return 0, "", ""
        if argv[1:2] == ["-c"]:
            return 0, self.purelib + "\n", ""
        return 0, "Successfully installed nothing\n", ""

    def checks(self):
        return [argv for argv in self.calls if "--check" in argv]


def writer(written):
    def put(path, content):
        written[path] = content
        return True
    return put


@pytest.fixture
def wheelhouse(tmp_path):
    """The host's copy of a wheelhouse with exo's wheel, its device_capabilities.py changed, and its record."""
    directory = tmp_path / "wheelhouse"
    directory.mkdir()
    with zipfile.ZipFile(str(directory / "exo-0.0.1-py3-none-any.whl"), "w") as archive:
        archive.writestr("exo/__init__.py", "")
        archive.writestr("exo/topology/device_capabilities.py", CHANGED)
    (directory / "requirements.txt").write_text("exo==0.0.1 --hash=sha256:%s\n" % ("0" * 64))
    return directory


def params(tmp_path, **changes):
    """What the node role gives the module (roles/node/tasks/install.yml), for an install from the host's wheelhouse."""
    pip = [str(tmp_path / "exo" / "bin" / "python"), "-m", "pip", "install"]
    values = {"path": str(tmp_path / "exo"), "python": sys.executable, "pip": pip,
              "install": True, "spec": "--requirement=%s" % (tmp_path / "wheelhouse" / "requirements.txt"),
              "skip_requirements": [], "replace_requirements": {}, "tinygrad_requirement": "", "add_requirements": [],
              "files": {"gpufleet_exo_patches.py": PATCHES_FILE, "gpufleet_exo_patches.pth": "import gpufleet_exo_patches\n"},
              "marker": str(tmp_path / "exo" / ".gpufleet-exo-source"), "source_id": "path exo", "probe_packages": [],
              "patches": "gpufleet_exo_patches.py", "unpatched": False}
    values.update(changes)
    return values


@pytest.fixture
def scratch(tmp_path):
    (tmp_path / "scratch").mkdir()
    return str(tmp_path / "scratch")


def test_an_exo_the_patches_do_not_know_is_refused_before_anything_changes(tmp_path, wheelhouse, scratch):
    host, written = Host(tmp_path / "purelib"), {}
    with pytest.raises(exo_venv.StepFailed) as refused:
        exo_venv.install(params(tmp_path), host, writer(written), False, scratch=scratch)
    message = str(refused.value)
    wheel = str(wheelhouse / "exo-0.0.1-py3-none-any.whl")
    assert ("exo.topology.device_capabilities (exo/topology/device_capabilities.py in %s, sha256 %s) is not a source "
            "this collection knows (%s)" % (wheel, CHANGED_SHA256, KNOWN)) in message
    # Every module the patches change but the wheel lacks is named too, with the sources they know.
    assert "exo.api.chatgpt_api (no source of it found) is not a source this collection knows (sha256 ac7416fe" in message
    assert "Nothing was installed or changed" in message and "exo_node_exo_unpatched: true" in message
    # The patches' own file, with the host's Python, on the wheelhouse pip was to install from; then nothing.
    assert host.calls == [[sys.executable, "-I", os.path.join(scratch, "gpufleet_exo_patches.py"), "--check",
                           str(wheelhouse)]]
    assert written == {} and not (tmp_path / "exo").exists()


def test_with_unpatched_the_install_goes_on_and_says_what_runs_without_the_patches(tmp_path, wheelhouse, scratch):
    host, written = Host(tmp_path / "purelib"), {}
    result = exo_venv.install(params(tmp_path, unpatched=True), host, writer(written), False, scratch=scratch)
    found = result["patches"]
    assert found["checked"] == "wheelhouse" and len(found["unknown"]) == len(found["modules"]) == 8
    warning = found["warning"]
    assert warning.startswith("exo runs without the collection's patches of exo.api.chatgpt_api, ")
    assert "exo.topology.device_capabilities" in warning and CHANGED_SHA256 in warning and KNOWN in warning
    assert "the refusal of models that were not placed" in warning and "transformers still runs no code" in warning
    # The check came first; the install went on: the virtualenv, pip, the patches and the marker.
    assert "--check" in host.calls[0] and host.calls[1][1:3] == ["-m", "venv"]
    assert [argv[-1] for argv in result["commands"]][1] == params(tmp_path)["spec"]
    assert sorted(written) == sorted([str(tmp_path / "purelib" / "gpufleet_exo_patches.py"),
                                      str(tmp_path / "purelib" / "gpufleet_exo_patches.pth"),
                                      str(tmp_path / "exo" / ".gpufleet-exo-source")])


def virtualenv(tmp_path, files):
    """A virtualenv of this Python with files in its purelib: an exo installed by an earlier run."""
    venv = str(tmp_path / "exo")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    purelib = sysconfig.get_path("purelib", vars={"base": venv, "platbase": venv})
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(purelib, name)), exist_ok=True)
        with open(os.path.join(purelib, name), "w") as handle:
            handle.write(text)
    with open(os.path.join(venv, "bin", "exo"), "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(os.path.join(venv, "bin", "exo"), 0o755)
    return venv, purelib


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check mode"])
def test_the_installed_exo_is_checked_on_a_run_that_installs_none(tmp_path, scratch, check_mode):
    """A later release of the patches may not know the exo a host runs: the marker keeps pip from running, the check
    does not."""
    venv, purelib = virtualenv(tmp_path, {"exo/__init__.py": "", "exo/topology/device_capabilities.py": CHANGED})
    host, written = Host(purelib), {}
    with pytest.raises(exo_venv.StepFailed) as refused:
        exo_venv.install(params(tmp_path, install=False), host, writer(written), check_mode, scratch=scratch)
    origin = os.path.join(purelib, "exo", "topology", "device_capabilities.py")
    assert ("exo.topology.device_capabilities (%s, sha256 %s) is not a source this collection knows (%s)"
            % (origin, CHANGED_SHA256, KNOWN)) in str(refused.value)
    # The virtualenv's own Python looked, isolated; no file of it was written, no pip ran.
    assert host.calls == [[os.path.join(venv, "bin", "python"), "-I", os.path.join(scratch, "gpufleet_exo_patches.py"),
                           "--check"]]
    assert written == {}


def test_an_exo_whose_sources_the_patches_know_goes_on_without_a_warning(tmp_path, scratch):
    venv, purelib = virtualenv(tmp_path, {"gf_exo/__init__.py": "", "gf_exo/mod.py": CHANGED})
    # The patches file with a table of its own (the check reads the table of the file it runs).
    table = 'PATCHES = {"gf_exo.mod": ({"%s": "exo test"}, None)}\n\n\nif __name__ == "__main__":' % CHANGED_SHA256
    own = PATCHES_FILE.replace('if __name__ == "__main__":', table)
    host, written = Host(purelib), {}
    result = exo_venv.install(params(tmp_path, install=False, files={"gpufleet_exo_patches.py": own}), host,
                              writer(written), False, scratch=scratch)
    assert result["patches"] == {"checked": "virtualenv", "unknown": [], "warning": None, "modules": [
        {"module": "gf_exo.mod", "origin": os.path.join(purelib, "gf_exo", "mod.py"), "sha256": CHANGED_SHA256,
         "known": {CHANGED_SHA256: "exo test"}, "matches": True}]}
    assert list(written) == [os.path.join(purelib, "gpufleet_exo_patches.py"), str(tmp_path / "exo" / ".gpufleet-exo-source")]


@pytest.mark.parametrize("changes, check_mode", [
    ({"patches": None}, False),  # the module's own use without the collection's patches
    ({}, True),  # in check mode the host's wheelhouse is still the last install's
    ({"install": False}, True),  # check mode before the virtualenv exists
], ids=["no patches", "an install to come in check mode", "no virtualenv yet in check mode"])
def test_nothing_is_checked_where_there_is_nothing_to_read(tmp_path, wheelhouse, scratch, changes, check_mode):
    host = Host(tmp_path / "purelib")
    result = exo_venv.install(params(tmp_path, **changes), host, writer({}), check_mode, scratch=scratch)
    assert result["patches"] == exo_venv.UNCHECKED and host.checks() == []


@pytest.mark.parametrize("changes, expected", [
    ({"spec": "exo==0.0.1"}, "spec \"exo==0.0.1\" is neither"),
    ({"patches": "missing.py"}, "patches names missing.py, which is not one of files"),
    ({"files": {"gpufleet_exo_patches.py": "import sys\nsys.exit(3)\n"}},
     "checking exo's sources against the patches (gpufleet_exo_patches.py --check) failed (rc 3)"),
])
def test_a_check_that_cannot_be_made_stops_the_install(tmp_path, wheelhouse, scratch, changes, expected):
    host, written = Host(tmp_path / "purelib"), {}
    with pytest.raises(exo_venv.StepFailed, match=r".*%s" % expected.replace("(", r"\(").replace(")", r"\)")):
        exo_venv.install(params(tmp_path, **changes), host, writer(written), False, scratch=scratch)
    assert written == {} and not (tmp_path / "exo").exists()


@pytest.mark.parametrize("spec, expected", [
    ("--requirement={w}/requirements.txt", ["{w}"]),
    ("-r {w}/requirements.txt", ["{w}"]),
    ("{w}/exo-0.0.1-py3-none-any.whl", ["{w}/exo-0.0.1-py3-none-any.whl"]),
    ("{w}/absent.whl", None),
    ("git+https://github.com/exo-explore/exo.git@e4238f9ef", None),
])
def test_the_wheels_of_what_pip_is_given(wheelhouse, spec, expected):
    w = str(wheelhouse)
    assert exo_venv.spec_wheels(spec.format(w=w)) == (None if expected is None else [e.format(w=w) for e in expected])
