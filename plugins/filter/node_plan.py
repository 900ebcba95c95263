# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's planner as filters: node_plan (one host's instances) and node_cluster (the cluster)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.module_utils import node_plan as planner


def node_plan(facts, settings, host, existing=None, account=None, mig_minors_text=None, mig_minors_error=None,
              preview=False):
    return planner.plan(facts, settings, host, existing=existing or [], account=account,
                        mig_minors_text=mig_minors_text, mig_minors_error=mig_minors_error, preview=preview)


def node_cluster(instances, host, cluster_hosts, inventory_hosts, hostvars, play_hosts=()):
    others = {}
    for name in set(planner.cluster_names(cluster_hosts)) | set(play_hosts):
        if name != host and name in hostvars:
            others[name] = hostvars[name].get("exo_node_instances")
    peers, errors = planner.cluster(host, instances, cluster_hosts, list(inventory_hosts), others)
    return {"peers": peers, "errors": errors}


class FilterModule(object):
    def filters(self):
        return {"node_plan": node_plan, "node_cluster": node_cluster}
