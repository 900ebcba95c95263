# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One real exo instance for the tests: a CPU instance of exo's tinygrad engine on 127.0.0.1, alone in its ring
(manual discovery), with the synthetic model of a store placed as the node role places it (source "host") and the
environment the role's planner gives an instance whose models it placed (models.instance_env())."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import signal
import subprocess

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import models
from tests.helpers import free_ports

MODEL = "llama-3.2-1b"


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
