# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One real exo instance for the tests: a CPU instance of exo's tinygrad engine on 127.0.0.1, alone in its ring
(manual discovery), with the synthetic model of a store placed as the node role places it (source "host") and the
environment the role's planner gives an instance whose models it placed (models.instance_env()).

The model is llama-3.2-1b at a small size (TINY_1B), so that a request takes seconds on the CPU: the store holds
it (tiny_store), and exo's "1B" parameter set is replaced in the instance's process (run_exo), nothing else."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import signal
import subprocess

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import models
from tests.helpers import REPO, free_ports

SPEC = importlib.util.spec_from_file_location("synthetic_model", os.path.join(REPO, "scripts", "exo-synthetic-model.py"))
synthetic = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(synthetic)
MODEL = "llama-3.2-1b"
FILES = os.path.join(REPO, "roles", "node", "files")
# exo's Llama at a size that answers in seconds on the CPU: exo's "1B" set with fewer, narrower layers; TINY_1B
# keeps exo's tokenizer's vocabulary, so that the ids the synthetic tokenizer gives are the model's.
TINY = dict(synthetic.PARAMETER_SETS["1B"], dim=256, n_heads=8, n_kv_heads=4, n_layers=4, vocab_size=512, hidden_dim=512)
TINY_1B = dict(TINY, vocab_size=synthetic.PARAMETER_SETS["1B"]["vocab_size"])
# exo's main, with the collection's patches installed first where asked (as the node's .pth file installs
# them), and exo's "1B" parameter set replaced by the one given.
RUN_EXO = r"""
import json, sys
mode, files, params = sys.argv.pop(1), sys.argv.pop(1), json.loads(sys.argv.pop(1))
if mode == "patched":
    sys.path.insert(0, files)
    import gpufleet_exo_patches
    gpufleet_exo_patches.install()
from exo.inference.tinygrad import inference
inference.MODEL_PARAMS["1B"] = {"args": params, "files": 1}
from exo.main import run
run()
"""


def run_exo(mode):
    """start()'s command: exo with the patches (mode "patched") or as it ships ("as-is"), serving TINY_1B."""
    return [RUN_EXO, mode, FILES, json.dumps(TINY_1B)]


def tiny_store(store):
    """Write llama-3.2-1b at TINY_1B into the store (a directory), as scripts/exo-synthetic-model.py writes a model."""
    original = synthetic.PARAMETER_SETS
    synthetic.PARAMETER_SETS = dict(original, **{"1B": TINY_1B})
    try:
        synthetic.write_model(os.path.join(store, models.MODEL_REPOS[MODEL]), MODEL, seed=0, dtype="bf16")
    finally:
        synthetic.PARAMETER_SETS = original
    return store


def start(bench, venv, work, store, hub, command, env=None, max_tokens=2):
    """exo started by `python -c command[0] command[1:]` of venv's python (exo's flags after them), in a home under
    work, env added to its environment, HF_ENDPOINT at hub; (process, API port, gRPC port, log path) once its
    topology lists it. bench: benchmarks/inference.py, which places the model."""
    home = str(work / "home")
    bench.place(store, [home])
    settings, errors = models.model_settings({"exo_node_models": [MODEL], "exo_node_model_source": "host",
                                              "exo_node_model_store": store})
    assert errors == []
    grpc, api = free_ports(2)
    topology = work / "topology.json"
    topology.write_text(json.dumps({"peers": {"node0": {"address": "127.0.0.1", "port": grpc, "device_capabilities": {
        "model": "cpu", "chip": "cpu", "memory": 16384, "flops": {"fp32": 0, "fp16": 0, "int8": 0}}}}}))
    env = dict(os.environ, EXO_HOME=home, HOME=home, TMPDIR=home + "/tmp", PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="",
               CLANG="1", HF_ENDPOINT=hub, **dict(models.instance_env(settings), **(env or {})))
    env.pop("PYTHONPATH", None)
    log = work / "exo.log"
    with open(str(log), "w") as out:
        process = subprocess.Popen(
            [os.path.join(venv, "bin", "python"), "-c"] + list(command)
            + ["--node-id", "node0", "--node-host", "127.0.0.1", "--node-port", str(grpc), "--chatgpt-api-port", str(api),
               "--discovery-module", "manual", "--discovery-config-path", str(topology), "--inference-engine", "tinygrad",
               "--disable-tui", "--max-generate-tokens", str(max_tokens), "--chatgpt-api-response-timeout", "900"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    seen, dummy = exo_api.wait_for_ring([api], ["node0"], deadline=240)
    if seen[0]["missing"] or seen[0]["error"]:
        stop(process)
        raise AssertionError((seen, log.read_text()[-3000:]))
    return process, api, grpc, log


def stop(process):
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
