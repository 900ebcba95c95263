# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fleet can serve and its report: fleet_capacity and fleet_report_html (documented beside this file)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.

# capacity.HEADROOM, read when the filter is called: as the default value itself it would import capacity here.
DEFAULT_HEADROOM = object()

# The node role's defaults that are templates of a host's variables (roles/node/defaults/main.yml),
# with what each gives here, from the host's variables as hostvars hold them and the hosts of its ring.
TEMPLATED_DEFAULTS = {
    # "{{ inventory_hostname }}"
    "exo_node_id_prefix": lambda host, hv, ring: host,
    # "{{ ansible_facts['default_ipv4']['address'] | default(ansible_host | default(inventory_hostname)) }}"
    "exo_node_address": lambda host, hv, ring: (
        ((hv.get("ansible_facts") or {}).get("default_ipv4") or {}).get("address") or hv.get("ansible_host", host)),
    # "{{ groups[exo_node_ring] | default([]) if exo_node_ring else ansible_play_hosts_all }}": the report's hosts
    # that name the same exo_node_ring as this one. The list is its ring's, shared by its hosts, not copied for
    # each: what planning a host costs grows with its ring, not with the fleet.
    "exo_node_cluster_hosts": lambda host, hv, ring: ring,
}


def node_defaults():
    """The node role's defaults, templates left as written: the spec's, as the role's planner reads them."""
    from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
    return role_settings.defaults("node")


def host_ring(hv):
    """The ring a host's variables put it in: its exo_node_ring, "" (the play's hosts) where it has none. As text,
    as the role's spec reads it; the planner refuses a name that is no group's."""
    value = hv.get("exo_node_ring")
    return "" if value is None else str(value)


def rings(hosts, hostvars):
    """({host: its ring}, {ring: [its hosts, in the play's order]}), worked out once for the whole report."""
    ring_of = dict((host, host_ring(hostvars[host] if host in hostvars else {})) for host in hosts)
    members = {}
    for host in hosts:
        members.setdefault(ring_of[host], []).append(host)
    return ring_of, members


def host_settings(host, hv, ring, defaults):
    """The settings the node role would use on host: its exo_node_* variables over the role's defaults.

    ring: the hosts of host's ring (rings()), for the defaults that name them."""
    settings = dict(defaults)
    settings.update((name, stand_in(host, hv, ring)) for name, stand_in in TEMPLATED_DEFAULTS.items())
    # All of them, as the role reads them: the planner refuses a name the role does not know.
    settings.update((name, hv[name]) for name in hv if name.startswith("exo_node_"))
    # Capacity does not depend on the confinement, whose check of the addresses would refuse a name
    # stood in for the IP address the role reads from the host's own facts; without the firewall the
    # API's clients and its proxy, which need it, are left out too.
    settings.update(exo_node_firewall=False, exo_node_api_clients=[], exo_node_api_proxy=False)
    return settings


def host_plan(host, facts, settings):
    """The node planner's preview of host, its settings checked first as the role's preflight checks them: a
    refused one is the plan's only error, as the role stops there."""
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
    values, errors = check_settings(settings)
    if errors:
        return {"instances": [], "errors": ["host %s: %s" % (host, e) for e in errors]}
    return plan.instances(facts, values, host, preview=True)


def fleet_capacity(hosts, hostvars, headroom=DEFAULT_HEADROOM):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
    if headroom is DEFAULT_HEADROOM:
        headroom = capacity.HEADROOM
    hosts = list(hosts)
    defaults = node_defaults()
    ring_of, members = rings(hosts, hostvars)
    entries = []
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        facts = (hv.get("ansible_facts") or {}).get("device_capabilities")
        if facts:
            planned = host_plan(host, facts, host_settings(host, hv, members[ring_of[host]], defaults))
        else:
            planned = {"instances": [], "errors": []}
        entries.append({"host": host, "facts": facts, "plan": planned, "ring": ring_of[host]})
    try:
        return capacity.fleet(entries, headroom)
    except ValueError as problem:
        raise AnsibleFilterError("fleet_capacity: %s (fleet_report_headroom)" % problem)


def fleet_report_html(report, title="exo fleet"):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import report as fleet_report
    try:
        return fleet_report.html(report, title)
    except fleet_report.MissingLibrary as problem:
        raise AnsibleFilterError(str(problem))


class FilterModule(object):
    def filters(self):
        return {"fleet_capacity": fleet_capacity, "fleet_report_html": fleet_report_html}
