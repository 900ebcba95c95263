#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_ring_key
short_description: Make a host's WireGuard key for the ring's tunnel once, and answer its public key
version_added: 1.0.0
description:
  - Where O(path) does not exist, makes the private key with C(wg genkey) into it, under umask C(077)
    (the file, and its directory where missing, root's alone from the start); an existing key is kept.
  - Answers the public key (C(wg pubkey)). The private key is never returned, logged or shown.
  - The node role's ring tunnel (docs/node.md, "The ring's tunnel") publishes the answer to the ring's hosts.
author:
  - gpufleet.exo contributors (@gpufleet)
requirements:
  - C(wg) (wireguard-tools) on the host, but in check mode.
options:
  path:
    description: The private key's file.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Makes no key; answers the public key of one that exists (empty where none does, or C(wg) is missing).
  diff_mode:
    support: none
    description: A key is a secret; nothing is shown.
"""

EXAMPLES = r"""
- name: Make this host's ring key, once
  gpufleet.exo.exo_ring_key:
    path: /etc/exo/ring/private.key
  register: ring_key

- name: Say the public key, which the ring's other hosts need
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }}: {{ ring_key.public_key }}"
"""

RETURN = r"""
public_key:
  description: The public key, base64 as C(wg) writes it; empty in check mode where there is no key yet.
  returned: always
  type: str
  sample: xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._ring_key import KeyFailed, ring_key


def main():
    module = AnsibleModule(argument_spec=dict(path=dict(type="path", required=True)), supports_check_mode=True)
    wg = module.get_bin_path("wg", required=not module.check_mode)
    try:
        result = ring_key(module.params["path"], wg, module.run_command, module.check_mode)
    except KeyFailed as failure:
        module.fail_json(msg=str(failure))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
