# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A driver change rolled in batches: driver_rollout_preview and driver_rollout_gate (documented beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def driver_rollout_preview(hosts, hostvars, serial=1, fleet=None, headroom=0.1, order="inventory"):
    from ansible_collections.gpufleet.exo.plugins.filter.fleet_capacity import fleet_capacity
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import rollout
    hosts = list(hosts)
    fleet = list(fleet) if fleet is not None else hosts
    try:
        cut = rollout.batches(hosts, serial, order)
    except ValueError as problem:
        raise AnsibleFilterError(str(problem))
    whole = fleet_capacity(fleet, hostvars, headroom)
    without = [fleet_capacity([h for h in fleet if h not in batch], hostvars, headroom) for batch in cut]
    return dict(rollout.preview(cut, whole, without), sizes=[len(batch) for batch in cut])


def driver_rollout_gate(after, host, before=None, reboot_pending=None, accept=("ok",)):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import rollout
    try:
        return rollout.gate(host, after, before, reboot_pending, accept)
    except ValueError as problem:
        raise AnsibleFilterError(str(problem))


class FilterModule(object):
    def filters(self):
        return {"driver_rollout_preview": driver_rollout_preview, "driver_rollout_gate": driver_rollout_gate}
