# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's settings: each exo_node_* variable coerced and checked, one message per bad value.

meta/argument_specs.yml says what each variable is, RULES below what the spec cannot say, and the
engine (plugins/plugin_utils/role_settings.py) reads them; the checks here that look at several
variables at once come after. check_settings() returns (values, errors); check_account() looks at the
service user on the host. A message names the variable, the value as given and what to do.

The role checks the settings once per host, in its preflight, and hands the values on: the planners
take them as they are and check them no more (checked.py keeps raw variables out of them).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import posixpath
import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet.capacity import MODELS
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_requirements as exo_requirements
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import confinement, proxy
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import CHECKED
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.firewall import client_errors
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")
ACCOUNT_RE = re.compile(r"^[a-z_][a-z0-9_-]*[$]?$")
# An interpreter is a path on the host, or a command its PATH finds.
COMMAND_RE = re.compile(r"^(/.*|[A-Za-z0-9._-]+)$")
RELEASE_RE = re.compile(r"^[0-9]+[.][0-9]+$")
# Empty where exo does not come from git (exo_node_source).
COMMIT_RE = re.compile(r"^([0-9a-fA-F]{40})?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What an env file value may not hold: systemd would read it differently from what was written.
ENV_VALUE_BAD_RE = re.compile(r'[\n"\\$]')
DEVICE_ALLOW_RE = re.compile(r"^(/dev/\S+|char-\S+|block-\S+)( [rwm]{1,3})?$")
# A GPU's own device node, a MIG instance's capability, or NVIDIA's whole class of devices: the role
# gives each GPU instance exactly its own (instances.py).
GPU_DEVICE_RE = re.compile(r"^(/dev/nvidia[0-9]+|/dev/nvidia-caps/|char-nvidia)")
# What systemd reads differently in a unit or environment file: it splits at whitespace, takes
# quotes and backslashes as quoting, '%' as a specifier and ';' as a command separator.
UNIT_PATH_RE = re.compile(r"^[^\s\"'\\$%;`\x00-\x1f\x7f]*$")
# $EXO_NODE_ARGS is split at whitespace and unquoted when exo starts: quotes and backslashes vanish,
# and a '$' is never expanded.
ARG_BAD_RE = re.compile(r"[\"'\\$]")

PORT = {"range": (1, 65535)}
UNIT_PATH = {"match": (UNIT_PATH_RE, "; the unit files name it, and systemd would read whitespace, control "
                                     "characters, quotes, backslashes, '$', '%', ';' or '`' in it differently: choose a "
                                     "path without them")}
ACCOUNT = {"match": (ACCOUNT_RE, ", which is not an account name; use lowercase letters, digits, '_' or '-', "
                                 "starting with a letter or '_'")}
NGINX_PATH = {"match": (proxy.NGINX_PATH_RE, "; give an absolute path on the host without whitespace, quotes, "
                                             "backslashes, ';', braces, '$' or '#', which nginx would read differently, "
                                             "or \"\" for none")}
RELEASE = {"match": (RELEASE_RE, "; give a major.minor release in quotes, such as \"3.10\"")}
# What meta/argument_specs.yml cannot say about a variable (role_settings.check() describes the keys).
# A list given as a string (what -e name=value gives) is split at commas unless "split" is None: an
# exo argument or a DeviceAllow= entry may hold a comma, so those must be JSON lists.
RULES = {
    "exo_node_python": {"match": (COMMAND_RE, "; give an absolute path or a command name such as python3.12")},
    # pip looks a short id up as a branch or tag name first, and a branch or tag can be moved.
    "exo_node_git_version": {"match": (COMMIT_RE, "; give the full 40-character id of exo's commit: a branch or tag "
                                                  "can move, and pip reads a short id as a branch or tag name first")},
    "exo_node_python_min_version": RELEASE,
    "exo_node_python_max_version": RELEASE,
    "exo_node_min_memory_mib": {"range": (0, None)},
    "exo_node_id_prefix": {"match": (NAME_RE, "; use letters, digits, '.', '_', '@' or '-', starting with a letter "
                                              "or digit")},
    "exo_node_grpc_port": PORT,
    "exo_node_ring_tunnel_port": PORT,
    "exo_node_api_port": PORT,
    "exo_node_udp_port": PORT,
    "exo_node_broadcast_port": PORT,
    "exo_node_address": {"match": (re.compile(r"\S"), ", which is empty; give the address other nodes reach this "
                                                      "host at")},
    "exo_node_discovery_timeout": {"range": (0, 86400)},
    "exo_node_wait_for_peers": {"range": (0, 10000)},
    "exo_node_ring_timeout": {"range": (0, 86400)},
    # An inventory group's name: it goes into each published instance and the fleet report.
    "exo_node_ring": {"match": (re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)?$"),
                                ", which is not the name of an inventory group; give the group of this ring's hosts, "
                                "or \"\" for one ring of the play's hosts")},
    "exo_node_ring_max_hosts": {"range": (1, 10000)},
    "exo_node_requests_in_flight": {"range": (1, 64)},
    "exo_node_request_queue": {"range": (0, 4096)},
    "exo_node_install_dir": UNIT_PATH,
    "exo_node_config_dir": UNIT_PATH,
    "exo_node_data_dir": UNIT_PATH,
    # The root watcher's unit gets it as ReadWritePaths= and its --metrics argument.
    "exo_node_health_textfile_dir": UNIT_PATH,
    "exo_node_user": ACCOUNT,
    "exo_node_group": ACCOUNT,
    "exo_node_restart_sec": {"range": (0, 3600)},
    "exo_node_extra_args": {"split": None},
    "exo_node_device_allow_extra": {"split": None},
    "exo_node_max_exposure": {"range": (0.0, 10.0)},
    # The health watcher's breaker (docs/health.md): a share of the host's GPUs, and resets an hour.
    "exo_node_health_max_out_share": {"range": (0.01, 1.0)},
    "exo_node_health_reset_per_gpu_per_hour": {"range": (0, 60)},
    "exo_node_health_reset_per_host_per_hour": {"range": (0, 60)},
    "exo_node_memory_percent": {"range": (1, 100)},
    "exo_node_egress": {"read": confinement.read_networks},
    "exo_node_api_proxy_port": PORT,
    # Never shown in a message, not even as given: the reader names an entry by its position.
    "exo_node_api_proxy_tokens": {"read": proxy.read_tokens},
    "exo_node_api_proxy_tls_certificate": NGINX_PATH,
    "exo_node_api_proxy_tls_key": NGINX_PATH,
    # A string is refused, not split: read as it was given, it became one origin per character.
    "exo_node_api_proxy_cors_origins": {"split": None},
}
# Facts the role publishes under the same prefix (roles/node/tasks/select.yml): not settings.
PUBLISHED = ("exo_node_instances", "exo_node_cpu_reason", "exo_node_ring_peer")

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
    "--no-disable-tui": None,
}
# Every long flag of exo e4238f9ef's parser (exo/main.py, lines 60-93; --disable-tui is a
# BooleanOptionalAction, which adds --no-disable-tui). argparse takes any unambiguous prefix of one
# (allow_abbrev), so an extra argument is matched against them as exo will match it.
EXO_FLAGS = (
    "--default-model", "--iters", "--save-every", "--data", "--batch-size", "--resume-checkpoint",
    "--save-checkpoint-dir", "--node-id", "--node-host", "--node-port", "--models-seed-dir", "--listen-port",
    "--download-quick-check", "--max-parallel-downloads", "--broadcast-port", "--discovery-module",
    "--discovery-timeout", "--discovery-config-path", "--wait-for-peers", "--chatgpt-api-port",
    "--chatgpt-api-response-timeout", "--max-generate-tokens", "--inference-engine", "--disable-tui",
    "--no-disable-tui", "--run-model", "--prompt", "--default-temp", "--tailscale-api-key", "--tailnet-name",
    "--node-id-filter", "--interface-type-filter", "--system-prompt", "--help",
)
# Directories of the system itself: the role sets the owner and mode of its directories, makes a
# virtualenv in the install directory and writes into the others.
SYSTEM_DIRS = frozenset((
    "/", "/bin", "/boot", "/dev", "/etc", "/etc/systemd", "/etc/systemd/system", "/home", "/lib", "/lib64", "/media",
    "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib",
    "/usr/lib64", "/usr/local", "/usr/local/bin", "/usr/local/lib", "/usr/sbin", "/usr/share", "/var", "/var/cache",
    "/var/lib", "/var/log", "/var/tmp",
))
# The directories the role owns or a root unit writes (ReadWritePaths=), each with an example.
DIRS = {"exo_node_install_dir": "/opt/exo", "exo_node_config_dir": "/etc/exo", "exo_node_data_dir": "/var/lib/exo",
        "exo_node_health_textfile_dir": "/var/lib/prometheus/node-exporter"}
