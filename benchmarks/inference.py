# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time to first token and tokens/s of one exo instance against a ring of two, in one interleaved run;
or, with --paths, of one instance on each of tinygrad's CPU paths.

    make bench-inference
    .venv/bin/python benchmarks/inference.py [--rounds 1] [--max-generate-tokens 6] [--prompt TEXT]
        [--wheelhouse DIR] [--model-store DIR] [--json FILE]
    .venv/bin/python benchmarks/inference.py --paths [f16:CLANG,bf16:LLVM:2,...] [--max-generate-tokens 12]

Real exo e4238f9ef with its tinygrad on the CPU backend (CLANG=1), installed into a venv of CPython
3.12 from the wheelhouse of scripts/exo-wheelhouse.py (built under .build/exo-wheelhouse from the
archives tests/integration/exo_sources.py finds, unless --wheelhouse names one), serving the synthetic
llama-3.2-1b of scripts/exo-synthetic-model.py (made under .build/exo-models unless --model-store holds
it). The model is placed for each instance by the node role's own planner
(plugins/plugin_utils/node/models.py, source "host"), and HF_ENDPOINT answers nothing: exo must find
everything on disk, as on a node without the internet.

Each round starts the single instance, then the ring of two (manual discovery on 127.0.0.1), or the
other way round in odd rounds; never both at once, since each needs most of the memory. Every start
is fresh: new EXO_HOME and HOME, so tinygrad's compile cache is empty and the first token includes
loading the model and compiling its kernels, as after a node starts. A start waits until every
instance's /v1/topology lists every member, then sends one streamed chat completion at temperature 0
to the first instance (exo ignores max_tokens: --max-generate-tokens stops it). Prints the medians and
the ratios ring / single: time until the instances are ready, the first token, tokens/s after it, the
whole completion and the peak RSS per node; and whether the ring gave the single instance's text.

--paths: one instance per path DTYPE:BACKEND[:BEAM] (the model's weights in f16 or bf16, tinygrad's
CLANG or LLVM backend, BEAM its kernel search, 0 for none), each fresh, two completions each: the
first cold (an empty compile cache: loading, compiling and with BEAM searching), the second warm (the
same process); then the instance restarts on the same home for a third, as after a node restarts or a
deploy-time warm-up: a new process, tinygrad's cache (~/.cache/tinygrad/cache.db, compiled kernels and
BEAM's choices) kept on disk. Each path's sample counts what that cache holds. Prints each path beside
the first path's figures, and beside the limit of decoding on this host: the bytes of weights one token
reads (the weights as the engine holds them: exo casts BF16 to float32 on CLANG and to float16
elsewhere, fix_bf16 in exo/inference/tinygrad/models/llama.py) over the memory read bandwidth of one
core, measured here with numpy (tinygrad's CPU kernels run on one thread). An f16 path uses a store
made with --dtype f16 beside the BF16 one (.build/exo-models-f16).
"""
from __future__ import absolute_import, division, print_function

import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from tests.helpers import free_ports  # noqa: E402
from tests.integration import exo_sources  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_requirements as exo_requirements  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import models  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_data as exo_data  # noqa: E402

MODEL = "llama-3.2-1b"
ENGINE = "tinygrad"
WORK = os.path.join(REPO, ".build", "bench-inference")
CASES = (("single", 1), ("ring", 2))
# (key of a sample, label): the rows of the table, in order.
METRICS = (("ready_s", "instances ready, s"), ("first_token_s", "first token, s"), ("tokens_per_s", "tokens/s after it"),
           ("total_s", "whole completion, s"), ("peak_rss_gb", "peak RSS, largest node, GB"))
# An address where nothing answers: a lookup exo makes on the network fails at once.
NO_HUB = "http://127.0.0.1:9"
# --paths by default: each dtype on each CPU backend, without and with tinygrad's kernel search.
PATHS = "f16:CLANG,f16:LLVM,bf16:CLANG,bf16:LLVM,f16:CLANG:2,f16:LLVM:2,bf16:CLANG:2,bf16:LLVM:2"
# The bytes per weight the engine computes with, by (stored dtype, backend): fix_bf16 casts BF16 to
# float32 where tinygrad's default device is CLANG, to float16 on any other.
HELD_BYTES = {("f16", "CLANG"): 2, ("f16", "LLVM"): 2, ("bf16", "CLANG"): 4, ("bf16", "LLVM"): 2}
# The store of each dtype under .build: BF16, the real models' dtype, where the molecule scenarios keep it.
STORES = {"bf16": "exo-models", "f16": "exo-models-f16"}
# tinygrad's disk cache under an instance's HOME (CACHEDB, tinygrad/helpers.py) and what a path's sample
# counts in it, by table prefix (the suffix is tinygrad's cache VERSION): BEAM's choice of each kernel
# (engine/search.py) and each kernel CLANG compiled (device.py, compile_cached).
CACHE_DB = os.path.join(".cache", "tinygrad", "cache.db")
CACHE_TABLES = (("beam_kernels", "beam_search_"), ("compiled_kernels", "compile_clang_"))


def medians(samples):
    """{case: {metric: median}} of {case: [sample]}; a metric no sample of a case has is None."""
    result = {}
    for case, values in samples.items():
        result[case] = {}
        for key, dummy in METRICS:
            known = [v[key] for v in values if v.get(key) is not None]
            result[case][key] = statistics.median(known) if known else None
    return result


def table(samples):
    """[(label, single, ring, ring / single)] from {case: [sample]}; a ratio is None where a side is unknown or 0."""
    median = medians(samples)
    rows = []
    for key, label in METRICS:
        single, ring = median["single"][key], median["ring"][key]
        rows.append((label, single, ring, ring / single if single and ring is not None else None))
    return rows


def show(value, digits=2):
    return "%10s" % ("-" if value is None else "%.*f" % (digits, value))


def order(round_):
    """The cases of a round: the other one goes first every other round, so drift hits both alike."""
    return CASES[round_ % len(CASES):] + CASES[:round_ % len(CASES)]


def python312(given):
    """The CPython 3.12 given, or pyenv's (its python3.12 shim can be broken: the full path)."""
    if given:
        return given
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root, "versions", "3.12.*", "bin", "python3.12")))
    if not found:
        sys.exit("no CPython 3.12 under %s/versions: give one with --python" % root)
    return found[-1]


