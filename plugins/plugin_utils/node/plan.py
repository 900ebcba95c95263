# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's policy: from the device facts and the exo_node_* settings, the exo instances of a host.

plan() takes what the role knows before it changes anything (the facts, the settings as the user
wrote them, what is configured on the host already) and returns
{"instances", "skipped", "errors", "warnings", "removed", "cpu_reason"}. An error names the host, the
variable, the value as given and what to do; the role stops on any before its first change.
cluster() checks what only the whole cluster shows and returns the topology's peers.
docs/node.md describes the policy in words.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os.path
import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import backend_refusals as backend_check
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, as_bool, as_number, show
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.conclusions import cpu_capabilities, gpu_capabilities
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.health import VERDICTS
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.pci import sysfs_bus_id

# Every GPU instance needs these besides its own /dev/nvidiaN.
GPU_DEVICES = ["/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]
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


# ---- settings -----------------------------------------------------------------------------------

def _as_list(name, value, split):
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
        return _as_list(name, value, rule)
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


# ---- facts --------------------------------------------------------------------------------------

FACT_KEYS = ("schema_version", "nvml", "gpus", "host", "tinygrad", "backend")
GPU_KEYS = ("index", "uuid", "name", "minor", "memory_mib", "pci_bus_id", "mig")


def check_facts(facts):
    """Problems with device_capabilities that make them unusable; an empty list when they follow schema 1."""
    hint = "gather them with gpufleet.exo.device_facts from this collection before the role (docs/facts.md)"
    if not isinstance(facts, dict):
        return ["ansible_facts.device_capabilities is %s, not the facts of gpufleet.exo.device_facts; %s"
                % (show(facts)[:80], hint)]
    missing = [key for key in FACT_KEYS if key not in facts]
    if missing:
        return ["ansible_facts.device_capabilities lacks %s; %s" % (", ".join(missing), hint)]
    if facts["schema_version"] != 1:
        return ["ansible_facts.device_capabilities has schema_version %s; this role reads 1; %s"
                % (show(facts["schema_version"]), hint)]
    if not isinstance(facts["nvml"], dict) or "status" not in facts["nvml"] or not isinstance(facts["gpus"], list):
        return ["ansible_facts.device_capabilities.nvml or .gpus is malformed; %s" % hint]
    for gpu in facts["gpus"]:
        lacking = [key for key in GPU_KEYS if not isinstance(gpu, dict) or key not in gpu]
        if lacking:
            return ["ansible_facts.device_capabilities.gpus entry %s lacks %s; %s"
                    % (show(gpu)[:80], ", ".join(lacking), hint)]
    init_error = (facts.get("visible") or {}).get("cuda_init_error")
    if init_error:
        # Facts gathered where CUDA cannot start describe no usable GPU (backend, exo's view).
        return ["the device facts were gathered where %s; name each GPU once in CUDA_VISIBLE_DEVICES, or unset it, "
                "where the facts are gathered (the play's environment, the remote account's shell) and gather "
                "them again" % init_error["reason"]]
    return []


def mig_minors(text):
    """The driver's /proc/driver/nvidia-caps/mig-minors: lines like "gpu0/gi1/access 21"."""
    minors = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            minors[fields[0]] = fields[1]
    return minors


# ---- the choice of GPUs -------------------------------------------------------------------------

def _label(gpu):
    return "GPU %s (%s, %s)" % (gpu["index"], gpu["uuid"], gpu["pci_bus_id"])


def _health(label, gpu, worst):
    """(why the GPU is too sick to run, or None; a warning about its health, or None)."""
    found = (gpu.get("health") or {}).get("verdict") or "ok"  # facts from before health was probed
    if found == "ok":
        return None, None
    said = "%s: health %s: %s" % (label, found, "; ".join(gpu["health"].get("reasons") or ()))
    if VERDICTS.index(found) > VERDICTS.index(worst):
        return "%s (exo_node_gpu_health is %s)" % (said, worst), None
    return None, said


def _candidates(gpus, use_mig, worst_health):
    """(candidates, skipped, warnings) in NVML index order; a GPU in MIG mode stands for its MIG devices."""
    candidates, skipped, warnings = [], [], []
    for gpu in gpus:
        mig = gpu.get("mig") or {}
        label = _label(gpu)
        too_sick, health_warning = _health(label, gpu, worst_health)
        if health_warning:
            warnings.append(health_warning)
        if bool(mig.get("enabled")) != bool(mig.get("pending")):
            warnings.append("%s: MIG mode changes to %s at the next GPU reset; this run uses the current mode"
                            % (label, "on" if mig.get("pending") else "off"))
        if gpu["minor"] is None or gpu["uuid"] is None:
            skipped.append("%s: NVML gave no %s, so it cannot be pinned and confined"
                           % (label, "minor number" if gpu["minor"] is None else "UUID"))
        elif too_sick:
            skipped.append(too_sick)
        elif mig.get("enabled") and not use_mig:
            skipped.append("%s: MIG mode is on; set exo_node_mig: true to run one node per MIG device" % label)
        elif mig.get("enabled"):
            devices = [d for d in mig.get("devices") or [] if d.get("uuid")]
            if not devices:
                skipped.append("%s: MIG mode is on but no MIG device is created" % label)
            for device in devices:
                candidates.append({"kind": "mig", "name": device["uuid"], "gpu": gpu, "mig": device,
                                   "memory_mib": device.get("memory_mib"),
                                   "label": "MIG device %s of %s" % (device["uuid"], label)})
        else:
            candidates.append({"kind": "gpu", "name": gpu["uuid"], "gpu": gpu, "mig": None,
                               "memory_mib": gpu["memory_mib"], "label": label})
    return candidates, skipped, warnings


def _bus_id(text):
    """A PCI bus id as the facts write it (0000:3b:00.0), from any form a user writes, or None."""
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0000"] + parts
    if len(parts) != 3 or not re.match(r"^[0-9a-f]+$", parts[0]):
        return None
    return sysfs_bus_id(":".join(parts))


def _matches(entry, gpus):
    """What an exo_node_gpus entry names: [("gpu", gpu)] or [("mig", gpu, device)], possibly empty."""
    key = str(entry).strip().lower()
    bus = _bus_id(key)
    found = []
    for gpu in gpus:
        if ((gpu["uuid"] or "").lower() == key or (key.isdigit() and gpu["index"] == int(key))
                or (bus is not None and (gpu["pci_bus_id"] or "").lower() == bus)):
            found.append(("gpu", gpu, None))
        for device in (gpu.get("mig") or {}).get("devices") or []:
            if (device.get("uuid") or "").lower() == key:
                found.append(("mig", gpu, device))
    return found


def _choose(host, gpus, candidates, skipped, requested, min_memory):
    """(chosen, errors): the candidates to run, in NVML order."""
    if not gpus:
        # A fleet-wide list does not break hosts without GPUs: the fallback decides.
        return [], []
    if not requested:
        chosen = []
        for c in candidates:
            if (c["memory_mib"] or 0) >= min_memory:
                chosen.append(c)
            else:
                skipped.append("%s: %s MiB is below exo_node_min_memory_mib %d" % (c["label"], c["memory_mib"], min_memory))
        return chosen, []
    names, errors = set(), []
    for entry in requested:
        text = str(entry).strip()
        found = _matches(text, gpus)
        if not found:
            errors.append("host %s: exo_node_gpus entry %r matches no GPU here; the GPUs NVML sees are: %s" % (
                host, text, "; ".join("%s %s %s" % (g["index"], g["uuid"], g["pci_bus_id"]) for g in gpus)))
        for kind, gpu, device in found:
            if kind == "mig":
                matches = [c for c in candidates if c["name"] == device["uuid"]]
                if not matches:
                    errors.append("host %s: exo_node_gpus entry %r is a MIG device; set exo_node_mig: true to run it"
                                  % (host, text))
            else:
                matches = [c for c in candidates if c["gpu"]["index"] == gpu["index"]]
                if not matches:
                    reasons = [s for s in skipped if (gpu["uuid"] or "?").lower() in s.lower()]
                    errors.append("host %s: exo_node_gpus entry %r names GPU %s, which cannot run a node: %s"
                                  % (host, text, gpu["uuid"], "; ".join(reasons) or "no usable candidate"))
            for c in matches:
                if (c["memory_mib"] or 0) < min_memory:
                    errors.append("host %s: exo_node_gpus entry %r names %s with %s MiB, below exo_node_min_memory_mib %d"
                                  % (host, text, c["label"], c["memory_mib"], min_memory))
                else:
                    names.add(c["name"])
    # NVML order, whatever the order of the list.
    return [c for c in candidates if c["name"] in names], errors


def _cpu_reason(facts, nvml_ok, gpus, skipped, requested):
    nvml = facts["nvml"]
    if not nvml_ok:
        why = "NVML: %s%s" % (nvml.get("status"), " (%s)" % nvml["message"] if nvml.get("message") else "")
        if facts.get("fallback_reason"):
            why += "; the probe says: " + facts["fallback_reason"]
    elif not gpus:
        why = "NVML sees no GPU"
    else:
        why = "no GPU qualifies: " + "; ".join(skipped)
    if requested:
        why = "exo_node_gpus asks for %s but this host has no GPU: %s" % (", ".join(str(r) for r in requested), why)
    return why


# ---- each instance's settings -------------------------------------------------------------------

def _tinygrad_env(tinygrad, backend, index):
    """The variables that force tinygrad's backend, with the GPU's index filled in, or None if unknown."""
    select = (tinygrad.get("select_env") or {}).get(backend)
    if not select:
        return None
    return dict((var, str(value).replace("{index}", str(index))) for var, value in select.items())


def _instance(host, facts, s, c, slot, minors, minors_error):
    """(instance, errors, warnings) for candidate c in slot."""
    errors, warnings = [], []
    tinygrad = facts.get("tinygrad") or {}
    home = "%s/%s" % (s["exo_node_data_dir"], "shared" if s["exo_node_shared_home"] else c["name"])
    env = {"EXO_HOME": home, "HOME": home, "PYTHONUNBUFFERED": "1"}
    devices, cpu_list, numa_node = [], None, None
    gpu = c["gpu"]
    if c["kind"] == "cpu":
        # An empty list hides every GPU from CUDA; DevicePolicy=closed hides them from everything.
        env["CUDA_VISIBLE_DEVICES"] = ""
        cpu_env = _tinygrad_env(tinygrad, "cpu", 0)
        if cpu_env:
            env.update(cpu_env)
        else:
            warnings.append("host %s: the variable that selects tinygrad's CPU backend is unknown (tinygrad in %s: %s); "
                            "the CPU instance relies on tinygrad falling back by itself"
                            % (host, tinygrad.get("python", "?"), tinygrad.get("reason") or "not probed"))
        capabilities = cpu_capabilities(facts["host"])
    else:
        env.update(CUDA_VISIBLE_DEVICES=c["name"], CUDA_DEVICE_ORDER="PCI_BUS_ID")
        # tinygrad's NV backend reads integer indices only, from its own variable where the version has one.
        nv_visible = (tinygrad.get("visible_devices_env") or {}).get("nv")
        if nv_visible:
            env[nv_visible] = str(gpu["index"])
        backend = s["exo_node_tinygrad_backend"]
        if backend != "auto":
            forced = _tinygrad_env(tinygrad, backend, gpu["index"])
            if forced is None:
                errors.append("host %s: exo_node_tinygrad_backend is %s but the variable that selects it is unknown "
                              "for tinygrad in %s (%s)"
                              % (host, backend, tinygrad.get("python", "?"), tinygrad.get("reason") or "not probed"))
            else:
                env.update(forced)
        devices = ["/dev/nvidia%d rw" % gpu["minor"]] + GPU_DEVICES
        if c["kind"] == "mig":
            instance_id, compute_id = c["mig"].get("gpu_instance_id"), c["mig"].get("compute_instance_id")
            for key in ("gpu%d/gi%s/access" % (gpu["minor"], instance_id),
                        "gpu%d/gi%s/ci%s/access" % (gpu["minor"], instance_id, compute_id)):
                if key in minors:
                    devices.append("/dev/nvidia-caps/nvidia-cap%s r" % minors[key])
                else:
                    errors.append("host %s: %s is not in %s%s, so the MIG device %s cannot be allowed its capability "
                                  "device; is the MIG instance created?" % (
                                      host, key, s["exo_node_mig_minors_path"],
                                      " (reading it failed: %s)" % minors_error if minors_error else "", c["name"]))
        if s["exo_node_cpu_affinity"] and gpu.get("cpu_list"):
            cpu_list = gpu["cpu_list"]
        if s["exo_node_numa_policy"] and gpu.get("numa_node") is not None and int(gpu["numa_node"]) >= 0:
            numa_node = int(gpu["numa_node"])
        capabilities = gpu_capabilities(gpu, c["memory_mib"])
    env.update((key, str(value)) for key, value in s["exo_node_extra_env"].items())
    ports = {"grpc": s["exo_node_grpc_port"] + slot, "api": s["exo_node_api_port"] + slot,
             "udp": s["exo_node_udp_port"] + slot, "broadcast": s["exo_node_broadcast_port"]}
    node_id = "%s-%s" % (s["exo_node_id_prefix"], c["name"])
    args = ["--node-id=" + node_id, "--node-port=%d" % ports["grpc"], "--chatgpt-api-port=%d" % ports["api"],
            "--discovery-module=" + s["exo_node_discovery"], "--discovery-timeout=%d" % s["exo_node_discovery_timeout"],
            "--wait-for-peers=%d" % s["exo_node_wait_for_peers"], "--inference-engine=" + s["exo_node_inference_engine"],
            "--disable-tui"]
    if s["exo_node_discovery"] == "manual":
        args.append("--discovery-config-path=%s/topology.json" % s["exo_node_config_dir"])
    else:
        args += ["--listen-port=%d" % ports["udp"], "--broadcast-port=%d" % ports["broadcast"]]
    instance = {
        "name": c["name"],
        "kind": c["kind"],
        "slot": slot,
        "node_id": node_id,
        "address": s["exo_node_address"],
        "ports": ports,
        "home": home,
        "gpu_uuid": gpu["uuid"] if gpu else None,
        "gpu_index": gpu["index"] if gpu else None,
        "pci_bus_id": gpu["pci_bus_id"] if gpu else None,
        "mig_uuid": c["name"] if c["kind"] == "mig" else None,
        "minor": gpu["minor"] if gpu else None,
        "env": env,
        "args": args + [str(a) for a in s["exo_node_extra_args"]],
        "devices": devices + list(s["exo_node_device_allow_extra"]),
        "cpu_list": cpu_list,
        "numa_node": numa_node,
        "capabilities": capabilities,
    }
    return instance, errors, warnings


def _port_errors(host, instances, discovery):
    used = {}
    for i in instances:
        used.setdefault(("tcp", i["ports"]["grpc"]), []).append("the gRPC port of " + i["name"])
        used.setdefault(("tcp", i["ports"]["api"]), []).append("the API port of " + i["name"])
        if discovery == "udp":
            used.setdefault(("udp", i["ports"]["udp"]), []).append("the discovery port of " + i["name"])
    errors = []
    highest = max(port for dummy, port in used) if used else 0
    if highest > 65535:
        errors.append("host %s: port %d is beyond 65535 (%d instances from the bases given); lower exo_node_grpc_port, "
                      "exo_node_api_port or exo_node_udp_port" % (host, highest, len(instances)))
    for (proto, port), users in sorted(used.items()):
        if len(users) > 1:
            errors.append("host %s: %s port %d is used by %s; move exo_node_grpc_port, exo_node_api_port or "
                          "exo_node_udp_port apart (each instance uses base + its slot)"
                          % (host, proto, port, " and ".join(users)))
    return errors


def _removals(host, facts, nvml_ok, instances, skipped, existing, allow):
    """(removed, errors): configured instances that leave. Only a GPU that left the host goes by itself."""
    keep = set(i["name"] for i in instances)
    present = {}
    if nvml_ok:
        for gpu in facts["gpus"]:
            present[(gpu["uuid"] or "").lower()] = gpu
            for device in (gpu.get("mig") or {}).get("devices") or []:
                present[(device.get("uuid") or "").lower()] = gpu
    removed, held = [], []
    for name in sorted(set(existing) - keep):
        # The CPU node is the fallback: it gives way to the GPU nodes that replace it.
        gone = name == "cpu" or (nvml_ok and name.lower() not in present)
        if gone or allow:
            removed.append(name)
        else:
            held.append(name)
    if not held:
        return removed, []
    why = "; ".join(skipped) if nvml_ok else "NVML: %s" % facts["nvml"].get("status")
    return removed, ["host %s: this run would stop and remove exo@%s although %s (%s); fix the settings, or set "
                     "exo_node_allow_removal: true to remove %s" % (
                         host, ", exo@".join(held),
                         ("the GPU is still on the host" if nvml_ok else "NVML cannot tell whether the GPU is still there")
                         if len(held) == 1 else
                         ("their GPUs are still on the host" if nvml_ok else "NVML cannot tell whether their GPUs are still there"),
                         why or "the settings leave them out", "them" if len(held) > 1 else "it")]


def _instance_name(entry):
    """An instance's name from the path of its env file (<instances dir>/<name>.env), or the name itself."""
    name = os.path.basename(str(entry))
    return name[:-len(".env")] if name.endswith(".env") else name


def plan(facts, raw_settings, host, existing=(), account=None, mig_minors_text=None, mig_minors_error=None,
         preview=False):
    """The instances of a host. Every problem is reported, none raised.

    facts None checks the settings alone (before the facts that count are gathered). preview plans
    from facts whose tinygrad is not exo's yet (gathered before exo is installed): what depends on
    that tinygrad (a forced backend, its variables) is checked once the final facts are there.
    existing: the instances configured on the host before this run, by name or by the path of their
    env file (the result's "existing" holds the names); account: the passwd entry of
    exo_node_user on the host (getent's list) or None; mig_minors_text: the driver's mig-minors file.
    """
    existing = [_instance_name(entry) for entry in existing]
    result = {"instances": [], "skipped": [], "errors": [], "warnings": [], "removed": [], "cpu_reason": None,
              "device_paths": [], "existing": existing}
    s, errors = settings(raw_settings)
    result["backends"] = backend_check.to_check(s) if not errors else []
    if "exo_node_user" in s and "exo_node_user_adopt" in s:
        errors += check_account(s, account)
    if facts is not None:
        errors += check_facts(facts)
    if errors or facts is None:
        result["errors"] = ["host %s: %s" % (host, e) for e in errors]
        return result
    if preview:
        s["exo_node_tinygrad_backend"] = "auto"
    tinygrad = {} if preview else facts["tinygrad"] or {}
    tinygrad_env = set(var for select in (tinygrad.get("select_env") or {}).values() for var in select or {})
    tinygrad_env.update(var for var in (tinygrad.get("visible_devices_env") or {}).values() if var)
    clashing = sorted(tinygrad_env.intersection(s["exo_node_extra_env"]))
    if clashing:
        result["errors"] = ["host %s: exo_node_extra_env sets %s, which tinygrad %s reads to choose its backend or GPU; "
                            "use exo_node_tinygrad_backend and exo_node_gpus instead"
                            % (host, ", ".join(clashing), tinygrad.get("version"))]
        return result
    nvml_ok = facts["nvml"].get("status") == "ok"
    gpus = facts["gpus"] if nvml_ok else []
    requested = s["exo_node_gpus"]
    candidates, skipped, warnings = _candidates(gpus, s["exo_node_mig"], s["exo_node_gpu_health"])
    chosen, errors = _choose(host, gpus, candidates, skipped, requested, s["exo_node_min_memory_mib"])
    if not chosen and not errors:
        why = _cpu_reason(facts, nvml_ok, gpus, skipped, requested)
        if s["exo_node_cpu_fallback"]:
            result["cpu_reason"] = why
            chosen = [{"kind": "cpu", "name": "cpu", "gpu": None, "mig": None,
                       "memory_mib": facts["host"].get("memory_mib"), "label": "CPU"}]
        else:
            errors.append("host %s has no usable GPU (%s) and exo_node_cpu_fallback is false" % (host, why))
    if any(c["kind"] != "cpu" for c in chosen) and facts.get("backend") == "cpu":
        warnings.append("the probe says tinygrad would run on the CPU here (%s); the GPU instances are pinned anyway "
                        "and run on the CPU until that is fixed" % (facts.get("fallback_reason") or "no reason given"))
    minors = mig_minors(mig_minors_text)
    instances = []
    for slot, c in enumerate(chosen):
        instance, more_errors, more_warnings = _instance(host, facts, s, c, slot, minors, mig_minors_error)
        instances.append(instance)
        errors += more_errors
        warnings += more_warnings
    errors += _port_errors(host, instances, s["exo_node_discovery"])
    if not preview:
        backend_errors, backend_warnings = backend_check.refusals(host, facts, s, instances)
        errors += backend_errors
        warnings += backend_warnings
    removed, removal_errors = _removals(host, facts, nvml_ok, instances, skipped, existing, s["exo_node_allow_removal"])
    result.update(instances=instances, skipped=skipped, errors=errors + removal_errors, warnings=warnings,
                  removed=removed,
                  device_paths=sorted(set(d.split(" ")[0] for i in instances for d in i["devices"]
                                          if d.startswith("/dev/"))))
    return result


# ---- the cluster --------------------------------------------------------------------------------

def cluster_names(cluster_hosts):
    """exo_node_cluster_hosts as a list of names; a malformed value gives none (cluster() reports it)."""
    try:
        return _as_list("exo_node_cluster_hosts", cluster_hosts, ",")
    except SettingError:
        return []


def cluster(host, instances, cluster_hosts, inventory_hosts, others):
    """(peers, errors) for host: the topology's peers and what collides across the cluster.

    others maps each other host of the cluster to its published instances (None: not known yet).
    """
    errors = []
    try:
        names = _as_list("exo_node_cluster_hosts", cluster_hosts, ",")
    except SettingError as problem:
        return {}, ["host %s: %s" % (host, problem)]
    unknown = [name for name in names if name not in inventory_hosts]
    if unknown:
        errors.append("host %s: exo_node_cluster_hosts names %s, not in the inventory; list inventory hosts "
                      "(or a group: \"{{ groups['name'] }}\")" % (host, ", ".join(show(n) for n in unknown)))
    mine = dict((i["node_id"], i) for i in instances)
    peers = {}
    for name in list(names) + [host]:
        for i in (instances if name == host else others.get(name) or []):
            peers[i["node_id"]] = {"address": i["address"], "port": i["ports"]["grpc"],
                                   "device_capabilities": i["capabilities"]}
    clashes = {}
    for name, theirs in sorted(others.items()):
        if name != host:
            for i in theirs or []:
                if i["node_id"] in mine:
                    clashes.setdefault(i["node_id"], []).append(name)
    for node_id, hosts in sorted(clashes.items()):
        errors.append("host %s: node id %s is also used by %s; give each host its own exo_node_id_prefix (now %s)"
                      % (host, node_id, ", ".join(hosts), node_id[:-len(mine[node_id]["name"]) - 1]))
    return peers, errors


# ---- what a run of the role found ---------------------------------------------------------------

EXPOSURE_RE = re.compile(r"Overall exposure level for \S+: ([0-9.]+)")
# exo@.service, the source marker, the instance's env file and drop-in: what its process was started from.
STARTED_RE = re.compile(r"^@([0-9]+)$")


def _results(registered):
    """The per-item results of a registered loop (or of a skipped one: none)."""
    return (registered or {}).get("results") or []


def missing_devices(stats):
    """The device nodes a stat loop over plan["device_paths"] found missing, in the plan's order."""
    return [r["item"] for r in _results(stats) if not (r.get("stat") or {}).get("exists")]


def devices_note(host, missing, modprobe):
    """What the user is told about device nodes missing (None when none are).

    modprobe: the registered result of nvidia-modprobe; what it said is quoted unless it was skipped.
    """
    if not missing:
        return None
    said = "" if not modprobe or modprobe.get("skipped") else " (nvidia-modprobe: %s)" % (
        modprobe.get("msg") or modprobe.get("stderr") or "not run")
    return ("host %s: %s missing%s; DeviceAllow= lines for them take effect only once they exist and the instance "
            "restarts" % (host, ", ".join(missing), said))


def exposure(text):
    """The overall exposure systemd-analyze security printed, as it printed it, or None."""
    match = EXPOSURE_RE.search(text or "")
    return match.group(1) if match else None


def exposures(security):
    """Each instance's exposure figure from the registered security loop: {name: "1.6"}."""
    figures = {}
    for result in _results(security):
        figure = exposure(result.get("stdout"))
        if figure:
            figures[result["item"]["name"]] = figure
    return figures


def restarts(instances, existing, changed, all_changed=False, started=None, mtimes=None):
    """The instances to restart, in the plan's order.

    changed: the registered env file and drop-in loops (a list of them); all_changed: the unit or exo
    itself changed. An instance new in this run is started, not restarted. Besides, an instance
    still running with settings older than its files (a run that stopped before its handlers) is
    restarted: started and mtimes are the registered loops of `systemctl show` (ActiveEnterTimestamp
    as @seconds) and of the files' modification times.
    """
    names = [i["name"] for i in instances]
    if all_changed:
        touched = set(names)
    else:
        touched = set(r["item"]["name"] for loop in changed or [] for r in _results(loop) if r.get("changed"))
    wanted = set(name for name in touched if name in existing)
    times = dict((r["item"]["name"], r.get("stdout_lines") or []) for r in _results(mtimes))
    for result in _results(started):
        match = STARTED_RE.match(result.get("stdout") or "")
        name = result["item"]["name"]
        stamps = [int(line) for line in times.get(name, []) if line.strip().isdigit()]
        if match and stamps and max(stamps) > int(match.group(1)):
            wanted.add(name)
    return [name for name in names if name in wanted]


def outcome(instances, host, existing=(), device_stats=None, modprobe=None, security=None, changed=None,
            all_changed=False, started=None, mtimes=None):
    """What the configure step found, from what its tasks registered (each argument may be left out)."""
    missing = missing_devices(device_stats)
    return {
        "missing_devices": missing,
        # A confined exo cannot create /dev/nvidia-uvm on first use, as CUDA would otherwise do.
        "modprobe_needed": any(path.startswith("/dev/nvidia-uvm") for path in missing),
        "devices_note": devices_note(host, missing, modprobe),
        "exposure": exposures(security),
        "restart": restarts(instances, existing, changed, all_changed=all_changed, started=started, mtimes=mtimes),
    }