# Environment the role sets for pinning and identity; tinygrad's own variables are added per version.
OWNED_ENV = {
    "CUDA_VISIBLE_DEVICES": "exo_node_gpus",
    "CUDA_DEVICE_ORDER": "exo_node_gpus",
    "EXO_HOME": "exo_node_data_dir",
    "HOME": "exo_node_data_dir",
    "TMPDIR": "exo_node_data_dir",
    "EXO_NODE_ARGS": "exo_node_extra_args",
    "GPUFLEET_EXO_PLACED_MODELS": "exo_node_models",
    "GPUFLEET_EXO_REQUESTS_IN_FLIGHT": "exo_node_requests_in_flight",
    "GPUFLEET_EXO_REQUEST_QUEUE": "exo_node_request_queue",
}
# The account comment the role gives the service user; an account without it is not the role's.
ACCOUNT_COMMENT = "exo nodes"


def check_settings(raw):
    """The settings coerced and checked: (values, errors), one error per bad setting.

    raw: the role's variables as given (roles/node/tasks/preflight.yml reads every exo_node_ one).
    Without an error the values carry CHECKED, which the planners ask for.
    """
    values, errors = role_settings.check("node", raw, RULES, PUBLISHED)
    for name, check in (("exo_node_gpus", _check_gpus), ("exo_node_extra_args", _check_extra_args),
                        ("exo_node_extra_env", _check_extra_env), ("exo_node_device_allow_extra", _check_device_allow),
                        ("exo_node_api_clients", lambda v: client_errors(v["exo_node_api_clients"])),
                        ("exo_node_models", check_models), ("exo_node_api_proxy", proxy.setting_errors),
                        ("exo_node_skip_requirements", _check_requirements), ("exo_node_install_dir", _check_dirs),
                        ("exo_node_address", _check_address), ("exo_node_firewall", _check_unguarded_clients),
                        ("exo_node_discovery", _check_udp_ports)):
        if name in values:
            errors.extend(check(values))
    if not errors:
        values[CHECKED] = True
    return values, errors


