# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stream chat completions at temperature 0 from exo's OpenAI-compatible API with the openai package, as an
operator's clients would: openai_chat.py BASE_URL MODEL PROMPT [PROMPT...].

One prompt: prints one line of JSON, the request id, the streamed pieces, the finish reason, the seconds to the
first piece and in all, or the error the client raised (with its HTTP status and Retry-After where the API
answered one), and when it started and ended (Unix time); exits 1 on an error. Several: one client each, started
0.2 s apart in the order given, all at once; prints the list of their lines' objects, in that order.
"""
import json
import sys
import threading
import time

from openai import OpenAI


def ask(base_url, model, prompt):
    client = OpenAI(base_url=base_url, api_key="exo-asks-for-none", timeout=900, max_retries=0)
    started = time.monotonic()
    result = {"id": None, "chunks": [], "finish_reason": None, "first_token_s": None, "started_at": time.time()}
    try:
        stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                                temperature=0, stream=True)
        for chunk in stream:
            result["id"] = result["id"] or chunk.id
            for choice in chunk.choices:
                if choice.delta is not None and choice.delta.content:
                    if result["first_token_s"] is None:
                        result["first_token_s"] = round(time.monotonic() - started, 2)
                        result["first_token_at"] = time.time()
                    result["chunks"].append(choice.delta.content)
                result["finish_reason"] = choice.finish_reason or result["finish_reason"]
    except Exception as problem:  # what the client raised is the answer when an instance dies or refuses
        # An HTTP error's message is its status alone: exo's reason is in the body.
        body = getattr(problem, "body", None)
        result["error"] = "%s: %s%s" % (type(problem).__name__, problem, " %s" % json.dumps(body) if body else "")
        result["status"] = getattr(problem, "status_code", None)
        response = getattr(problem, "response", None)
        result["retry_after"] = response.headers.get("retry-after") if response is not None else None
    result["total_s"] = round(time.monotonic() - started, 2)
    result["ended_at"] = time.time()
    return result


def main(base_url, model, prompts):
    if len(prompts) == 1:
        result = ask(base_url, model, prompts[0])
        print(json.dumps(result, sort_keys=True))
        return 1 if "error" in result else 0
    results = [None] * len(prompts)

    def client(number):
        results[number] = ask(base_url, model, prompts[number])

    threads = [threading.Thread(target=client, args=(number,)) for number in range(len(prompts))]
    for thread in threads:
        thread.start()
        time.sleep(0.2)
    for thread in threads:
        thread.join()
    print(json.dumps(results, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
