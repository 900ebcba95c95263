# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's planner as a filter: driver_plan (documented in driver_plan.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils import driver_plan as planner


def driver_plan(facts, settings, host, connection=None):
    return planner.plan(facts, settings, host, connection=connection)


class FilterModule(object):
    def filters(self):
        return {"driver_plan": driver_plan}
