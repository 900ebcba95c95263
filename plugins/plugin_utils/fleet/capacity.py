# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a fleet of exo nodes can serve: exo's memory-weighted ring over the instances, per model.

exo e4238f9ef splits a model's layers over its nodes by the memory each one advertises
(exo/topology/ring_memory_weighted_partitioning_strategy.py), rounds the shares to layers
(exo/topology/partitioning_strategy.py, map_partitions_to_shards) and hands each node the shard at
its own position in that list (exo/orchestration/node.py, get_current_shard). Each node then loads
its layers' weights, the embedding on the first shard and the output head on the last
(exo/inference/tinygrad/tinygrad_helpers.py, load; exo/download/hf/hf_helpers.py, get_allow_patterns),
and keeps a KV cache per prompt for its layers (exo/inference/tinygrad/stateful_model.py).

fleet() takes every host's device facts, the instances the node planner gives it and its ring, and
returns, for every model of exo's model cards, whether each node's share fits in its memory less a
headroom, and for a model that does not fit, what is missing: over the whole fleet as one ring, and
for each ring the hosts form (exo_node_ring), what that ring serves. docs/fleet-report.md describes it
in words.
Every size below cites the file and line of exo e4238f9ef it comes from.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json

MIB = 1024 * 1024
EXO = "exo e4238f9ef"
HEADROOM = 0.10
HEADROOM_RANGE = (0.0, 0.9)

# exo's tinygrad engine's parameter sets (MODEL_PARAMS) and whether the output head is the embedding.
PARAMETER_SETS = {
    "1B": {"dim": 2048, "n_heads": 32, "n_kv_heads": 8, "n_layers": 16, "vocab_size": 128256, "hidden_dim": 8192,
           "tie_word_embeddings": True, "source": "exo/inference/tinygrad/inference.py:27-31"},
    "3B": {"dim": 3072, "n_heads": 24, "n_kv_heads": 8, "n_layers": 28, "vocab_size": 128256, "hidden_dim": 8192,
           "tie_word_embeddings": True, "source": "exo/inference/tinygrad/inference.py:32-36"},
    "8B": {"dim": 4096, "n_heads": 32, "n_kv_heads": 8, "n_layers": 32, "vocab_size": 128256, "hidden_dim": 14336,
           "tie_word_embeddings": False, "source": "exo/inference/tinygrad/inference.py:37"},
    "70B": {"dim": 8192, "n_heads": 64, "n_kv_heads": 8, "n_layers": 80, "vocab_size": 128256, "hidden_dim": 28672,
            "tie_word_embeddings": False, "source": "exo/inference/tinygrad/inference.py:38"},
}
# The engine picks the set from the model id; the first rule whose text is in the id wins.
PARAMETER_SET_RULES = (("1b", "1B"), ("3b", "3B"), ("8b", "8B"), ("", "70B"))
PARAMETER_SET_RULE_SOURCE = "exo/inference/tinygrad/inference.py:151"

