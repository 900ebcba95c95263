# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's planner as filters: driver_plan (the host's course: the decision and what to install),
driver_outcome (what the install steps found) and driver_package_names (the packages the planner reads),
documented in the .yml files beside this one."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def driver_plan(facts, settings, host, connection=None, packages=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import plan
    return plan.course(facts, settings, host, connection=connection, packages=packages)


def driver_package_names(facts):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
    return distributions.package_names((facts or {}).get("distribution"))


def driver_outcome(course, selections=None, module_list=None, sb_state=None, sb_efivar=None, modprobe=None,
                   verified=None, packages=None, versionlock=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import outcome
    return outcome.findings(course, selections=selections, module_list=module_list, sb_state=sb_state,
                            sb_efivar=sb_efivar, modprobe=modprobe, verified=verified, packages=packages,
                            versionlock=versionlock)


class FilterModule(object):
    def filters(self):
        return {"driver_plan": driver_plan, "driver_outcome": driver_outcome, "driver_package_names": driver_package_names}
