# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stream one chat completion at temperature 0 from exo's OpenAI-compatible API with the openai
package, as an operator's client would: openai_chat.py BASE_URL MODEL PROMPT.

Prints one line of JSON: the request id, the streamed pieces, the finish reason, the seconds to the
first piece and in all, or the error the client raised, and when it ended (Unix time).
"""
import json
import sys
import time

from openai import OpenAI

base_url, model, prompt = sys.argv[1:4]
client = OpenAI(base_url=base_url, api_key="exo-asks-for-none", timeout=900, max_retries=0)
started = time.monotonic()
result = {"id": None, "chunks": [], "finish_reason": None, "first_token_s": None}
try:
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                            temperature=0, stream=True)
    for chunk in stream:
        result["id"] = result["id"] or chunk.id
        for choice in chunk.choices:
            if choice.delta is not None and choice.delta.content:
                if result["first_token_s"] is None:
                    result["first_token_s"] = round(time.monotonic() - started, 2)
                result["chunks"].append(choice.delta.content)
            result["finish_reason"] = choice.finish_reason or result["finish_reason"]
except Exception as problem:  # what the client raised is the answer when an instance dies
    # An HTTP error's message is its status alone: exo's reason is in the body.
    body = getattr(problem, "body", None)
    result["error"] = "%s: %s%s" % (type(problem).__name__, problem, " %s" % json.dumps(body) if body else "")
result["total_s"] = round(time.monotonic() - started, 2)
result["ended_at"] = time.time()
print(json.dumps(result, sort_keys=True))
sys.exit(1 if "error" in result else 0)