def wheelhouse(given):
    """The wheelhouse's directory: the one given, or .build/exo-wheelhouse/wheelhouse, built (or found up to date)."""
    if given:
        return os.path.abspath(given)
    work = os.path.join(REPO, ".build", "exo-wheelhouse")
    sources = exo_sources.archives(work)
    directory = os.path.join(work, "wheelhouse")
    quiet([sys.executable, os.path.join(REPO, "scripts", "exo-wheelhouse.py"), "--python", "3.12", "--exo", sources["exo"],
           "--tinygrad", sources["tinygrad"], directory])
    return directory


def quiet(command):
    """Run command; its output is shown only when it fails (pip's complaints about exo's skipped requirements
    are the role's intent)."""
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(command), proc.stdout[-3000:]))


def exo_venv(directory, python):
    """A venv with exo installed from the wheelhouse as the node role installs it; reused while the wheelhouse is the same."""
    with open(os.path.join(directory, "exo-wheelhouse.yml")) as handle:
        settings = yaml.safe_load(handle)
    wheel = settings["exo_node_source_path"]
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("exo-0.0.1.dist-info/METADATA").decode()
    defaults = role_settings.defaults("node")
    declared = exo_requirements.requirements(metadata, defaults["exo_node_skip_requirements"],
                                             defaults["exo_node_replace_requirements"], settings["exo_node_tinygrad_requirement"],
                                             defaults["exo_node_add_requirements"])
    venv = os.path.join(WORK, "venv")
    stamp = os.path.join(venv, "gpufleet-bench.json")
    with open(wheel, "rb") as handle:
        wanted = {"exo": hashlib.sha256(handle.read()).hexdigest(), "install": declared["install"], "python": python}
    if os.path.isfile(stamp):
        with open(stamp) as handle:
            if json.load(handle) == wanted:
                return venv
    shutil.rmtree(venv, ignore_errors=True)
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
           "--find-links", directory]
    for command in ([python, "-m", "venv", venv], pip + ["--no-deps", wheel], pip + declared["install"]):
        quiet(command)
    with open(stamp, "w") as handle:
        json.dump(wanted, handle)
    return venv


