# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fixtures of every suite: the facts of the simulated hosts as recorded, the simulated libnvidia-ml, a
simulated host to run device_facts on, and interpreters with or without tinygrad. What they are built from
is in tests/helpers.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, recorded_facts, run_module
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml
from tests.simulated import sysfs as simsysfs

TIMEOUT = 300  # generous: the host is shared; this only stops a hung child from hanging the suite

# What takes longest (seconds on this kind of machine, tests/run.sh integration on two workers), handed out
# first when the suite runs on several workers (pytest-xdist), so that none is left to run alone at the
# end: the groups of pytest.mark.xdist_group by their name (the names joined with "_" where a test has
# two, as pytest-xdist joins them), the other files by their path.
LONGEST_FIRST = (
    "exo-wheelhouse",                                       # 430: test_exo_wheelhouse.py, test_capacity_exo.py
    "tests/integration/fleet/test_fleet_ad_hoc.py",         # 200
    "tests/integration/test_docs_site.py",                  # 100
    "tests/integration/roles/test_driver_decide.py",        # 100
    "exo-wheelhouse_exo-wheelhouse-3.11",                   # 95: test_exo_wheelhouse.py on CPython 3.11
    "tests/integration/roles/test_node_role.py",            # 90
    "exo-wheelhouse_exo-wheelhouse-3.10",                   # 75
    "tests/integration/fleet/test_fleet_gathering.py",      # 80
    "tests/integration/roles/test_driver_rollout.py",       # 60
    "tests/integration/test_exo_synthetic_model_1b.py",     # 45
)


def xdist_scope(item):
    """The unit pytest-xdist's --dist loadgroup hands to one worker: the item's group names, joined."""
    names = set(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                for mark in item.iter_markers("xdist_group"))
    return "_".join(sorted(names))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """On several workers (tests/run.sh: pytest -n 2 --dist loadgroup --no-loadscope-reorder), the tests of
    one file run on one worker, so that its module-scoped fixtures (a fleet lab, a built tree) are made once;
    files that share something else (a directory under .build) name one group with
    pytest.mark.xdist_group and run on one worker together. The longest groups are handed out first."""
    # What pytest-xdist's workers see of --dist loadgroup; the controller sorts no items.
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    rank = dict((scope, number) for number, scope in enumerate(LONGEST_FIRST))
    items.sort(key=lambda item: rank.get(xdist_scope(item), len(rank)))


@pytest.fixture(scope="session", autouse=True)
def fact_cache_of_the_session(tmp_path_factory):
    """Ansible runs of the tests that keep ansible.cfg's jsonfile fact cache write it in a directory of this
    session's (of this worker's, on several): never the project's .build/facts, never one another's."""
    if "ANSIBLE_CACHE_PLUGIN_CONNECTION" not in os.environ:
        os.environ["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(tmp_path_factory.mktemp("fact-cache"))
    yield os.environ["ANSIBLE_CACHE_PLUGIN_CONNECTION"]


@pytest.fixture(scope="module")
def probed():
    """What device_facts reports on each simulated host of tests/simulated/hosts.py PROBED, by name, as recorded
    in tests/fixtures/simulated (tests/integration/modules/test_simulated_facts.py keeps the recordings true)."""
    return dict((name, recorded_facts(name)) for name in simhosts.PROBED)


@pytest.fixture(scope="session")
def nvml_lib():
    return simnvml.build("current")


@pytest.fixture(scope="session")
def legacy_nvml_lib():
    return simnvml.build("legacy")


@pytest.fixture
def simulated_host(tmp_path, nvml_lib):
    """Returns probe(gpus, pci=None, args=None, lib=None, env=None, **config) -> Run."""
    def probe(gpus=(), pci=None, args=None, lib=None, env=None, modules=(), **config):
        config_path = simnvml.write_config(str(tmp_path / "nvml.conf"), list(gpus), **config)
        environ = simnvml.environment(lib or nvml_lib, config_path)
        environ.update(env or {})
        module_args = {"tinygrad": False}
        if pci is not None:
            root = tmp_path / "root"
            simsysfs.write_tree(str(root), pci=pci, modules=modules)
            module_args["rootfs"] = str(root)
        module_args.update(args or {})
        return run_module(tmp_path, module_args, environ)
    return probe


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory):
    """An interpreter without tinygrad: a fresh virtualenv of the one running the tests."""
    venv = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    return str(venv / "bin" / "python")


def _exo_pin_wheel(tmp):
    found = glob.glob(os.path.join(REPO, ".build", "exo-wheelhouse", "wheelhouse*", "tinygrad-0.10.0-*.whl"))
    if found:
        return found[0]
    from tests.integration import exo_sources
    try:
        archive = exo_sources.archives(tmp)["tinygrad"]
    except OSError as exc:
        pytest.skip("exo's tinygrad is neither vendored nor in a wheelhouse here, and downloading it failed: %s" % exc)
    # Any interpreter with setuptools builds it; tinygrad's setup.py needs nothing else.
    for python in (sys.executable, "/usr/bin/python3"):
        built = subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                                "-w", tmp, archive], check=False, timeout=TIMEOUT)
        if built.returncode == 0:
            return glob.glob(os.path.join(tmp, "tinygrad-*.whl"))[0]
    pytest.skip("no interpreter with setuptools to build exo's tinygrad from %s" % archive)


@pytest.fixture(scope="session")
def exo_pin_python(tmp_path_factory):
    """A virtualenv with exo's tinygrad (ec120ce6b9ce, version 0.10.0) and nothing else."""
    tmp = str(tmp_path_factory.mktemp("exo-pin"))
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=TIMEOUT)
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site,
                    _exo_pin_wheel(tmp)], check=True, timeout=TIMEOUT)
    return python


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory):
    """A model store holding llama-3.2-1b at the small size of tests/integration/exo_instance.TINY_1B, written once
    per worker for the tests of real exo that serve it (test_exo_placed_models.py, test_exo_requests.py)."""
    from tests.integration import exo_instance  # imports scripts/exo-synthetic-model.py: only where asked
    return exo_instance.tiny_store(str(tmp_path_factory.mktemp("tiny-store")))