# The model cards with a repository for the tinygrad engine: id, layers, repository, source.
MODELS = (
    ("llama-3.2-1b", 16, "unsloth/Llama-3.2-1B-Instruct", "exo/models.py:13-17"),
    ("llama-3.2-1b-8bit", 16, "unsloth/Llama-3.2-1B-Instruct", "exo/models.py:20-24"),
    ("llama-3.2-3b", 28, "unsloth/Llama-3.2-3B-Instruct", "exo/models.py:27-31"),
    ("llama-3.2-3b-8bit", 28, "unsloth/Llama-3.2-3B-Instruct", "exo/models.py:34-38"),
    ("llama-3.2-3b-bf16", 28, "unsloth/Llama-3.2-3B-Instruct", "exo/models.py:41-45"),
    ("llama-3.1-8b", 32, "mlabonne/Meta-Llama-3.1-8B-Instruct-abliterated", "exo/models.py:48-52"),
    ("llama-3-8b", 32, "TriAiExperiments/SFR-Iterative-DPO-LLaMA-3-8B-R", "exo/models.py:69-73"),
    ("llama-3.3-70b", 80, "unsloth/Llama-3.3-70B-Instruct", "exo/models.py:6-10"),
    ("llama-3.1-70b", 80, "NousResearch/Meta-Llama-3.1-70B-Instruct", "exo/models.py:55-59"),
    ("llama-3.1-70b-bf16", 80, "NousResearch/Meta-Llama-3.1-70B-Instruct", "exo/models.py:62-66"),
    ("llama-3-70b", 80, "TriAiExperiments/SFR-Iterative-DPO-LLaMA-3-70B-R", "exo/models.py:76-80"),
)
# The other model cards name only MLX's engine (or the dummy one): a tinygrad node cannot serve them.
OTHER_ENGINES_SOURCE = "exo/models.py:83-154"
OTHER_ENGINES = (
    "llama-3.1-405b", "llama-3.1-405b-8bit", "mistral-nemo", "mistral-large", "deepseek-coder-v2-lite",
    "deepseek-coder-v2.5", "deepseek-v3", "deepseek-v3-3bit", "deepseek-r1", "deepseek-r1-3bit",
    "deepseek-r1-distill-qwen-1.5b", "deepseek-r1-distill-qwen-1.5b-3bit", "deepseek-r1-distill-qwen-1.5b-6bit",
    "deepseek-r1-distill-qwen-1.5b-8bit", "deepseek-r1-distill-qwen-1.5b-bf16", "deepseek-r1-distill-qwen-7b",
    "deepseek-r1-distill-qwen-7b-3bit", "deepseek-r1-distill-qwen-7b-6bit", "deepseek-r1-distill-qwen-7b-8bit",
    "deepseek-r1-distill-qwen-7b-bf16", "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-14b-3bit",
    "deepseek-r1-distill-qwen-14b-6bit", "deepseek-r1-distill-qwen-14b-8bit", "deepseek-r1-distill-qwen-14b-bf16",
    "deepseek-r1-distill-qwen-32b", "deepseek-r1-distill-qwen-32b-3bit", "deepseek-r1-distill-qwen-32b-6bit",
    "deepseek-r1-distill-qwen-32b-8bit", "deepseek-r1-distill-qwen-32b-bf16", "deepseek-r1-distill-llama-8b",
    "deepseek-r1-distill-llama-8b-3bit", "deepseek-r1-distill-llama-8b-6bit", "deepseek-r1-distill-llama-8b-8bit",
    "deepseek-r1-distill-llama-8b-bf16", "deepseek-r1-distill-llama-70b", "deepseek-r1-distill-llama-70b-3bit",
    "deepseek-r1-distill-llama-70b-6bit", "deepseek-r1-distill-llama-70b-8bit", "llava-1.5-7b-hf", "qwen-2.5-0.5b",
    "qwen-2.5-1.5b", "qwen-2.5-coder-1.5b", "qwen-2.5-3b", "qwen-2.5-coder-3b", "qwen-2.5-7b", "qwen-2.5-coder-7b",
    "qwen-2.5-math-7b", "qwen-2.5-14b", "qwen-2.5-coder-14b", "qwen-2.5-32b", "qwen-2.5-coder-32b", "qwen-2.5-72b",
    "qwen-2.5-math-72b", "nemotron-70b", "nemotron-70b-bf16", "gemma2-9b", "gemma2-27b", "stable-diffusion-2-1-base",
    "phi-3.5-mini", "phi-4", "dummy",
)
# The repositories hold bfloat16; fix_bf16 casts to float16 on a GPU and to float32 on tinygrad's
# CPU backend (CLANG at exo's tinygrad), so a CPU node needs twice the bytes.
DTYPE_BYTES = {"gpu": 2, "cpu": 4}
DTYPE_SOURCE = "exo/inference/tinygrad/models/llama.py:316-325"
# Every node's KV cache spans exo's max_context, for each of the prompts the engine keeps.
MAX_CONTEXT = 8192
MAX_CONTEXT_SOURCE = "exo/inference/tinygrad/inference.py:45"
PROMPT_STATES = 2
PROMPT_STATES_SOURCE = "exo/inference/tinygrad/inference.py:72; exo/inference/tinygrad/stateful_model.py:6"

