# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The services a host with the NVIDIA driver in use needs, whether or not the driver role installed it:
nvidia-persistenced, and on NVSwitch systems the fabric manager of exactly the driver's version.

needs() (filter driver_services) reads the facts, the driver role's checked settings, the unit files
systemd knows and the installed fabric manager's version; the role installs, enables and starts what
it says. Package names per distribution are in distributions.py.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
from ansible_collections.gpufleet.exo.plugins.module_utils._driver_packages import upstream

FABRIC_MANAGER_SERVICE = "nvidia-fabricmanager"


def _fabric_manager(facts, caps, settings, installed, result):
    """Adds the fabric manager's package and service to result, or says why not."""
    switches = caps.get("nvswitches") or []
    if not switches:
        return
    where = "%d NVSwitch device(s) (%s)" % (len(switches), ", ".join(d["bus_id"] for d in switches))
    if not settings.get("exo_driver_fabric_manager", True):
        result["notes"].append("%s here and exo_driver_fabric_manager is false: the fabric manager is yours to "
                               "install, of exactly the driver's version" % where)
        return
    nvml = caps.get("nvml") or {}
    version = nvml.get("driver_version")
    if nvml.get("status") != "ok" or not version:
        result["notes"].append("%s here: the fabric manager is installed once the NVIDIA driver is loaded (NVML: %s); "
                               "run the role again then" % (where, nvml.get("status")))
        return
    table = distributions.family(facts.get("distribution"))
    fabric_manager = table.get("fabric_manager") if table else None
    branch = version.split(".")[0]
    if fabric_manager is None:
        result["errors"].append(
            "%s here, and the role installs the fabric manager on %s only, not on %s: install NVIDIA's "
            "nvidia-fabricmanager-%s at exactly %s (NVIDIA's CUDA repository) and set exo_driver_fabric_manager: false"
            % (where, distributions.FABRIC_MANAGER_DISTRIBUTIONS, facts.get("distribution"), branch, version))
        return
    package = fabric_manager["package"] % {"branch": branch}
    have = upstream(installed.get(package)) or None
    result["fabric_manager"] = {"package": package, "version": version, "installed": have,
                                "service": FABRIC_MANAGER_SERVICE}
    if have != version:
        # The fabric manager refuses to start with any other version than the driver's.
        result["install"] = fabric_manager["install"] % {"package": package, "version": version}
        result["notes"].append("%s here: %s %s to match the driver %s" % (
            where, "installs" if have is None else "replaces %s %s by" % (package, have), package, version))
    result["services"].append({"name": FABRIC_MANAGER_SERVICE, "start": True})


def fabric_problems(caps):
    """Why the NVLink fabric is not up, per GPU that reports a fabric state (empty when it is up)."""
    problems = []
    for gpu in caps.get("gpus") or []:
        fabric = (gpu.get("health") or {}).get("fabric")
        up = fabric and fabric["state"] == "completed" and fabric["status"] == "success"
        if fabric and fabric["state"] != "not_supported" and not up:
            problems.append("GPU %s (%s): NVLink fabric %s, status %s"
                            % (gpu["index"], gpu["uuid"], fabric["state"], fabric["status"]))
    return problems


def needs(facts, settings, units, installed, check_fabric=False):
    """{"services": [{"name", "start"}], "install": package spec or None, "fabric_manager": {...} or None,
    "errors": [...], "notes": [...]}.

    facts: the host's ansible_facts with device_capabilities and the distribution; settings: the driver
    role's checked settings; units: the unit file names systemd lists; installed: the installed
    packages, {name: version} or ansible.builtin.package_facts' {name: [{version: ...}]};
    check_fabric: whether the fabric manager has been started, so that a fabric that is not up is an
    error.
    """
    caps = facts.get("device_capabilities") or {}
    loaded = (caps.get("nvml") or {}).get("status") == "ok"
    result = {"services": [], "install": None, "fabric_manager": None, "errors": [], "notes": []}
    persistenced = (distributions.family(facts.get("distribution")) or {}).get(
        "persistenced_service", "nvidia-persistenced")
    # The unit comes with the driver's packages, whoever installed them: its presence is the driver's.
    if settings.get("exo_driver_persistenced", True) and persistenced + ".service" in units:
        result["services"].append({"name": persistenced, "start": loaded})
    # ansible.builtin.package_facts lists each package's installed versions; a plain version is accepted too.
    versions = dict((name, value[0].get("version") if isinstance(value, list) and value else value)
                    for name, value in (installed or {}).items())
    _fabric_manager(facts, caps, settings, versions, result)
    if check_fabric and result["fabric_manager"]:
        problems = fabric_problems(caps)
        if problems:
            result["errors"].append(
                "the fabric manager %s runs but the NVLink fabric is not up, so CUDA cannot start on these GPUs: %s; "
                "see journalctl -u %s and /var/log/fabricmanager.log" % (
                    result["fabric_manager"]["version"], "; ".join(problems), FABRIC_MANAGER_SERVICE))
    return result
