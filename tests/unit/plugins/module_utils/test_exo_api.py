# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_exo_api.py's chat() against a local server that streams as exo does: an answer that
ends with its finish reason, one the node role's patch of exo ends because the ring broke, and one whose
instance went away mid-answer."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_api as exo_api


def chunk(text=None, finish_reason=None):
    return {"id": "chatcmpl-1", "choices": [{"delta": {"content": text} if text else {}, "finish_reason": finish_reason}]}


RING_BROKEN = {"error": {"type": "ring_broken", "message": "the request ended: ring member b left the ring"}}


def serve(events):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in events:
                self.wfile.write(("data: %s\n\n" % json.dumps(event)).encode())

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.handle_request, daemon=True).start()
    return server


@pytest.mark.parametrize("events, expected", [
    ([chunk("Hel"), chunk("lo"), chunk(finish_reason="stop")], {"text": "Hello", "finish_reason": "stop"}),
    ([chunk("Hel"), RING_BROKEN],
     "exo ended the answer from port {port} after 1 chunks: the request ended: ring member b left the ring"),
    ([chunk("Hel"), chunk("lo")], "the stream from port {port} ended after 2 chunks without a finish reason"),
])
def test_chat_reads_an_answer_to_its_end(events, expected):
    server = serve(events)
    port = server.server_address[1]
    try:
        if isinstance(expected, dict):
            answer = exo_api.chat(port, "llama-3.2-1b", "hello", 0, 10)
            assert {k: answer[k] for k in expected} == expected
        else:
            with pytest.raises(exo_api.ApiError) as raised:
                exo_api.chat(port, "llama-3.2-1b", "hello", 0, 10)
            assert str(raised.value) == expected.format(port=port)
    finally:
        server.server_close()
