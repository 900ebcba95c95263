# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """A release as docs/layout.md makes one, on a copy of the tree: the page's command verbatim, then
the changelog holds every fragment for galaxy.yml's version, the fragments are gone, and the artifact
is that version with its changelog."""

import json
import os
import re
import subprocess
import tarfile

import yaml

from tests.helpers import REPO

with open(os.path.join(REPO, "docs", "layout.md")) as _handle:
    DOC_COMMAND = re.search(r"^(make release .*)$", _handle.read().split("\n## Development\n", 1)[1], re.M).group(1)


def tracked(tmp):
    """A copy of the files git tracks (what a clean checkout holds), with the project's virtualenv."""
    os.makedirs(tmp)
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, stdout=subprocess.PIPE, check=True).stdout
    subprocess.run(["xargs", "-0", "cp", "--parents", "-t", tmp], input=files, cwd=REPO, check=True)
    os.symlink(os.path.join(REPO, ".venv"), os.path.join(tmp, ".venv"))
    return tmp


def entries(fragment):
    with open(fragment) as handle:
        return [(section, text) for section, items in yaml.safe_load(handle).items() for text in items or []]


def words(text):
    return " ".join(re.sub(r"[`*]", "", text).split())


def test_the_documented_release_command_makes_the_changelog_and_the_artifact(tmp_path):
    tree = tracked(str(tmp_path / "tree"))
    with open(os.path.join(tree, "galaxy.yml")) as handle:
        version = yaml.safe_load(handle)["version"]
    fragments = os.path.join(tree, "changelogs", "fragments")
    written = dict((name, entries(os.path.join(fragments, name))) for name in os.listdir(fragments))
    assert written, "no fragment to release"
    proc = subprocess.run(["bash", "-c", DOC_COMMAND], cwd=tree, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(os.path.join(tree, "CHANGELOG.rst")) as handle:
        changelog = words(handle.read())
    assert ("v%s" % version) in changelog
    for name, items in written.items():
        for dummy, text in items:
            assert words(text)[:80] in changelog, (name, text)
    assert [f for f in os.listdir(fragments) if not f.startswith(".")] == []
    with open(os.path.join(tree, "changelogs", "changelog.yaml")) as handle:
        release = yaml.safe_load(handle)["releases"][version]
    assert sorted(release["fragments"]) == sorted(written)
    artifact = os.path.join(tree, ".build", "dist", "gpufleet-exo-%s.tar.gz" % version)
    with tarfile.open(artifact) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    assert manifest["collection_info"]["version"] == version
    assert "CHANGELOG.rst" in names and "changelogs/changelog.yaml" in names
