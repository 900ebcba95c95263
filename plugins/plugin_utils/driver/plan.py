# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's policy in one place: its settings checked, the host's case, and the plan.

`plan(facts, settings, host)` takes a host's ansible_facts (with device_capabilities from
gpufleet.exo.device_facts) and the role's exo_driver_* variables as the user gave them, and returns
what the role does there: the decision (which case of the table below and why), the packages and
repositories per distribution, and every problem that must stop the host before any change, each
message naming the host, the variable, the value as given and what to do. It changes nothing.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible.module_utils.common.validation import check_type_bool, check_type_float

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, show
from ansible_collections.gpufleet.exo.plugins.module_utils._driver_packages import module_streams
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.conclusions import DRIVER_MISSING, nvidia_gpus

# The decision table: case -> (action, reason). The first case that applies wins (see classify).
#   none     nothing to do
#   leave    GPUs passed through to guests: never touched
#   install  install (or complete) the driver and load it
#   upgrade  move a healthy host to the pinned branch (exo_driver_allow_upgrade)
#   reboot   a reboot is pending: reinstalling would not help
#   report   the driver is there but NVML fails: a person has to look, nothing is installed
CASES = {
    "no_hardware": ("none", "no NVIDIA GPU on the PCI bus"),
    "passthrough": ("leave", "every NVIDIA GPU is bound to vfio-pci (passed through to a guest)"),
    "version_mismatch": ("reboot", "the nvidia kernel module loaded is not the version of the installed libraries "
                                   "(Driver/library version mismatch): a driver update waits for a reboot, not reinstalling"),
    "nouveau": ("install", "nouveau holds the GPU, the NVIDIA driver is not installed"),
    "library_not_found": ("install", "the NVIDIA user-space library libnvidia-ml.so.1 is not installed"),
    "driver_not_loaded": ("install", "libnvidia-ml is installed but the nvidia kernel module is not loaded"),
    "unbound": ("install", "the NVIDIA GPU has no kernel driver bound"),
    "bound_unchecked": ("none", "the nvidia kernel driver is bound to every GPU; NVML was not asked because "
                                "nvidia-ml-py is missing on the probe's Python"),
    "ok": ("none", "the driver is loaded and NVML answers"),
    "branch_differs": ("none", "the driver works but runs another branch than exo_driver_branch; "
                               "exo_driver_allow_upgrade is false"),
    "upgrade": ("upgrade", "the driver runs another branch than exo_driver_branch and exo_driver_allow_upgrade is true"),
    "unhealthy": ("report", "the driver is installed but NVML fails; reinstalling would not fix that"),
}
# NVML states that mean a driver is present and in use but something else is wrong.
UNHEALTHY = ("no_permission", "gpu_lost", "timeout", "error")
# ansible_virtualization_type values of containers: they share their host's kernel, so the kernel
# module can only come from that host.
CONTAINER_TYPES = ("container", "containerd", "docker", "podman", "lxc", "openvz", "systemd-nspawn", "wsl")

URL_RE = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")
PACKAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+:~=*-]*$")
FILE_NAME_RE = re.compile(r"^[^\s/]+$")
FINGERPRINT_RE = re.compile(r"^[0-9A-F]{40}$")
# The repository keys the role imports on EL: NVIDIA's CUDA repository's and EPEL's.
RPM_KEYS = ("cuda", "epel")

# The role's defaults, from meta/argument_specs.yml (defaults/main.yml holds the same for Ansible).
DEFAULTS = role_settings.defaults("driver")


def _url(example):
    return {"match": (URL_RE, ", which is not a URL; give one such as %s" % example)}


# Facts the role publishes under the same prefix: not settings, but found beside them.
OUTPUTS = ("exo_driver_decision", "exo_driver_plan", "exo_driver_result", "exo_driver_notes", "exo_driver_versions",
           "exo_driver_reboot_required", "exo_driver_reboot_reason", "exo_driver_reboot_hosts")
# The options of gpufleet.exo.device_facts that exo_driver_probe_options may set, by kind
# (the module's DOCUMENTATION; the unit tests compare the two).
PROBE_OPTIONS = {"timeout": "float", "tinygrad": "bool", "tinygrad_cache": "bool", "tinygrad_python": "path",
                 "rootfs": "path", "backends": "list", "visible_per_gpu": "bool"}

FACTS_HINT = ("gather them again with gpufleet.exo.device_facts from this collection "
              "(exo_driver_probe: always makes the role run it)")


# ---- settings -----------------------------------------------------------------------------------

def _as_branch(name, value):
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SettingError("%s is %s; give a branch number such as 580" % (name, show(value)))
    text = str(value).strip()
    if re.match(r"^[0-9]+$", text):
        return text
    if re.match(r"^[0-9]+(\.[0-9]+)+$", text):
        raise SettingError("%s is %s, a driver version; give its branch, the first number: %s"
                           % (name, show(value), text.split(".", 1)[0]))
    raise SettingError("%s is %s, which is not a branch number such as 580" % (name, show(value)))


