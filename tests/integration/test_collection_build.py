# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-galaxy collection build` makes an artifact that holds what a user installs, nothing of
the working tree, and that installs and runs."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import glob
import json
import os
import subprocess
import sys
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

# Every file of the artifact matches one of these (galaxy.yml says why each is shipped).
ALLOWED = [
    "MANIFEST.json", "FILES.json", "README.md", "COPYING", "requirements.txt", "requirements-hosts.txt", "bindep.txt",
    "meta/*.yml",
    "docs/*.md", "docs/*.yml",
    "plugins/*/*.py", "plugins/*/*.yml",
    "roles/*/defaults/main.yml", "roles/*/vars/main.yml", "roles/*/handlers/main.yml",
    "roles/*/meta/main.yml", "roles/*/meta/argument_specs.yml", "roles/*/tasks/*.yml", "roles/*/templates/*.j2",
    # What the node role copies into exo's virtualenv (its patches of exo) and onto the host (the firewall's guard).
    "roles/node/files/gpufleet_exo_patches.py", "roles/node/files/gpufleet_exo_patches.pth",
    "roles/node/files/firewall_guard.py",
    # What the operator's Prometheus loads (docs/node.md, "Many requests at once").
    "roles/node/files/gpufleet_exo_alerts.yml",
    "playbooks/*.yml",
    "changelogs/changelog.yaml",
    "scripts/exo-wheelhouse.py", "scripts/exo-synthetic-model.py",
    "tests/sanity/ignore-*.txt",
]
# Tracked files under these folders are what the collection is made of: all of them ship.
SHIPPED_DIRS = ("plugins/", "docs/", "playbooks/", "meta/", "roles/")
NOT_SHIPPED = ("roles/*/molecule/*", "roles/*/tests/*")


def run(args, cwd, env):
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    return proc.stdout.decode()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("build")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_LOCAL_TEMP=str(tmp))
    env.pop("ANSIBLE_CONFIG", None)
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp), REPO], str(tmp), env)
    artifact = glob.glob(str(tmp / "gpufleet-exo-*.tar.gz"))
    assert len(artifact) == 1
    return tmp, env, artifact[0]


def files_of(artifact):
    with tarfile.open(artifact) as tar:
        return dict((m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile())


def test_artifact_holds_only_what_a_user_installs(built):
    files = files_of(built[2])
    unexpected = sorted(name for name in files if not any(fnmatch.fnmatch(name, p) for p in ALLOWED))
    assert not unexpected, "the artifact carries files nobody installs: %s" % unexpected


def test_artifact_holds_every_file_of_the_collection(built):
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout.split()
    wanted = [name for name in tracked if name.startswith(SHIPPED_DIRS)
              and not any(fnmatch.fnmatch(name, p) for p in NOT_SHIPPED)]
    wanted += ["README.md", "COPYING", "requirements.txt", "requirements-hosts.txt", "bindep.txt", "changelogs/changelog.yaml",
               "scripts/exo-wheelhouse.py", "scripts/exo-synthetic-model.py"]
    wanted += [name for name in tracked if name.startswith("tests/sanity/ignore-")]
    missing = sorted(set(wanted) - set(files_of(built[2])))
    assert not missing, "the artifact lacks %s" % missing


def test_artifact_names_its_licence_and_no_place_that_does_not_exist(built):
    files = files_of(built[2])
    licence = files["COPYING"].decode()
    assert "GNU GENERAL PUBLIC LICENSE" in licence and "Version 3, 29 June 2007" in licence
    manifest = json.loads(files["MANIFEST.json"])["collection_info"]
    assert manifest["license"] == ["GPL-3.0-or-later"]
    assert [manifest[key] for key in ("repository", "documentation", "issues", "homepage")] == [None] * 4
    linking = sorted(name for name, data in files.items() if b"github.com/gpufleet" in data)
    assert not linking, "links to a repository that does not exist: %s" % linking


def test_built_collection_installs_and_runs(built):
    tmp, env, artifact = built
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-p", str(tmp / "collections"),
         artifact], str(tmp), env)
    output = run([os.path.join(BIN, "ansible"), "localhost", "-o", "-m", "gpufleet.exo.device_facts", "-a",
                  "tinygrad=false", "-e", "ansible_python_interpreter=%s" % sys.executable], str(tmp), env)
    facts = json.loads(output.split(" => ", 1)[1])["ansible_facts"]["device_capabilities"]
    assert facts["schema_version"] == 1
    doc = run([os.path.join(BIN, "ansible-doc"), "gpufleet.exo.device_facts"], str(tmp), env)
    assert "tinygrad_python" in doc
    # The installed playbook, with the installed roles' phases.
    tags = run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "--list-tags", "gpufleet.exo.site"],
               str(tmp), env)
    assert "TAGS: [driver]" in tags and "TAGS: [node]" in tags
    assert all(phase in tags.split("TAGS: [node]")[1] for phase in ("preflight", "install", "configure"))
