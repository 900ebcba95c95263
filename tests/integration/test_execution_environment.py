# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The execution environment of docs/fleet.md, as far as this machine can build it.

The commands of docs/fleet.md's section "On AWX or Ansible Automation Platform" run as written in a
copy of the working tree, up to `ansible-builder create`; the last one, `podman build`, pulls its
base image from quay.io, which this machine cannot reach. The build context must hold the
collection's artifact and take ansible-core from the image definition alone; ansible-builder's
introspection script of that context, run over the artifact installed as the image's galaxy stage
installs it, must find the collection's controller requirements and nothing of the managed hosts'.

The commands run with no container engine on PATH (podman and docker hidden, whatever this machine
has installed): ansible-builder names its build file after the engine it finds, so what they write
must not depend on one being there.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.helpers import REPO

BIN = os.path.dirname(sys.executable)
ENGINES = ("podman", "docker")


def commands():
    with open(os.path.join(REPO, "docs", "fleet.md")) as handle:
        section = handle.read().split("## On AWX or Ansible Automation Platform", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)
    return block.strip().splitlines()


def without_engines(path, shadows):
    """PATH with no container engine on it: each directory holding podman or docker is replaced by one
    (under shadows) of links to everything else it holds (on a merged /usr, /usr/bin also holds sh, cp and git)."""
    kept = []
    for number, directory in enumerate(d for d in path.split(os.pathsep) if d):
        if any(os.path.lexists(os.path.join(directory, engine)) for engine in ENGINES):
            shadow = os.path.join(shadows, str(number))
            os.makedirs(shadow)
            for name in os.listdir(directory):
                if name not in ENGINES:
                    os.symlink(os.path.join(directory, name), os.path.join(shadow, name))
            directory = shadow
        kept.append(directory)
    path = os.pathsep.join(kept)
    assert [shutil.which(engine, path=path) for engine in ENGINES] == [None] * len(ENGINES), path
    return path


def requirement_lines(name):
    with open(os.path.join(REPO, name)) as handle:
        return [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """The working tree's copy with the documented commands run in it; the context's directory."""
    tree = tmp_path_factory.mktemp("ee-tree")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, stdout=subprocess.PIPE,
                           check=True).stdout.decode().split("\0")
    subprocess.run(["cp", "--parents", "-t", str(tree)] + [f for f in files if f and os.path.exists(os.path.join(REPO, f))],
                   cwd=REPO, check=True)
    runnable = [line for line in commands() if not line.startswith("podman build")]
    assert len(runnable) == len(commands()) - 1
    env = dict(os.environ, PATH=without_engines(BIN + os.pathsep + os.environ["PATH"],
                                                str(tmp_path_factory.mktemp("no-engine"))))
    env.pop("ANSIBLE_CONFIG", None)
    for line in runnable:
        proc = subprocess.run(line, shell=True, cwd=str(tree), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300, check=False)
        assert proc.returncode == 0, (line, proc.stdout[-3000:])
    return tree / "ee" / "context"


def test_the_commands_path_hides_every_container_engine_and_keeps_the_rest(tmp_path):
    engines, tools = tmp_path / "usr-bin", tmp_path / "venv-bin"
    for directory, names in ((engines, ("podman", "docker", "cp")), (tools, ("ansible-builder",))):
        directory.mkdir()
        for name in names:
            (directory / name).write_text("#!/bin/sh\n")
            (directory / name).chmod(0o755)
    path = without_engines(os.pathsep.join([str(tools), str(engines)]), str(tmp_path / "shadows"))
    assert path.split(os.pathsep, maxsplit=1)[0] == str(tools)
    assert shutil.which("cp", path=path) and shutil.which("ansible-builder", path=path)
    assert not shutil.which("podman", path=path) and not shutil.which("docker", path=path)


def test_the_context_installs_the_artifact_and_ansible_core_from_the_definition(context):
    with open(str(context / "Containerfile")) as handle:
        containerfile = handle.read()
    with open(os.path.join(REPO, "docs", "execution-environment.yml")) as handle:
        definition = yaml.safe_load(handle)
    core = definition["dependencies"]["ansible_core"]["package_pip"]
    assert 'ARG ANSIBLE_INSTALL_REFS="%s ansible-runner"' % core in containerfile
    assert "ansible-galaxy collection install" in containerfile
    with open(str(context / "_build" / "requirements.yml")) as handle:
        assert yaml.safe_load(handle) == {"collections": [{"name": "gpufleet-exo.tar.gz", "type": "file"}]}
    with tarfile.open(str(context / "_build" / "gpufleet-exo.tar.gz")) as tar:
        names = tar.getnames()
    assert {"meta/execution-environment.yml", "requirements.txt", "bindep.txt", "meta/runtime.yml"} <= set(names)


def test_the_image_takes_an_ansible_core_release_the_collection_claims():
    with open(os.path.join(REPO, "docs", "execution-environment.yml")) as handle:
        core = Requirement(yaml.safe_load(handle)["dependencies"]["ansible_core"]["package_pip"])
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        claimed = SpecifierSet(yaml.safe_load(handle)["requires_ansible"])
    assert core.name == "ansible-core"
    lowest = min(s.version for s in core.specifier if s.operator == ">=")
    assert claimed.contains(lowest + ".0") and str(claimed) == ">=%s.0" % lowest


def test_the_collection_requirements_leave_ansible_core_out_and_pin_nothing():
    for name in ("requirements.txt", "requirements-hosts.txt"):
        lines = requirement_lines(name)
        assert lines, name
        for line in lines:
            requirement = Requirement(line)
            assert requirement.name not in ("ansible", "ansible-core"), (name, line)
            assert all(spec.operator == ">=" for spec in requirement.specifier), (name, line)


def test_introspection_finds_the_controller_requirements_and_not_the_hosts(context, tmp_path):
    """What the image's builder stage runs, over the artifact installed as its galaxy stage installs it."""
    collections = tmp_path / "collections"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections))
    env.pop("ANSIBLE_CONFIG", None)
    env.pop("PYTHONPATH", None)  # the tests' own path has this collection: galaxy would install nothing
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-p", str(collections),
                    str(context / "_build" / "gpufleet-exo.tar.gz")], cwd=str(tmp_path), env=env, check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pip, bindep = tmp_path / "pip.txt", tmp_path / "bindep.txt"
    subprocess.run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect",
                    "--write-pip", str(pip), "--write-bindep", str(bindep), str(collections)],
                   cwd=str(tmp_path), env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    found_pip = [line.split("#")[0].strip() for line in pip.read_text().splitlines()]
    assert found_pip == requirement_lines("requirements.txt")
    assert all("# from collection gpufleet.exo" in line for line in pip.read_text().splitlines())
    found_bindep = [line.split("#")[0].strip() for line in bindep.read_text().splitlines()]
    assert found_bindep == requirement_lines("bindep.txt")
    hosts = [Requirement(line).name for line in requirement_lines("requirements-hosts.txt")]
    assert not [name for name in hosts if name in pip.read_text()]
