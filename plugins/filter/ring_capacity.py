# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a ring of published exo instances holds a model: ring_capacity (documented in ring_capacity.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.

# capacity.HEADROOM, read when the filter is called: as the default value itself it would import capacity here.
DEFAULT_HEADROOM = object()


def ring_capacity(model, hosts, hostvars, headroom=DEFAULT_HEADROOM):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
    if headroom is DEFAULT_HEADROOM:
        headroom = capacity.HEADROOM
    members = dict((host, ((hostvars[host] if host in hostvars else {}).get("ansible_facts") or {}).get("exo_node_instances"))
                   for host in hosts)
    try:
        return capacity.ring(model, members, headroom)
    except ValueError as problem:
        raise AnsibleFilterError("ring_capacity: %s" % problem)


class FilterModule(object):
    def filters(self):
        return {"ring_capacity": ring_capacity}
