# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node role's patches of exo cost one request, and what each request in flight costs an instance.

    make bench-requests
    .venv/bin/python benchmarks/requests.py [--rounds 1] [--in-flight 1,2,4] [--max-generate-tokens 6]
        [--json FILE]

Real exo e4238f9ef on the synthetic BF16 llama-3.2-1b, one CPU instance, as benchmarks/inference.py runs it
(its wheelhouse, venv, model store and placement). Two parts:

1. The fix's cost: a fresh instance of exo as it ships and one with the collection's patches
   (roles/node/files/gpufleet_exo_patches.py, installed before exo starts as the node's .pth file installs
   them), interleaved, each asked one completion: its first token and tokens per second. A fresh process's
   first request is the one exo as it ships answers right, so the two answer alike; the patches change
   which buffers the decode JIT reads, nothing else.
2. Requests in flight: for each N of --in-flight, a fresh patched instance whose API admits N at once
   (GPUFLEET_EXO_REQUESTS_IN_FLIGHT), one completion to load the model, then N clients at once with the same
   prompt: the peak resident memory (VmHWM) after them, each one's time to first token, and whether each
   answer is the one the prompt gets alone. Prints the memory each request in flight adds over N=1.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inference  # noqa: E402  benchmarks/inference.py: the wheelhouse, venv, store, placement and instances

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api  # noqa: E402

FILES = os.path.join(REPO, "roles", "node", "files")
# exo with the patches installed first, as the .pth file of the node's virtualenv installs them.
PATCHED = ("import sys; sys.path.insert(0, %r); import gpufleet_exo_patches; gpufleet_exo_patches.install(); "
           "from exo.main import run; run()" % FILES)


def launcher(venv, patched):
    return [os.path.join(venv, "bin", "python"), "-c", PATCHED] if patched else None


def fix_cost(venv, store, work, options, patched):
    """One fresh instance and one completion: {"first_token_s", "tokens_per_s", "text"}."""
    instances = inference.Instances(venv, store, work, "patched" if patched else "as-is", 1, options,
                                    launcher=launcher(venv, patched))
    try:
        instances.wait(options.ready_deadline)
        try:
            answer = exo_api.chat(instances.api[0], inference.MODEL, options.prompt, 0, options.timeout)
        except exo_api.ApiError as problem:
            raise instances.failure(str(problem))
        return {"first_token_s": answer["first_token_s"], "tokens_per_s": answer["tokens_per_s"], "text": answer["text"]}
    finally:
        instances.stop()


def in_flight(venv, store, work, options, count):
    """A patched instance admitting count at once: {"peak_gb", "first_tokens_s", "same", "alone"}."""
    env = {"CLANG": "1", "GPUFLEET_EXO_REQUESTS_IN_FLIGHT": str(count), "GPUFLEET_EXO_REQUEST_QUEUE": "0"}
    instances = inference.Instances(venv, store, work, "in-flight-%d" % count, 1, options, backend_env=env,
                                    launcher=launcher(venv, True))
    try:
        instances.wait(options.ready_deadline)
        alone = exo_api.chat(instances.api[0], inference.MODEL, options.prompt, 0, options.timeout)
        answers = [None] * count

        def client(number):
            try:
                answers[number] = exo_api.chat(instances.api[0], inference.MODEL, options.prompt, 0, options.timeout)
            except exo_api.ApiError as problem:
                answers[number] = {"error": str(problem)}

        threads = [threading.Thread(target=client, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failed = [a["error"] for a in answers if "error" in a]
        if failed:
            raise instances.failure("; ".join(failed))
        return {"peak_gb": instances.peak_rss_gb()[0], "first_tokens_s": [a["first_token_s"] for a in answers],
                "same": all(a["chunks"] == alone["chunks"] for a in answers), "alone": alone["text"]}
    finally:
        instances.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--in-flight", default="1,2,4", help="the numbers of requests at once (default 1,2,4)")
    parser.add_argument("--max-generate-tokens", type=int, default=6, help="exo's own limit (default 6)")
    parser.add_argument("--prompt", default="Say hello.")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--ready-deadline", type=int, default=300)
    parser.add_argument("--json", help="write every sample to this file")
    options = parser.parse_args()
    counts = [int(n) for n in options.in_flight.split(",") if n.strip()]
    if options.rounds < 1 or not counts or min(counts) < 1:
        parser.error("--rounds and each --in-flight must be at least 1")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by signal %d" % signum))
    venv = inference.exo_venv(inference.wheelhouse(None), inference.python312(None))
    store = inference.model_store(None)
    samples = {"as-is": [], "patched": [], "in_flight": {}}
    work = tempfile.mkdtemp(prefix="requests-bench-")
    try:
        for round_ in range(options.rounds):
            for patched in ((False, True) if round_ % 2 == 0 else (True, False)):
                name = "patched" if patched else "as-is"
                sample = fix_cost(venv, store, os.path.join(work, "%s-%d" % (name, round_)), options, patched)
                samples[name].append(sample)
                print("round %d, %-8s first token %6.1f s  %s tokens/s  %r" % (
                    round_ + 1, name, sample["first_token_s"] or 0, inference.show(sample["tokens_per_s"], 3).strip(),
                    sample["text"]), flush=True)
        for count in counts:
            sample = in_flight(venv, store, os.path.join(work, "in-flight-%d" % count), options, count)
            samples["in_flight"][count] = sample
            print("%d in flight: peak %.2f GB, first tokens %s s, each the answer alone: %s" % (
                count, sample["peak_gb"], sample["first_tokens_s"], sample["same"]), flush=True)
            if options.json:
                with open(options.json, "w") as handle:
                    json.dump(samples, handle, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("%-22s %10s %10s %8s   (medians of %d round(s); %s, prompt %r)" % (
        "", "as-is", "patched", "ratio", options.rounds, inference.MODEL, options.prompt))
    for key, label in (("first_token_s", "first token, s"), ("tokens_per_s", "tokens/s after it")):
        before = statistics.median(s[key] for s in samples["as-is"] if s[key] is not None)
        after = statistics.median(s[key] for s in samples["patched"] if s[key] is not None)
        print("%-22s %10.2f %10.2f %8.2f" % (label, before, after, after / before))
    base = samples["in_flight"].get(1, {}).get("peak_gb")
    for count, sample in sorted(samples["in_flight"].items()):
        extra = (sample["peak_gb"] - base) / (count - 1) if base is not None and count > 1 else None
        more = "" if extra is None else ", %.2f GB more per request in flight than 1" % extra
        print("%d in flight: peak %.2f GB%s" % (count, sample["peak_gb"], more))


if __name__ == "__main__":
    main()
