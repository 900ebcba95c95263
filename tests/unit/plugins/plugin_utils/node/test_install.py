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
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS as PLAN_SETTINGS, REPO, checked

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
    """node_install as the role asks it: with the settings its preflight checked (a refused one fails the test)."""
    return FilterModule().filters()["node_install"](checked(given or settings()), **state)


VERSION_312 = {"rc": 0, "stdout": "Python 3.12.1", "stderr": ""}
# pip on the host, whatever the source: the host's copy of the wheelhouse alone, wheels only, every hash checked.
HOST_PIP = ["/opt/exo/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
            "--require-hashes", "--no-index", "--only-binary", ":all:", "--find-links", "/opt/exo/wheelhouse"]
REQUIREMENTS_SPEC = "--requirement=/opt/exo/wheelhouse/requirements.txt"


def test_defaults_install_exo_from_a_wheelhouse_the_controller_builds_at_the_pinned_commit():
    plan = install(python_choice=CHOICE, python_version=VERSION_312, arch="aarch64")
    assert plan["errors"] == []
    assert plan["spec"] == REQUIREMENTS_SPEC and plan["pip"] == HOST_PIP
    wheels = dict(plan["wheels"])
    assert len(wheels.pop("key")) == 16
    assert wheels == {"exo": "git+%s@%s" % (DEFAULTS["exo_node_git_url"], DEFAULTS["exo_node_git_version"]),
                      "tinygrad": "", "python": "3.12", "arch": "aarch64", "glibc": "2.28",
                      "skip": sorted(DEFAULTS["exo_node_skip_requirements"]),
                      "replace": DEFAULTS["exo_node_replace_requirements"], "add": DEFAULTS["exo_node_add_requirements"],
                      "extra": DEFAULTS["exo_node_probe_packages"], "index_url": ""}


def test_the_marker_of_a_built_wheelhouse_names_the_build_so_hosts_installed_unverified_install_again():
    given = settings(exo_node_skip_requirements=["b", "a"], exo_node_replace_requirements={}, exo_node_add_requirements=[])
    plan = install(given, python_choice=CHOICE, python_version=VERSION_312)
    before = ("git https://github.com/exo-explore/exo.git e4238f9ef369037252c7542e40ea1a8a625afba7\n"
              'requirements {"replace": {}, "skip": ["a", "b"], "tinygrad": "", "wheelhouse": ""}')
    assert plan["source_id"] == before[:-1] + ', "wheels": "%s"}' % plan["wheels"]["key"]
    installed = {"python": True, "ensurepip": None, "exe": True, "marker": before}
    assert install(given, python_choice=CHOICE, python_version=VERSION_312, venv=installed)["needed"] is True


def source_settings(tmp_path, source):
    """The settings of one source of SOURCES, with its files under tmp_path."""
    (tmp_path / "exo-src").mkdir()
    (tmp_path / "exo-src" / "setup.py").write_text("setup()")
    (tmp_path / "exo-0.0.1.tar.gz").write_bytes(b"sdist")
    changes = dict((key, value.replace("TMP", str(tmp_path))) for key, value in source.items())
    return settings(**changes)


# Per source: what pip on the controller is given for exo, and the identity the build's key is made of.
SOURCES = [
    ({"exo_node_source": "git", "exo_node_git_url": "https://example.org/exo.git",
      "exo_node_git_version": "0123456789abcdef0123456789abcdef01234567"},
     "git+https://example.org/exo.git@0123456789abcdef0123456789abcdef01234567"),
    ({"exo_node_source": "path", "exo_node_source_path": "TMP/exo-src"}, "TMP/exo-src"),
    ({"exo_node_source": "path", "exo_node_source_path": "TMP/exo-0.0.1.tar.gz"}, "TMP/exo-0.0.1.tar.gz"),
    ({"exo_node_source": "index", "exo_node_index_requirement": "exo==0.0.1",
      "exo_node_pip_index_url": "https://pypi.example/simple"}, "exo==0.0.1"),
]