def exo_flag(flag):
    """(exo's flag that flag names as exo's parser reads it, or None; why it names none)."""
    if flag in EXO_FLAGS:
        return flag, None
    matches = [f for f in EXO_FLAGS if f.startswith(flag)]
    if len(matches) == 1:
        return matches[0], None
    if matches:
        return None, "which exo's parser finds ambiguous (%s) and refuses" % ", ".join(matches)
    return None, "which is not a flag of exo e4238f9ef (exo would exit: unrecognized arguments)"


def _check_dirs(values):
    errors = []
    for name, example in sorted(DIRS.items()):
        if name in values and posixpath.normpath(str(values[name])) in SYSTEM_DIRS:
            errors.append("%s is %s, a directory of the system: the role would change its owner and mode and write "
                          "into it; give a directory of exo's own, such as %s" % (name, show(values[name]), example))
    return errors


def _check_address(values):
    try:
        unspecified = ipaddress.ip_address(str(values["exo_node_address"]).strip()).is_unspecified
    except ValueError:
        return []
    if not unspecified:
        return []
    return ["exo_node_address is %s, every address: exo binds gRPC to it and the ring's other nodes would be told to "
            "reach this host there; give the address they reach it at" % show(values["exo_node_address"])]


def _check_udp_ports(values):
    if values["exo_node_discovery"] != "udp" or values.get("exo_node_udp_port") == values.get("exo_node_broadcast_port"):
        return []
    return ["exo_node_udp_port is %s and exo_node_broadcast_port %s: exo's UDP discovery listens on the first and "
            "broadcasts to the second, so no instance would hear another; give both the same port, or use "
            "exo_node_discovery: manual (the default)" % (values.get("exo_node_udp_port"), values.get("exo_node_broadcast_port"))]


def _check_unguarded_clients(values):
    if values["exo_node_firewall"] or not values.get("exo_node_api_clients"):
        return []
    return ["exo_node_api_clients lists %d client(s), but exo_node_firewall is false, so nothing limits who reaches "
            "the API and the list does nothing; set exo_node_firewall: true, or empty exo_node_api_clients"
            % len(values["exo_node_api_clients"])]


def _check_gpus(values):
    return ["exo_node_gpus entry %s is not a GPU: give a UUID, an NVML index or a PCI bus id" % show(entry)
            for entry in values["exo_node_gpus"]
            if isinstance(entry, bool) or not isinstance(entry, (int, str)) or not str(entry).strip()]


def _check_extra_args(values):
    errors = []
    for arg in values["exo_node_extra_args"]:
        text = str(arg)
        flag, unknown = exo_flag(text.split("=", 1)[0])
        if not text.startswith("--") or re.search(r"\s", text):
            errors.append("exo_node_extra_args entry %s is not '--flag' or '--flag=value'; exo takes no more "
                          "positional words, and a value goes after '='" % show(arg))
        elif ARG_BAD_RE.search(text):
            errors.append("exo_node_extra_args entry %s holds quotes, backslashes or '$', which systemd takes as "
                          "quoting when it splits the arguments (and never expands), so exo would not receive it as "
                          "written; leave them out" % show(arg))
        elif unknown:
            errors.append("exo_node_extra_args entry %s names %s, %s; give one of exo's flags in full"
                          % (show(arg), text.split("=", 1)[0], unknown))
        elif flag in OWNED_FLAGS:
            owner = OWNED_FLAGS[flag]
            errors.append("exo_node_extra_args entry %s sets %s, which the role sets%s" % (
                show(arg), flag, " from %s: set that instead" % owner if owner else "; remove it"))
    return errors