def model_store(given, dtype="bf16"):
    """The store holding the synthetic model's repository; made under .build (STORES) when not given."""
    store = os.path.abspath(given or os.path.join(REPO, ".build", STORES[dtype]))
    repo = os.path.join(store, models.MODEL_REPOS[MODEL])
    if not os.path.isfile(os.path.join(repo, "model.safetensors")):
        if given:
            sys.exit("--model-store %s has no %s/model.safetensors; make one with scripts/exo-synthetic-model.py --card %s "
                     "--seed 0 --dtype %s --out %s" % (given, models.MODEL_REPOS[MODEL], MODEL, dtype, repo))
        quiet([sys.executable, os.path.join(REPO, "scripts", "exo-synthetic-model.py"), "--card", MODEL, "--seed", "0",
               "--dtype", dtype, "--out", repo])
    return store


def place(store, homes):
    """The model in every home as the node role places it from a store on the host: links and exo's cached answers."""
    settings, errors = models.model_settings({"exo_node_models": [MODEL], "exo_node_model_source": "host",
                                              "exo_node_model_store": store, "exo_node_data_dir": os.path.dirname(homes[0])})
    # The store checked against its manifests, as the role checks it (gpufleet.exo.exo_data).
    try:
        manifests = exo_data.check_store(store, models.repositories(settings))[0]
    except exo_data.Refused as refused:
        sys.exit(str(refused))
    instances = [{"name": os.path.basename(h), "home": h, "env": {"TMPDIR": h + "/tmp"}} for h in homes]
    placement = models.placement("localhost", settings, instances, store=manifests)
    if errors or placement["errors"]:
        sys.exit("; ".join(errors + placement["errors"]))
    for directory in placement["store_dirs"] + placement["dirs"]:
        os.makedirs(directory, exist_ok=True)
    # The role copies the store to the host's copy; a hard link is that copy here, without the bytes.
    for pair in placement["host_copies"] + placement["links"]:
        if not os.path.exists(pair["dest"]):
            os.link(pair["src"], pair["dest"])
    for seed in placement["seeds"]:
        with open(seed["dest"], "w") as handle:
            handle.write(seed["content"])


def peak_rss_gb(pid):
    """The high-water mark of a process's resident memory (VmHWM), in GB."""
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e9
    return None


class Instances(object):
    """size exo instances on 127.0.0.1 in one ring (manual discovery), each in a fresh home under work; launcher:
    the command that runs exo with its flags after it (default: the venv's exo)."""

    def __init__(self, venv, store, work, name, size, options, backend_env=None, launcher=None):
        self.names = ["%s%d" % (name, i) for i in range(size)]
        self.homes = [os.path.join(work, n) for n in self.names]
        ports = free_ports(2 * size)
        self.grpc, self.api = ports[:size], ports[size:]
        self.logs = [h + ".log" for h in self.homes]
        self.processes = []
        place(store, self.homes)
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2 ** 20  # what exo says of a CPU node
        caps = {"model": "cpu", "chip": "cpu", "memory": memory, "flops": {"fp32": 0, "fp16": 0, "int8": 0}}
        topology = os.path.join(work, name + "-topology.json")
        with open(topology, "w") as handle:
            json.dump({"peers": dict((n, {"address": "127.0.0.1", "port": self.grpc[i], "device_capabilities": caps})
                                     for i, n in enumerate(self.names))}, handle)
        for i, home in enumerate(self.homes):
            # A CPU instance's environment as the node role writes it (instances.py), with no hub to ask.
            env = dict(os.environ, EXO_HOME=home, HOME=home, TMPDIR=home + "/tmp", PYTHONUNBUFFERED="1",
                       CUDA_VISIBLE_DEVICES="", HF_ENDPOINT=NO_HUB, **(backend_env or {"CLANG": "1"}))
            with open(self.logs[i], "a") as log:  # a restart on the same home keeps the first start's log
                self.processes.append(subprocess.Popen(
                    (launcher or [os.path.join(venv, "bin", "exo")])
                    + ["--node-id", self.names[i], "--node-host", "127.0.0.1",
                       "--node-port", str(self.grpc[i]), "--chatgpt-api-port", str(self.api[i]), "--discovery-module", "manual",
                       "--discovery-config-path", topology, "--inference-engine", ENGINE, "--disable-tui",
                       "--max-generate-tokens", str(options.max_generate_tokens),
                       # exo's own limit on a completion, as the client's: a cold BEAM search may take longer than 900 s.
                       "--chatgpt-api-response-timeout", str(options.timeout)],
                    stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))

    def failure(self, what):
        exits = ["%s exited with %s" % (n, p.poll()) for n, p in zip(self.names, self.processes) if p.poll() is not None]
        what = "; ".join([what] + exits)
        tails = []
        for log in self.logs:
            with open(log, errors="replace") as handle:
                tails.append("--- %s\n%s" % (log, handle.read()[-2000:]))
        return RuntimeError("%s\n%s" % (what, "\n".join(tails)))

    def wait(self, deadline):
        """Seconds until every instance's topology lists every member (a request sent before that hangs)."""
        started = time.monotonic()
        while True:
            dead = [n for n, p in zip(self.names, self.processes) if p.poll() is not None]
            if dead:
                raise self.failure("exo %s exited while the ring formed" % ", ".join(dead))
            seen, dummy = exo_api.wait_for_ring(self.api, self.names, deadline=5)
            if all(not i["missing"] and not i["error"] for i in seen):
                return time.monotonic() - started
            if time.monotonic() - started > deadline:
                raise self.failure("no ring after %d s: %s" % (deadline, seen))

    def peak_rss_gb(self):
        return [peak_rss_gb(p.pid) for p in self.processes]

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def measure(venv, store, work, name, size, options):
    """One fresh start of a case and one completion through it: a sample."""
    instances = Instances(venv, store, work, name, size, options)
    try:
        ready = instances.wait(options.ready_deadline)
        try:
            answer = exo_api.chat(instances.api[0], MODEL, options.prompt, 0, options.timeout)
        except exo_api.ApiError as problem:
            raise instances.failure(str(problem))
        peaks = instances.peak_rss_gb()
        return dict(ready_s=ready, first_token_s=answer["first_token_s"], tokens_per_s=answer["tokens_per_s"],
                    total_s=answer["total_s"], peak_rss_gb=max(peaks), peak_rss_nodes_gb=peaks, tokens=len(answer["chunks"]),
                    text=answer["text"], finish_reason=answer["finish_reason"])
    finally:
        instances.stop()


