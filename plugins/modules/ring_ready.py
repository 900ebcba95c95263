#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: ring_ready
short_description: Wait until every exo instance of a host sees its whole ring
version_added: 1.0.0
description:
  - Asks each exo instance of the host, on 127.0.0.1, for its topology (C(GET /v1/topology)) until
    every one lists every node id of O(members), or O(timeout) passes.
  - exo splits a model's layers from each node's own view of the topology; a prompt sent while
    the nodes disagree hangs until exo's 900 s API timeout. A ring is ready only when every
    instance lists every member.
  - Fails when the time is up, saying what each instance sees and which members it lacks.
  - Changes nothing.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  ports:
    description: The API ports of the host's instances (C(exo_node_instances[].ports.api)).
    type: list
    elements: int
    required: true
  members:
    description: The node ids of every instance in the ring.
    type: list
    elements: str
    required: true
  timeout:
    description: Seconds to wait.
    type: float
    default: 180
attributes:
  check_mode:
    support: full
    description: It only reads exo's topology, in check mode as otherwise.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
"""

EXAMPLES = r"""
- name: Wait until this host's instances see every instance of the cluster
  gpufleet.exo.ring_ready:
    ports: "{{ ansible_facts['exo_node_instances'] | map(attribute='ports.api') | list }}"
    members: "{{ ansible_play_hosts | map('extract', hostvars, ['ansible_facts', 'exo_node_instances']) | flatten
                 | map(attribute='node_id') | list }}"
    timeout: 300
"""

RETURN = r"""
instances:
  description: What each instance saw last.
  returned: always
  type: list
  elements: dict
  contains:
    port:
      description: Its API port.
      type: int
    nodes:
      description: The node ids its topology lists.
      type: list
      elements: str
    missing:
      description: The members it does not list.
      type: list
      elements: str
    error:
      description: Why it did not answer, or null.
      type: str
waited:
  description: Seconds waited.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_api import wait_for_ring


def main():
    module = AnsibleModule(
        argument_spec=dict(ports=dict(type="list", elements="int", required=True),
                           members=dict(type="list", elements="str", required=True),
                           timeout=dict(type="float", default=180)),
        supports_check_mode=True)
    instances, waited = wait_for_ring(module.params["ports"], module.params["members"], module.params["timeout"])
    late = ["port %d: %s" % (i["port"], i["error"] or "lists %s, not %s"
                             % (", ".join(i["nodes"]) or "no node", ", ".join(i["missing"])))
            for i in instances if i["error"] or i["missing"]]
    if late:
        module.fail_json(msg="exo instances that do not see their whole ring after %s s: %s; see journalctl -u 'exo@*' "
                             "on the host, and whether the other hosts' instances run and the firewall lets them in"
                             % (waited, "; ".join(late)), instances=instances, waited=waited)
    module.exit_json(changed=False, instances=instances, waited=waited)


if __name__ == "__main__":
    main()
