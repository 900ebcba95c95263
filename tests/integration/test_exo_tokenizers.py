# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real exo e4238f9ef (installed from the wheelhouse as the node role installs it, as
benchmarks/inference.py does) loading the tokenizer of a model whose tokenizer_config.json maps its
tokenizer to code in the model's directory (auto_map): exo asks transformers with
trust_remote_code=True and the code runs; with the collection's patches
(roles/node/files/gpufleet_exo_patches.py) it does not, and exo says the model is not supported, also where the
patches do not know exo's sources (transformers itself is patched); and the patches' check knows real exo's sources,
in its wheel and installed."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import subprocess

import pytest

from tests.helpers import REPO

SPEC = importlib.util.spec_from_file_location("inference_bench", os.path.join(REPO, "benchmarks", "inference.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)
WHEELHOUSE = os.path.join(REPO, ".build", "exo-wheelhouse", "wheelhouse")
# exo's own call, as its API makes it for a model's repository.
LOAD = """
import asyncio, sys
if sys.argv[2] != "as-is":
    sys.path.insert(0, sys.argv[3])
    import gpufleet_exo_patches
    if sys.argv[2] == "unknown exo":  # every exo module's table as for another release
        for name, (known, patch) in list(gpufleet_exo_patches.PATCHES.items()):
            if name.startswith("exo."):
                gpufleet_exo_patches.PATCHES[name] = ({"0" * 64: "exo 0000000"}, patch)
    gpufleet_exo_patches.install()
from exo.inference.tokenizers import _resolve_tokenizer
try:
    asyncio.run(_resolve_tokenizer(sys.argv[1]))
    print("loaded")
except Exception as problem:
    print("refused: %s" % problem)
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not os.path.isfile(os.path.join(WHEELHOUSE, "exo-wheelhouse.yml")):
        pytest.skip("no wheelhouse under %s (tests/integration/test_exo_wheelhouse.py builds it)" % WHEELHOUSE)
    bench.WORK = os.path.join(REPO, ".build", "exo-tokenizers")
    return bench.exo_venv(WHEELHOUSE, bench.python312(None))


def model_with_remote_code(directory, marker):
    """A model directory whose tokenizer is a class of its own tokenization_evil.py, which writes marker when imported."""
    os.makedirs(directory)
    hook = {"auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}, "tokenizer_class": "EvilTokenizer"}
    for name, content in (("tokenizer_config.json", json.dumps(hook)),
                          ("config.json", json.dumps(dict(hook, model_type="llama"))),
                          ("tokenization_evil.py", "open(%r, 'w').write('ran')\n"
                                                   "from transformers import PreTrainedTokenizer\n"
                                                   "class EvilTokenizer(PreTrainedTokenizer):\n    pass\n" % marker)):
        with open(os.path.join(directory, name), "w") as handle:
            handle.write(content)


@pytest.mark.parametrize("patched", ["as-is", "patched", "unknown exo"])
def test_exo_runs_no_code_of_a_model_with_the_patches(venv, tmp_path, patched):
    marker = str(tmp_path / "ran")
    model = str(tmp_path / "model")
    model_with_remote_code(model, marker)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), HOME=str(tmp_path))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([os.path.join(venv, "bin", "python"), "-c", LOAD, model, patched,
                           os.path.join(REPO, "roles", "node", "files")], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    if patched != "as-is":
        assert not os.path.exists(marker), proc.stdout[-3000:]
        assert "refused: [TODO] Unsupported model: %s" % model in proc.stdout, proc.stdout[-3000:]
        # exo's own patch of its tokenizers is made only where the patches know its source.
        unknown = "exo.inference.tokenizers (%s" % os.path.join(venv, "lib")
        assert (unknown in proc.stdout) == (patched == "unknown exo"), proc.stdout[-3000:]
    else:
        # exo as it ships runs the model's code: what the patch stops
        assert os.path.exists(marker), proc.stdout[-3000:]


def test_the_patches_know_real_exos_sources(venv):
    """What the node role's check (gpufleet.exo.exo_venv) reads: the wheel pip installs, and the exo installed."""
    script = os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.py")
    for where in ([WHEELHOUSE], []):
        proc = subprocess.run([os.path.join(venv, "bin", "python"), "-I", script, "--check"] + where,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        assert proc.returncode == 0, proc.stderr
        found = json.loads(proc.stdout)
        assert found["unknown"] == [] and len(found["modules"]) == 8, found
