#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: chat_completion
short_description: Send one streamed chat completion to an exo instance and time it
version_added: 1.0.0
description:
  - Sends one chat completion, streamed, to the exo instance listening on O(port) of
    127.0.0.1 (C(POST /v1/chat/completions)), reads the stream to its end and returns the text,
    the time to the first token and the tokens per second after it.
  - exo runs the request through its whole ring, so one instance answers for the ring.
  - Fails with what exo answered when it refuses the request, or when the stream breaks.
  - Changes nothing on the host, but runs the model (seconds to minutes).
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  port:
    description: The instance's API port.
    type: int
    default: 52415
  model:
    description: An exo model id the ring serves.
    type: str
    required: true
  prompt:
    description: The user's message.
    type: str
    default: Say hello.
  temperature:
    description: Sampling temperature; 0 gives the same tokens every time.
    type: float
    default: 0.0
  timeout:
    description: Seconds to wait for the whole answer.
    type: float
    default: 900
attributes:
  check_mode:
    support: none
    description: It would run the model; in check mode it is skipped.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
"""

EXAMPLES = r"""
- name: Ask the ring of this host's first instance for a few words
  gpufleet.exo.chat_completion:
    port: "{{ ansible_facts['exo_node_instances'][0].ports.api }}"
    model: llama-3.2-1b
    prompt: Hi.
  register: answer
"""

RETURN = r"""
id:
  description: exo's request id (C(chatcmpl-...)).
  returned: success
  type: str
text:
  description: The answer.
  returned: success
  type: str
chunks:
  description: The streamed pieces of the answer, one per token as exo sends them.
  returned: success
  type: list
  elements: str
finish_reason:
  description: Why exo stopped (C(stop), C(length)).
  returned: success
  type: str
first_token_s:
  description: Seconds from the request to the first token.
  returned: success
  type: float
total_s:
  description: Seconds from the request to the end of the stream.
  returned: success
  type: float
tokens_per_s:
  description: Chunks after the first per second, from the first to the last.
  returned: success
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_api import ApiError, chat


def main():
    module = AnsibleModule(
        argument_spec=dict(port=dict(type="int", default=52415), model=dict(type="str", required=True),
                           prompt=dict(type="str", default="Say hello."), temperature=dict(type="float", default=0.0),
                           timeout=dict(type="float", default=900)))
    params = module.params
    try:
        result = chat(params["port"], params["model"], params["prompt"], params["temperature"], params["timeout"])
    except ApiError as problem:
        module.fail_json(msg=str(problem))
    if not result["chunks"]:
        module.fail_json(msg="exo on port %d streamed no token for %s (finish reason %s)"
                             % (params["port"], params["model"], result["finish_reason"]), **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