def _as_packages(name, value):
    # Ansible's own rule for a list given as a string (-e name=a,b): split at commas.
    if isinstance(value, str):
        value = [entry.strip() for entry in value.split(",") if entry.strip()]
    if not isinstance(value, list):
        raise SettingError("%s is %s; give a list of package names" % (name, show(value)))
    bad = [entry for entry in value if not isinstance(entry, str) or not PACKAGE_RE.match(entry)]
    if bad:
        raise SettingError("%s has %s, which %s not a package name; give names such as nvidia-settings"
                           % (name, ", ".join(show(entry) for entry in bad), "is" if len(bad) == 1 else "are"))
    return list(value)


def _as_fingerprints(name, value):
    # Per key the role imports; a fingerprint as gpg and dnf print it (groups of four) or in one piece.
    if not isinstance(value, dict):
        raise SettingError("%s is %s; give a mapping such as {\"cuda\": \"<40 hex digits>\"}" % (name, show(value)))
    fingerprints = {}
    for key in sorted(value):
        if key not in RPM_KEYS:
            raise SettingError("%s sets %s, which is not a key this role imports; its keys are %s"
                               % (name, show(key), ", ".join(RPM_KEYS)))
        given = value[key]
        compact = re.sub(r"\s+", "", given).upper() if isinstance(given, str) else None
        if not compact or not FINGERPRINT_RE.match(compact):
            raise SettingError("%s.%s is %s; give the key's full OpenPGP fingerprint, 40 hex digits (gpg --show-keys "
                               "prints it)" % (name, key, show(given)))
        fingerprints[key] = compact
    return fingerprints


def _as_probe_options(name, value):
    # The role probes with these before it can check them, so only a mapping reaches the module.
    if not isinstance(value, dict):
        raise SettingError("%s is %s; give a mapping of gpufleet.exo.device_facts options, for example "
                           "-e '{\"%s\": {\"tinygrad\": false}}'" % (name, show(value), name))
    options = {}
    for key in sorted(value):
        kind = PROBE_OPTIONS.get(key)
        if kind is None:
            raise SettingError("%s sets %s, which is not an option of gpufleet.exo.device_facts; its options are %s"
                               % (name, show(key), ", ".join(sorted(PROBE_OPTIONS))))
        given = value[key]
        try:
            if kind == "bool":
                options[key] = check_type_bool(given)
            elif kind == "float":
                options[key] = check_type_float(given)
                if isinstance(given, bool) or not 0 < options[key] < math.inf:
                    raise TypeError(given)
            elif kind == "list":
                if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
                    raise TypeError(given)
                options[key] = list(given)
            elif not isinstance(given, str) or not given.startswith("/"):
                raise TypeError(given)
            else:
                options[key] = given
        except TypeError:
            wanted = {"bool": "true or false", "float": "a number of seconds above 0", "path": "an absolute path",
                      "list": "a list of tinygrad backends (cuda, nv, amd, cpu)"}
            raise SettingError("%s.%s is %s; give %s" % (name, key, show(given), wanted[kind]))
    return options


def _as_auto_bool(name, value):
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        return check_type_bool(value)
    except TypeError:
        raise SettingError("%s is %s; give auto, true or false" % (name, show(value)))


# What meta/argument_specs.yml cannot say about a variable (role_settings.check() describes the keys):
# the ranges, the patterns, and the kinds the spec has no type for (read by the functions above).
RULES = {
    "exo_driver_branch": {"read": _as_branch},
    "exo_driver_kernel_module": {"read": _as_auto_bool},
    "exo_driver_extra_packages": {"read": _as_packages},
    "exo_driver_min_free_mib": {"range": (0, None)},
    # A reboot takes more than a minute on any server; a day is past any firmware's patience.
    "exo_driver_reboot_timeout": {"range": (60, 86400)},
    "exo_driver_probe_options": {"read": _as_probe_options},
    "exo_driver_rpm_key_fingerprints": {"read": _as_fingerprints},
    "exo_driver_debian_mirror": _url(DEFAULTS["exo_driver_debian_mirror"]),
    "exo_driver_debian_security_mirror": _url(DEFAULTS["exo_driver_debian_security_mirror"]),
    # null (their default): Canonical's mirror for the host's architecture (distributions.UBUNTU["mirrors"])
    "exo_driver_ubuntu_mirror": _url("http://archive.ubuntu.com/ubuntu"),
    "exo_driver_ubuntu_security_mirror": _url("http://security.ubuntu.com/ubuntu"),
    "exo_driver_cuda_repo_base": _url(DEFAULTS["exo_driver_cuda_repo_base"]),
    "exo_driver_cuda_repo_key": {"match": (FILE_NAME_RE, "; give a file name under the repository URL, such as %s"
                                                         % DEFAULTS["exo_driver_cuda_repo_key"])},
}


def check_settings(raw):
    """The settings coerced the way Ansible reads them, and the problems: (values, errors).

    A variable missing from raw takes the role's default. One error per bad variable.
    """
    return role_settings.check("driver", raw, RULES, OUTPUTS)


# ---- facts --------------------------------------------------------------------------------------

