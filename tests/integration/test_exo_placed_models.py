# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real exo e4238f9ef (installed from the wheelhouse as the node role installs it, as benchmarks/inference.py
does) serving the synthetic BF16 llama-3.2-1b placed as the node role places it, with the environment the role's
planner gives an instance whose models it placed (models.instance_env(): HF_HUB_OFFLINE and the models it serves)
and HF_ENDPOINT pointed at a listener here that records every connection. The model is at the small size of
exo_instance.TINY_1B (exo's "1B" parameter set replaced in its process), so that its completion takes seconds.

Asked for llama-3.2-3b, which was not placed, through each way in that loads a model (a chat completion, the
tokenizer route, /download, and a peer's start_process_prompt status over gRPC, which makes exo fetch the shard
it names), exo with the collection's patches (roles/node/files/gpufleet_exo_patches.py) answers 404 saying the
model is not placed and how to place it, and nothing reaches the listener; the placed model still answers a real
completion. exo as it ships, in the same environment, goes to the listener."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api
from tests.helpers import REPO
from tests.integration import exo_instance

SPEC = importlib.util.spec_from_file_location("inference_bench", os.path.join(REPO, "benchmarks", "inference.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)
# With test_exo_wheelhouse.py, on one worker: the wheelhouse it checks is the one built here when there is none.
pytestmark = pytest.mark.xdist_group("exo-wheelhouse")
WHEELHOUSE = os.path.join(REPO, ".build", "exo-wheelhouse", "wheelhouse")
PLACED, UNPLACED = "llama-3.2-1b", "llama-3.2-3b"
with open(os.path.join(REPO, "docs", "node.md")) as _handle:
    _SECTION = _handle.read().split("### Only the placed models, offline", 1)[1]
# The answer docs/node.md shows, verbatim.
DOCUMENTED = json.loads(re.search(r"```json\n(.*?)\n```", _SECTION, re.S).group(1))
REFUSAL = DOCUMENTED["detail"]
# A peer of the ring telling the node that a request started on a shard of a model (exo's main.py,
# preemptively_load_shard: the node fetches and loads its part of the shard named).
START_PROCESS_PROMPT = """
import asyncio, json, sys
from exo.networking.grpc.grpc_peer_handle import GRPCPeerHandle
from exo.topology.device_capabilities import DeviceCapabilities, DeviceFlops

async def main():
    peer = GRPCPeerHandle(sys.argv[1], "127.0.0.1:" + sys.argv[2], "test",
                          DeviceCapabilities(model="test", chip="test", memory=0, flops=DeviceFlops(fp32=0, fp16=0, int8=0)))
    await peer.connect()
    shard = {"model_id": sys.argv[3], "start_layer": 0, "end_layer": 27, "n_layers": 28}
    await peer.send_opaque_status("r1", json.dumps({"type": "node_status", "node_id": "intruder", "status": "start_process_prompt",
                                                    "base_shard": shard, "shard": shard, "prompt": "hi", "request_id": "r1"}))
    print("sent")

asyncio.run(main())
"""


class Listener(object):
    """An HTTP server on 127.0.0.1 that records every connection and request it gets, and answers 404."""

    def __init__(self):
        self.connections, self.requests = [], []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self):
                listener.requests.append("%s %s" % (self.command, self.path))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_HEAD = do_POST = answer

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def verify_request(self, request, client_address):
                listener.connections.append(client_address)
                return True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def venv():
    """exo's virtualenv from the wheelhouse (built first where there is none), kept under .build between runs."""
    directory = WHEELHOUSE if os.path.isfile(os.path.join(WHEELHOUSE, "exo-wheelhouse.yml")) else bench.wheelhouse(None)
    bench.WORK = os.path.join(REPO, ".build", "exo-placed-models")
    return bench.exo_venv(directory, bench.python312(None))


@pytest.fixture
def listener():
    hub = Listener()
    yield hub
    hub.close()


def start_exo(venv, store, tmp_path, hub, patched):
    """One exo instance with the synthetic model placed, HF_ENDPOINT at the listener; (process, API port, gRPC port, log)."""
    return exo_instance.start(bench, venv, tmp_path, store, hub.url, exo_instance.run_exo("patched" if patched else "as-is"))


def post(api, path, body):
    """(HTTP status, body) of a POST to exo's API."""
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (api, path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as problem:
        return problem.code, problem.read().decode()


def ask_for_the_unplaced_model(venv, api, grpc):
    """The model that was not placed, asked for by every way in that loads one: {way: (status, body)}."""
    messages = [{"role": "user", "content": "hello"}]
    answers = {}
    for path, body in (("/v1/chat/completions", {"model": UNPLACED, "messages": messages}),
                       ("/v1/chat/token/encode", {"model": UNPLACED, "messages": messages}),
                       ("/download", {"model": UNPLACED})):
        started = time.monotonic()
        answers[path] = post(api, path, body)
        print("%s: HTTP %d after %.3f s" % (path, answers[path][0], time.monotonic() - started))
    peer = subprocess.run([os.path.join(venv, "bin", "python"), "-c", START_PROCESS_PROMPT, "intruder", str(grpc), UNPLACED],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120,
                          check=False)
    assert peer.stdout.strip().endswith("sent"), peer.stdout[-3000:]
    return answers


def wait_for(condition, deadline=120):
    end = time.monotonic() + deadline
    while not condition() and time.monotonic() < end:
        time.sleep(0.5)
    return condition()


def test_a_model_that_was_not_placed_is_refused_and_never_looked_up(venv, tiny_store, tmp_path, listener):
    process, api, grpc, log = start_exo(venv, tiny_store, tmp_path, listener, patched=True)
    try:
        answers = ask_for_the_unplaced_model(venv, api, grpc)
        for path, (status, body) in answers.items():
            assert status == 404 and json.loads(body) == DOCUMENTED, (path, status, body, log.read_text()[-3000:])
        # The peer's status is handled after its call returned: the node refuses the download it would start.
        assert wait_for(lambda: "gpufleet.exo: a download refused: " + REFUSAL in log.read_text()), log.read_text()[-3000:]
        # The placed model answers, from its placed files alone.
        answer = exo_api.chat(api, PLACED, "hello", 0, 900)
        assert answer["chunks"] and answer["finish_reason"] in ("stop", "length"), answer
        print("%s: %d tokens, first after %s s" % (PLACED, len(answer["chunks"]), answer["first_token_s"]))
        text = log.read_text()
        assert "is not a source this collection knows" not in text, text[-3000:]
        assert listener.connections == [] and listener.requests == [], (listener.requests, text[-3000:])
    finally:
        exo_instance.stop(process)


def test_exo_as_it_ships_looks_the_model_up(venv, tiny_store, tmp_path, listener):
    """What the patch stops: in the same environment (HF_HUB_OFFLINE holds back transformers only), exo's own
    downloader asks HF_ENDPOINT for the model a peer's status or /download names."""
    process, api, grpc, log = start_exo(venv, tiny_store, tmp_path, listener, patched=False)
    try:
        answers = ask_for_the_unplaced_model(venv, api, grpc)
        status, body = answers["/download"]
        assert (status, json.loads(body)) == (200, {"status": "success",
                                                    "message": "Download started for model: llama-3.2-3b"})
        assert all(status != 404 for status, dummy in answers.values()), answers
        looked_up = wait_for(lambda: any("Llama-3.2-3B" in r for r in listener.requests))
        assert looked_up, (listener.requests, log.read_text()[-3000:])
        assert listener.connections
    finally:
        exo_instance.stop(process)