# Host states that keep a host out of the ring until someone acts, and what to tell them.
EXCLUSIONS = {
    "no_facts": "no device facts (unreachable, or the probe did not run)",
    "driver_needed": "needs an NVIDIA driver",
    "pending_reboot": "needs a reboot (NVML: Driver/library version mismatch)",
    "plan_errors": "the node planner refuses its settings",
}


def parameter_set(model_id):
    """The tinygrad engine's parameter set for a model id, by exo's own rule."""
    lowered = model_id.lower()
    return next(name for text, name in PARAMETER_SET_RULES if text in lowered)


def layer_parameters(p):
    """Parameters of one transformer block: attention, SwiGLU feed-forward, two norms."""
    head_dim = p["dim"] // p["n_heads"]
    attention = 2 * p["dim"] * p["n_heads"] * head_dim + 2 * p["dim"] * p["n_kv_heads"] * head_dim
    return attention + 3 * p["dim"] * p["hidden_dim"] + 2 * p["dim"]


def model_sizes():
    """The table of model sizes: one row per model a tinygrad node can serve, with sources."""
    rows = []
    for model_id, layers, repo, source in MODELS:
        name = parameter_set(model_id)
        p = PARAMETER_SETS[name]
        embedding = p["vocab_size"] * p["dim"]
        parameters = layers * layer_parameters(p) + embedding + p["dim"] + (0 if p["tie_word_embeddings"] else embedding)
        rows.append({
            "model": model_id, "repo": repo, "layers": layers, "parameter_set": name, "parameters": parameters,
            "layer_parameters": layer_parameters(p), "dtype_bytes": DTYPE_BYTES["gpu"],
            "dtype_bytes_cpu": DTYPE_BYTES["cpu"], "weights_mib": round(parameters * DTYPE_BYTES["gpu"] / MIB),
            "sources": {"layers": source, "repo": source, "parameter_set": PARAMETER_SET_RULE_SOURCE,
                        "parameters": p["source"], "dtype_bytes": DTYPE_SOURCE},
        })
    return rows


# ---- exo's partitioning -------------------------------------------------------------------------

def partition(nodes):
    """exo's ring: [(node_id, start, end)] from [(node_id, memory)], largest memory first.

    Shares are fractions of 1 rounded to 5 places at each step, as exo does.
    """
    ordered = sorted(nodes, key=lambda node: (node[1], node[0]), reverse=True)
    total = sum(node[1] for node in ordered)
    partitions, start = [], 0
    for node_id, memory in ordered:
        end = round(start + memory / total, 5)
        partitions.append((node_id, start, end))
        start = end
    return partitions


def _layers(i, count, start, end, n_layers):
    """The layers exo computes for partition i of count: (first, last), empty when first > last."""
    return int(start * n_layers), (n_layers - 1 if i == count - 1 else int(end * n_layers) - 1)


def shards(partitions, n_layers):
    """exo's layer ranges [(start_layer, end_layer)] for partitions; empty ones are dropped."""
    ranges = [_layers(i, len(partitions), start, end, n_layers) for i, (_node_id, start, end) in enumerate(partitions)]
    ranges = [(first, last) for first, last in ranges if first <= last]
    if ranges and ranges[-1][1] < n_layers - 1:
        ranges[-1] = (ranges[-1][0], n_layers - 1)
    return ranges


def assignment(nodes, n_layers):
    """[(node_id, own, taken)] in ring order: the layers exo computes for a node, and those it takes.

    exo drops an empty shard and still indexes the list by the node's position in the ring, so
    after a node too small for one layer each later node takes the next one's layers and the last
    takes none (None).
    """
    parts = partition(nodes)
    ranges = shards(parts, n_layers)
    rows = []
    for i, (node_id, start, end) in enumerate(parts):
        first, last = _layers(i, len(parts), start, end, n_layers)
        rows.append((node_id, (first, last) if first <= last else None, ranges[i] if i < len(ranges) else None))
    return rows


