# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's settings: what meta/argument_specs.yml cannot say about its exo_driver_* variables
(ranges, patterns, the kinds the spec has no type for), and check_settings(), which reads them as Ansible
does and names every bad one.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible.module_utils.common.validation import check_type_bool, check_type_float

from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, show

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
