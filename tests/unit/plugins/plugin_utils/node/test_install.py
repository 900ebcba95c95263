# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """How the node role puts exo into its virtualenv (plugins/plugin_utils/node/install.py), through
the filter gpufleet.exo.node_install, with the role's defaults and the host's state as the tasks
register it."""

import hashlib
import os
import sys

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import install as install_plan
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheelhouse as wheel_record
from tests.helpers import NODE_SETTINGS as PLAN_SETTINGS, REPO

with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as handle:
    DEFAULTS = yaml.safe_load(handle)

CHOICE = {"python": "/usr/bin/python3", "packages": [], "release": None, "errors": [],
          "advice": "point exo_node_python at a CPython 3.10 to 3.12 on the host"}
# What the tasks register: `python --version`, stat of the virtualenv's python, `python -m ensurepip --version`.
VERSION_311 = {"rc": 0, "stdout": "Python 3.11.2", "stderr": ""}
# What gpufleet.exo.exo_venv inspects where the virtualenv is still to be made and the Python lacks ensurepip.
NO_VENV = {"python": False, "ensurepip": 1, "exe": False, "marker": ""}


def settings(**changes):
    found = dict(PLAN_SETTINGS)
    found.update(changes)
    return found


def install(given=None, **state):
    return FilterModule().filters()["node_install"](given or settings(), **state)


def test_defaults_install_exo_from_its_repository_at_the_pinned_commit():
    plan = install()
    assert plan["errors"] == []
    assert plan["spec"] == "exo @ git+%s@%s" % (DEFAULTS["exo_node_git_url"], DEFAULTS["exo_node_git_version"])
    assert plan["pip"] == ["/opt/exo/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]


def test_the_marker_keeps_the_form_installed_hosts_recorded():
    # Hosts installed by earlier releases hold this text; another form would reinstall exo everywhere.
    plan = install(settings(exo_node_skip_requirements=["b", "a"], exo_node_replace_requirements={},
                            exo_node_add_requirements=[]))
    assert plan["source_id"] == (
        "git https://github.com/exo-explore/exo.git e4238f9ef369037252c7542e40ea1a8a625afba7\n"
        'requirements {"replace": {}, "skip": ["a", "b"], "tinygrad": "", "wheelhouse": ""}')


def test_added_requirements_change_the_marker_so_pip_installs_them_on_hosts_installed_before():
    before = install(settings(exo_node_add_requirements=[]))["source_id"]
    after = install(settings())["source_id"]
    assert after != before and '"add": ["llvmlite==0.44.0"]' in after


# What releases before full commit ids recorded (the short id e4238f9ef), and whether pip runs again.
RECORDED = [
    ("git https://github.com/exo-explore/exo.git e4238f9ef", False),
    ("git https://github.com/exo-explore/exo.git E4238F9EF", False),
    ("git https://github.com/exo-explore/exo.git e4238f9ef369037252c7542e40ea1a8a625afba7", False),
    ("git https://github.com/exo-explore/exo.git e4238f", True),  # too short to name a commit
    ("git https://github.com/exo-explore/exo.git 0123abcd", True),
    ("git https://example.com/fork.git e4238f9ef", True),
    ("path /opt/exo/source/exo.whl", True),
]


@pytest.mark.parametrize("recorded, again", RECORDED)
def test_a_host_installed_from_the_short_commit_id_is_not_installed_again(recorded, again):
    plan = install(settings(exo_node_skip_requirements=["b", "a"], exo_node_replace_requirements={}))
    venv = {"python": True, "ensurepip": None, "exe": True, "marker": recorded + "\n" + plan["source_id"].partition("\n")[2]}
    assert install_plan.needed(plan["source_id"], {"changed": False}, venv) is again


def test_every_setting_that_shapes_the_install_changes_the_marker():
    base = install()["source_id"]
    for change in ({"exo_node_git_version": "0123456789abcdef0123456789abcdef01234567"}, {"exo_node_tinygrad_requirement": "tinygrad==0.10.0"},
                   {"exo_node_skip_requirements": ["uvloop"]}, {"exo_node_replace_requirements": {"a": "b"}}):
        assert install(settings(**change))["source_id"] != base, change
    # pip's own arguments do not change what is installed
    assert install(settings(exo_node_pip_extra_args="--timeout 60"))["source_id"] == base


def wheelhouse_settings(directory):
    """The variables scripts/exo-wheelhouse.py writes for a wheelhouse in directory, with its record."""
    (directory / "exo-0.0.1-py3-none-any.whl").write_bytes(b"exo")
    (directory / "numpy-2.0.0-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"numpy")
    (directory / "llvmlite-0.44.0-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"llvmlite")
    (directory / wheel_record.RECORD).write_text(wheel_record.record_text(str(directory)))
    return settings(exo_node_source="path", exo_node_source_path=str(directory / "exo-0.0.1-py3-none-any.whl"),
                    exo_node_wheelhouse=str(directory))


def test_from_a_wheelhouse_pip_requires_the_recorded_hash_of_everything_it_installs(tmp_path):
    plan = install(wheelhouse_settings(tmp_path))
    assert plan["errors"] == []
    assert plan["pip"][6:] == ["--require-hashes", "--no-index", "--find-links", "/opt/exo/wheelhouse"]
    # pip reads hashes from a requirements file only: exo comes in with every wheel, each checked first.
    assert plan["spec"] == "--requirement=/opt/exo/wheelhouse/requirements.txt"


def test_a_wheel_rebuilt_under_the_same_name_installs_again(tmp_path):
    given = wheelhouse_settings(tmp_path)
    first = install(given)["source_id"]
    record = hashlib.sha256((tmp_path / wheel_record.RECORD).read_bytes()).hexdigest()
    assert first.endswith('"wheelhouse": "%s"}' % record)
    (tmp_path / "numpy-2.0.0-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"numpy, rebuilt")
    (tmp_path / wheel_record.RECORD).write_text(wheel_record.record_text(str(tmp_path)))
    assert install(given)["source_id"] != first


def test_a_wheel_changed_after_the_build_is_refused_where_the_tasks_verify(tmp_path):
    given = wheelhouse_settings(tmp_path)
    (tmp_path / "numpy-2.0.0-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"numpy, tampered")
    # Named only once the wheels are read, which the tasks ask for right before pip installs from them.
    assert install(given)["errors"] == []
    errors = install(given, verify=True)["errors"]
    assert len(errors) == 1
    assert errors[0].startswith('exo_node_wheelhouse "%s" numpy-2.0.0-cp311-cp311-manylinux_2_17_x86_64.whl changed '
                                'after the wheelhouse was built: its sha256 is %s'
                                % (tmp_path, hashlib.sha256(b"numpy, tampered").hexdigest()))
    assert "build the wheelhouse again with scripts/exo-wheelhouse.py" in errors[0]
    assert install(given, verify=True)["source_id"] is None
    # A host with exo from this wheelhouse already: pip does not run, and the wheels are not read.
    source = install(given)["source_id"]
    installed = {"python": True, "ensurepip": None, "exe": True, "marker": source}
    assert install(given, venv=installed, verify=True)["errors"] == []
    assert install(given, venv=installed, verify=True)["needed"] is False


def test_a_wheel_added_after_the_build_is_refused_by_every_check(tmp_path):
    given = wheelhouse_settings(tmp_path)
    (tmp_path / "six-1.16.0-py2.py3-none-any.whl").write_bytes(b"six")
    errors = install(given)["errors"]
    assert errors == ['exo_node_wheelhouse "%s" six-1.16.0-py2.py3-none-any.whl is not in its requirements.txt: it was '
                      'added after the wheelhouse was built; remove it, or %s' % (tmp_path, wheel_record.REBUILD)]


def test_a_wheelhouse_without_an_added_requirement_is_refused_before_pip_runs(tmp_path):
    given = wheelhouse_settings(tmp_path)
    os.remove(str(tmp_path / "llvmlite-0.44.0-cp311-cp311-manylinux_2_17_x86_64.whl"))
    (tmp_path / wheel_record.RECORD).write_text(wheel_record.record_text(str(tmp_path)))
    assert install(given)["errors"] == [
        'exo_node_add_requirements names llvmlite==0.44.0, which exo_node_wheelhouse "%s" lacks: build the wheelhouse '
        "again with scripts/exo-wheelhouse.py (it adds them), or set exo_node_add_requirements to what the hosts need "
        "(an exo that never runs tinygrad's CPU backend on BF16 weights needs none: [])" % tmp_path]
    assert install(dict(given, exo_node_add_requirements=[]))["errors"] == []


@pytest.mark.parametrize("source", [
    {"exo_node_source": "git"},
    {"exo_node_source": "index", "exo_node_index_requirement": "exo-fork==1.0"},
    {"exo_node_source": "path", "exo_node_source_path": "DIR"},
    {"exo_node_source": "path", "exo_node_source_path": "ELSEWHERE"},
])
def test_with_a_wheelhouse_exo_is_one_of_its_wheels(tmp_path, source):
    (tmp_path / "wheelhouse").mkdir()
    given = wheelhouse_settings(tmp_path / "wheelhouse")
    elsewhere = tmp_path / "exo-0.0.1-py3-none-any.whl"
    elsewhere.write_bytes(b"exo")
    paths = {"DIR": str(tmp_path), "ELSEWHERE": str(elsewhere)}
    given.update((key, paths.get(value, value)) for key, value in source.items())
    errors = install(given)["errors"]
    assert len(errors) == 1 and errors[0].startswith("exo_node_source is %s" % source["exo_node_source"])
    assert ("but with exo_node_wheelhouse pip installs only the wheelhouse's wheels, each checked against the sha256 "
            "its requirements.txt records: give exo_node_source path and, as exo_node_source_path, exo's wheel in the "
            "wheelhouse") in errors[0]


def test_pip_gets_the_index_then_the_extra_arguments():
    plan = install(settings(exo_node_source="index", exo_node_index_requirement="exo==0.0.1",
                            exo_node_pip_index_url="https://pypi.example/simple",
                            exo_node_pip_extra_args=" --timeout  60 "))
    assert plan["spec"] == "exo==0.0.1"
    assert plan["pip"][6:] == ["--index-url", "https://pypi.example/simple", "--timeout", "60"]
    assert plan["source_id"].startswith("index exo==0.0.1 https://pypi.example/simple\n")


def test_a_path_source_is_staged_under_the_install_dir(tmp_path):
    source = tmp_path / "exo-src"
    source.mkdir()
    plan = install(settings(exo_node_source="path", exo_node_source_path=str(source) + "//"))
    assert plan["errors"] == []
    assert plan["staged_source"] == plan["spec"] == "/opt/exo/src/exo-src"
    assert plan["source_is_dir"] is True
    assert plan["source_id"].startswith("path /opt/exo/src/exo-src\n")
    wheel = tmp_path / "exo-0.0.1-py3-none-any.whl"
    wheel.write_text("")
    assert install(settings(exo_node_source="path", exo_node_source_path=str(wheel)))["source_is_dir"] is False


@pytest.mark.parametrize("change, words", [
    ({"exo_node_git_version": ""}, ['exo_node_source is git but exo_node_git_url', 'exo_node_git_version ("")']),
    ({"exo_node_source": "path", "exo_node_source_path": "/nonexistent/exo.whl"},
     ['exo_node_source_path ("/nonexistent/exo.whl") is not a wheel, sdist or directory on the controller']),
    ({"exo_node_source": "index"}, ["exo_node_source is index but exo_node_index_requirement is empty"]),
    ({"exo_node_source": "index", "exo_node_index_requirement": "exo==0.0.1"},
     ['exo_node_index_requirement "exo==0.0.1" would come from PyPI, where the name exo is an unrelated project',
      "set exo_node_pip_index_url"]),
    ({"exo_node_wheelhouse": "/nonexistent"}, ['exo_node_wheelhouse is "/nonexistent", which is not a directory on '
                                               'the controller; give the directory of the wheels']),
    ({"exo_node_python": "python 3"}, ['exo_node_python is "python 3"; give an absolute path or a command name']),
])
def test_bad_settings_are_refused_with_the_variable_and_its_value(change, words):
    plan = install(settings(**change))
    assert len(plan["errors"]) == 1
    for word in words:
        assert word in plan["errors"][0]
    assert plan["spec"] is None and plan["source_id"] is None


def test_an_index_requirement_for_another_name_needs_no_index():
    assert install(settings(exo_node_source="index", exo_node_index_requirement="exo-fork==1.0"))["errors"] == []


def test_the_venv_package_only_where_the_virtualenv_cannot_be_made_as_it_is():
    debian = dict(os_family="Debian", python_choice=CHOICE, python_version=VERSION_311)
    assert install(venv=NO_VENV, **debian)["packages"] == ["python3.11-venv", "git", "nftables"]
    # ensurepip not asked (the virtualenv exists) or present: no venv package
    assert install(venv=dict(NO_VENV, python=True, ensurepip=None), **debian)["packages"] == ["git", "nftables"]
    assert install(venv=dict(NO_VENV, ensurepip=0), **debian)["packages"] == ["git", "nftables"]
    # EL and the other families build ensurepip in; a path source needs no git
    assert install(os_family="RedHat", venv=NO_VENV)["packages"] == ["git", "nftables"]
    assert install(settings(exo_node_source="index", exo_node_index_requirement="exo-fork"),
                   venv=NO_VENV, **debian)["packages"] == ["python3.11-venv", "nftables"]


def test_a_cpu_instance_brings_the_compiler_of_tinygrads_cpu_backend_before_the_facts_are_gathered():
    cpu, gpu = {"kind": "cpu", "name": "cpu"}, {"kind": "gpu", "name": "GPU-1"}
    assert install(os_family="Debian", plan={"instances": [gpu, cpu]})["packages"] == ["git", "nftables", "clang"]
    assert install(os_family="Debian", plan={"instances": [gpu]})["packages"] == ["git", "nftables"]
    assert install(settings(exo_node_cpu_packages=["clang", "git"]), plan={"instances": [cpu]})["packages"] == ["git", "nftables", "clang"]
    assert install(settings(exo_node_cpu_packages=[]), plan={"instances": [cpu]})["packages"] == ["git", "nftables"]
    # nft loads the firewall's table; without the firewall it is not needed
    assert install(settings(exo_node_firewall=False), plan={"instances": [gpu]})["packages"] == ["git"]
    # nginx only for the API's proxy
    assert install(settings(exo_node_api_proxy=True, exo_node_api_proxy_tokens=["0123456789abcdef"]),
                   plan={"instances": [gpu]})["packages"] == ["git", "nftables", "nginx"]


def test_a_plan_without_facts_brings_the_compiler_where_a_cpu_instance_may_come():
    # The first facts came from an interpreter without nvidia-ml-py: the planner saw none.
    unknown = node_plan.instances(None, dict(PLAN_SETTINGS), "h", preview=True)
    assert unknown["instances"] == [] and "cpu" in unknown["backends"]
    assert install(plan=unknown)["packages"] == ["git", "nftables", "clang"]
    no_fallback = node_plan.instances(None, dict(PLAN_SETTINGS, exo_node_cpu_fallback=False), "h", preview=True)
    assert install(plan=no_fallback)["packages"] == ["git", "nftables"]


@pytest.mark.parametrize("result, release", [
    (VERSION_311, "3.11"),
    ({"rc": 0, "stdout": "", "stderr": "Python 2.7.18"}, "2.7"),
    ({"rc": 0, "stdout": "Python 3.12.0rc1+", "stderr": ""}, "3.12"),
    ({"rc": 2, "msg": "[Errno 2] No such file or directory"}, ""),
])
def test_the_release_is_read_from_what_the_interpreter_says(result, release):
    assert install(python_choice=CHOICE, python_version=result)["python_release"] == release


def test_an_interpreter_out_of_range_is_refused_with_what_to_do():
    errors = install(python_choice=CHOICE, python_version={"rc": 0, "stdout": "Python 3.13.1"})["python_errors"]
    assert errors == ["exo's Python /usr/bin/python3 is Python 3.13; exo runs on Python 3.10 to 3.12 "
                      "(exo_node_python_min_version, exo_node_python_max_version: exo pins numpy 2.0.0, which has "
                      "no wheel for newer Pythons, and tinygrad needs 3.10). On this host: point exo_node_python "
                      "at a CPython 3.10 to 3.12 on the host."]
    missing = install(python_choice=CHOICE, python_version={"rc": 2, "msg": "No such file"})["python_errors"]
    assert "/usr/bin/python3 does not run as a Python interpreter (No such file)" in missing[0]
    assert install(python_choice=CHOICE, python_version=VERSION_311)["python_errors"] == []


def test_a_python_the_role_installs_is_not_asked_for_its_release():
    choice = dict(CHOICE, python="/usr/bin/python3.12", packages=["python3.12"])
    absent = {"rc": 2, "msg": "No such file"}
    assert install(python_choice=choice, python_version=absent)["python_errors"] == []
    assert install(settings(exo_node_manage_packages=False), python_choice=choice,
                   python_version=absent)["python_errors"] != []


def test_this_interpreter_is_in_range_of_its_own_release():
    own = "%d.%d" % sys.version_info[:2]
    plan = install(settings(exo_node_python=sys.executable, exo_node_python_max_version=own),
                   python_choice=dict(CHOICE, python=sys.executable),
                   python_version={"rc": 0, "stdout": "Python %s.0" % own})
    assert plan["python_errors"] == [] and plan["python_release"] == own
