# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real exo e4238f9ef's tinygrad engine (installed from the wheelhouse as the node role installs it) answering
one request after another, and several at once, with and without the collection's patches
(roles/node/files/gpufleet_exo_patches.py).

The model is exo's own Llama (exo/inference/tinygrad/models/llama.py), built by exo's build_transformer from
BF16 safetensors in Hugging Face's layout, the real models' dtype, through exo's fix_bf16; only its size is
small (a parameter set of its own beside exo's "1B"), so that a request takes seconds on the CPU. Each request
goes through the engine as exo's node drives it: infer_tensor on the prompt, then on each sampled token
(temperature 0), shard after shard for a ring of two. A request's answer must be the one a fresh process
gives, token for token, whatever ran before it: exo as it ships gives another after any other request (its
decode steps replay the KV cache of the request that was running when tinygrad's JIT captured them), and
the test shows that first, so that it fails where the cause is not there. docs/node.md, "One request after
another".
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import REPO
from tests.integration import exo_instance

SPEC = importlib.util.spec_from_file_location("inference_bench", os.path.join(REPO, "benchmarks", "inference.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)
synthetic = exo_instance.synthetic
# With test_exo_wheelhouse.py and test_exo_placed_models.py, on one worker: the wheelhouse is built once, by
# whichever needs it first, and exo's virtualenv under .build/exo-placed-models is shared.
pytestmark = pytest.mark.xdist_group("exo-wheelhouse")
WHEELHOUSE = os.path.join(REPO, ".build", "exo-wheelhouse", "wheelhouse")
FILES = exo_instance.FILES
TINY = exo_instance.TINY
TOKENS = 8
# Prompts as token ids: A, one shorter (B), one longer (C), and one cut off after two tokens (D).
PROMPTS = {"A": [1, 17, 230, 5, 99], "B": [3, 300, 42], "C": [7, 8, 9, 10, 400, 12, 13, 14, 15], "D": [2, 480, 66, 11]}
# The engine driven as exo's node drives it, in a process of exo's virtualenv, the patches installed first
# where asked (as the node's .pth file installs them). Its plan is a list of turns, each a list of requests
# [name, prompt, tokens] whose steps alternate, as exo interleaves the requests in flight on its one tinygrad
# thread; it prints the tokens of each request, by turn.
ENGINE = r"""
import asyncio, json, sys
from pathlib import Path
import numpy as np
mode, files, model, params, layers, plan = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4]), \
    json.loads(sys.argv[5]), json.loads(sys.argv[6])
if mode == "patched":
    sys.path.insert(0, files)
    import gpufleet_exo_patches
    gpufleet_exo_patches.install()
from exo.inference.shard import Shard
from exo.inference.tinygrad import inference
inference.MODEL_PARAMS["tiny"] = {"args": params, "files": 1}

async def main():
    engines = []
    for start, end in layers:
        engine = inference.TinygradDynamicShardInferenceEngine(None)
        shard = Shard("tiny", start, end, params["n_layers"])
        engine.model = await asyncio.get_running_loop().run_in_executor(
            engine.executor, inference.build_transformer, model, shard, "tiny")
        engine.shard = shard
        engines.append(engine)

    async def step(request, tokens):
        x = np.array([tokens])
        for engine in engines:
            x, _ = await engine.infer_tensor(request, engine.shard, x)
        return int((await engines[-1].sample(x, temp=0)).item())

    answers = []
    for number, turn in enumerate(plan):
        tokens = {name: [await step("%d-%s" % (number, name), prompt)] for name, prompt, count in turn}
        while any(len(tokens[name]) < count for name, prompt, count in turn):
            for name, prompt, count in turn:
                if len(tokens[name]) < count:
                    tokens[name].append(await step("%d-%s" % (number, name), tokens[name][-1:]))
        answers.append(tokens)
    print(json.dumps(answers))

asyncio.run(main())
"""
# A single instance holds all the layers; a ring of two splits them.
LAYOUTS = {"single": [[0, TINY["n_layers"] - 1]],
           "ring": [[0, TINY["n_layers"] // 2 - 1], [TINY["n_layers"] // 2, TINY["n_layers"] - 1]]}


@pytest.fixture(scope="module")
def venv():
    """exo's virtualenv from the wheelhouse (built first where there is none), as test_exo_placed_models.py makes it."""
    if shutil.which("clang") is None:
        pytest.skip("no clang: tinygrad's CPU backend at exo's pin compiles with it (tests/run.sh installs it)")
    directory = WHEELHOUSE if os.path.isfile(os.path.join(WHEELHOUSE, "exo-wheelhouse.yml")) else bench.wheelhouse(None)
    bench.WORK = os.path.join(REPO, ".build", "exo-placed-models")
    return bench.exo_venv(directory, bench.python312(None))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The tiny model's model.safetensors, BF16 in Hugging Face's names, as scripts/exo-synthetic-model.py writes them."""
    path = tmp_path_factory.mktemp("tiny-model") / "model.safetensors"
    sets = dict(synthetic.PARAMETER_SETS, tiny=TINY)
    original, synthetic.PARAMETER_SETS = synthetic.PARAMETER_SETS, sets
    try:
        synthetic.write_safetensors(str(path), synthetic.tensor_table("tiny", "BF16"), seed=0, std=0.2)
    finally:
        synthetic.PARAMETER_SETS = original
    return str(path)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One HOME for every process: tinygrad's compile cache is kept there, so only the first compiles."""
    return str(tmp_path_factory.mktemp("tinygrad-home"))


def answers(venv, model, home, mode, layout, plan, env=None):
    """The tokens of each request of plan, by turn, from one fresh process (env: more of its environment)."""
    turns = [[[name, PROMPTS[name], count] for name, count in turn] for turn in plan]
    env = dict(os.environ, HOME=home, CLANG="1", CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0", **(env or {}))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([os.path.join(venv, "bin", "python"), "-c", ENGINE, mode, FILES, model, json.dumps(TINY),
                           json.dumps(LAYOUTS[layout]), json.dumps(turns)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "is not a source this collection knows" not in proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def fresh(venv, model, home):
    """Each prompt's answer as the first request of a fresh process of exo as it ships."""
    return dict((name, answers(venv, model, home, "as-is", "single", [[(name, TOKENS)]])[0][name]) for name in "ABC")


def test_exo_as_it_ships_answers_a_prompt_otherwise_after_another_request(venv, model, home, fresh):
    (b,), (a,) = [list(turn.values()) for turn in answers(venv, model, home, "as-is", "single", [[("B", TOKENS)], [("A", TOKENS)]])]
    assert b == fresh["B"]
    # The first token comes from the prompt's own pass; the decode steps replay B's KV cache.
    assert a[0] == fresh["A"][0] and a != fresh["A"], (a, fresh["A"])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_prompt_gets_the_same_answer_after_any_other_request(venv, model, home, fresh, layout):
    plan = [[("B", TOKENS)], [("A", TOKENS)],          # after a shorter prompt
            [("C", TOKENS)], [("A", TOKENS)],          # after a longer one
            [("B", TOKENS), ("C", TOKENS)], [("A", TOKENS)],  # after two at once
            [("D", 2)], [("A", TOKENS)]]               # after one cut off mid-answer
    got = answers(venv, model, home, "patched", layout, plan)
    assert [turn.get("A") for turn in got[1::2]] == [fresh["A"]] * 4, got
    assert (got[0]["B"], got[2]["C"], got[4]) == (fresh["B"], fresh["C"], {"B": fresh["B"], "C": fresh["C"]}), got


@pytest.mark.parametrize("admitted", [None, "3"])
def test_three_requests_at_once_each_keep_their_cache_where_the_role_admits_three(venv, model, home, fresh, admitted):
    """exo's engine keeps the KV caches of two requests: a third in flight evicts the oldest, which goes on from
    an empty cache. Patched, it keeps as many as the ring admits (here the instance's own limit: no discovery file);
    without a limit from the role, exo's two."""
    env = {"GPUFLEET_EXO_REQUESTS_IN_FLIGHT": admitted} if admitted else {}
    got = answers(venv, model, home, "patched", "single", [[("A", TOKENS), ("B", TOKENS), ("C", TOKENS)]], env)[0]
    expected = {"A": fresh["A"], "B": fresh["B"], "C": fresh["C"]}
    assert (got == expected) == bool(admitted), (got, expected)


def test_the_patch_leaves_a_fresh_answer_as_it_was(venv, model, home, fresh):
    assert answers(venv, model, home, "patched", "single", [[("A", TOKENS)]])[0]["A"] == fresh["A"]


# Requests that arrive together at an instance whose model is not built yet, as exo's node sends them: each
# asks the engine for the shard (ensure_shard) before its first step. The downloader is a stand-in that finds
# the model on disk at once, as exo's does for a placed model; build_transformer is counted.
LOAD = r"""
import asyncio, json, sys
from pathlib import Path
mode, files, model, params = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])
if mode == "patched":
    sys.path.insert(0, files)
    import gpufleet_exo_patches
    gpufleet_exo_patches.install()
from exo.inference.shard import Shard
from exo.inference.tinygrad import inference
# The engine picks the parameter set by the model id ("1b" in it: "1B"): here it is the tiny one.
inference.MODEL_PARAMS["1B"] = {"args": params, "files": 1}
builds = []
exos_build = inference.build_transformer
def build_transformer(*args):
    builds.append(args[1])
    return exos_build(*args)
inference.build_transformer = build_transformer
inference.resolve_tokenizer = lambda path: asyncio.sleep(0)

class Downloader:
    async def ensure_shard(self, shard, engine):
        await asyncio.sleep(0.1)
        return model.parent

async def main():
    engine = inference.TinygradDynamicShardInferenceEngine(Downloader())
    shard = Shard("tiny-1b", 0, params["n_layers"] - 1, params["n_layers"])
    await asyncio.gather(*[engine.ensure_shard(shard) for _ in range(4)])
    print(json.dumps({"builds": len(builds), "built": engine.shard == shard}))

asyncio.run(main())
"""


@pytest.mark.parametrize("mode, builds", [("as-is", 4), ("patched", 1)])
def test_requests_that_arrive_together_build_the_model_once(venv, model, home, mode, builds):
    env = dict(os.environ, HOME=home, CLANG="1", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([os.path.join(venv, "bin", "python"), "-c", LOAD, mode, FILES, model, json.dumps(TINY)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=600, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == {"builds": builds, "built": True}


# The gate: exo's API with the limits the node role gives an instance, serving llama-3.2-1b placed as the role
# places it, at the small size of exo_instance.TINY_1B.
MODEL = exo_instance.MODEL
with open(os.path.join(REPO, "docs", "node.md")) as _handle:
    _SECTION = _handle.read().split("## Many requests at once", 1)[1]
# The refusal docs/node.md shows, verbatim.
REFUSAL = re.search(r"```json\n(.*?)\n *```", _SECTION, re.S).group(1).strip()
# An instance computes one chat completion at a time and keeps two waiting (exo_node_requests_in_flight,
# exo_node_request_queue). Each answer is 8 tokens, about 6 s here, most of it exo's API loading the
# tokenizer again for every request.
IN_FLIGHT, QUEUE, ANSWER_TOKENS = 1, 2, 8


def question(number):
    """A prompt of the same length for every number below 10: the prompt's pass compiles its kernels once."""
    return "Question %d: what is %d times %d?" % (number, number, number + 1)


@pytest.fixture(scope="module")
def gated(venv, tiny_store, tmp_path_factory):
    """One patched exo instance with the gate's limits in its environment; (API port, log path)."""
    process, api, dummy, log = exo_instance.start(
        bench, venv, tmp_path_factory.mktemp("gated"), tiny_store, bench.NO_HUB, exo_instance.run_exo("patched"),
        {"GPUFLEET_EXO_REQUESTS_IN_FLIGHT": str(IN_FLIGHT), "GPUFLEET_EXO_REQUEST_QUEUE": str(QUEUE)}, ANSWER_TOKENS)
    try:
        yield api, log
    finally:
        exo_instance.stop(process)


def completion(api, prompt):
    """{"status", "retry_after", "body" or the streamed answer's "chunks", "started", "first", "ended"}."""
    started = time.monotonic()
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
                       "stream": True}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % api, data=body,
                                     headers={"Content-Type": "application/json"})
    result = {"started": started, "first": None, "chunks": []}
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            result["status"] = response.status
            for raw in response:
                line = raw.decode().strip()
                if line.startswith("data:") and line != "data: [DONE]":
                    for choice in json.loads(line[5:]).get("choices") or []:
                        if (choice.get("delta") or {}).get("content"):
                            result["first"] = result["first"] or time.monotonic()
                            result["chunks"].append(choice["delta"]["content"])
    except urllib.error.HTTPError as problem:
        result.update(status=problem.code, retry_after=problem.headers.get("Retry-After"), body=json.loads(problem.read()))
    result["ended"] = time.monotonic()
    return result


def metrics(api):
    """{(name, outcome or ""): value} of the instance's /metrics, read by Prometheus's own parser."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % api, timeout=30) as response:
        text = response.read().decode()
    return dict(((sample.name, sample.labels.get("outcome", sample.labels.get("le", ""))), sample.value)
                for family in text_string_to_metric_families(text) for sample in family.samples)


def test_clients_past_the_queue_are_refused_at_once_and_the_others_answered_in_order(gated):
    api, log = gated
    prompts = [question(n) for n in range(6)]
    admitted = IN_FLIGHT + QUEUE
    alone = [completion(api, prompt) for prompt in prompts[:admitted]]  # the first also loads the model and compiles
    assert [a["status"] for a in alone] == [200] * admitted and all(a["chunks"] for a in alone), alone
    results = [None] * len(prompts)

    def client(number):
        results[number] = completion(api, prompts[number])

    threads = []
    for number in range(len(prompts)):  # one after another, 0.1 s apart: the arrival order is theirs
        threads.append(threading.Thread(target=client, args=(number,)))
        threads[-1].start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(timeout=300)
    assert [r["status"] for r in results] == [200] * admitted + [429] * (len(prompts) - admitted), results
    for number, result in enumerate(results[:admitted]):
        assert result["chunks"] == alone[number]["chunks"], (number, result["chunks"], alone[number]["chunks"])
    # In arrival order: each admitted answer's first token after the one before it ended.
    assert all(results[n]["first"] > results[n - 1]["ended"] for n in range(1, admitted)), results
    for result in results[admitted:]:
        assert result["ended"] - result["started"] < 2, result
        # docs/node.md's refusal, with this instance's figure.
        documented = json.loads(REFUSAL.replace("12 s", "%s s" % result["retry_after"]))
        assert int(result["retry_after"]) >= 1 and result["body"] == documented, result
    seen = metrics(api)
    assert seen[("gpufleet_exo_requests_total", "answered")] == len(alone) + admitted
    assert seen[("gpufleet_exo_requests_total", "refused")] == len(prompts) - admitted
    assert (seen[("gpufleet_exo_requests_in_flight", "")], seen[("gpufleet_exo_requests_queued", "")]) == (0, 0)
    assert (seen[("gpufleet_exo_requests_limit", "")], seen[("gpufleet_exo_requests_queue_limit", "")]) == (IN_FLIGHT, QUEUE)
    assert seen[("gpufleet_exo_first_token_seconds_count", "")] == len(alone) + admitted
    # The instance is its ring's only member, as its discovery file lists.
    assert (seen[("gpufleet_exo_ring_members", "")], seen[("gpufleet_exo_ring_members_expected", "")]) == (1, 1)
    assert 0 < time.time() - seen[("gpufleet_exo_instance_started_seconds", "")] < 3600


def until(api, what, condition, timeout=120):
    """The instance's metrics once condition holds of them: each step of a test waits for the gate to say it was
    taken, not for a time that a loaded machine may outlast."""
    deadline = time.time() + timeout
    while True:
        seen = metrics(api)
        if condition(seen):
            return seen
        assert time.time() < deadline, "%s: not within %d s; the metrics say %s" % (what, timeout, seen)
        time.sleep(0.1)


def test_a_client_that_leaves_the_queue_frees_its_place(gated):
    api, log = gated
    before = metrics(api)
    running = threading.Thread(target=completion, args=(api, question(6)))
    running.start()
    until(api, "the first request in flight", lambda seen: seen[("gpufleet_exo_requests_in_flight", "")] == 1)
    # A client that sends its request, then closes its connection while the request waits.
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": question(7)}], "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", api), timeout=30) as leaving:
        leaving.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        until(api, "the leaving request queued", lambda seen: seen[("gpufleet_exo_requests_queued", "")] == 1)
    until(api, "the leaving request counted as left", lambda seen: seen[("gpufleet_exo_requests_total", "left")]
          == before[("gpufleet_exo_requests_total", "left")] + 1)
    # Two others after it: both find a place in the queue, which holds two only once the first left.
    after_leaving = [None, None]

    def client(number):
        after_leaving[number] = completion(api, question(8 + number))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads + [running]:
        thread.join(timeout=300)
    assert [a["status"] for a in after_leaving] == [200, 200], after_leaving
    seen = metrics(api)
    assert seen[("gpufleet_exo_requests_total", "left")] == before[("gpufleet_exo_requests_total", "left")] + 1
    assert seen[("gpufleet_exo_requests_total", "refused")] == before[("gpufleet_exo_requests_total", "refused")]