def _check_extra_env(values):
    errors = []
    for key, value in sorted(values["exo_node_extra_env"].items()):
        if not ENV_NAME_RE.match(str(key)):
            errors.append("exo_node_extra_env name %s is not an environment variable name; use letters, digits and "
                          "'_', not starting with a digit" % show(key))
        elif key in OWNED_ENV:
            errors.append("exo_node_extra_env sets %s, which the role sets from %s; set that instead" % (
                key, OWNED_ENV[key]))
        elif key == "HF_ENDPOINT" and values.get("exo_node_models"):
            errors.append("exo_node_extra_env sets HF_ENDPOINT while the role places exo_node_models, whose source "
                          "it sets (exo_node_model_source, exo_node_model_store; a mirror becomes HF_ENDPOINT); "
                          "give the mirror there instead")
        elif not isinstance(value, (str, int, float)) or ENV_VALUE_BAD_RE.search(str(value)):
            # Never the value itself: it may be a secret.
            errors.append("exo_node_extra_env %s is not a plain value (a %s%s); a value is a string without newlines, "
                          "quotes, backslashes or '$'" % (key, type(value).__name__,
                                                          " with one of those" if isinstance(value, str) else ""))
    return errors


# Read together: a name may be neither skipped nor replaced if it is tinygrad, which has a variable of its own.
REQUIREMENTS = ("exo_node_skip_requirements", "exo_node_replace_requirements", "exo_node_tinygrad_requirement",
                "exo_node_add_requirements")


def _check_requirements(values):
    if not all(name in values for name in REQUIREMENTS):
        return []
    return exo_requirements.check_settings(*(values[name] for name in REQUIREMENTS))


def _check_device_allow(values):
    errors = []
    for entry in values["exo_node_device_allow_extra"]:
        if not isinstance(entry, str) or not DEVICE_ALLOW_RE.match(entry):
            errors.append("exo_node_device_allow_extra entry %s is not a DeviceAllow= value such as '/dev/foo rw'"
                          % show(entry))
        elif GPU_DEVICE_RE.match(entry):
            errors.append("exo_node_device_allow_extra entry %s gives every instance a GPU's device node, or all of "
                          "them, which undoes each instance's pinning to its own GPU; the role allows each GPU "
                          "instance its own: choose the GPUs with exo_node_gpus" % show(entry))
    return errors


# The model ids exo's tinygrad engine has a repository for, and that repository (exo/models.py).
MODEL_REPOS = dict((model_id, repo) for model_id, _layers, repo, _source in MODELS)
# What exo_node_model_store must be for each source: a pattern and what to give instead.
STORE_RE = {
    "controller": (re.compile(r"^/[^\n]*$"), "an absolute path on the controller"),
    "host": (re.compile(r"^/[^\n]*$"), "an absolute path on the host"),
    "mirror": (re.compile(r"^https?://[^\s\"'\\$]+$"),
               "the http:// or https:// URL of a Hugging Face mirror, without whitespace, quotes, backslashes or '$'"),
}


def check_models(values):
    models = values["exo_node_models"]
    errors = ["exo_node_models entry %s is not a model exo's tinygrad engine serves; give one of %s"
              % (show(model), ", ".join(sorted(MODEL_REPOS))) for model in models if model not in MODEL_REPOS]
    source, store = values.get("exo_node_model_source"), str(values.get("exo_node_model_store") or "")
    if models and source in STORE_RE:
        pattern, what = STORE_RE[source]
        if not pattern.match(store):
            errors.append("exo_node_model_store is %s; with exo_node_model_source: %s and exo_node_models set, "
                          "give %s" % (show(store), source, what))
        # A mirror's files are checked only against what the mirror itself serves: over plain HTTP anyone
        # on the path can change the models exo downloads.
        elif source == "mirror" and store.startswith("http://") and values.get("exo_node_model_mirror_insecure") is not True:
            errors.append("exo_node_model_store is %s, a mirror over plain HTTP, where anyone on the path can change "
                          "the models exo downloads; give its https:// URL, or set exo_node_model_mirror_insecure: "
                          "true where the network is trusted" % show(store))
    return errors


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
