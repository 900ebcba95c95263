# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real synthetic 1B model, written once by docs/node.md's command verbatim (2.5 GB).

The manifest's sizes and hashes match the files; exo e4238f9ef's own loading code, with tinygrad at
its pin (both from the archives of tests/integration/exo_sources.py), takes every tensor for the whole
model and for two half shards (tests/integration/exo_model_load.py); a second run writes nothing.
Skipped when the temporary directory has less than 3 GB free. The model is deleted afterwards.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [p for p in (REPO,) if p not in sys.path]

from tests.integration import exo_sources  # noqa: E402

NEEDED = 3 * 10 ** 9
with open(os.path.join(REPO, "docs", "node.md")) as _handle:
    SECTION = _handle.read().split("## A synthetic model for tests", 1)[1]
DOC_COMMAND = re.search(r"```sh\n(.*?)\n```", SECTION, re.S).group(1)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def run_documented(cwd):
    # The script's shebang finds python3 on PATH: this interpreter's, which has numpy.
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["bash", "-c", DOC_COMMAND], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("synthetic-model")
    free = shutil.disk_usage(str(base)).free
    if free < NEEDED:
        pytest.skip("the 1B model needs 2.5 GB: %s has %.1f GB free, less than %.1f GB"
                    % (base, free / 1e9, NEEDED / 1e9))
    os.symlink(os.path.join(REPO, "scripts"), str(base / "scripts"))
    proc = run_documented(str(base))
    assert proc.returncode == 0, proc.stdout
    out = re.search(r"--out (\S+)", DOC_COMMAND).group(1)
    yield str(base / out), proc.stdout
    shutil.rmtree(str(base))


def test_manifest_matches_the_files(model_dir):
    out, dummy = model_dir
    with open(os.path.join(out, "gpufleet-model.json")) as handle:
        manifest = json.load(handle)
    assert (manifest["card"], manifest["repo"]) == ("llama-3.2-1b", "unsloth/Llama-3.2-1B-Instruct")
    listed = {entry["path"]: entry for entry in manifest["files"]}
    assert sorted(listed) == sorted(set(os.listdir(out)) - {"gpufleet-model.json"})
    assert sorted(listed) == ["config.json", "generation_config.json", "model.safetensors",
                              "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    for path, entry in listed.items():
        full = os.path.join(out, path)
        assert (os.path.getsize(full), sha256_of(full)) == (entry["size"], entry["sha256"]), path
    assert 2.47e9 < listed["model.safetensors"]["size"] < 2.48e9


def test_exo_loads_every_tensor(model_dir, tmp_path):
    out, dummy = model_dir
    archives = exo_sources.archives(str(tmp_path / "archives"))
    # Only the packages themselves: exo/exo and tinygrad/tinygrad.
    for name in ("exo", "tinygrad"):
        with tarfile.open(archives[name]) as archive:
            members = [member for member in archive.getmembers() if member.name.startswith("%s/%s/" % (name, name))]
            archive.extractall(str(tmp_path), members=members, filter="data")
    env = dict(os.environ, PYTHON="1")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tests", "integration", "exo_model_load.py"),
                           str(tmp_path / "exo"), str(tmp_path / "tinygrad"), out], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    shards = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [(shard["shard"], shard["loaded"]) for shard in shards] == [([0, 15], 146), ([0, 7], 74), ([8, 15], 74)]
    for shard in shards:
        assert shard["unknown"] == [] and shard["missing"] == [] and shard["shape_mismatches"] == [], shard
        assert shard["tied"] and shard["dtypes"] == ["dtypes.half"], shard


def test_second_run_writes_nothing(model_dir):
    out, dummy = model_dir
    weights = os.path.join(out, "model.safetensors")
    before = os.stat(weights).st_mtime_ns
    proc = run_documented(os.path.dirname(out))
    assert proc.returncode == 0, proc.stdout
    assert "writing" not in proc.stdout
    assert os.stat(weights).st_mtime_ns == before