def check_facts(caps):
    """Problems that make device_capabilities unusable here; empty when they follow schema 1."""
    if not isinstance(caps, dict):
        return ["ansible_facts.device_capabilities is %s, not the facts of gpufleet.exo.device_facts; %s"
                % (show(caps)[:80], FACTS_HINT)]
    if caps.get("schema_version") != 1:
        return ["ansible_facts.device_capabilities has schema_version %s; this role reads schema 1 (docs/facts.md); %s"
                % (show(caps["schema_version"]) if "schema_version" in caps else "(missing)", FACTS_HINT)]
    shapes = (("pci", list), ("nvml", dict), ("gpus", list), ("driver_needed", bool), ("driver_reason", str))
    lacking = [key for key, shape in shapes if not isinstance(caps.get(key), shape)]
    if lacking:
        return ["ansible_facts.device_capabilities lacks %s (partial or foreign facts); %s"
                % (", ".join(lacking), FACTS_HINT)]
    nvml_lacking = [key for key in ("status", "message", "driver_version") if key not in caps["nvml"]]
    if nvml_lacking or not isinstance(caps["nvml"].get("status"), str):
        return ["ansible_facts.device_capabilities.nvml lacks %s (partial or foreign facts); %s"
                % (", ".join(nvml_lacking) or "a status", FACTS_HINT)]
    for device in caps["pci"]:
        device_lacking = [key for key in ("bus_id", "vendor", "driver")
                          if not isinstance(device, dict) or not isinstance(device.get(key), str)]
        if device_lacking:
            return ["ansible_facts.device_capabilities.pci entry %s lacks %s (partial or foreign facts); %s"
                    % (show(device)[:80], ", ".join(device_lacking), FACTS_HINT)]
    return []


# ---- the decision -------------------------------------------------------------------------------

def in_container(facts):
    return (facts.get("virtualization_role") == "guest"
            and facts.get("virtualization_type") in CONTAINER_TYPES)


def classify(caps, branch, allow_upgrade):
    """The case of the decision table for these device facts.

    A pending reboot and a working NVML come first; otherwise the probe's own verdict,
    driver_needed, says whether the driver is missing, and the facts say which part.
    """
    managed, passthrough = nvidia_gpus(caps["pci"])
    status = caps["nvml"]["status"]
    if not managed and not passthrough:
        return "no_hardware"
    if not managed:
        return "passthrough"
    if status == "version_mismatch":
        return "version_mismatch"
    if status == "ok":
        running = (caps["nvml"]["driver_version"] or "").split(".")[0]
        if not branch or running == branch:
            return "ok"
        return "upgrade" if allow_upgrade else "branch_differs"
    if caps["driver_needed"]:
        if any(device["driver"] == "nouveau" for device in managed):
            return "nouveau"
        if status in DRIVER_MISSING:
            return status
        return "unbound"
    if status in UNHEALTHY:
        return "unhealthy"
    return "bound_unchecked"


def decision(facts, case):
    caps = facts["device_capabilities"]
    managed, passthrough = nvidia_gpus(caps["pci"])
    drivers = []
    for device in managed:
        if device["driver"] not in drivers:
            drivers.append(device["driver"])
    action, reason = CASES[case]
    return {
        "case": case,
        "action": action,
        "reason": reason,
        "nvml_status": caps["nvml"]["status"],
        "nvml_message": caps["nvml"]["message"],
        "driver_version": caps["nvml"]["driver_version"],
        "gpus": [device["bus_id"] for device in managed],
        "drivers": drivers,
        "passthrough": [device["bus_id"] for device in passthrough],
        "nouveau": [device["bus_id"] for device in managed if device["driver"] == "nouveau"],
        "nvml_gpus": len(caps["gpus"]),
        "container": facts.get("virtualization_type") if in_container(facts) else None,
    }


# ---- the plan per distribution ------------------------------------------------------------------

def _format(names, templates):
    return [template % names for template in templates]


def _apt_repository(table, codename, mirror, security_mirror):
    repository = {"kind": "apt", "file": distributions.APT_SOURCES_FILE}
    repository.update(table["repository"])
    repository["sources"] = [{"uri": mirror, "suite": codename}, {"uri": mirror, "suite": codename + "-updates"},
                             {"uri": security_mirror, "suite": codename + "-security"}]
    return repository


