# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's settings: each exo_node_* variable coerced and checked, one message per bad value.

settings() returns (values, errors); check_account() looks at the service user on the host. A
message names the variable, the value as given and what to do.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, as_bool, as_number, show
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.health import VERDICTS

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")
ACCOUNT_RE = re.compile(r"^[a-z_][a-z0-9_-]*[$]?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What an env file value may not hold: systemd would read it differently from what was written.
ENV_VALUE_BAD_RE = re.compile(r'[\n"\\$]')
DEVICE_ALLOW_RE = re.compile(r"^(/dev/\S+|char-\S+|block-\S+)( [rwm]{1,3})?$")

# The settings the planner reads: type and, for numbers, the accepted range. Lists given as a
# string (what `-e name=value` gives) are split on commas where an entry cannot hold one; the
# others must be given as a list (YAML or JSON, `-e '{"name": [...]}'`).
SETTINGS = {
    "exo_node_gpus": ("list", ","),
    "exo_node_min_memory_mib": ("int", (0, None)),
    "exo_node_mig": ("bool", None),
    "exo_node_gpu_health": ("choice", VERDICTS),
    "exo_node_cpu_fallback": ("bool", None),
    "exo_node_tinygrad_backend": ("choice", ("auto", "cuda", "nv")),
    "exo_node_inference_engine": ("choice", ("tinygrad", "dummy")),
    "exo_node_id_prefix": ("name", NAME_RE),
    "exo_node_grpc_port": ("int", (1, 65535)),
    "exo_node_api_port": ("int", (1, 65535)),
    "exo_node_udp_port": ("int", (1, 65535)),
    "exo_node_broadcast_port": ("int", (1, 65535)),
    "exo_node_address": ("str", None),
    "exo_node_discovery": ("choice", ("manual", "udp")),
    "exo_node_cluster_hosts": ("list", ","),
    "exo_node_discovery_timeout": ("int", (0, 86400)),
    "exo_node_wait_for_peers": ("int", (0, 10000)),
    "exo_node_user": ("name", ACCOUNT_RE),
    "exo_node_group": ("name", ACCOUNT_RE),
    "exo_node_user_adopt": ("bool", None),
    "exo_node_config_dir": ("path", None),
    "exo_node_data_dir": ("path", None),
    "exo_node_install_dir": ("path", None),
    "exo_node_shared_home": ("bool", None),
    "exo_node_restart_sec": ("int", (0, 3600)),
    "exo_node_extra_args": ("list", None),
    "exo_node_extra_env": ("dict", None),
    "exo_node_cpu_affinity": ("bool", None),
    "exo_node_numa_policy": ("choice", ("", "preferred", "bind", "interleave")),
    "exo_node_device_allow_extra": ("list", None),
    "exo_node_max_exposure": ("float", (0.0, 10.0)),
    "exo_node_allow_removal": ("bool", None),
    "exo_node_mig_minors_path": ("path", None),
}

# exo flags the role sets from its own variables: an extra argument may not set them behind its back.
OWNED_FLAGS = {
    "--node-id": "exo_node_id_prefix",
    "--node-host": "exo_node_address",
    "--node-port": "exo_node_grpc_port",
    "--chatgpt-api-port": "exo_node_api_port",
    "--listen-port": "exo_node_udp_port",
    "--broadcast-port": "exo_node_broadcast_port",
    "--discovery-module": "exo_node_discovery",
    "--discovery-config-path": "exo_node_discovery",
    "--discovery-timeout": "exo_node_discovery_timeout",
    "--wait-for-peers": "exo_node_wait_for_peers",
    "--inference-engine": "exo_node_inference_engine",
    "--disable-tui": None,
}
# Environment the role sets for pinning and identity; tinygrad's own variables are added per version.
OWNED_ENV = {
    "CUDA_VISIBLE_DEVICES": "exo_node_gpus",
    "CUDA_DEVICE_ORDER": "exo_node_gpus",
    "EXO_HOME": "exo_node_data_dir",
    "HOME": "exo_node_data_dir",
    "EXO_NODE_ARGS": "exo_node_extra_args",
}
# The account comment the role gives the service user; an account without it is not the role's.
ACCOUNT_COMMENT = "exo nodes"


def as_list(name, value, split):
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                raise SettingError("%s is %s, which is not a JSON list; give a list, for example -e '{\"%s\": [0, 2]}'"
                                   % (name, show(value), name))
            if isinstance(parsed, list):
                return parsed
        if split:
            return [entry.strip() for entry in text.split(split)] if text else []
        raise SettingError("%s is the string %s; give a list, for example -e '{\"%s\": [\"...\"]}'"
                           % (name, show(value), name))
    raise SettingError("%s is %s; give a list" % (name, show(value)))


def _setting(name, value):
    kind, rule = SETTINGS[name]
    if kind == "list":
        return as_list(name, value, rule)
    if kind in ("int", "float"):
        return as_number(name, value, rule, whole=kind == "int")
    if kind == "bool":
        return as_bool(name, value)
    if kind == "dict":
        if not isinstance(value, dict):
            raise SettingError("%s is %s; give a mapping of names to values" % (name, show(value)))
        return dict(value)
    if not isinstance(value, str):
        raise SettingError("%s is %s; give a string" % (name, show(value)))
    if kind == "choice" and value not in rule:
        raise SettingError("%s is %s; choose one of %s" % (name, show(value), ", ".join(show(c) for c in rule)))
    if kind == "name" and not rule.match(value):
        raise SettingError("%s is %s; use letters, digits, '.', '_', '@' or '-', starting with a letter or digit"
                           % (name, show(value)) if rule is NAME_RE else
                           "%s is %s, which is not an account name" % (name, show(value)))
    if kind == "path" and not value.startswith("/"):
        raise SettingError("%s is %s; give an absolute path" % (name, show(value)))
    if kind == "str" and not value.strip():
        raise SettingError("%s is empty" % name)
    return value


def settings(raw):
    """The settings coerced and checked: (values, errors), one error per bad setting."""
    values, errors = {}, []
    for name in SETTINGS:
        if name not in raw:
            errors.append("%s is not set; the role's defaults set it, so include the role rather than its tasks" % name)
            continue
        try:
            values[name] = _setting(name, raw[name])
        except SettingError as problem:
            errors.append(str(problem))
    for name, check in (("exo_node_gpus", _check_gpus), ("exo_node_extra_args", _check_extra_args),
                        ("exo_node_extra_env", _check_extra_env), ("exo_node_device_allow_extra", _check_device_allow)):
        if name in values:
            errors.extend(check(values))
    return values, errors


def _check_gpus(values):
    return ["exo_node_gpus entry %s is not a GPU: give a UUID, an NVML index or a PCI bus id" % show(entry)
            for entry in values["exo_node_gpus"]
            if isinstance(entry, bool) or not isinstance(entry, (int, str)) or not str(entry).strip()]


def _check_extra_args(values):
    errors = []
    for arg in values["exo_node_extra_args"]:
        text = str(arg)
        flag = text.split("=", 1)[0]
        if not text.startswith("--") or re.search(r"\s", text):
            errors.append("exo_node_extra_args entry %s is not '--flag' or '--flag=value'; exo takes no more "
                          "positional words, and a value goes after '='" % show(arg))
        elif flag in OWNED_FLAGS:
            owner = OWNED_FLAGS[flag]
            errors.append("exo_node_extra_args entry %s sets %s, which the role sets%s" % (
                show(arg), flag, " from %s: set that instead" % owner if owner else "; remove it"))
    return errors


def _check_extra_env(values):
    errors = []
    for key, value in sorted(values["exo_node_extra_env"].items()):
        if not ENV_NAME_RE.match(str(key)):
            errors.append("exo_node_extra_env name %s is not an environment variable name" % show(key))
        elif key in OWNED_ENV:
            errors.append("exo_node_extra_env sets %s, which the role sets from %s; set that instead" % (
                key, OWNED_ENV[key]))
        elif not isinstance(value, (str, int, float)) or ENV_VALUE_BAD_RE.search(str(value)):
            errors.append("exo_node_extra_env %s is %s; a value is a string without newlines, quotes, "
                          "backslashes or '$'" % (key, show(value)))
    return errors


def _check_device_allow(values):
    return ["exo_node_device_allow_extra entry %s is not a DeviceAllow= value such as '/dev/foo rw'" % show(entry)
            for entry in values["exo_node_device_allow_extra"]
            if not isinstance(entry, str) or not DEVICE_ALLOW_RE.match(entry)]


def check_account(values, account):
    """Problems with the service user; account is its passwd entry on the host (getent) or None."""
    name = values["exo_node_user"]
    if name == "root" or (account and str(account[1]) == "0"):
        return ["exo_node_user is %s, a superuser; exo runs as an unprivileged system user the role creates "
                "(default exo)" % show(name)]
    if values["exo_node_user_adopt"]:
        if not account:
            return ["exo_node_user_adopt is true but the account %s does not exist on the host; create it first, "
                    "or let the role create it (exo_node_user_adopt: false)" % show(name)]
        return []
    if account and account[3] != ACCOUNT_COMMENT:
        return ["exo_node_user is %s, an existing account the role did not create (its comment is %s, not %s); "
                "the role would change its home and shell. Choose another name, or set exo_node_user_adopt: true "
                "to run exo as that account, left as it is" % (show(name), show(account[3]), show(ACCOUNT_COMMENT))]
    return []
