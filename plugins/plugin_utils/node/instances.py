# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each exo instance of a host as the unit runs it: environment, arguments, devices, ports.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os.path

from ansible_collections.gpufleet.exo.plugins.module_utils.probe.conclusions import (
    amd_capabilities, cpu_capabilities, gpu_capabilities)
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import amd, models, proxy

# Every GPU instance needs these besides its own /dev/nvidiaN.
GPU_DEVICES = ["/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]


def _tinygrad_env(tinygrad, backend, index):
    """The variables that force tinygrad's backend, with the GPU's index filled in, or None if unknown."""
    select = (tinygrad.get("select_env") or {}).get(backend)
    if not select:
        return None
    return dict((var, str(value).replace("{index}", str(index))) for var, value in select.items())


# What each kind of instance is, in words, for its files and the role's summary.
DESCRIBE = {
    "cpu": lambda c: "the CPU node",
    "gpu": lambda c: "GPU %s (NVML index %s, PCI %s, /dev/nvidia%s)" % (
        c["name"], c["gpu"]["index"], c["gpu"]["pci_bus_id"], c["gpu"]["minor"]),
    "mig": lambda c: "MIG %s (NVML index %s, PCI %s, /dev/nvidia%s)" % (
        c["name"], c["gpu"]["index"], c["gpu"]["pci_bus_id"], c["gpu"]["minor"]),
    "amd": lambda c: "%s, KFD node %s, %s" % (c["label"], c["gpu"]["kfd_node"], c["gpu"]["render_node"]),
}


def _describe(candidate):
    return DESCRIBE[candidate["kind"]](candidate)


def _placement(settings, cpu_list, numa_node):
    """(CPUAffinity=, NUMAMask=) of a GPU's instance: the CPUs and NUMA node the GPU is attached to."""
    return (cpu_list if settings["exo_node_cpu_affinity"] and cpu_list else None,
            int(numa_node) if settings["exo_node_numa_policy"] and numa_node is not None and int(numa_node) >= 0 else None)


def _amd(tinygrad, gpu, env):
    """The DeviceAllow= entries of an AMD GPU's instance; env gets its variables.

    CUDA sees no GPU; tinygrad's AMD backend is forced onto its KFD interface and, since the unit may
    open /dev/kfd and this GPU's render node only, onto the one GPU KFD shows it (amd.CONFINED_INDEX).
    Their variables are known once exo's tinygrad is (amd.support() skips the GPU otherwise): a preview has none.
    """
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.update(amd.env(tinygrad) or {})
    return amd.DEVICES + ["%s rw" % gpu["render_node"]]


def render(host, facts, settings, candidate, slot, minors, minors_error):
    """(instance, errors, warnings): the exo instance of one chosen candidate (gpu_choice.py) in its slot.

    The slot numbers a host's instances from 0 in NVML order: each instance's ports are the bases plus its slot.
    """
    errors, warnings = [], []
    tinygrad = facts.get("tinygrad") or {}
    home = "%s/%s" % (settings["exo_node_data_dir"], "shared" if settings["exo_node_shared_home"] else candidate["name"])
    # exo caches Hugging Face's answers under the temporary directory, which PrivateTmp= empties at
    # every start: in EXO_HOME they last, and the model placement's answers wait there (models.py).
    env = {"EXO_HOME": home, "HOME": home, "TMPDIR": home + "/tmp", "PYTHONUNBUFFERED": "1",
           # The API's admission (the role's patch of exo, docs/node.md, "Many requests at once").
           "GPUFLEET_EXO_REQUESTS_IN_FLIGHT": str(settings["exo_node_requests_in_flight"]),
           "GPUFLEET_EXO_REQUEST_QUEUE": str(settings["exo_node_request_queue"])}
    env.update(models.instance_env(settings))
    devices, cpu_list, numa_node = [], None, None
    gpu = candidate["gpu"]
    if candidate["kind"] == "cpu":
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
    elif candidate["kind"] == "amd":
        devices = _amd(tinygrad, gpu, env)
        cpu_list, numa_node = _placement(settings, gpu["cpu_list"], gpu["numa_node"])
        capabilities = amd_capabilities(gpu)
    else:
        env.update(CUDA_VISIBLE_DEVICES=candidate["name"], CUDA_DEVICE_ORDER="PCI_BUS_ID")
        # tinygrad's NV backend reads integer indices only, from its own variable where the version has one.
        nv_visible = (tinygrad.get("visible_devices_env") or {}).get("nv")
        if nv_visible:
            env[nv_visible] = str(gpu["index"])
        backend = settings["exo_node_tinygrad_backend"]
        if backend != "auto":
            forced = _tinygrad_env(tinygrad, backend, gpu["index"])
            if forced is None:
                errors.append("host %s: exo_node_tinygrad_backend is %s but the variable that selects it is unknown "
                              "for tinygrad in %s (%s)"
                              % (host, backend, tinygrad.get("python", "?"), tinygrad.get("reason") or "not probed"))
            else:
                env.update(forced)
        devices = ["/dev/nvidia%d rw" % gpu["minor"]] + GPU_DEVICES
        if candidate["kind"] == "mig":
            instance_id, compute_id = candidate["mig"].get("gpu_instance_id"), candidate["mig"].get("compute_instance_id")
            for key in ("gpu%d/gi%s/access" % (gpu["minor"], instance_id),
                        "gpu%d/gi%s/ci%s/access" % (gpu["minor"], instance_id, compute_id)):
                if key in minors:
                    devices.append("/dev/nvidia-caps/nvidia-cap%s r" % minors[key])
                else:
                    errors.append("host %s: %s is not in %s%s, so the MIG device %s cannot be allowed its capability "
                                  "device; is the MIG instance created?" % (
                                      host, key, settings["exo_node_mig_minors_path"],
                                      " (reading it failed: %s)" % minors_error if minors_error else "", candidate["name"]))
        cpu_list, numa_node = _placement(settings, gpu.get("cpu_list"), gpu.get("numa_node"))
        capabilities = gpu_capabilities(gpu, candidate["memory_mib"])
    # exo_node_extra_env's values may be secrets (HF_TOKEN): the instance, a published and cacheable fact, names
    # them only; the env file (templates/instance.env.j2) takes the values from the variable, never logged.
    extra_env = sorted(settings["exo_node_extra_env"])
    ports = {"grpc": settings["exo_node_grpc_port"] + slot, "api": settings["exo_node_api_port"] + slot,
             "udp": settings["exo_node_udp_port"] + slot, "broadcast": settings["exo_node_broadcast_port"]}
    node_id = "%s-%s" % (settings["exo_node_id_prefix"], candidate["name"])
    args = ["--node-id=" + node_id, "--node-host=" + settings["exo_node_address"], "--node-port=%d" % ports["grpc"], "--chatgpt-api-port=%d" % ports["api"],
            "--discovery-module=" + settings["exo_node_discovery"], "--discovery-timeout=%d" % settings["exo_node_discovery_timeout"],
            "--wait-for-peers=%d" % settings["exo_node_wait_for_peers"], "--inference-engine=" + settings["exo_node_inference_engine"],
            "--disable-tui"]
    if settings["exo_node_discovery"] == "manual":
        args.append("--discovery-config-path=%s/topology.json" % settings["exo_node_config_dir"])
    else:
        args += ["--listen-port=%d" % ports["udp"], "--broadcast-port=%d" % ports["broadcast"]]
    instance = {
        "name": candidate["name"],
        "kind": candidate["kind"],
        "slot": slot,
        "node_id": node_id,
        "address": settings["exo_node_address"],
        "ports": ports,
        "home": home,
        "description": _describe(candidate),
        "gpu_uuid": (gpu or {}).get("uuid"),
        "gpu_index": (gpu or {}).get("index"),
        "pci_bus_id": (gpu or {}).get("pci_bus_id") or (gpu or {}).get("bus_id"),
        "mig_uuid": candidate["name"] if candidate["kind"] == "mig" else None,
        "minor": (gpu or {}).get("minor"),
        "render_node": (gpu or {}).get("render_node"),
        "env": env,
        "extra_env": extra_env,
        "args": args + [str(a) for a in settings["exo_node_extra_args"]],
        "devices": devices + list(settings["exo_node_device_allow_extra"]),
        "cpu_list": cpu_list,
        "numa_node": numa_node,
        "capabilities": capabilities,
        "requests_in_flight": settings["exo_node_requests_in_flight"],
        # Published with the instance: a ring's host checks each member's against its own (cluster.survey()).
        "ring": settings["exo_node_ring"],
    }
    return instance, errors, warnings


def port_errors(host, instances, discovery, proxy_base=None):
    """Ports beyond 65535 or used twice; proxy_base: exo_node_api_proxy_port where the proxy is on."""
    used = {}
    proxy_ports = proxy.ports(instances, proxy_base) if proxy_base is not None else {}
    for i in instances:
        used.setdefault(("tcp", i["ports"]["grpc"]), []).append("the gRPC port of " + i["name"])
        used.setdefault(("tcp", i["ports"]["api"]), []).append("the API port of " + i["name"])
        if discovery == "udp":
            used.setdefault(("udp", i["ports"]["udp"]), []).append("the discovery port of " + i["name"])
        if i["name"] in proxy_ports:
            used.setdefault(("tcp", proxy_ports[i["name"]]), []).append("the API proxy port of " + i["name"])
    bases = "exo_node_grpc_port, exo_node_api_port%s or exo_node_udp_port" % (
        ", exo_node_api_proxy_port" if proxy_ports else "")
    errors = []
    highest = max(port for dummy, port in used) if used else 0
    if highest > 65535:
        errors.append("host %s: port %d is beyond 65535 (%d instances from the bases given); lower %s"
                      % (host, highest, len(instances), bases))
    for (proto, port), users in sorted(used.items()):
        if len(users) > 1:
            errors.append("host %s: %s port %d is used by %s; move %s apart (each instance uses base + its slot)"
                          % (host, proto, port, " and ".join(users), bases))
    if discovery == "udp" and len(instances) > 1:
        # exo listens on --listen-port and broadcasts to --broadcast-port, the same for every instance.
        errors.append("host %s has %d instances and exo_node_discovery is udp: exo's UDP discovery broadcasts to "
                      "exo_node_broadcast_port only, where the first instance listens, so the others never hear the "
                      "ring; use exo_node_discovery: manual (the default), or one instance a host (exo_node_gpus)"
                      % (host, len(instances)))
    return errors


def removals(host, facts, nvml_ok, instances, skipped, existing, allow):
    """(removed, errors): configured instances that leave. Only a GPU that left the host goes by itself."""
    keep = set(i["name"] for i in instances)
    present = {}
    if nvml_ok:
        for gpu in facts["gpus"]:
            present[(gpu["uuid"] or "").lower()] = gpu
            for device in (gpu.get("mig") or {}).get("devices") or []:
                present[(device.get("uuid") or "").lower()] = gpu
    # AMD GPUs are read from sysfs, NVML or not.
    amd_present = set(amd.name(gpu) for gpu in facts.get("amd") or [])
    removed, held = [], []
    for name in sorted(set(existing) - keep):
        # The CPU node is the fallback: it gives way to the GPU nodes that replace it.
        gone = name == "cpu" or (name not in amd_present if amd.is_name(name) else nvml_ok and name.lower() not in present)
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


def instance_name(entry):
    """An instance's name from the path of its env file (<instances dir>/<name>.env), or the name itself."""
    name = os.path.basename(str(entry))
    return name[:-len(".env")] if name.endswith(".env") else name


def _seen(entry):
    """What a visible.per_gpu entry says the process sees, in words."""
    if entry["cuda_init_error"]:
        return "no GPU (%s)" % entry["cuda_init_error"]["reason"]
    return ", ".join(entry["devices"]) if entry["devices"] else "no GPU"


def visibility_errors(host, facts, instances):
    """(errors, warnings): each GPU instance must see exactly its own device under its environment.

    The probe's visible.per_gpu (device_facts' visible_per_gpu) says what a process given each device
    alone sees: the CUDA driver's answer where it loads, the rules' elsewhere. An instance whose
    environment the facts did not resolve is a warning, not a guess.
    """
    entries = (facts.get("visible") or {}).get("per_gpu")
    errors, warnings, unchecked = [], [], []
    for instance in instances:
        if instance["kind"] in ("cpu", "amd"):
            # CUDA sees no GPU there: CUDA_VISIBLE_DEVICES is empty.
            continue
        env = instance["env"]
        value, order = env.get("CUDA_VISIBLE_DEVICES"), env.get("CUDA_DEVICE_ORDER")
        entry = next((e for e in entries or () if (e["cuda_visible_devices"], e["device_order"]) == (value, order)), None)
        if entry is None:
            unchecked.append(instance["name"])
            continue
        intended = instance["mig_uuid"] or instance["gpu_uuid"]
        if entry["cuda_init_error"] or entry["devices"] != [intended]:
            errors.append("host %s: instance %s would not run on its own GPU: under CUDA_VISIBLE_DEVICES=%s "
                          "CUDA_DEVICE_ORDER=%s %s sees %s, not %s alone; check the NVIDIA driver (nvidia-smi -L "
                          "against a CUDA program's device list) and gather the facts again, or leave this GPU out "
                          "with exo_node_gpus"
                          % (host, instance["name"], value, order,
                             "the CUDA driver" if entry["source"] == "driver" else "the rules (no CUDA driver to ask)",
                             _seen(entry), intended))
    if unchecked:
        warnings.append("host %s: the environment of instance%s %s was not checked against the CUDA driver (%s); "
                        "gather the facts with visible_per_gpu: true" % (
                            host, "s" if len(unchecked) > 1 else "", ", ".join(unchecked),
                            "the facts were gathered without visible_per_gpu" if entries is None
                            else "the facts hold no answer for that environment"))
    return errors, warnings
