# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Which Python makes exo's virtualenv on each platform the node role lists.

The facts are those ansible.builtin.setup reports on each distribution (os_family, distribution,
distribution_major_version); the range is the role's default, 3.10 to 3.12.
"""

import os

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import python as node_python
from tests.helpers import REPO

FACTS = {
    "bookworm": {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "12"},
    "trixie": {"os_family": "Debian", "distribution": "Debian", "distribution_major_version": "13"},
    "jammy": {"os_family": "Debian", "distribution": "Ubuntu", "distribution_major_version": "22"},
    "noble": {"os_family": "Debian", "distribution": "Ubuntu", "distribution_major_version": "24"},
    "9": {"os_family": "RedHat", "distribution": "Rocky", "distribution_major_version": "9"},
}
with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as handle:
    DEFAULTS = yaml.safe_load(handle)
RANGE = (DEFAULTS["exo_node_python_min_version"], DEFAULTS["exo_node_python_max_version"])


def choose(version, distribution_python=False, python="/usr/bin/python3"):
    return FilterModule().filters()["node_python"](FACTS[version], python, distribution_python, *RANGE)


def test_every_listed_platform_has_an_entry():
    with open(os.path.join(REPO, "roles", "node", "meta", "main.yml")) as handle:
        listed = yaml.safe_load(handle)["galaxy_info"]["platforms"]
    versions = [version for entry in listed for version in entry["versions"]]
    assert sorted(versions) == sorted(FACTS)
    for version in versions:
        assert node_python.platform(FACTS[version]) in node_python.PLATFORMS


@pytest.mark.parametrize("version, release", [("bookworm", "3.11"), ("jammy", "3.10"), ("noble", "3.12")])
def test_the_defaults_run_where_python3_is_in_range(version, release):
    entry = node_python.PLATFORMS[node_python.platform(FACTS[version])]
    assert entry["python"] == ("/usr/bin/python3", release)
    assert choose(version) == {"python": "/usr/bin/python3", "packages": [], "release": None, "errors": [],
                               "advice": "%s's own /usr/bin/python3 is Python %s: set exo_node_python: /usr/bin/python3 "
                                         "(or exo_node_distribution_python: true)" % (entry["name"], release)}
    assert choose(version, distribution_python="yes")["release"] == release


def test_el9_installs_its_python312_when_asked():
    assert choose("9")["advice"] == ("EL 9 packages Python 3.12 as python3.12: set exo_node_distribution_python: true "
                                     "to install it and use /usr/bin/python3.12")
    chosen = choose("9", distribution_python=True)
    assert (chosen["python"], chosen["packages"], chosen["release"], chosen["errors"]) == (
        "/usr/bin/python3.12", ["python3.12"], "3.12", [])


def test_debian13_says_how_to_get_a_python():
    advice = ("Debian 13 (trixie) ships no CPython 3.10 to 3.12 (its python3 is 3.13): install CPython 3.12 (pyenv, "
              "or python.org's sources: ./configure --prefix=/opt/python/3.12 && make altinstall) and set "
              "exo_node_python to it, e.g. /opt/python/3.12/bin/python3.12")
    assert choose("trixie")["advice"] == advice
    assert choose("trixie", distribution_python=True)["errors"] == ["exo_node_distribution_python is true but " + advice]


def test_a_platform_not_listed_and_a_bad_value():
    arch = {"os_family": "Archlinux", "distribution": "Archlinux", "distribution_major_version": "rolling"}
    assert node_python.choose(arch, "/usr/bin/python3", False, *RANGE)["errors"] == []
    errors = node_python.choose(arch, "/usr/bin/python3", True, *RANGE)["errors"]
    assert errors[0].startswith("exo_node_distribution_python is true but Archlinux rolling is not a platform of this "
                                "role (Debian 12 (bookworm), Debian 13 (trixie), Ubuntu 22.04 (jammy)")
    assert choose("9", distribution_python="maybe")["errors"] == [
        "exo_node_distribution_python is 'maybe'; give true or false"]
