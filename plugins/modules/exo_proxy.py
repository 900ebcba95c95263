#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_proxy
short_description: Set up or remove the nginx site in front of exo's API
version_added: 1.0.0
description:
  - The host side of the node role's API proxy (C(exo_node_api_proxy)); the filter
    P(gpufleet.exo.node_proxy#filter) decides what the site says and the role's templates render it.
  - With O(state=present), fails where O(nginx) is missing (outside check mode); writes O(tokens) to
    O(tokens_path) (mode C(0600), in a directory of mode C(0700), both root's), then O(site) to
    O(site_path) (mode C(0644)). A new site is first checked by C(nginx -t) alone, in a configuration of
    its own, and never reaches O(site_path) where nginx refuses it. After a change nginx's whole
    configuration is checked (C(nginx -t)), since a reload that finds it wrong keeps the old one and
    succeeds all the same.
  - Then enables C(nginx.service) and, with O(systemd_running), starts it, or reloads it where a file changed.
  - With O(state=absent), removes O(site_path) and the directory of O(tokens_path), and reloads nginx
    where it runs; a stopped nginx stays stopped. nginx itself and every other file of its configuration stay.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  state:
    description: Whether the site is there.
    type: str
    choices: [present, absent]
    default: present
  site:
    description: The site's text. Required with O(state=present).
    type: str
  tokens:
    description: The token file's text (nginx C(map) entries); a secret, never shown. Required with O(state=present).
    type: str
  site_path:
    description: Where the site goes, in a directory nginx includes.
    type: path
    default: /etc/nginx/conf.d/gpufleet-exo.conf
  tokens_path:
    description: Where the tokens go; its directory is the module's own, removed whole with O(state=absent).
    type: path
    default: /etc/nginx/gpufleet-exo/tokens
  nginx:
    description: nginx's executable.
    type: path
    default: /usr/sbin/nginx
  systemd_running:
    description: Whether systemd runs on the host; without it C(nginx.service) is only enabled.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Says what it would write, enable, start or reload; runs no C(nginx -t), and does not need nginx yet.
  diff_mode:
    support: full
    description: Shows the site's change. The tokens are never shown.
"""

EXAMPLES = r"""
# The node role's proxy is this with its own site (exo_node_api_proxy); a small site of its own here,
# beside any other, answering only with the token.
- name: Put a site behind a token with nginx
  gpufleet.exo.exo_proxy:
    site: |
      map $http_authorization $gpufleet_exo_example_token_ok {
          default 0;
          include /etc/nginx/gpufleet-exo-example/tokens;
      }
      server {
          listen 127.0.0.1:8480;
          location / {
              if ($gpufleet_exo_example_token_ok = 0) {
                  return 401;
              }
              return 200 "through\n";
          }
      }
    tokens: |
      "Bearer example-token-0123456789abcdef" 1;
    site_path: /etc/nginx/conf.d/gpufleet-exo-example.conf
    tokens_path: /etc/nginx/gpufleet-exo-example/tokens
    systemd_running: "{{ ansible_facts['service_mgr'] == 'systemd' }}"
  register: example_proxy

# nginx loads the new site in the background after its reload.
- name: Ask through it, with the token
  ansible.builtin.uri:
    url: http://127.0.0.1:8480/
    headers:
      Authorization: Bearer example-token-0123456789abcdef
    return_content: true
  register: example_answer
  until: example_answer.status == 200
  retries: 10
  delay: 1

- name: Remove it
  gpufleet.exo.exo_proxy:
    state: absent
    site_path: /etc/nginx/conf.d/gpufleet-exo-example.conf
    tokens_path: /etc/nginx/gpufleet-exo-example/tokens
"""

RETURN = r"""
site_changed:
  description: Whether the site was (or in check mode would be) written or removed.
  returned: always
  type: bool
tokens_changed:
  description: Whether the token file was (or would be) written, or its directory removed.
  returned: always
  type: bool
nginx:
  description: What was (or would be) done to C(nginx.service), in order.
  returned: always
  type: list
  elements: str
  sample: [enabled, started]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_proxy import ProxyRefused, absent, present
from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import run_steps


def main():
    module = AnsibleModule(
        argument_spec=dict(state=dict(type="str", choices=["present", "absent"], default="present"),
                           site=dict(type="str"), tokens=dict(type="str", no_log=True),
                           site_path=dict(type="path", default="/etc/nginx/conf.d/gpufleet-exo.conf"),
                           tokens_path=dict(type="path", default="/etc/nginx/gpufleet-exo/tokens"),
                           nginx=dict(type="path", default="/usr/sbin/nginx"),
                           systemd_running=dict(type="bool", default=True)),
        required_if=[("state", "present", ["site", "tokens"])],
        supports_check_mode=True)
    run_steps(module, present, absent, ProxyRefused, systemctl=module.get_bin_path("systemctl") or "systemctl")


if __name__ == "__main__":
    main()
