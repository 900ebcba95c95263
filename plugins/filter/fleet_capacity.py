# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet can serve and its report: fleet_capacity and fleet_report_html (documented beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as planner
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import settings as node_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import report as fleet_report

NODE_DEFAULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "roles", "node", "defaults", "main.yml")
# The node role's defaults that are templates, with what they give a host outside the role.
TEMPLATED_DEFAULTS = {
    "exo_node_id_prefix": lambda host, hv, hosts: host,
    "exo_node_address": lambda host, hv, hosts: hv.get("ansible_host", host),
    "exo_node_cluster_hosts": lambda host, hv, hosts: list(hosts),
}


def node_defaults():
    """The node role's defaults for the planner's settings, templates left as written."""
    with open(NODE_DEFAULTS) as handle:
        defaults = yaml.safe_load(handle)
    return dict((name, defaults[name]) for name in node_settings.SETTINGS if name in defaults)


def host_settings(host, hv, hosts, defaults):
    """The settings the node role would use on host: its exo_node_* variables over the role's defaults."""
    settings = dict(defaults)
    for name, value in defaults.items():
        if isinstance(value, str) and "{{" in value:
            settings[name] = TEMPLATED_DEFAULTS[name](host, hv, hosts)
    for name in node_settings.SETTINGS:
        if name in hv:
            settings[name] = hv[name]
    return settings


def fleet_capacity(hosts, hostvars, headroom=capacity.HEADROOM):
    hosts = list(hosts)
    defaults = node_defaults()
    entries = []
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        facts = (hv.get("ansible_facts") or {}).get("device_capabilities")
        if facts:
            plan = planner.plan(facts, host_settings(host, hv, hosts, defaults), host, preview=True)
        else:
            plan = {"instances": [], "errors": []}
        entries.append({"host": host, "facts": facts, "plan": plan})
    try:
        return capacity.fleet(entries, headroom)
    except ValueError as problem:
        raise AnsibleFilterError("fleet_capacity: %s (fleet_report_headroom)" % problem)


def fleet_report_html(report, title="exo fleet"):
    try:
        return fleet_report.html(report, title)
    except fleet_report.MissingLibrary as problem:
        raise AnsibleFilterError(str(problem))


class FilterModule(object):
    def filters(self):
        return {"fleet_capacity": fleet_capacity, "fleet_report_html": fleet_report_html}