# ---- what a node needs ----------------------------------------------------------------------------

def share_bytes(p, n_layers_held, is_first, is_last, dtype_bytes, states=PROMPT_STATES):
    """Bytes a node needs for n_layers_held layers of parameter set p (every layer of a set is the same size), with
    the KV caches of states requests."""
    head_dim = p["dim"] // p["n_heads"]
    embedding = p["vocab_size"] * p["dim"]
    parameters = n_layers_held * layer_parameters(p)
    if is_first:
        parameters += embedding
    if is_last and not (is_first and p["tie_word_embeddings"]):
        parameters += embedding
    if is_last:
        parameters += p["dim"]
    kv_cache = n_layers_held * states * 2 * MAX_CONTEXT * p["n_kv_heads"] * head_dim
    return (parameters + kv_cache) * dtype_bytes


def _mib(value):
    return int(round(value / MIB))


def serve(model, nodes, headroom=HEADROOM, states=PROMPT_STATES):
    """Whether exo's ring over nodes serves model (a row of model_sizes()), each node keeping the KV caches of
    states requests.

    nodes: [{"node_id", "memory_mib", "dtype_bytes", ...}]; the other keys are kept in the shares.
    """
    p = PARAMETER_SETS[model["parameter_set"]]
    layers = model["layers"]
    by_id = dict((n["node_id"], n) for n in nodes)
    shares, tight, empty, unassigned = [], [], [], []
    for node_id, own, held in assignment([(n["node_id"], n["memory_mib"]) for n in nodes], layers):
        node = by_id[node_id]
        usable = int(node["memory_mib"] * (1 - headroom))
        share = dict(node, usable_mib=usable, start_layer=None, end_layer=None, layers=0, need_mib=0, fits=False)
        if own is None:
            empty.append(node_id)
        if held is None:
            unassigned.append(node_id)
        else:
            first, last = held
            need = _mib(share_bytes(p, last - first + 1, first == 0, last == layers - 1, node["dtype_bytes"], states))
            share.update(start_layer=first, end_layer=last, layers=last - first + 1, need_mib=need,
                         fits=need <= usable)
            if not share["fits"]:
                tight.append(node_id)
        shares.append(share)
    need = sum(s["need_mib"] for s in shares)
    short = sum(max(0, s["need_mib"] - s["usable_mib"]) for s in shares if s["start_layer"] is not None)
    fits = bool(nodes) and not tight and not empty
    return {
        "model": model["model"], "parameter_set": model["parameter_set"], "layers": layers,
        "parameters": model["parameters"], "weights_mib": model["weights_mib"], "serves": fits,
        "need_mib": need, "usable_mib": sum(s["usable_mib"] for s in shares), "short_mib": short,
        "tight": tight, "empty": empty, "unassigned": unassigned, "shares": shares,
    }


def exo_order(nodes):
    """The nodes in exo's ring order: memory, then node id, descending."""
    return sorted(nodes, key=lambda n: (n["memory_mib"], n["node_id"]), reverse=True)


def fewest_nodes(model, ordered, headroom=HEADROOM):
    """The smallest ring of the fleet's largest nodes that serves model: its serve() verdict, or None.

    ordered: the nodes in exo's order. Each ring tried is the first n of them, n = 1, 2, ... A ring
    of more nodes than the model has layers always leaves a node without a layer, so no more are
    tried: the search costs at most `layers` verdicts whatever the size of the fleet.
    """
    for count in range(1, min(len(ordered), model["layers"]) + 1):
        verdict = serve(model, ordered[:count], headroom)
        if verdict["serves"]:
            return verdict
    return None


# ---- the fleet ------------------------------------------------------------------------------------