@pytest.mark.parametrize("source, exo", SOURCES)
def test_every_source_installs_binary_only_from_hashes_on_the_host(tmp_path, source, exo):
    plan = install(source_settings(tmp_path, source), os_family="Debian", python_choice=CHOICE,
                   python_version=VERSION_312, venv=NO_VENV)
    assert plan["errors"] == []
    assert plan["wheels"]["exo"] == exo.replace("TMP", str(tmp_path))
    assert plan["wheels"]["index_url"] == source.get("exo_node_pip_index_url", "")
    # The host never asks an index, never builds, never fetches from git.
    assert plan["pip"] == HOST_PIP and plan["spec"] == REQUIREMENTS_SPEC
    assert plan["packages"] == ["python3.12-venv", "nftables"]


@pytest.mark.parametrize("source, exo", SOURCES)
def test_the_build_is_named_by_what_goes_into_it(tmp_path, source, exo):
    given = source_settings(tmp_path, source)
    state = dict(python_choice=CHOICE, python_version=VERSION_312)
    key = install(given, **state)["wheels"]["key"]
    assert install(given, **state)["wheels"]["key"] == key
    assert install(given, python_choice=CHOICE, python_version=VERSION_311)["wheels"]["key"] != key
    assert install(given, arch="aarch64", **state)["wheels"]["key"] != key
    assert install(dict(given, exo_node_tinygrad_requirement="tinygrad==0.10.0"), **state)["wheels"]["key"] != key
    assert install(dict(given, exo_node_probe_packages=["psutil"]), **state)["wheels"]["key"] != key


def test_a_path_source_is_named_by_its_content_less_what_a_build_leaves(tmp_path):
    given = source_settings(tmp_path, SOURCES[1][0])
    state = dict(python_choice=CHOICE, python_version=VERSION_312)
    key = install(given, **state)["wheels"]["key"]
    (tmp_path / "exo-src" / "build").mkdir()
    (tmp_path / "exo-src" / "build" / "lib.py").write_text("built")
    (tmp_path / "exo-src" / "exo.egg-info").mkdir()
    assert install(given, **state)["wheels"]["key"] == key
    (tmp_path / "exo-src" / "setup.py").write_text("setup(name='exo')")
    changed = install(given, **state)
    assert changed["wheels"]["key"] != key and changed["source_id"].endswith('"wheels": "%s"}' % changed["wheels"]["key"])


def test_no_build_is_asked_for_where_exo_is_in_or_its_python_is_not_known():
    done = install(python_choice=CHOICE, python_version=VERSION_312)
    installed = {"python": True, "ensurepip": None, "exe": True, "marker": done["source_id"]}
    assert install(python_choice=CHOICE, python_version=VERSION_312, venv=installed)["wheels"] is None
    assert install()["wheels"] is None
    # A distribution's Python the role installs is known by its release before it runs.
    assert install(python_choice=dict(CHOICE, release="3.11"))["wheels"]["python"] == "3.11"


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
    assert install_plan.needed(plan["source_id"], venv) is again


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
    plan = install(wheelhouse_settings(tmp_path), python_choice=CHOICE, python_version=VERSION_311)
    assert plan["errors"] == []
    assert plan["pip"] == HOST_PIP
    # pip reads hashes from a requirements file only: exo comes in with every wheel, each checked first.
    assert plan["spec"] == REQUIREMENTS_SPEC
    # The controller builds nothing: it packs the wheelhouse given.
    record = hashlib.sha256((tmp_path / wheel_record.RECORD).read_bytes()).hexdigest()
    assert plan["wheels"] == {"key": "given-" + record[:16], "wheelhouse": str(tmp_path)}
    assert '"wheels"' not in plan["source_id"]


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


def test_the_index_serves_the_controller_and_pip_on_the_host_gets_the_extra_arguments():
    plan = install(settings(exo_node_source="index", exo_node_index_requirement="exo==0.0.1",
                            exo_node_pip_index_url="https://pypi.example/simple",
                            exo_node_pip_extra_args=" --timeout  60 "), python_choice=CHOICE, python_version=VERSION_312)
    assert plan["pip"] == HOST_PIP + ["--timeout", "60"]
    assert plan["wheels"]["index_url"] == "https://pypi.example/simple"
    assert plan["source_id"].startswith("index exo==0.0.1 https://pypi.example/simple\n")


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
])
def test_bad_settings_are_refused_with_the_variable_and_its_value(change, words):
    plan = install(settings(**change))
    assert len(plan["errors"]) == 1
    for word in words:
        assert word in plan["errors"][0]
    assert plan["spec"] is None and plan["source_id"] is None


