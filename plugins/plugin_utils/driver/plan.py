# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's course on a host: its settings checked, the host's case, and what the role does there.

`course(facts, settings, host)` takes a host's ansible_facts (with device_capabilities from
gpufleet.exo.device_facts) and the role's exo_driver_* variables as the user gave them, and returns
what the role does there: the decision (which case of the table and why), the packages and
repositories per distribution, and every problem that must stop the host before any change, each
message naming the host, the variable, the value as given and what to do. It changes nothing.
plugins/plugin_utils/device_facts_check.py checks the facts against what cases.py reads of them;
the other jobs are in the files beside this one: settings.py, cases.py (the decision table),
distributions.py (where the driver comes from, and a host's packages) and outcome.py (what a run
found, and the messages worded from the install).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.device_facts_check import check_facts
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.amd import findings as amd_findings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.cases import FACTS_READ, classify, decision, in_container
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.outcome import (
    driver_versions, secure_boot_advice, space_problems)
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.settings import check_settings

# Where the nouveau blacklist goes; the same path on every supported distribution.
NOUVEAU_CONF = "/etc/modprobe.d/gpufleet-exo-nouveau.conf"


def _reboot_blocker(settings, host, connection, container):
    """Why a reboot the driver needs would not happen, or None when the role may reboot."""
    if connection == "local" or host in ("localhost", "127.0.0.1", "::1"):
        return "the connection is local (the controller would reboot itself)"
    if not settings["exo_driver_reboot"]:
        return "exo_driver_reboot is false"
    if container:
        return "the host is a %s container: reboot the machine it runs on" % container
    return None


def _messages(facts, settings, decided, install):
    """The messages the install steps may need, worded once the install is known."""
    return {
        "space_problems": space_problems(facts.get("mounts"), settings["exo_driver_min_free_mib"]),
        "secure_boot_advice": secure_boot_advice(install, facts.get("distribution")),
        "would_install": "would install " + " ".join(install["kernel_packages"] + install["packages"]),
        "upgrade_reboot_reason": "the running nvidia module is %s; branch %s loads at the next boot"
                                 % (decided["driver_version"], install["branch"]),
        "nouveau_reboot_reason": "nouveau holds %s until a reboot (blacklisted in %s)"
                                 % (", ".join(decided["nouveau"] or []), NOUVEAU_CONF),
    }


def course(facts, raw_settings, host, connection=None, packages=None):
    """What the driver role does on this host; see the module docstring and plugins/filter/driver_plan.yml.
    packages: the driver's packages installed, in ansible.builtin.package_facts' shape (None: unknown)."""
    result = {"errors": [], "settings": None, "decision": None, "install": None, "package_check": None,
              "changes_host": False, "kernel_module": None, "reboot_required": False, "reboot_reason": None, "reboot_blocker": None,
              "notes": [], "nvidia_module": None, "persistenced_service": "nvidia-persistenced", "messages": {},
              "summary": None, "nouveau_conf": NOUVEAU_CONF, "versions": None}
    raw = dict(raw_settings or {})
    values, errors = check_settings(raw)
    errors += check_facts((facts or {}).get("device_capabilities"), FACTS_READ)
    if errors:
        result["errors"] = ["host %s: %s" % (host, error) for error in errors]
        return result
    caps = facts["device_capabilities"]
    case = classify(caps, values["exo_driver_branch"], values["exo_driver_allow_upgrade"])
    decided = decision(facts, case)
    table = distributions.family(facts.get("distribution"))
    # AMD GPUs are checked, never installed for (amd.py): what they lack goes to the notes.
    decided["amd"] = amd_findings(host, caps, table, packages)
    result["notes"] += decided["amd"]["findings"]
    kernel_module = (not in_container(facts) if values["exo_driver_kernel_module"] == "auto"
                     else values["exo_driver_kernel_module"])
    result.update(settings=values, decision=decided, changes_host=not values["exo_driver_plan_only"],
                  kernel_module=kernel_module,
                  reboot_required=case == "version_mismatch",
                  reboot_reason=decided["reason"] if case == "version_mismatch" else None,
                  reboot_blocker=_reboot_blocker(values, host, connection, decided["container"]),
                  nvidia_module=(values["exo_driver_probe_options"].get("rootfs") or "/").rstrip("/")
                  + "/sys/module/nvidia")
    if decided["action"] in ("install", "upgrade"):
        problems = []
        result["install"], result["package_check"] = distributions.install(
            host, facts, values, raw, decided, kernel_module, problems)
        result["errors"] = problems
        if result["install"]:
            result["persistenced_service"] = result["install"]["persistenced_service"]
            result["messages"] = _messages(facts, values, decided, result["install"])
        if decided["nouveau"] and kernel_module and not values["exo_driver_blacklist_nouveau"]:
            result["notes"].append("nouveau holds %s and exo_driver_blacklist_nouveau is false: the nvidia module "
                                   "cannot take it" % ", ".join(decided["nouveau"]))
    result["versions"] = driver_versions(packages, table) if table else None
    if result["versions"] and result["versions"]["mixed"]:
        result["notes"].append("host %s: %s" % (host, result["versions"]["advice"]))
    result["summary"] = {"action": decided["action"], "why": decided["reason"],
                         "nvml": decided["nvml_status"], "gpus": decided["gpus"],
                         "passthrough (left alone)": decided["passthrough"]}
    if decided["amd"]["gpus"] or decided["amd"]["passthrough"]:
        result["summary"]["amd"] = decided["amd"]
    if result["install"]:
        # Shown under the name the role publishes it by (exo_driver_plan).
        result["summary"]["plan"] = result["install"]
    if result["versions"] and result["versions"]["installed"]:
        result["summary"]["driver packages"] = result["versions"]
    return result