def parse_paths(text):
    """[(dtype, backend, beam)] of "DTYPE:BACKEND[:BEAM],..."; ValueError names the entry that is not one."""
    paths = []
    for entry in text.split(","):
        parts = entry.strip().split(":")
        if len(parts) not in (2, 3) or (parts[0], parts[1].upper()) not in HELD_BYTES \
                or not (len(parts) == 2 or parts[2].isdigit()):
            raise ValueError("%r is not DTYPE:BACKEND[:BEAM] with DTYPE f16 or bf16, BACKEND CLANG or LLVM, BEAM a "
                             "number" % entry)
        paths.append((parts[0], parts[1].upper(), int(parts[2]) if len(parts) == 3 else 0))
    return paths


def path_env(backend, beam, cpus=None):
    """What selects a path in this tinygrad: <BACKEND>=1 makes it the default device, BEAM its kernel search.
    With BEAM, PARALLEL compiles the candidates in worker processes, one core left to time them: without
    workers (tinygrad's default on a CPU device, engine/search.py:133) the search sets SIGALRM in the thread
    that runs it, and exo runs the model in an executor thread, so every search fails ("signal only works in
    main thread")."""
    env = {backend: "1"}
    if beam:
        env["BEAM"] = str(beam)
        env["PARALLEL"] = str(max(1, (cpus or os.cpu_count()) - 1))
    return env


def read_bandwidth_gbs(python):
    """One core's memory read bandwidth, GB/s: the best of five sums of a 1 GiB float32 array (numpy, one thread)."""
    code = ("import numpy, time\n"
            "a = numpy.ones(2 ** 28, dtype=numpy.float32)\n"
            "best = None\n"
            "for _ in range(5):\n"
            "    t = time.perf_counter(); a.sum(); t = time.perf_counter() - t\n"
            "    best = t if best is None else min(best, t)\n"
            "print(a.nbytes / best / 1e9)\n")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return float(subprocess.check_output([python, "-c", code], env=env, universal_newlines=True))


def token_limit_s(weights_bytes, dtype, backend, bandwidth_gbs):
    """The least time one decoded token can take: every weight read once, as the engine holds it (both
    stored dtypes take two bytes a weight)."""
    return weights_bytes / 2 * HELD_BYTES[(dtype, backend)] / (bandwidth_gbs * 1e9)


def completions(venv, store, work, path, options, count):
    """count completions through one instance of a path on its home under work (made, or kept from a start
    before), then the instance's peak RSS."""
    instances = Instances(venv, store, work, "%s-%s-%d-" % path, 1, options, backend_env=path_env(path[1], path[2]))
    try:
        instances.wait(options.ready_deadline)
        answers = []
        for dummy in range(count):
            try:
                answers.append(exo_api.chat(instances.api[0], MODEL, options.prompt, 0, options.timeout))
            except exo_api.ApiError as problem:
                raise instances.failure(str(problem))
        return answers, instances.peak_rss_gb()[0]
    finally:
        instances.stop()


