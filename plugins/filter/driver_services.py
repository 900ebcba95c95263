# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The services a host with the NVIDIA driver needs, as the filter driver_services (documented in
driver_services.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def driver_services(facts, settings, units=(), installed=None, check_fabric=False):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import services
    return services.needs(facts, settings, list(units), dict(installed or {}), check_fabric=check_fabric)


class FilterModule(object):
    def filters(self):
        return {"driver_services": driver_services}
