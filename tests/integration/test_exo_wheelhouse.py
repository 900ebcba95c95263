# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real exo from a wheelhouse, on every Python the node role accepts, and the role's Python range.

scripts/exo-wheelhouse.py runs as docs/node.md shows it, on archives of exo e4238f9ef and tinygrad
ec120ce6b9ce (tests/integration/exo_sources.py: the vendored copies where this machine has them,
else GitHub's tarballs). For CPython 3.10, 3.11 and 3.12 (those found on this machine) exo is then
installed from the wheelhouse alone, without an index, the way the node role installs it, and three
real exo instances with manual discovery and exo's dummy engine must form one cluster that answers
a chat completion, each instance processing a shard of it. The wheelhouses stay under
.build/exo-wheelhouse, so a second run of these tests builds nothing.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import exo_requirements
from tests.helpers import REPO, examples, free_ports
from tests.integration import exo_sources

WORK = os.path.join(REPO, ".build", "exo-wheelhouse")
BIN = os.path.dirname(sys.executable)
PYENV = os.path.expanduser("~/.pyenv/versions")
with open(os.path.join(REPO, "docs", "node.md")) as _handle:
    DOC = _handle.read()
with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
SECTION = DOC[DOC.index("### A wheelhouse for hosts without GitHub"):]
DOC_COMMAND = re.search(r"```sh\n(.*?)\n```", SECTION, re.S).group(1)
DOC_VARS = yaml.safe_load(re.search(r"```yaml\n(.*?)\n```", SECTION, re.S).group(1))


def interpreter(release):
    found = sorted(glob.glob(os.path.join(PYENV, release + ".*", "bin", "python" + release)))
    if not found:
        pytest.skip("no CPython %s under %s" % (release, PYENV))
    return found[-1]


def run(args, timeout=900, **kwargs):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=timeout, check=False, env=env, **kwargs)


@pytest.fixture(scope="module")
def workdir():
    """The collection's root as the documentation sees it: scripts/ and the two archives side by side."""
    exo_sources.archives(WORK)
    link = os.path.join(WORK, "scripts")
    if not os.path.islink(link):
        os.symlink(os.path.join(REPO, "scripts"), link)
    return WORK


def wheelhouse(workdir, release):
    """The documented command, for another Python where asked; returns the wheelhouse directory."""
    command = DOC_COMMAND
    dest = "wheelhouse"
    if release != "3.12":
        dest = "wheelhouse-" + release
        command = command.replace("--python 3.12", "--python " + release).replace(" wheelhouse", " " + dest)
    proc = run(["bash", "-c", command], cwd=workdir)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return os.path.join(workdir, dest)


def test_the_documented_command_builds_what_the_role_installs(workdir):
    directory = wheelhouse(workdir, "3.12")
    with open(os.path.join(directory, "exo-wheelhouse.yml")) as handle:
        written = yaml.safe_load(handle)
    documented = dict((k, v.replace("/path/to/wheelhouse", directory) if isinstance(v, str) else v)
                      for k, v in DOC_VARS.items())
    assert written == documented
    wheels = sorted(os.path.basename(p) for p in glob.glob(os.path.join(directory, "*.whl")))
    names = set(exo_requirements.normalize(w.split("-")[0]) for w in wheels)
    assert {"exo", "tinygrad", "opencv-python-headless", "numpy", "transformers", "nvidia-ml-py"} <= names
    assert not names & {"opencv-python", "nuitka", "grpcio-tools", "uuid", "prometheus-client"}
    assert "tinygrad-0.10.0-py3-none-any.whl" in wheels
    # Every wheel installs on CPython 3.12 on Linux: none is for another Python or platform.
    for wheel in wheels:
        tags = wheel[:-4].split("-")[-3:]
        assert tags[0] in ("py3", "cp312", "cp38", "cp37", "cp36", "cp310") and tags[1] in ("none", "abi3", "cp312"), wheel
        assert tags[2] == "any" or "linux" in tags[2], wheel
    # The exo wheel is real exo at e4238f9ef: its METADATA names tinygrad's git URL at exo's pin.
    with zipfile.ZipFile(os.path.join(directory, "exo-0.0.1-py3-none-any.whl")) as archive:
        metadata = archive.read("exo-0.0.1.dist-info/METADATA").decode()
    assert "tinygrad @ git+https://github.com/tinygrad/tinygrad.git@ec120ce6b9ce8e4ff4b5692566a683ef240e8bc8" in metadata


def test_a_second_run_changes_nothing(workdir):
    directory = wheelhouse(workdir, "3.12")
    before = dict((p, os.stat(p).st_mtime_ns) for p in glob.glob(os.path.join(directory, "*.whl")))
    proc = run(["bash", "-c", DOC_COMMAND], cwd=workdir)
    assert proc.returncode == 0 and "is up to date" in proc.stdout, proc.stdout[-2000:]
    assert dict((p, os.stat(p).st_mtime_ns) for p in glob.glob(os.path.join(directory, "*.whl"))) == before