def _debian(table, release, branch, s, kernel_module, facts, problem):
    major = str(facts["distribution_major_version"])
    packaging = table["packagings"].get(release["branches"].get(branch))
    names = {"branch": branch}
    if packaging is None:
        problem("exo_driver_branch", "branch %s is not packaged for Debian %s: its branches are %s; set "
                "exo_driver_branch to one of them" % (branch, major, ", ".join(release["branches"])))
        packaging = {"kernel": None, "kernel_open": None, "compute": [], "full": [], "library": None}
    kernel_name = packaging["kernel_open" if s["exo_driver_open_kernel_modules"] else "kernel"]
    if packaging["library"] and kernel_module and not kernel_name:
        problem("exo_driver_open_kernel_modules", "Debian %s packages no open kernel modules for branch %s; set "
                "exo_driver_open_kernel_modules: false" % (major, branch))
    userspace = _format(names, packaging["compute"] + (packaging["full"] if s["exo_driver_flavor"] == "full" else []))
    kernel_packages = (([kernel_name % names] if kernel_name else []) + ["dkms", "linux-headers-" + facts["kernel"]]
                       if kernel_module else [])
    # The kernel module and the NVML library must come in the same upstream version.
    version_match = (_format(names, ([kernel_name] if kernel_module and kernel_name else []) + [packaging["library"]])
                     if packaging["library"] else [])
    return {
        "distribution": "Debian %s (%s)" % (major, release["codename"]),
        "repositories": [_apt_repository(table, release["codename"], s["exo_driver_debian_mirror"],
                                         s["exo_driver_debian_security_mirror"])],
        "kernel_module": "dkms" if kernel_module else "none",
        "kernel_packages": kernel_packages,
        "userspace": userspace,
        "optional_packages": ["python3-pynvml"] if s["exo_driver_install_nvml_python"] else [],
        "version_match": version_match,
        "hold": ([name for name in kernel_packages if not name.startswith("linux-headers-") and name != "dkms"]
                 + userspace) if s["exo_driver_hold"] else [],
        "module_stream": None,
    }


def _ubuntu(table, release, branch, s, kernel_module, facts, problem):
    mode = s["exo_driver_ubuntu_modules"] if kernel_module else "none"
    packages = table["modes"][mode]
    names = {"branch": branch, "open": "-open" if s["exo_driver_open_kernel_modules"] else "",
             "kernel": facts["kernel"]}
    kernel_packages = _format(names, packages["kernel"])
    userspace = _format(names, packages["userspace"] + (table["full"] if s["exo_driver_flavor"] == "full" else []))
    mirrors = table["mirrors"]["x86_64" if facts.get("architecture", "x86_64") == "x86_64" else "other"]
    return {
        "distribution": "Ubuntu %s (%s)" % (facts["distribution_version"], release["codename"]),
        "repositories": [_apt_repository(table, release["codename"], s["exo_driver_ubuntu_mirror"] or mirrors["archive"],
                                         s["exo_driver_ubuntu_security_mirror"] or mirrors["security"])],
        "kernel_module": mode,
        "kernel_packages": kernel_packages,
        "userspace": userspace,
        "optional_packages": ["python3-pynvml"] if s["exo_driver_install_nvml_python"] else [],
        "version_match": _format(names, ([packages["versioned_kernel"]] if kernel_module else []) + [table["library"]]),
        "hold": ([name for name in kernel_packages if not name.startswith("linux-headers-")] + userspace
                 if s["exo_driver_hold"] else []),
        "module_stream": None,
    }


def _redhat(table, release, branch, s, kernel_module, facts, problem):
    architecture = facts.get("architecture", "x86_64")
    if architecture not in table["cuda_arches"]:
        problem(None, "NVIDIA publishes no CUDA repository for architecture %s (only for %s); install the driver "
                "yourself" % (architecture, ", ".join(sorted(table["cuda_arches"]))))
    packaging = table["packagings"]["open" if s["exo_driver_open_kernel_modules"] else "proprietary"]
    names = {"branch": branch, "major": str(facts["distribution_major_version"])}
    cuda_url = "%s/%s/%s" % (s["exo_driver_cuda_repo_base"], release["repo"],
                             table["cuda_arches"].get(architecture, architecture))
    kernel_packages = packaging["kernel"] + ["kernel-devel-" + facts["kernel"]] if kernel_module else []
    fingerprints = _key_fingerprints(table, s, names["major"], problem)
    return {
        "distribution": "%s %s" % (facts["distribution"], names["major"]),
        "repositories": [
            {"kind": "epel", "package": table["epel"].get(facts["distribution"], "epel-release") % names,
             "needed": kernel_module, "key": table["epel_key"] % names, "fingerprint": fingerprints["epel"]},
            {"kind": "yum", "name": "cuda-%s-%s" % (release["repo"], architecture), "baseurl": cuda_url,
             "gpgkey": "%s/%s" % (cuda_url, s["exo_driver_cuda_repo_key"]), "fingerprint": fingerprints["cuda"]},
        ],
        "kernel_module": "dkms" if kernel_module else "none",
        "kernel_packages": kernel_packages,
        "userspace": table["compute"] + (packaging["full"] if s["exo_driver_flavor"] == "full" else []),
        "optional_packages": [],
        "version_match": [],
        # The enabled module stream is the lock: dnf never leaves it for another branch.
        "hold": [],
        "module_stream": "nvidia-driver:" + packaging["stream"] % names,
    }


