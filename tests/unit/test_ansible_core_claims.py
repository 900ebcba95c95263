# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ansible-core releases the collection claims are those tests/run.sh matrix tests: meta/runtime.yml,
the roles' metadata and the sanity ignore files follow its list of releases."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def matrix_releases():
    with open(os.path.join(REPO, "tests", "run.sh")) as handle:
        entries = re.search(r"^RELEASES=\((.*)\)$", handle.read(), re.M).group(1).split()
    return [entry.split(":")[0] for entry in entries]


def test_the_matrix_is_consecutive_releases_oldest_first():
    releases = matrix_releases()
    minors = [int(release.split(".")[1]) for release in releases]
    assert len(releases) >= 2 and minors == list(range(minors[0], minors[0] + len(minors)))


def test_runtime_and_roles_claim_the_oldest_release_of_the_matrix():
    oldest = matrix_releases()[0]
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        assert yaml.safe_load(handle)["requires_ansible"] == ">=%s.0" % oldest
    for meta in glob.glob(os.path.join(REPO, "roles", "*", "meta", "main.yml")):
        with open(meta) as handle:
            assert yaml.safe_load(handle)["galaxy_info"]["min_ansible_version"] == oldest, meta


def test_sanity_ignores_exist_for_exactly_the_releases_of_the_matrix():
    found = sorted(os.path.basename(p)[len("ignore-"):-len(".txt")]
                   for p in glob.glob(os.path.join(REPO, "tests", "sanity", "ignore-*.txt")))
    assert found == sorted(matrix_releases())


def test_no_role_claims_el8():
    for meta in glob.glob(os.path.join(REPO, "roles", "*", "meta", "main.yml")):
        with open(meta) as handle:
            platforms = yaml.safe_load(handle)["galaxy_info"]["platforms"]
        assert [p["versions"] for p in platforms if p["name"] == "EL"] == [["9"]], meta