def measure_path(venv, store, work, path, options):
    """One fresh instance on a path and two completions through it, cold then warm; then one more through a
    new process on the same home, its cache on disk."""
    (cold, warm), peak = completions(venv, store, work, path, options, 2)
    (restart,), dummy = completions(venv, store, work, path, options, 1)
    return dict(path="%s %s BEAM=%d" % path, first_token_s=cold["first_token_s"], tokens_per_s=cold["tokens_per_s"],
                warm_first_token_s=warm["first_token_s"], warm_tokens_per_s=warm["tokens_per_s"],
                restart_first_token_s=restart["first_token_s"], restart_tokens_per_s=restart["tokens_per_s"],
                peak_rss_gb=peak, tokens=len(cold["chunks"]), text=cold["text"])


def cache_census(work):
    """{key: rows} of CACHE_TABLES in the tinygrad cache of the instance under work, and its size in MB;
    {} where there is none (the instance died before it compiled)."""
    found = glob.glob(os.path.join(work, "*", CACHE_DB))
    if not found:
        return {}
    census = {"cache_mb": sum(os.path.getsize(f) for f in glob.glob(found[0] + "*")) / 1e6}  # with its -wal
    connection = sqlite3.connect("file:%s?mode=ro" % found[0], uri=True)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for key, prefix in CACHE_TABLES:
            census[key] = sum(connection.execute("SELECT count(*) FROM '%s'" % t).fetchone()[0]
                              for t in tables if t.startswith(prefix))
    finally:
        connection.close()
    return census