def _gpu_row(gpu):
    flops = gpu.get("flops") or {}
    row = {"index": gpu.get("index"), "name": gpu.get("name"), "chip": gpu.get("chip"),
           "memory_mib": gpu.get("memory_mib"), "uuid": gpu.get("uuid"), "pci_bus_id": gpu.get("pci_bus_id"),
           "fp16_tflops": flops.get("fp16"), "fp32_tflops": flops.get("fp32"), "flops_source": flops.get("source"),
           "mig": bool((gpu.get("mig") or {}).get("enabled"))}
    health = gpu.get("health")
    if isinstance(health, dict):  # published by newer probes: a verdict and its reasons
        row["health"] = health.get("verdict")
        row["health_reasons"] = _texts(health.get("reasons"))
    row.update(_watcher_columns(gpu.get("watcher")))
    return row


def _watcher_columns(watcher):
    """What the GPU health watcher said of the GPU (device_facts' gpus[].watcher, docs/health.md):
    serving or drained, why and since when; nothing where it does not watch the GPU."""
    if not isinstance(watcher, dict):
        return {}
    since = watcher.get("since")
    when = (datetime.datetime.fromtimestamp(since, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if isinstance(since, (int, float)) and not isinstance(since, bool) else None)
    return {"watcher": "drained" if watcher.get("drained") is True else "serving",
            "watcher_reason": _texts(watcher.get("reason")), "watcher_since": when}


def _texts(values):
    """What a host published as a list of reasons, as text: a broken probe or host may give anything."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    if not isinstance(values, (list, tuple)):
        values = [values]
    return [value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            for value in values if value is not None]


def _exclusion(facts, plan):
    """(key, detail) when the host stays out of the ring, else None."""
    if not facts:
        return "no_facts", None
    if (facts.get("nvml") or {}).get("status") == "version_mismatch":
        return "pending_reboot", (facts["nvml"].get("message") or None)
    if facts.get("driver_needed"):
        return "driver_needed", facts.get("driver_reason")
    if plan["errors"]:
        return "plan_errors", "; ".join(plan["errors"])
    return None


def host_row(host, facts, plan, ring=""):
    """The report's view of a host: its hardware, its state, its ring and its instances."""
    facts = facts or {}
    nvml = facts.get("nvml") or {}
    exo = facts.get("exo") or {}
    excluded = _exclusion(facts, plan)
    gpus = [_gpu_row(g) for g in facts.get("gpus") or []]
    row = {
        "host": host,
        "ring": ring,
        "backend": facts.get("backend"),
        "fallback_reason": facts.get("fallback_reason"),
        "nvml_status": nvml.get("status"),
        "driver_version": nvml.get("driver_version"),
        "driver_needed": facts.get("driver_needed"),
        "driver_reason": facts.get("driver_reason"),
        "pending_reboot": nvml.get("status") == "version_mismatch",
        "memory_mib": (facts.get("host") or {}).get("memory_mib"),
        "exo_chip": exo.get("chip"),
        "exo_memory_mib": exo.get("memory"),
        "gpus": gpus,
        "gpu_memory_mib": sum(g["memory_mib"] or 0 for g in gpus),
        "errors": len(facts.get("errors") or []),
        "excluded": excluded[0] if excluded else None,
        "excluded_reason": (EXCLUSIONS[excluded[0]] + (": %s" % excluded[1] if excluded[1] else "")) if excluded else None,
        "instances": [],
    }
    if not excluded:
        row["instances"] = [node(host, instance, facts.get("backend") == "cpu") for instance in plan["instances"]]
    return row


def node(host, instance, cpu_backend=False):
    """A node of the ring from an instance the node planner gives (or the role published as exo_node_instances).

    cpu_backend: the host's GPU instances run on the CPU backend all the same (the probe's backend).
    """
    kind = "cpu" if instance["kind"] == "cpu" or cpu_backend else "gpu"
    label = "CPU" if instance["kind"] == "cpu" else "GPU %s%s" % (
        instance["gpu_index"], " MIG %s" % instance["name"][4:12] if instance["kind"] == "mig" else "")
    return {"host": host, "node_id": instance["node_id"], "instance": instance["name"], "kind": instance["kind"],
            "label": label, "chip": instance["capabilities"]["chip"], "memory_mib": int(instance["capabilities"]["memory"]),
            "dtype_bytes": DTYPE_BYTES[kind]}


def ring(model_id, members, headroom=HEADROOM):
    """Whether a ring of instances holds a model, before anyone asks it for a completion.

    members: {host: the instances the node role published there (exo_node_instances)}. Returns serve()'s
    verdict with "missing" (what each tight node lacks), "summary" (each instance's share) and "why" (both
    in one sentence), or None for a model the table does not size
    (another engine's, or not a card of exo's): nothing can be said of it.
    """
    model = next((m for m in model_sizes() if m["model"] == model_id), None)
    if model is None:
        return None
    nodes = [node(host, instance) for host, instances in sorted(members.items()) for instance in instances or []]
    verdict = serve(model, nodes, check_headroom(headroom), ring_states(members))
    verdict["missing"] = _missing(verdict, [], None)
    verdict["summary"] = ["%s: %s, %d MiB needed of %d MiB usable%s" % (
        s["node_id"], "layers %d-%d" % (s["start_layer"], s["end_layer"]) if s["start_layer"] is not None else "no layer",
        s["need_mib"], s["usable_mib"], "" if s["fits"] else " (%d MiB short)" % (s["need_mib"] - s["usable_mib"]))
        for s in verdict["shares"]]
    verdict["why"] = "; ".join(verdict["missing"] + ["each instance: " + "; ".join(verdict["summary"])])
    return verdict


def ring_requests(members):
    """What a ring computes at once: the sum of its instances' requests_in_flight (each instance's API is an entry
    that admits as many), an instance published without one counting as 1."""
    return sum(instance.get("requests_in_flight", 1) for instances in members.values() for instance in instances or [])


def ring_states(members):
    """The KV caches each member keeps: one per request the ring computes at once, never fewer than exo's own
    (the node role's patch of exo keeps them so, roles/node/files/gpufleet_exo_patches.py)."""
    return max(PROMPT_STATES, ring_requests(members))


def check_headroom(headroom):
    """The headroom as a float, or ValueError with a message for the user."""
    try:
        value = float(headroom)
    except (TypeError, ValueError):
        raise ValueError("the headroom is %r; give a fraction of each node's memory, such as 0.1" % (headroom,))
    if isinstance(headroom, bool) or not HEADROOM_RANGE[0] <= value <= HEADROOM_RANGE[1]:
        raise ValueError("the headroom is %r; it must be a fraction from %s to %s" % ((headroom,) + HEADROOM_RANGE))
    return value


def fleet(hosts, headroom=HEADROOM):
    """What the fleet can serve, as one ring and ring by ring.

    hosts: [{"host", "facts" (device_capabilities or None), "plan" (node/plan.py instances()' result),
    "ring" (its exo_node_ring; absent or "" for the unnamed ring of the play's hosts)}].
    Returns {"headroom", "hosts", "nodes", "models", "largest", "excluded", "rings", "other_engines", "sources"}.
    """
    headroom = check_headroom(headroom)
    rows = [host_row(h["host"], h["facts"], h["plan"], h.get("ring") or "") for h in hosts]
    nodes = [i for row in rows for i in row["instances"]]
    excluded = [{"host": r["host"], "reason": r["excluded"], "detail": r["excluded_reason"],
                 "gpu_memory_mib": r["gpu_memory_mib"]} for r in rows if r["excluded"]]
    ring = exo_order(nodes)
    sizes = model_sizes()
    models = []
    for model in sizes:
        verdict = serve(model, nodes, headroom)
        smallest = fewest_nodes(model, ring, headroom)
        verdict["fewest_nodes"] = len(smallest["shares"]) if smallest else None
        verdict["missing"] = _missing(verdict, excluded, smallest)
        models.append(verdict)
    return {
        "exo": EXO,
        "headroom": headroom,
        "hosts": rows,
        "nodes": [dict(n, order=i) for i, n in enumerate(ring)],
        "models": models,
        "largest": _largest(models),
        "excluded": excluded,
        "rings": [ring_row(name, members, sizes, headroom) for name, members in sorted(_by_ring(rows).items())],
        "other_engines": list(OTHER_ENGINES),
        "sources": {"models": "exo/models.py", "other_engines": OTHER_ENGINES_SOURCE, "dtype_bytes": DTYPE_SOURCE,
                    "max_context": MAX_CONTEXT_SOURCE, "prompt_states": PROMPT_STATES_SOURCE,
                    "parameter_set": PARAMETER_SET_RULE_SOURCE,
                    "partitioning": "exo/topology/ring_memory_weighted_partitioning_strategy.py; "
                                    "exo/topology/partitioning_strategy.py"},
    }


def _largest(verdicts):
    """The largest model (by parameters, then id) that the verdicts say is served, or None."""
    served = [v for v in verdicts if v["serves"]]
    return max(served, key=lambda v: (v["parameters"], v["model"]))["model"] if served else None


def _by_ring(rows):
    """{ring: its host rows, in the fleet's order}, in one pass over the fleet."""
    rings = {}
    for row in rows:
        rings.setdefault(row["ring"], []).append(row)
    return rings


def ring_row(name, rows, sizes, headroom=HEADROOM):
    """What one ring serves: exo runs a ring per exo_node_ring over its own hosts' nodes alone, so a model is
    served there only when that ring's nodes hold it, whatever the rest of the fleet has. The same serve() as
    the whole fleet's verdicts, so the two views cannot disagree on one ring's arithmetic.

    rows: the ring's host rows (host_row()); sizes: model_sizes().
    """
    nodes = [i for row in rows for i in row["instances"]]
    served = [v for v in (serve(model, nodes, headroom) for model in sizes) if v["serves"]]
    return {"ring": name, "hosts": [r["host"] for r in rows], "nodes": len(nodes),
            "memory_mib": sum(n["memory_mib"] for n in nodes), "models": [v["model"] for v in served],
            "largest": _largest(served), "excluded": [r["host"] for r in rows if r["excluded"]]}


def _missing(verdict, excluded, smallest):
    """Sentences saying what keeps a model from being served, and the ring of fewer nodes that would; empty
    when it is served."""
    if verdict["serves"]:
        return []
    missing = []
    if smallest:
        missing.append("serves on a ring of the fleet's %d largest node(s): %s" % (
            len(smallest["shares"]), _some("%s %s" % (s["host"], s["label"]) for s in smallest["shares"])))
    if not verdict["shares"]:
        missing.append("no node can run exo: every host is excluded or has no instance")
    if verdict["short_mib"]:
        missing.append("%d MiB short on %d node(s)" % (verdict["short_mib"], len(verdict["tight"])))
    tight = [s for s in verdict["shares"] if s["start_layer"] is not None and not s["fits"]]
    for share in tight[:5]:
        missing.append("%s %s: layers %d-%d need %d MiB, %d MiB usable" % (
            share["host"], share["label"], share["start_layer"], share["end_layer"], share["need_mib"],
            share["usable_mib"]))
    if len(tight) > 5:
        missing.append("and %d more tight nodes (the JSON file lists every share)" % (len(tight) - 5))
    if verdict["empty"]:
        names = dict((s["node_id"], "%s %s" % (s["host"], s["label"])) for s in verdict["shares"])
        missing.append("%d of %d nodes get no layer of their own (%s): exo drops their empty shards and hands out the "
                       "rest by ring position, so %d node(s) at the end of the ring run nothing and the ring breaks "
                       "(exo/orchestration/node.py:463-468)" % (
                           len(verdict["empty"]), len(verdict["shares"]), _some(names[n] for n in verdict["empty"]),
                           len(verdict["unassigned"])))
    if excluded:
        missing.append("left out of the ring: %s" % _some(
            "%s (%s)" % (host["host"], host["reason"].replace("_", " ")) for host in excluded))
    return missing


def _some(names, most=5):
    """A list for a sentence: the first few names, and how many more."""
    names = list(names)
    return ", ".join(names[:most]) + (" and %d more" % (len(names) - most) if len(names) > most else "")
