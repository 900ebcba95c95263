# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's preflight, as the filters node_preflight (the settings checked, with the host's facts alone)
and node_preflight_host (that answer with what the host showed), documented in the .yml files beside this one."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def node_preflight(settings, host, facts):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.preflight import preflight
    return preflight(settings, host, facts)


def node_preflight_host(preflight_answer, host, facts, python_version=None, found=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.preflight import host_check
    return host_check(preflight_answer, host, facts, python_version=python_version, found=found)


class FilterModule(object):
    def filters(self):
        return {"node_preflight": node_preflight, "node_preflight_host": node_preflight_host}
