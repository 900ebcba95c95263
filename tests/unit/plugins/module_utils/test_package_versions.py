# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.package_versions reads (plugins/module_utils/_package_versions.py): dpkg-query's and rpm's
answers as their queries print them, filtered by name; the module against this machine's own dpkg and
ansible.builtin.package_facts is in tests/integration/roles/test_driver_examples.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils._package_versions import (
    DPKG_QUERY, RPM_QUERY, from_dpkg, from_rpm, package_versions)

NVIDIA = re.compile(r"^(nvidia-.+|libnvidia-.+|libcuda1)$")

DPKG = "\n".join([
    "ii \tnvidia-smi\t535.247.01-1~deb12u1\tamd64",
    "hi \tlibcuda1\t535.247.01-1~deb12u1\tamd64",      # held, installed
    "ii \tlibcuda1\t535.247.01-1~deb12u1\ti386",       # the same package for a second architecture
    "rc \tnvidia-persistenced\t535.247.01-1\tamd64",    # removed, its configuration left: not installed
    "iW \tlibnvidia-ml1\t535.247.01-1~deb12u1\tamd64",  # installed, triggers awaited
    "iU \tnvidia-kernel-dkms\t535.247.01-1~deb12u1\tamd64",  # unpacked, not configured
    "ii \tbash\t5.2.15-2+b8\tamd64",
    "",
])


def test_dpkg_answer_keeps_the_installed_packages_that_match():
    assert from_dpkg(DPKG, NVIDIA) == {
        "nvidia-smi": [{"name": "nvidia-smi", "version": "535.247.01-1~deb12u1", "arch": "amd64", "source": "apt"}],
        "libcuda1": [{"name": "libcuda1", "version": "535.247.01-1~deb12u1", "arch": "amd64", "source": "apt"},
                     {"name": "libcuda1", "version": "535.247.01-1~deb12u1", "arch": "i386", "source": "apt"}],
        "libnvidia-ml1": [{"name": "libnvidia-ml1", "version": "535.247.01-1~deb12u1", "arch": "amd64",
                           "source": "apt"}]}


RPM = "\n".join([
    "nvidia-driver\t3\t580.95.05\t1.el9\tx86_64",
    "kmod-nvidia-open-dkms\t(none)\t580.95.05\t1.el9\tx86_64",
    "nvidia-fabric-manager\t(none)\t580.95.05\t1\tx86_64",
    "bash\t(none)\t5.1.8\t9.el9\tx86_64",
])


def test_rpm_answer_keeps_the_packages_that_match_with_epoch_and_release():
    found = from_rpm(RPM, re.compile(r"^(nvidia-.+|kmod-nvidia-.+)$"))
    assert sorted(found) == ["kmod-nvidia-open-dkms", "nvidia-driver", "nvidia-fabric-manager"]
    assert found["nvidia-driver"] == [{"name": "nvidia-driver", "version": "580.95.05", "release": "1.el9", "epoch": 3,
                                       "arch": "x86_64", "source": "rpm"}]
    assert found["kmod-nvidia-open-dkms"][0]["epoch"] is None


@pytest.mark.parametrize("tools, answer, query, manager, names", [
    ({"dpkg-query": "/usr/bin/dpkg-query", "rpm": "/usr/bin/rpm"}, DPKG, DPKG_QUERY, "dpkg-query", ["nvidia-smi"]),
    ({"rpm": "/usr/bin/rpm"}, RPM, RPM_QUERY, "rpm", ["nvidia-driver", "nvidia-fabric-manager"]),
])
def test_the_first_package_manager_found_answers(tools, answer, query, manager, names):
    asked = []

    def run(argv):
        asked.append(argv)
        return 0, answer, ""

    result = package_versions(re.compile(r"^nvidia-.+$"), tools.get, run)
    assert asked == [[tools[manager]] + query]
    assert result["manager"] == manager and sorted(result["packages"]) == names


def test_without_dpkg_or_rpm_the_packages_are_unknown():
    result = package_versions(re.compile(r"^nvidia-.+$"), lambda tool: None, None)
    assert result["packages"] is None and result["manager"] is None
    assert "neither dpkg-query nor rpm" in result["msg"]


def test_a_failed_listing_fails_with_the_tools_words():
    result = package_versions(re.compile(r"^nvidia-.+$"), {"dpkg-query": "/usr/bin/dpkg-query"}.get,
                              lambda argv: (2, "", "dpkg-query: error: database is locked\n"))
    assert result["failed"] and result["msg"] == "dpkg-query failed (rc 2): dpkg-query: error: database is locked"
