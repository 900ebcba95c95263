# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's preflight, as the filter node_preflight (documented in node_preflight.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.preflight import preflight


def node_preflight(settings, host, facts, python_version=None, found=None):
    return preflight(settings, host, facts, python_version=python_version, found=found)


class FilterModule(object):
    def filters(self):
        return {"node_preflight": node_preflight}