def test_a_bad_python_is_refused_by_the_check_of_the_settings_before_the_install_is_planned():
    # The preflight stops on it: node_install never sees it.
    values, errors = check_settings(settings(exo_node_python="python 3"))
    assert len(errors) == 1
    assert 'exo_node_python is "python 3"; give an absolute path or a command name' in errors[0]


def test_an_index_requirement_for_another_name_needs_no_index():
    assert install(settings(exo_node_source="index", exo_node_index_requirement="exo-fork==1.0"))["errors"] == []


def test_the_venv_package_only_where_the_virtualenv_cannot_be_made_as_it_is():
    debian = dict(os_family="Debian", python_choice=CHOICE, python_version=VERSION_311)
    assert install(venv=NO_VENV, **debian)["packages"] == ["python3.11-venv", "nftables"]
    # ensurepip not asked (the virtualenv exists) or present: no venv package
    assert install(venv=dict(NO_VENV, python=True, ensurepip=None), **debian)["packages"] == ["nftables"]
    assert install(venv=dict(NO_VENV, ensurepip=0), **debian)["packages"] == ["nftables"]
    # EL and the other families build ensurepip in; no source needs git on the host
    assert install(os_family="RedHat", venv=NO_VENV)["packages"] == ["nftables"]
    assert install(settings(exo_node_source="index", exo_node_index_requirement="exo-fork"),
                   venv=NO_VENV, **debian)["packages"] == ["python3.11-venv", "nftables"]


def test_a_cpu_instance_brings_the_compiler_of_tinygrads_cpu_backend_before_the_facts_are_gathered():
    cpu, gpu = {"kind": "cpu", "name": "cpu"}, {"kind": "gpu", "name": "GPU-1"}
    assert install(os_family="Debian", plan={"instances": [gpu, cpu]})["packages"] == ["nftables", "clang"]
    assert install(os_family="Debian", plan={"instances": [gpu]})["packages"] == ["nftables"]
    assert install(settings(exo_node_cpu_packages=["clang", "nftables"]), plan={"instances": [cpu]})["packages"] == ["nftables", "clang"]
    assert install(settings(exo_node_cpu_packages=[]), plan={"instances": [cpu]})["packages"] == ["nftables"]
    # nft loads the firewall's table; without the firewall it is not needed
    assert install(settings(exo_node_firewall=False), plan={"instances": [gpu]})["packages"] == []
    # nginx only for the API's proxy
    assert install(settings(exo_node_api_proxy=True, exo_node_api_proxy_tokens=["0123456789abcdef"]),
                   plan={"instances": [gpu]})["packages"] == ["nftables", "nginx"]


def test_a_plan_without_facts_brings_the_compiler_where_a_cpu_instance_may_come():
    # The first facts came from an interpreter without nvidia-ml-py: the planner saw none.
    unknown = node_plan.instances(None, checked(PLAN_SETTINGS), "h", preview=True)
    assert unknown["instances"] == [] and "cpu" in unknown["backends"]
    assert install(plan=unknown)["packages"] == ["nftables", "clang"]
    no_fallback = node_plan.instances(None, checked(dict(PLAN_SETTINGS, exo_node_cpu_fallback=False)), "h", preview=True)
    assert install(plan=no_fallback)["packages"] == ["nftables"]


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


def test_a_python_the_role_installs_comes_first_among_the_packages():
    # EL 9's python3.12, not installed yet when the host is looked at: no ensurepip, and EL needs no venv package.
    choice = dict(CHOICE, python="/usr/bin/python3.12", packages=["python3.12"])
    assert install(os_family="RedHat", python_choice=choice, python_version={"rc": 2, "msg": "No such file"},
                   venv=dict(NO_VENV, ensurepip=2))["packages"] == ["python3.12", "nftables"]


def test_this_interpreter_is_in_range_of_its_own_release():
    own = "%d.%d" % sys.version_info[:2]
    plan = install(settings(exo_node_python=sys.executable, exo_node_python_max_version=own),
                   python_choice=dict(CHOICE, python=sys.executable),
                   python_version={"rc": 0, "stdout": "Python %s.0" % own})
    assert plan["python_errors"] == [] and plan["python_release"] == own