def _key_fingerprints(table, s, major, problem):
    """The fingerprint each repository key is imported with: exo_driver_rpm_key_fingerprints, else the table's
    (distributions.REDHAT["key_fingerprints"]); a key the table does not know needs the variable."""
    known = table["key_fingerprints"]
    given = s["exo_driver_rpm_key_fingerprints"]
    found = {"cuda": given.get("cuda") or known["cuda"].get(s["exo_driver_cuda_repo_key"]),
             "epel": given.get("epel") or known["epel"][major]}
    if not found["cuda"]:
        problem("exo_driver_cuda_repo_key", "the role knows the fingerprint of %s only, and imports no key it cannot "
                "check; set exo_driver_rpm_key_fingerprints.cuda to the fingerprint NVIDIA publishes for this key"
                % ", ".join(sorted(known["cuda"])))
    return found


BUILDERS = {"Debian": _debian, "Ubuntu": _ubuntu, "RedHat": _redhat}


def _package_check(table, plan, s, facts):
    """The arguments of the package check module (driver_apt_check, driver_dnf_check) for this plan."""
    required = plan["kernel_packages"] + plan["packages"]
    if table["package_manager"] == "apt":
        return {"repositories": plan["repositories"], "packages": required,
                "optional_packages": plan["optional_packages"], "version_match": plan["version_match"],
                "kernel": facts["kernel"], "distribution": plan["distribution"], "branch": plan["branch"]}
    epel, cuda = plan["repositories"]
    repositories = [{"id": cuda["name"], "baseurl": cuda["baseurl"]}]
    if epel["needed"]:
        names = {"major": facts["distribution_major_version"], "architecture": facts.get("architecture", "x86_64")}
        repositories.append({"id": "gpufleet-exo-epel", "baseurl": table["epel_baseurl"] % names})
    extra = s["exo_driver_extra_packages"] + table["hold"]["tool_packages"]
    devel = [name for name in plan["kernel_packages"] if name.startswith("kernel-devel-")]
    return {"repositories": repositories, "stream": plan["module_stream"],
            "stream_packages": [name for name in plan["packages"] if name not in extra]
            + [name for name in plan["kernel_packages"] if name not in devel],
            "other_packages": devel + extra + (["dkms"] if plan["kernel_module"] == "dkms" else []),
            "kernel": facts["kernel"], "distribution": plan["distribution"]}


def _distribution_plan(host, facts, s, raw, decided, kernel_module, problems):
    """(plan, package check arguments) for a host that gets the driver, or (None, None) after a problem."""
    why = "%s needs the NVIDIA driver (%s)" % (host, decided["reason"])
    table = distributions.family(facts.get("distribution"))
    if table is None:
        problems.append("host %s but runs %s %s, which this role does not install on. Supported: %s. Install the "
                        "driver yourself; the host will then read as healthy."
                        % (why, facts.get("distribution"), facts.get("distribution_version"), distributions.SUPPORTED))
        return None, None
    release = table["releases"].get(str(facts.get(table["release_fact"])))
    dropped = table.get("dropped", {}).get(str(facts.get(table["release_fact"])))
    if dropped:
        problems.append("host %s but runs %s %s, which this role no longer installs on: %s. Install the driver "
                        "yourself; the host will then read as healthy." % (
                            why, facts["distribution"], facts.get(table["release_fact"]), dropped))
        return None, None
    if release is None:
        problems.append("host %s but runs %s %s; the releases this role knows for %s are %s. Install the driver "
                        "yourself; the host will then read as healthy." % (
                            why, facts["distribution"], facts.get(table["release_fact"]), facts["distribution"],
                            ", ".join(table["releases"])))
        return None, None

    def problem(name, text):
        given = ("%s is %s: " % (name, show(raw.get(name, DEFAULTS.get(name))))) if name else ""
        problems.append("host %s: %s%s" % (host, given, text))

    branch = s["exo_driver_branch"] or release["default_branch"]
    if table["family"] != "Debian" and branch not in release["branches"]:
        problem("exo_driver_branch", "branch %s is not one this role installs on %s %s: its branches are %s; set "
                "exo_driver_branch to one of them" % (branch, facts["distribution"],
                                                      facts.get(table["release_fact"]), ", ".join(release["branches"])))
    built = BUILDERS[table["family"]](table, release, branch, s, kernel_module, facts, problem)
    if s["exo_driver_flavor"] == "full" and not kernel_module:
        problem("exo_driver_flavor", "exo_driver_flavor full needs the kernel module (the full driver depends on it), "
                "which this host does not get (%s); use flavor compute for user space only"
                % _no_kernel_module_why(s, decided))
    plan = {
        "distribution": built["distribution"],
        "branch": branch,
        "package_manager": table["package_manager"],
        "repositories": built["repositories"],
        "kernel_module": built["kernel_module"],
        "kernel_packages": built["kernel_packages"],
        "packages": built["userspace"] + s["exo_driver_extra_packages"]
        + (table["hold"]["tool_packages"] if s["exo_driver_hold"] else []),
        "optional_packages": built["optional_packages"],
        "version_match": built["version_match"],
        "hold": built["hold"],
        # How the role holds them after the install (None: exo_driver_hold is false), and how apt or dnf installs
        # them: an upgrade moves the packages already there too.
        "hold_mechanism": table["hold"]["mechanism"] if s["exo_driver_hold"] else None,
        "install_state": "latest" if decided["action"] == "upgrade" else "present",
        "family": table["distributions"][0],
        "module_stream": built["module_stream"],
        "persistenced_service": table["persistenced_service"],
        "mok_key": table["mok_key"],
        "initramfs_command": table["initramfs_command"],
        "nouveau_blacklist": bool(s["exo_driver_blacklist_nouveau"] and kernel_module and decided["nouveau"]),
        "kernel_module_why": None if kernel_module else _no_kernel_module_why(s, decided),
    }
    return plan, _package_check(table, plan, s, facts)


