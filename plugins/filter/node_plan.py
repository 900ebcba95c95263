# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's planner as filters: node_settings (the role's variables checked), node_plan (one
host's instances), node_cluster (the cluster), node_firewall (who may reach the instances),
node_proxy (the authenticated front of their API), node_files (the directories, templates and
removals of the configure step), node_models (the models placed), node_outcome
(what a run found: missing device nodes, exposure figures, the instances to restart), node_python
(the Python that makes exo's virtualenv on the host's platform) and node_install (how exo gets into
that virtualenv). Each planner takes the settings as checked (node_settings', or the role's preflight)
and never checks them again."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Imports are inside the functions: Ansible imports every filter file of the collection to find any one
# filter, in every task's worker, so this file imports only what the filter called needs.


def node_plan(facts, settings, host, existing=None, account=None, mig_minors_text=None, mig_minors_error=None,
              preview=False, exo_python=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan
    return plan.instances(facts, settings, host, existing=existing or [], account=account,
                          mig_minors_text=mig_minors_text, mig_minors_error=mig_minors_error, preview=preview,
                          exo_python=exo_python)


def node_cluster(instances, host, cluster_hosts, hostvars, models=(), ring=""):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import confinement
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.cluster import cluster_names, ring_ports, survey
    # The ring's members only: what a host reads grows with its ring, never with the fleet.
    others = {}
    for name in set(cluster_names(cluster_hosts)):
        if name != host and name in hostvars:
            # The role publishes them as a fact: read there, a cached fact read as a top-level variable is
            # deprecated (ansible-core 2.24 stops injecting facts as variables).
            facts = hostvars[name].get("ansible_facts") or {}
            others[name] = facts["exo_node_instances"] if "exo_node_instances" in facts else hostvars[name].get("exo_node_instances")
    # hostvars holds every host of the inventory, and answers "in" without a walk through them.
    found = survey(host, instances, cluster_hosts, hostvars, others, models, ring)
    # What the whole ring computes at once, for the topology file (each instance's patched exo keeps as many
    # KV caches), and the ports that are the ring's alone: the members published so far, as survey() took them.
    ring = found["ring"]
    return {"peers": found["peers"], "ring_requests_in_flight": capacity.ring_requests(ring), "ports": ring_ports(ring),
            "addresses": confinement.ring_addresses(found["peers"]), "errors": found["errors"]}


def node_firewall(instances, cluster, settings, os_family=None, tunnel=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.firewall import firewall
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
    return firewall(instances, cluster["peers"], checked("node_firewall", settings), os_family=os_family, tunnel=tunnel,
                    ring_ports=cluster.get("ports", ()))


def node_proxy(instances, settings, tunnel=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.proxy import proxy
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
    values = checked("node_proxy", settings)
    # Clients reach the proxy at the host's own address: with the ring's tunnel on, the settings hold the tunnel's.
    address = tunnel["endpoint"] if tunnel and tunnel["enabled"] else values["exo_node_address"]
    return proxy(instances, values["exo_node_api_proxy_port"], values["exo_node_api_proxy_tokens"],
                 address, certificate=values["exo_node_api_proxy_tls_certificate"],
                 key=values["exo_node_api_proxy_tls_key"], origins=values["exo_node_api_proxy_cors_origins"])


def node_files(instances, removed, settings, paths):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import files
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
    values = checked("node_files", settings)
    return files.layout(instances, removed, values["exo_node_user"], values["exo_node_group"],
                        values["exo_node_data_dir"], values["exo_node_config_dir"], paths, values["exo_node_firewall"],
                        values["exo_node_discovery"])


def node_models(settings, instances, host, store=None, placed=None, free=None, verified=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import models
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
    return models.placement(host, checked("node_models", settings), instances, store=store, placed=placed, free=free,
                            verified=verified)


def node_outcome(instances, host, existing=None, devices=None, modprobe=None, units=None, changed=None,
                 all_changed=False, files=None, written=None, exo=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import outcome
    return outcome.findings(instances, host, existing=existing or [], devices=devices, modprobe=modprobe,
                            units=units, changed=changed, all_changed=all_changed, files=files, written=written,
                            exo=exo)


def node_python(facts, python, distribution_python, min_version, max_version):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.python import choose
    return choose(facts, python, distribution_python, min_version, max_version)


def node_install(settings, os_family=None, python_choice=None, python_version=None, venv=None, plan=None, verify=False,
                 arch=None):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import install
    return install.steps(settings, os_family=os_family, python_choice=python_choice, python_version=python_version,
                         venv=venv, node_plan=plan, verify=verify, arch=arch)


def node_settings(settings, host):
    from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
    values, errors = check_settings(settings)
    return {"settings": values if not errors else None, "errors": ["host %s: %s" % (host, e) for e in errors]}


class FilterModule(object):
    def filters(self):
        return {"node_plan": node_plan, "node_cluster": node_cluster, "node_firewall": node_firewall,
                "node_proxy": node_proxy, "node_files": node_files, "node_models": node_models,
                "node_outcome": node_outcome,
                "node_python": node_python, "node_install": node_install, "node_settings": node_settings}
