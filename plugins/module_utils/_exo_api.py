# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""exo's HTTP API as the modules ring_ready and chat_completion ask it, on the host itself.

The instances' API is confined to the host and the operator's clients (the node role's firewall),
so these modules run on the host and talk to 127.0.0.1. exo e4238f9ef's routes: GET /v1/topology
({"nodes": {node_id: capabilities}, "peer_graph", "active_node_id"}) and POST /v1/chat/completions
with "stream": true (server-sent events, "data: {chunk}" lines, the last with its finish_reason).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import time

from ansible.module_utils.urls import open_url
from ansible.module_utils.six.moves.urllib.error import HTTPError


class ApiError(Exception):
    """exo did not answer, or answered with an error; the message says which and what it said."""


def _url(port, path):
    return "http://127.0.0.1:%d%s" % (port, path)


def topology(port, timeout=10):
    """The node ids of exo's /v1/topology on port (sorted)."""
    try:
        answer = json.loads(open_url(_url(port, "/v1/topology"), timeout=timeout).read())
    except (HTTPError, IOError, ValueError) as problem:
        raise ApiError("the API on port %d did not answer /v1/topology: %s" % (port, problem))
    return sorted((answer or {}).get("nodes") or {})


def wait_for_ring(ports, members, deadline, delay=2.0, clock=time.monotonic, sleep=time.sleep):
    """Wait until every port's topology lists every member; (instances, waited seconds).

    instances: [{"port", "nodes", "missing", "error"}] as last seen; a port is ready when missing
    and error are empty. Returns when all are ready or the deadline (seconds) has passed.
    """
    started = clock()
    while True:
        instances = []
        for port in ports:
            try:
                nodes, error = topology(port), None
            except ApiError as problem:
                nodes, error = [], str(problem)
            instances.append({"port": port, "nodes": nodes, "error": error,
                              "missing": sorted(set(members) - set(nodes))})
        waited = clock() - started
        if all(not i["missing"] and not i["error"] for i in instances) or waited >= deadline:
            return instances, round(waited, 1)
        sleep(min(delay, max(0.0, deadline - waited)))


def chat(port, model, prompt, temperature, timeout, clock=time.monotonic):
    """One streamed chat completion: {"id", "text", "chunks", "finish_reason", "first_token_s", "total_s",
    "tokens_per_s"}; tokens_per_s counts the chunks after the first, one per token as exo streams them."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "temperature": temperature, "stream": True}).encode("utf-8")
    started = clock()
    try:
        response = open_url(_url(port, "/v1/chat/completions"), data=body, method="POST", timeout=timeout,
                            headers={"Content-Type": "application/json"})
    except HTTPError as problem:
        raise ApiError("exo answered HTTP %d: %s" % (problem.code, problem.read().decode("utf-8", "replace")[:2000]))
    except IOError as problem:
        raise ApiError("the API on port %d did not answer: %s" % (port, problem))
    result = {"id": None, "text": "", "chunks": [], "finish_reason": None, "first_token_s": None}
    first = None
    try:
        for raw in response:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data:"):])
            if "error" in chunk:  # the node role's patch of exo ends an answer whose ring broke so
                raise ApiError("exo ended the answer from port %d after %d chunks: %s"
                               % (port, len(result["chunks"]), (chunk["error"] or {}).get("message")))
            result["id"] = result["id"] or chunk.get("id")
            for choice in chunk.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    first = first if first is not None else clock()
                    result["chunks"].append(text)
                result["finish_reason"] = choice.get("finish_reason") or result["finish_reason"]
    except (IOError, ValueError) as problem:
        raise ApiError("the stream from port %d broke after %d chunks: %s" % (port, len(result["chunks"]), problem))
    if result["finish_reason"] is None:  # exo's last chunk has one: the instance went away mid-answer
        raise ApiError("the stream from port %d ended after %d chunks without a finish reason"
                       % (port, len(result["chunks"])))
    end = clock()
    result["text"] = "".join(result["chunks"])
    result["total_s"] = round(end - started, 2)
    if first is not None:
        result["first_token_s"] = round(first - started, 2)
        later = len(result["chunks"]) - 1
        result["tokens_per_s"] = round(later / (end - first), 3) if later > 0 and end > first else None
    else:
        result["tokens_per_s"] = None
    return result