def _no_kernel_module_why(s, decided):
    if s["exo_driver_kernel_module"] == "auto":
        return "the host is a %s container that shares the kernel of the machine it runs on" % decided["container"]
    return "exo_driver_kernel_module is false"


def _reboot_blocker(s, host, connection, container):
    """Why a reboot the driver needs would not happen, or None when the role may reboot."""
    if connection == "local" or host in ("localhost", "127.0.0.1", "::1"):
        return "the connection is local (the controller would reboot itself)"
    if not s["exo_driver_reboot"]:
        return "exo_driver_reboot is false"
    if container:
        return "the host is a %s container: reboot the machine it runs on" % container
    return None


def _messages(facts, s, decided, install_plan):
    """The messages the install steps may need, worded once the plan is known."""
    return {
        "space_problems": space_problems(facts.get("mounts"), s["exo_driver_min_free_mib"]),
        "secure_boot_advice": secure_boot_advice(install_plan, facts.get("distribution")),
        "would_install": "would install " + " ".join(install_plan["kernel_packages"] + install_plan["packages"]),
        "upgrade_reboot_reason": "the running nvidia module is %s; branch %s loads at the next boot"
                                 % (decided["driver_version"], install_plan["branch"]),
        "nouveau_reboot_reason": "nouveau holds %s until a reboot (blacklisted in %s)"
                                 % (", ".join(decided["nouveau"] or []), NOUVEAU_CONF),
    }


def plan(facts, raw_settings, host, connection=None):
    """What the driver role does on this host; see the module docstring and plugins/filter/driver_plan.yml."""
    result = {"errors": [], "settings": None, "decision": None, "plan": None, "package_check": None,
              "changes_host": False, "kernel_module": None, "reboot_required": False, "reboot_reason": None, "reboot_blocker": None,
              "notes": [], "nvidia_module": None, "persistenced_service": "nvidia-persistenced", "messages": {},
              "summary": None, "nouveau_conf": NOUVEAU_CONF, "versions": None}
    raw = dict(raw_settings or {})
    values, errors = check_settings(raw)
    errors += check_facts((facts or {}).get("device_capabilities"))
    if errors:
        result["errors"] = ["host %s: %s" % (host, error) for error in errors]
        return result
    caps = facts["device_capabilities"]
    case = classify(caps, values["exo_driver_branch"], values["exo_driver_allow_upgrade"])
    decided = decision(facts, case)
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
        result["plan"], result["package_check"] = _distribution_plan(
            host, facts, values, raw, decided, kernel_module, problems)
        result["errors"] = problems
        if result["plan"]:
            result["persistenced_service"] = result["plan"]["persistenced_service"]
            result["messages"] = _messages(facts, values, decided, result["plan"])
        if decided["nouveau"] and kernel_module and not values["exo_driver_blacklist_nouveau"]:
            result["notes"].append("nouveau holds %s and exo_driver_blacklist_nouveau is false: the nvidia module "
                                   "cannot take it" % ", ".join(decided["nouveau"]))
    table = distributions.family(facts.get("distribution"))
    result["versions"] = driver_versions(facts.get("packages"), table) if table else None
    if result["versions"] and result["versions"]["mixed"]:
        result["notes"].append("host %s: %s" % (host, result["versions"]["advice"]))
    result["summary"] = {"action": decided["action"], "why": decided["reason"],
                         "nvml": decided["nvml_status"], "gpus": decided["gpus"],
                         "passthrough (left alone)": decided["passthrough"]}
    if result["plan"]:
        result["summary"]["plan"] = result["plan"]
    if result["versions"] and result["versions"]["installed"]:
        result["summary"]["driver packages"] = result["versions"]
    return result


# Where the nouveau blacklist goes; the same path on every supported distribution.
NOUVEAU_CONF = "/etc/modprobe.d/gpufleet-exo-nouveau.conf"


# ---- what a run of the role found ---------------------------------------------------------------

# Where packages and modules go: each must have exo_driver_min_free_mib free.
SPACE_PATHS = ("/usr", "/var", "/tmp")
MIB = 1024 * 1024
# Why the kernel module is not loaded after the role ran, by cause (see verify()).
UNLOADED_WHY = {
    "container": "the nvidia kernel module is not loaded because this host is a %(container)s container: it shares "
                 "the kernel (%(kernel)s) of the machine it runs on, so the module must be installed and loaded on "
                 "that machine and its /dev/nvidia* devices passed into the container. User space is installed here.",
    "userspace_only": "the nvidia kernel module is not loaded: exo_driver_kernel_module is false, so only user space "
                      "was installed. Install the module for kernel %(kernel)s by other means.",
    "reboot_pending": "the nvidia kernel module is not loaded yet: reboot pending (%(reboot_reason)s)",
    "module_missing": "the nvidia kernel module is not loaded and modprobe cannot find it for kernel %(kernel)s: DKMS "
                      "did not build it (see `dkms status` and /var/lib/dkms/nvidia*/*/build/make.log).",
}