def test_python_3_13_has_no_wheelhouse(workdir, tmp_path):
    proc = run([sys.executable, os.path.join(REPO, "scripts", "exo-wheelhouse.py"), "--python", "3.13",
                "--exo", os.path.join(workdir, "exo-e4238f9ef.tar.gz"),
                "--tinygrad", os.path.join(workdir, "tinygrad-ec120ce6b9ce.tar.gz"), str(tmp_path / "wheelhouse")])
    assert proc.returncode == 1
    assert "numpy==2.0.0" in proc.stdout and "CPython 3.10 to 3.12 only" in proc.stdout, proc.stdout[-3000:]
    assert not glob.glob(str(tmp_path / "wheelhouse" / "*.whl"))


def test_the_filter_examples_run_as_written(workdir, tmp_path):
    directory = wheelhouse(workdir, "3.12")
    with zipfile.ZipFile(os.path.join(directory, "exo-0.0.1-py3-none-any.whl")) as archive:
        (tmp_path / "METADATA").write_bytes(archive.read("exo-0.0.1.dist-info/METADATA"))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False,
                                                        "tasks": yaml.safe_load(examples("filter", "exo_requirements"))}]))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build", "collections"))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", "play.yml"],
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads(proc.stdout[proc.stdout.index("{"):])["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]
    assert result["errors"] == [] and result["install"][-1] == "tinygrad==0.10.0"
    assert "opencv-python-headless==4.10.0.84" in result["install"]
    assert not [r for r in result["install"] if "git+" in r or r.startswith(("nuitka", "uuid", "grpcio-tools"))]


def get_json(url, data=None, timeout=5):
    request = urllib.request.Request(url, data=json.dumps(data).encode() if data is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode())


@pytest.mark.parametrize("release", ["3.10", "3.11", "3.12"])
def test_real_exo_forms_a_cluster_on_each_supported_python(workdir, tmp_path, release):
    python = interpreter(release)
    directory = wheelhouse(workdir, release)
    with open(os.path.join(directory, "exo-wheelhouse.yml")) as handle:
        settings = yaml.safe_load(handle)
    venv = tmp_path / "venv"
    assert run([python, "-m", "venv", str(venv)]).returncode == 0
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
           "--find-links", directory]
    # As the role does it: exo without dependencies, then what its METADATA declares, shaped by the filter.
    proc = run(pip + ["--no-deps", settings["exo_node_source_path"]])
    assert proc.returncode == 0, proc.stdout[-3000:]
    with zipfile.ZipFile(settings["exo_node_source_path"]) as archive:
        metadata = archive.read("exo-0.0.1.dist-info/METADATA").decode()
    plan = exo_requirements.plan(metadata, DEFAULTS["exo_node_skip_requirements"],
                                 DEFAULTS["exo_node_replace_requirements"], settings["exo_node_tinygrad_requirement"])
    proc = run(pip + plan["install"])
    assert proc.returncode == 0, proc.stdout[-3000:]

    grpc, api = free_ports(3), free_ports(3)
    caps = {"model": "test", "chip": "test", "memory": 1024, "flops": {"fp32": 0, "fp16": 0, "int8": 0}}
    topology = {"peers": dict(("node%d" % i, {"address": "127.0.0.1", "port": grpc[i], "device_capabilities": caps})
                              for i in range(3))}
    (tmp_path / "topology.json").write_text(json.dumps(topology))
    processes, logs = [], []
    started = time.monotonic()
    try:
        for i in range(3):
            logs.append(tmp_path / ("node%d.log" % i))
            env = dict(os.environ, EXO_HOME=str(tmp_path / ("home%d" % i)), HOME=str(tmp_path / ("home%d" % i)),
                       DEBUG="2")
            with open(str(logs[-1]), "w") as log:
                processes.append(subprocess.Popen(
                    [str(venv / "bin" / "exo"), "--node-id", "node%d" % i, "--node-port", str(grpc[i]),
                     "--chatgpt-api-port", str(api[i]), "--discovery-module", "manual",
                     "--discovery-config-path", str(tmp_path / "topology.json"), "--inference-engine", "dummy",
                     "--disable-tui"], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        seen = {}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and sorted(len(n) for n in seen.values()) != [3, 3, 3]:
            assert all(p.poll() is None for p in processes), [log.read_text()[-3000:] for log in logs]
            for i in range(3):
                try:
                    seen[i] = get_json("http://127.0.0.1:%d/v1/topology" % api[i]).get("nodes", {})
                except (OSError, ValueError):
                    pass
            time.sleep(1)
        assert sorted(len(n) for n in seen.values()) == [3, 3, 3], seen
        healthy = time.monotonic() - started
        answer = get_json("http://127.0.0.1:%d/v1/chat/completions" % api[0],
                          {"model": "dummy", "messages": [{"role": "user", "content": "hello"}]}, timeout=120)
        assert answer["choices"][0]["finish_reason"] == "stop" and answer["choices"][0]["message"]["content"]
        request = answer["id"][len("chatcmpl-"):]
        time.sleep(1)
        for log in logs:
            assert re.search(r"\[%s\] (process_tensor|process prompt):" % re.escape(request), log.read_text()), \
                "%s processed no shard of %s" % (log.name, request)
        print("CPython %s: three exo instances formed one cluster %.1f s after start" % (release, healthy))
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(str(venv), ignore_errors=True)
