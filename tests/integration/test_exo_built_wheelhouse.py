# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every source installs from a wheelhouse with every hash checked: the one the controller builds.

The node role's install phase runs on this machine, as root over a local connection, with a path source
(the stand-in of tests/standin, a source directory, and what the package index of this machine serves)
and no exo_node_wheelhouse: the controller builds a wheelhouse for it under exo_node_wheel_cache once,
and the host's pip installs from it with --require-hashes --no-index --only-binary :all:. A wheel
changed in the controller's cache is refused, named, before anything is copied; pip given a source
package alone fails rather than building it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import shutil
import subprocess
import zipfile

import pytest

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheelhouse as wheel_record
from tests.helpers import REPO, checked
from tests.integration.node_install_phase import install_phase

# The hosts' Python: this machine's own, in exo's range (make site's too); the controller builds for its release.
HOST_PYTHON = "/usr/bin/python3"
RELEASE = subprocess.run([HOST_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
# One build, shared by the tests of this file (they run on one worker: tests/conftest.py).
CACHE = os.path.join(REPO, ".build", "exo-built-wheelhouse", "cache")
pytestmark = pytest.mark.xdist_group("exo-built-wheelhouse")


def run(args, **kwargs):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=900, check=False, **kwargs)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The stand-in's source directory, copied: setuptools' leftovers must not name another build."""
    copy = str(tmp_path_factory.mktemp("standin") / "standin")
    shutil.copytree(os.path.join(REPO, "tests", "standin"), copy)
    return copy


def role_run(tmp_path, source):
    """The node role's install phase with exo_node_source path and no wheelhouse; exo's virtualenv under tmp_path."""
    # The stand-in has none of exo's modules: the role installs it only with the opt-in to an exo the patches do not know.
    return install_phase(tmp_path, dict(exo_node_source="path", exo_node_source_path=source, exo_node_wheel_cache=CACHE,
                                        exo_node_python=HOST_PYTHON, exo_node_add_requirements=[],
                                        exo_node_exo_unpatched=True), verbose=True)


def task(output, name):
    """What the run printed from a task of the role on."""
    return output[output.index("TASK [gpufleet.exo.node : %s" % name):]


def built_for(source):
    """The wheelhouse the controller built for the stand-in on this Python, as the planner names it."""
    plan = FilterModule().filters()["node_install"](
        checked({"exo_node_source": "path", "exo_node_source_path": source, "exo_node_add_requirements": [],
                 "exo_node_id_prefix": "h", "exo_node_address": "127.0.0.1", "exo_node_cluster_hosts": ["h"]}),
        python_choice={"python": HOST_PYTHON, "release": RELEASE}, arch=os.uname().machine)
    return os.path.join(CACHE, plan["wheels"]["key"])


def test_a_path_source_installs_from_the_wheelhouse_the_controller_builds_and_a_second_run_builds_nothing(tmp_path, source):
    first = role_run(tmp_path, source)
    assert first.returncode == 0, first.stdout[-6000:]
    directory = built_for(source)
    with open(os.path.join(directory, wheel_record.RECORD)) as handle:
        recorded, problems = wheel_record.read_record(handle.read())
    assert problems == [] and {"gpufleet-exo-standin", "tinygrad", "nvidia-ml-py", "psutil"} <= set(name for name, version in recorded)
    # Every pip command on the host: the wheelhouse alone, wheels only, every hash checked.
    install_step = task(first.stdout, "Install exo, what it needs").split("\nTASK ", 1)[0]
    pip_runs = install_step.count('"-m", "pip", "install"')
    assert pip_runs >= 2, install_step[:3000]
    assert install_step.count('"--require-hashes", "--no-index", "--only-binary", ":all:"') == pip_runs
    assert '"--requirement=%s/wheelhouse/requirements.txt"' % (tmp_path / "exo_node_install_dir") in install_step
    assert (tmp_path / "exo_node_install_dir" / "bin" / "exo").exists()
    # The host's copy is the controller's, file for file.
    assert sorted(os.listdir(str(tmp_path / "exo_node_install_dir" / "wheelhouse"))) == sorted(
        wheel_record.wheels(directory) + [wheel_record.RECORD])

    again = role_run(tmp_path, source)
    assert again.returncode == 0, again.stdout[-6000:]
    assert "localhost                  : ok=" in again.stdout and " changed=0 " in again.stdout, again.stdout[-3000:]

    # Another host, the same source: the controller finds its wheelhouse up to date.
    other = tmp_path / "other"
    other.mkdir()
    fresh = role_run(other, source)
    assert fresh.returncode == 0, fresh.stdout[-6000:]
    assert "is up to date" in task(fresh.stdout, "Build or check the wheelhouses")[:4000]


def test_a_wheel_changed_in_the_controllers_cache_is_refused_naming_it(tmp_path, source):
    directory = built_for(source)
    if not os.path.isdir(directory):  # this test alone
        (tmp_path / "first").mkdir()
        assert role_run(tmp_path / "first", source).returncode == 0
    wheel = [w for w in wheel_record.wheels(directory) if w.startswith("tinygrad-")][0]
    with open(os.path.join(directory, wheel), "rb") as handle:
        saved = handle.read()
    try:
        with zipfile.ZipFile(os.path.join(directory, wheel), "a") as archive:
            archive.writestr("tinygrad/_slipped_in.py", "import os\n")
        proc = role_run(tmp_path, source)
    finally:
        with open(os.path.join(directory, wheel), "wb") as handle:
            handle.write(saved)
    assert proc.returncode != 0, proc.stdout[-4000:]
    refusal = task(proc.stdout, "Stop where the controller could not build the wheelhouse")[:4000]
    assert "the controller's wheelhouse %s: %s changed after the wheelhouse was built" % (directory, wheel) in refusal, refusal
    assert "remove %s and run again" % directory in refusal
    assert not os.path.exists(str(tmp_path / "exo_node_install_dir" / "wheelhouse"))
    assert not (tmp_path / "exo_node_install_dir" / "bin" / "exo").exists()


def test_pip_as_the_role_runs_it_on_the_host_never_builds_a_source_package(tmp_path):
    """A requirement the wheelhouse holds only as a source package: pip fails, and its setup.py never runs."""
    venv = tmp_path / "exo"
    assert run([HOST_PYTHON, "-m", "venv", str(venv)]).returncode == 0
    ran = tmp_path / "setup-py-ran"
    project = tmp_path / "sdist" / "sdist_only-1.0"
    project.mkdir(parents=True)
    (project / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: sdist-only\nVersion: 1.0\n")
    (project / "setup.py").write_text("open(%r, 'w').write('built as root')\nfrom setuptools import setup\n"
                                      "setup(name='sdist-only', version='1.0')\n" % str(ran))
    wheelhouse = venv / "wheelhouse"
    sdist = shutil.make_archive(str(wheelhouse / "sdist_only-1.0"), "gztar", str(project.parent), project.name)
    with open(sdist, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    (wheelhouse / wheel_record.RECORD).write_text("sdist-only==1.0 --hash=sha256:%s\n" % digest)
    plan = FilterModule().filters()["node_install"](checked({"exo_node_install_dir": str(venv), "exo_node_id_prefix": "h",
                                                             "exo_node_address": "127.0.0.1", "exo_node_cluster_hosts": ["h"]}))
    proc = run(plan["pip"] + ["--force-reinstall", "--no-deps", plan["spec"]])
    assert proc.returncode != 0
    assert "No matching distribution found for sdist-only==1.0" in proc.stdout, proc.stdout[-3000:]
    assert not ran.exists()
