# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""exo's requirements as a node installs them: exo_requirements (documented in exo_requirements.yml beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def exo_requirements(metadata, skip=(), replace=None, tinygrad="", add=()):
    from ansible_collections.gpufleet.exo.plugins.module_utils._exo_requirements import requirements
    return requirements(metadata, skip=skip, replace=replace, tinygrad=tinygrad, add=add)


class FilterModule(object):
    def filters(self):
        return {"exo_requirements": exo_requirements}