def space_problems(mounts, min_free_mib, paths=SPACE_PATHS):
    """A problem per file system holding one of paths with less than min_free_mib free (ansible_facts.mounts)."""
    problems, seen = [], set()
    for path in paths:
        holding = [m for m in mounts or [] if path == m.get("mount") or path.startswith(m.get("mount", "").rstrip("/") + "/")]
        if not holding:
            continue
        mount = max(holding, key=lambda m: len(m["mount"]))
        free = int(mount.get("size_available") or 0) // MIB
        if mount["mount"] not in seen and free < min_free_mib:
            problems.append("%s has %d MiB free; the driver needs %d MiB (exo_driver_min_free_mib): free some space "
                            "first" % (mount["mount"], free, min_free_mib))
        seen.add(mount["mount"])
    return problems


def secure_boot_advice(install_plan, distribution):
    """What to do when Secure Boot would refuse the DKMS-built module."""
    return ("Secure Boot is on and the key that signs DKMS modules (%s) is not enrolled, so the kernel would refuse "
            "the nvidia module. Either enroll it: after the install run `mokutil --import %s`, reboot and confirm the "
            "enrollment at the console; or turn Secure Boot off in the firmware%s. exo_driver_secure_boot: continue "
            "installs anyway." % (install_plan["mok_key"], install_plan["mok_key"],
                                  "; or use Canonical's signed modules (exo_driver_ubuntu_modules: prebuilt)"
                                  if distribution == "Ubuntu" else ""))


def secure_boot_on(sb_state, efivar):
    """Whether Secure Boot is on, from `mokutil --sb-state` and the EFI variable's byte (od's output)."""
    return "SecureBoot enabled" in (sb_state or "") or (efivar or "").strip() == "1"


# ---- the driver's packages: one version, held ---------------------------------------------------

def upstream_version(entry):
    """The driver's version of a package as ansible_facts.packages gives it: no epoch, no packaging revision.

    dpkg's version carries the revision ("535.261.03-1~deb12u1"), rpm's has it apart (release) and the epoch
    apart too.
    """
    version = str(entry.get("version") or "").split(":", 1)[-1]
    if entry.get("release") is None and "-" in version:
        version = version.rsplit("-", 1)[0]
    return version


def _version_key(version):
    return [int(part) if part.isdigit() else part for part in re.split(r"[.+~]", version)]


def driver_packages(packages, table):
    """The driver's packages installed, by name, with the version the facts give ({} without package facts)."""
    names = re.compile(table["driver_packages"]["names"])
    return dict((name, entries[0]) for name, entries in sorted((packages or {}).items())
                if names.match(name) and entries)


def driver_versions(packages, table):
    """Whether the driver's packages installed (ansible_facts.packages, from ansible.builtin.package_facts) carry one
    version, and what to do when they do not.

    The user-space libraries, the kernel module package, the persistence daemon and the fabric manager come from
    one upstream release; a host where they differ (an upgrade of some of them, a fabric manager from elsewhere)
    fails with "Driver/library version mismatch" or CUDA error 802 until they agree. None without package facts.
    """
    if packages is None:
        return None
    installed = driver_packages(packages, table)
    own = re.compile(table["driver_packages"]["own_version"] or "^$")
    by_version = {}
    for name, entry in installed.items():
        if not own.match(name):
            by_version.setdefault(upstream_version(entry), []).append(name)
    found = {"installed": dict((name, _shown(entry)) for name, entry in installed.items()),
             "versions": by_version, "mixed": len(by_version) > 1, "advice": None}
    if found["mixed"]:
        newest = max(by_version, key=_version_key)
        behind = sorted(name for version, names in by_version.items() if version != newest for name in names)
        hold = table["hold"]
        pins = " ".join(hold["pin"] % {"package": name, "version": newest} for name in behind)
        found["advice"] = (
            "the driver's packages carry %d versions: %s. NVML and CUDA fail (Driver/library version mismatch, CUDA "
            "error 802 with a fabric manager) until they agree. Move them to one version, the newest: `%s`, then "
            "reboot so that the kernel module loaded is that version too; or run this role with exo_driver_branch "
            "and exo_driver_allow_upgrade: true to move them to its branch." % (
                len(by_version), "; ".join("%s (%s)" % (version, ", ".join(
                    "%s %s" % (name, found["installed"][name]) for name in by_version[version]))
                    for version in sorted(by_version, key=_version_key)),
                hold["align"] % {"pins": pins, "names": " ".join(behind)}))
    return found


def _shown(entry):
    # As the package manager shows it: dpkg's version whole, rpm's version-release.
    return entry["version"] if entry.get("release") is None else "%s-%s" % (entry["version"], entry["release"])