def paths_main(options, venv):
    """--paths: every path in turn, then the table beside the first path and beside the limit."""
    paths = parse_paths(options.paths)
    python = os.path.join(venv, "bin", "python")
    bandwidth = read_bandwidth_gbs(python)
    stores = dict((dtype, model_store(None, dtype)) for dtype in sorted(set(p[0] for p in paths)))
    weights = dict((dtype, os.path.getsize(os.path.join(store, models.MODEL_REPOS[MODEL], "model.safetensors")))
                   for dtype, store in stores.items())
    samples = []
    work = tempfile.mkdtemp(prefix="inference-paths-")
    try:
        for path in paths:
            path_work = os.path.join(work, "%s-%s-%d" % path)
            started = time.monotonic()
            try:
                sample = measure_path(venv, stores[path[0]], path_work, path, options)
            except RuntimeError as problem:
                # A path that cannot serve is a result too: the table says so and the others still run.
                sample = dict(path="%s %s BEAM=%d" % path, error=str(problem).splitlines()[0])
                print("%-20s failed: %s" % (sample["path"], sample["error"]), flush=True)
            else:
                print("%-20s first token %6.1f s cold, %6.1f s warm, %6.1f s restarted; %s tokens/s cold, %s warm, "
                      "%s restarted; peak %.1f GB; %r" % (
                          sample["path"], sample["first_token_s"] or 0, sample["warm_first_token_s"] or 0,
                          sample["restart_first_token_s"] or 0, show(sample["tokens_per_s"], 3).strip(),
                          show(sample["warm_tokens_per_s"], 3).strip(), show(sample["restart_tokens_per_s"], 3).strip(),
                          sample["peak_rss_gb"], sample["text"]), flush=True)
            sample["path_s"] = time.monotonic() - started
            sample.update(cache_census(path_work))
            print("%-20s %.0f s in all; tinygrad's cache: %s" % (sample["path"], sample["path_s"], ", ".join(
                "%s %s" % (k, sample[k] if k != "cache_mb" else "%.1f MB" % sample[k])
                for k in ("beam_kernels", "compiled_kernels", "cache_mb") if k in sample) or "none"), flush=True)
            sample["limit_s_per_token"] = token_limit_s(weights[path[0]], path[0], path[1], bandwidth)
            samples.append(sample)
            if options.json:
                with open(options.json, "w") as handle:
                    json.dump(dict(options=vars(options), bandwidth_gbs=bandwidth, samples=samples), handle, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("one core reads %.1f GB/s; %s, prompt %r, --max-generate-tokens %d; ratios against %s" % (
        bandwidth, MODEL, options.prompt, options.max_generate_tokens, samples[0]["path"]))
    header = ("path", "1st cold", "1st warm", "1st rest.", "tok/s", "warm", "ratio", "s/token", "limit s/t", "x limit")
    print("%-20s" % header[0] + "".join("%10s" % label for label in header[1:]))
    base = samples[0].get("warm_tokens_per_s")
    for sample in samples:
        if "error" in sample:
            print("%-20s failed: %s" % (sample["path"], sample["error"]))
            continue
        rate = sample["warm_tokens_per_s"]
        per_token = 1 / rate if rate else None
        limit = sample["limit_s_per_token"]
        cells = (show(sample["first_token_s"], 1), show(sample["warm_first_token_s"], 1),
                 show(sample["restart_first_token_s"], 1), show(sample["tokens_per_s"], 3),
                 show(rate, 3), show(rate / base if rate and base else None), show(per_token), show(limit, 3),
                 show(per_token / limit if per_token else None, 1))
        print("%-20s" % sample["path"] + "".join(cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-generate-tokens", type=int, default=6, help="exo's own limit (default 6)")
    parser.add_argument("--prompt", default="Say hello.")
    parser.add_argument("--wheelhouse", help="a wheelhouse of scripts/exo-wheelhouse.py for CPython 3.12 "
                                             "(default: built or reused under .build/exo-wheelhouse)")
    parser.add_argument("--model-store", help="a store holding %s's repository, read only (default: made under "
                                              ".build/exo-models)" % MODEL)
    parser.add_argument("--python", help="CPython 3.12 for exo's venv (default: pyenv's)")
    parser.add_argument("--timeout", type=int, default=900,
                        help="seconds for one completion, the client's and exo's API's limit (default 900, exo's)")
    parser.add_argument("--ready-deadline", type=int, default=300, help="seconds for a ring to form")
    parser.add_argument("--json", help="write every sample to this file")
    parser.add_argument("--dtype", choices=sorted(STORES), default="bf16",
                        help="the model's dtype for single against ring (default bf16, the real models')")
    parser.add_argument("--paths", nargs="?", const=PATHS, help="tinygrad's CPU paths instead, DTYPE:BACKEND[:BEAM],... "
                        "(default %s)" % PATHS)
    options = parser.parse_args()
    if options.rounds < 1 or options.max_generate_tokens < 1:
        parser.error("--rounds and --max-generate-tokens must be at least 1")
    if options.paths:
        try:
            parse_paths(options.paths)
        except ValueError as problem:
            parser.error("--paths: %s" % problem)

    # A run stopped (timeout(1)) still stops its instances: each leads its own session, out of the signal's reach.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by signal %d" % signum))
    python = python312(options.python)
    venv = exo_venv(wheelhouse(options.wheelhouse), python)
    if options.paths:
        return paths_main(options, venv)
    store = model_store(options.model_store, options.dtype)
    samples = dict((name, []) for name, dummy in CASES)
    work = tempfile.mkdtemp(prefix="inference-bench-")
    try:
        for round_ in range(options.rounds):
            for name, size in order(round_):
                sample = measure(venv, store, os.path.join(work, "%s-%d" % (name, round_)), name, size, options)
                samples[name].append(sample)
                print("round %d, %-6s ready %5.1f s  first token %6.1f s  %s tokens/s  %d tokens  peak %s GB  %r" % (
                    round_ + 1, name, sample["ready_s"], sample["first_token_s"] or 0, show(sample["tokens_per_s"], 3).strip(),
                    sample["tokens"], " + ".join("%.1f" % p for p in sample["peak_rss_nodes_gb"]), sample["text"]), flush=True)
                if options.json:  # as it goes: a run cut short still leaves its samples
                    with open(options.json, "w") as handle:
                        json.dump(dict(options=vars(options), samples=samples), handle, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print()
    print("%-24s %10s %10s %12s   (%d round(s), interleaved, medians; %s, prompt %r, --max-generate-tokens %d)" % (
        "", "single", "ring of 2", "ring/single", options.rounds, MODEL, options.prompt, options.max_generate_tokens))
    for label, single, ring, ratio in table(samples):
        print("%-24s %s %s %s" % (label, show(single), show(ring), show(ratio, 2).rjust(12)))
    same = all(r["text"] == s["text"] for r, s in zip(samples["ring"], samples["single"]))
    print("\nthe ring's text equals the single instance's at temperature 0: %s" % ("yes" if same else "NO"))


if __name__ == "__main__":
    main()
