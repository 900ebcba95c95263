# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's plan of a host: from the device facts and the exo_node_* settings, its exo instances.

instances() takes what the role knows before it changes anything (the facts, the settings as its preflight
checked them, what is configured on the host already) and returns
{"instances", "skipped", "errors", "warnings", "removed", "cpu_reason", "preview", "device_groups"
(the groups the service user needs for the instances' device nodes), ...}. An error names the host, the
variable, the value as given and what to do; the role stops on any before its first change. The
jobs are in the files beside this one: settings.py, facts.py, gpu_choice.py (which GPU gets an
instance, and why), instances.py, confinement.py (each instance's limits), backend_refusals.py,
cluster.py and outcome.py.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.device_facts_check import check_facts
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import amd, backend_refusals, confinement
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.firewall import address_error
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.facts import FACTS_READ, cuda_start_problems, mig_minors, to_plan
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.gpu_choice import candidates, choose, cpu_reason
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.instances import (
    instance_name, port_errors, removals, render, visibility_errors)
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_account

NO_FACTS = "no device facts; run gpufleet.exo.device_facts before this role"
EXO_MISSING = ("%s/bin/python does not exist yet (check mode), so this plan comes from the facts at hand (NVML: %s); "
               "a real run gathers them again after installing exo")


def instances(facts, settings, host, existing=(), account=None, mig_minors_text=None, mig_minors_error=None,
              preview=False, exo_python=None):
    """The instances of a host. Every problem is reported, none raised.

    settings: check_settings()' values (the role's preflight checked them; the ring's tunnel may have
    changed exo_node_address). facts None checks the settings against the host alone (before the facts
    that count are gathered). preview plans
    from facts whose tinygrad is not exo's yet (gathered before exo is installed): what depends on
    that tinygrad (a forced backend, its variables) is checked once the final facts are there.
    Without preview the facts and exo_node_refresh_facts say whether the plan is a preview
    (facts.to_plan); exo_python, what the role found when it looked for exo's interpreter to gather
    the facts again, makes it final. The result's "preview" says which it was: only a final plan's
    instances are published.
    existing: the instances configured on the host before this run, by name or by the path of their
    env file (the result's "existing" holds the names); account: the passwd entry of
    exo_node_user on the host (getent's list) or None; mig_minors_text: the driver's mig-minors file.
    """
    settings = checked("node_plan", settings)
    if not preview:
        facts, preview = to_plan(facts, settings, regathered=exo_python is not None)
    existing = [instance_name(entry) for entry in existing]
    result = {"instances": [], "skipped": [], "errors": [], "warnings": [], "removed": [], "cpu_reason": None,
              "device_paths": [], "device_groups": [], "existing": existing, "preview": preview or facts is None}
    result["backends"] = backend_refusals.to_check(settings)
    errors = check_account(settings, account)
    if settings["exo_node_firewall"] and address_error(settings["exo_node_address"]):
        errors.append(address_error(settings["exo_node_address"]))
    # In check mode before exo is installed there is no interpreter to gather the facts again with.
    exo_missing = exo_python is not None and not (exo_python.get("stat") or {}).get("exists")
    if facts is not None:
        errors += check_facts(facts, FACTS_READ) or cuda_start_problems(facts)
    elif exo_missing:
        errors.append(NO_FACTS)
    if errors or facts is None:
        result["errors"] = ["host %s: %s" % (host, e) for e in errors]
        return result
    if preview:
        settings = dict(settings, exo_node_tinygrad_backend="auto")
    tinygrad = {} if preview else facts["tinygrad"] or {}
    tinygrad_env = set(var for select in (tinygrad.get("select_env") or {}).values() for var in select or {})
    tinygrad_env.update(var for var in (tinygrad.get("visible_devices_env") or {}).values() if var)
    clashing = sorted(tinygrad_env.intersection(settings["exo_node_extra_env"]))
    if clashing:
        result["errors"] = ["host %s: exo_node_extra_env sets %s, which tinygrad %s reads to choose its backend or GPU; "
                            "use exo_node_tinygrad_backend and exo_node_gpus instead"
                            % (host, ", ".join(clashing), tinygrad.get("version"))]
        return result
    nvml_ok = facts["nvml"].get("status") == "ok"
    gpus = facts["gpus"] if nvml_ok else []
    requested = settings["exo_node_gpus"]
    found, skipped, warnings = candidates(gpus, settings["exo_node_mig"], settings["exo_node_gpu_health"])
    amd_gpus = facts.get("amd") or []
    amd_found, amd_skipped, refused = amd.candidates(amd_gpus, None if preview else tinygrad)
    skipped += amd_skipped
    chosen, errors = choose(host, gpus, found + amd_found, skipped, requested, settings["exo_node_min_memory_mib"],
                            amd_gpus, refused)
    warnings += amd.notes(host, amd_gpus, None if preview else tinygrad)
    if exo_missing:
        warnings.append(EXO_MISSING % (settings["exo_node_install_dir"], facts["nvml"].get("status", "no facts")))
    if not chosen and not errors:
        why = cpu_reason(facts, nvml_ok, gpus, skipped, requested, amd_skipped)
        if settings["exo_node_cpu_fallback"]:
            result["cpu_reason"] = why
            chosen = [{"kind": "cpu", "name": "cpu", "gpu": None, "mig": None,
                       "memory_mib": facts["host"].get("memory_mib"), "label": "CPU"}]
        else:
            errors.append("host %s has no usable GPU (%s) and exo_node_cpu_fallback is false" % (host, why))
    if any(c["kind"] != "cpu" for c in chosen) and facts.get("backend") == "cpu":
        warnings.append("the probe says tinygrad would run on the CPU here (%s); the GPU instances are pinned anyway "
                        "and run on the CPU until that is fixed" % (facts.get("fallback_reason") or "no reason given"))
    minors = mig_minors(mig_minors_text)
    rendered = []
    for slot, candidate in enumerate(chosen):
        instance, more_errors, more_warnings = render(host, facts, settings, candidate, slot, minors, mig_minors_error)
        rendered.append(instance)
        errors += more_errors
        warnings += more_warnings
    warnings += confinement.limits(host, facts["host"], settings, rendered)
    errors += port_errors(host, rendered, settings["exo_node_discovery"],
                          proxy_base=settings["exo_node_api_proxy_port"] if settings["exo_node_api_proxy"] else None)
    if not preview:
        backend_errors, backend_warnings = backend_refusals.refusals(host, facts, settings, rendered)
        visible_errors, visible_warnings = visibility_errors(host, facts, rendered)
        errors += backend_errors + visible_errors
        warnings += backend_warnings + visible_warnings
    removed, removal_errors = removals(host, facts, nvml_ok, rendered, skipped, existing, settings["exo_node_allow_removal"])
    result.update(instances=rendered, skipped=skipped, errors=errors + removal_errors, warnings=warnings,
                  removed=removed,
                  device_groups=amd.GROUPS if any(i["kind"] == "amd" for i in rendered) else [],
                  device_paths=sorted(set(d.split(" ")[0] for i in rendered for d in i["devices"]
                                          if d.startswith("/dev/"))))
    return result