def to_hold(policy, packages):
    """The packages to hold after an install: those the plan named and every driver package found installed."""
    install_plan = policy.get("plan") or {}
    if not install_plan.get("hold_mechanism"):
        return []
    table = distributions.family(install_plan["family"])
    named = install_plan["hold"]
    return named + [name for name in driver_packages(packages, table) if name not in named]


def held_to_release(selections, policy):
    """The held driver packages (dpkg-query lines "name want"): an upgrade releases them all, moves them together
    and holds them again."""
    names = re.compile(distributions.family(policy["plan"]["family"])["driver_packages"]["names"])
    return [line.split()[0] for line in selections or []
            if len(line.split()) == 2 and line.split()[1] == "hold" and names.match(line.split()[0])]


VERSIONLOCK_RE = re.compile(r"^(?P<name>.+?)-(?:[0-9]+:)?[^-:]+-[^-]+$")


def versionlocked(lines):
    """The package names of `dnf versionlock list` ("nvidia-driver-cuda-3:580.95.05-1.el9.*")."""
    return [match.group("name") for match in (VERSIONLOCK_RE.match(line.strip().rstrip("*").rstrip("."))
                                              for line in lines or []) if match]


def stream_enabled(module_list, stream):
    """Whether `dnf module list --enabled nvidia-driver` shows the plan's stream (nvidia-driver:<stream>)."""
    return stream.split(":", 1)[1] in module_streams(module_list or "")


def after_modprobe(stderr, mok_key):
    """(reboot_required, reboot_reason, module_missing) when `modprobe nvidia` failed with stderr."""
    stderr = stderr or ""
    refused = "Key was rejected" in stderr
    absent = "not found" in stderr
    if refused:
        reason = ("Secure Boot refused the nvidia module: enroll %s with mokutil --import and confirm it at the console "
                  "during the reboot" % mok_key)
    else:
        reason = "modprobe nvidia failed (%s); it loads at the next boot" % stderr.strip()
    return {"reboot_required": refused or not absent, "reboot_reason": reason, "module_missing": absent}


def verify(policy, before, caps, module_loaded, reboot_required, reboot_reason, module_missing, kernel):
    """exo_driver_result: NVML before and after the change, and why the driver is not up when it is not."""
    nvml = caps["nvml"]
    container = policy["decision"]["container"]
    if nvml["status"] == "ok":
        cause = "ok"
    elif reboot_required:
        cause = "reboot_pending"
    elif module_loaded:
        cause = "unexplained"
    elif container and not policy["kernel_module"]:
        cause = "container"
    elif not policy["kernel_module"]:
        cause = "userspace_only"
    elif module_missing:
        cause = "module_missing"
    else:
        cause = "unexplained"
    if cause == "ok":
        explanation = "driver %s loaded; NVML sees %d GPU(s)" % (nvml.get("driver_version"), len(caps["gpus"]))
    else:
        explanation = "NVML answers %s (%s)" % (nvml["status"], nvml.get("message") or "no message")
        if cause in UNLOADED_WHY:
            explanation += ": " + UNLOADED_WHY[cause] % {"container": container, "kernel": kernel,
                                                         "reboot_reason": reboot_reason}
    return {"nvml_before": before["status"], "nvml_after": nvml["status"], "nvml_message": nvml.get("message"),
            "driver_version": nvml.get("driver_version"), "gpus": len(caps["gpus"]), "cause": cause,
            "explanation": explanation}


def outcome(policy, selections=None, module_list=None, sb_state=None, sb_efivar=None, modprobe=None, verified=None,
            packages=None, versionlock=None):
    """What the install steps found, from what their tasks registered; each part only when its input is given.

    packages (ansible_facts.packages after the install) gives hold (the packages to hold), versions (whether they
    carry one version) and, with versionlock (the lines of `dnf versionlock list`), lock (those dnf does not lock
    yet) and unlock (the driver packages it locks, released before an upgrade).

    verified: {"before", "caps", "module_loaded", "reboot_required", "reboot_reason", "module_missing", "kernel"}.
    """
    install_plan = policy.get("plan") or {}
    found = {"release": None, "stream_enabled": None, "secure_boot": secure_boot_on(sb_state, sb_efivar),
             "modprobe": None, "result": None, "hold": None, "lock": None, "unlock": None, "versions": None}
    if selections is not None:
        found["release"] = held_to_release(selections, policy)
    if packages is not None:
        hold = to_hold(policy, packages)
        locked = versionlocked(versionlock) if versionlock is not None else []
        table = distributions.family(install_plan["family"])
        found.update(hold=hold, lock=[name for name in hold if name not in locked],
                     unlock=[name for name in locked if re.match(table["driver_packages"]["names"], name)],
                     versions=driver_versions(packages, table))
    if module_list is not None:
        found["stream_enabled"] = stream_enabled(module_list, install_plan["module_stream"])
    if modprobe is not None:
        found["modprobe"] = after_modprobe(modprobe, install_plan.get("mok_key"))
    if verified is not None:
        found["result"] = verify(policy, **verified)
    return found
