# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node role's GPU selection, per-instance settings and input checks, over simulated hosts.

Each case is a simulated host (a sysfs tree and a simulated libnvidia-ml, or none), an inventory
host on a local connection. One ansible-playbook run (roles/node/tests/select.yml) probes every
host with gpufleet.exo.device_facts and runs the role's selection (or its preflight, or the whole
role) on what the probe really reported. tinygrad's part of the facts comes from the probe's own
version table, for the version a case names.
"""

import json
import os
import sys

import pytest

from tests.simulated import nvml as simnvml
from tests.simulated import sysfs as simsysfs
from tests.unit.conftest import run_playbook

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLAYBOOK = os.path.join(REPO, "roles", "node", "tests", "select.yml")
from ansible_collections.gpufleet.exo.plugins.module_utils import tinygrad_probe  # noqa: E402


def bus(i):
    return "0000:%02x:00.0" % (0x18 + 0x10 * i)


def uuid(i):
    return "GPU-%08x-1111-2222-3333-444455556666" % (0x9b7c0000 + i)


def h100(i, minor=None, memory_mib=81559, name="NVIDIA H100 80GB HBM3", mig=None):
    return simnvml.gpu(name, memory_mib, uuid=uuid(i), pci_bus_id=bus(i), minor=i if minor is None else minor,
                       cc=(9, 0), numa_node=i // 2, cpu_affinity="%d-%d" % (8 * i, 8 * i + 7), mig=mig)


def pci_for(gpus):
    return [simsysfs.nvidia_gpu(bus(i), numa_node=i // 2, cpu_list="%d-%d" % (8 * i, 8 * i + 7))
            for i in range(len(gpus))]


def tinygrad(version):
    facts = tinygrad_probe.version_facts(version)
    return {"installed": True, "version": version, "python": "/opt/exo/bin/python", "backend": None,
            "reason": "simulated", "select_env": facts["select_env"],
            "visible_devices_env": facts["visible_devices_env"], "guards": []}


FOUR = [h100(0), h100(1), h100(2, minor=3), h100(3, minor=2)]
MIG = dict(current=1, pending=1, devices=[
    dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000001", memory_mib=40192, gi=1, ci=0),
    dict(uuid="MIG-aaaaaaaa-0000-0000-0000-000000000002", memory_mib=9856, gi=7, ci=0)])
A100_MIG = [simnvml.gpu("NVIDIA A100-SXM4-80GB", 81920, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(8, 0),
                        numa_node=0, mig=MIG)]
T4_AND_H100 = [simnvml.gpu("Tesla T4", 15360, uuid=uuid(0), pci_bus_id=bus(0), minor=0, cc=(7, 5)), h100(1)]

# name: (GPUs or None for no libnvidia-ml at all, role variables, tinygrad version or None)
CASES = {
    "four": (FOUR, {}, "0.10.0"),
    "four_newer_tinygrad": (FOUR, {}, "0.12.0"),
    "listed": (FOUR, {"exo_node_gpus": [uuid(3).lower(), 1, "00000000:18:00.0"]}, "0.10.0"),
    "min_memory": (T4_AND_H100, {"exo_node_min_memory_mib": 20000}, "0.10.0"),
    "mig": (A100_MIG, {"exo_node_mig": True}, "0.10.0"),
    "mig_off": (A100_MIG, {}, "0.10.0"),
    "no_nvml": (None, {}, "0.10.0"),
    "no_nvml_cpu_dev": (None, {}, "0.14.0"),
    "listed_on_cpu_host": (None, {"exo_node_gpus": [0]}, "0.10.0"),
    "forced_nv_013": (FOUR[:1], {"exo_node_tinygrad_backend": "nv"}, "0.13.0"),
    "forced_cuda_010": (FOUR[:1], {"exo_node_tinygrad_backend": "cuda"}, "0.10.0"),
    "udp": (FOUR[:2], {"exo_node_discovery": "udp", "exo_node_udp_port": 6000, "exo_node_broadcast_port": 6000},
            "0.10.0"),
    "shared_home": (FOUR[:2], {"exo_node_shared_home": True, "exo_node_data_dir": "/srv/exo"}, "0.10.0"),
}
# Requests the role must refuse, with a message naming the host and the value.
REFUSED = {
    "bad_uuid": (FOUR[:1], {"exo_node_gpus": ["GPU-00000000-dead-beef-0000-000000000000"]}, "0.10.0",
                 "select.yml", ["host bad_uuid", "GPU-00000000-dead-beef-0000-000000000000",
                                "matches no GPU", uuid(0)]),
    "bad_index": (FOUR[:2], {"exo_node_gpus": [5]}, "0.10.0", "select.yml", ["host bad_index", "'5'"]),
    "no_fallback": (None, {"exo_node_gpus": [0], "exo_node_cpu_fallback": False}, "0.10.0", "select.yml",
                    ["host no_fallback has no usable GPU", "library_not_found", "exo_node_cpu_fallback is false"]),
    "mig_without_flag": (A100_MIG, {"exo_node_gpus": ["MIG-aaaaaaaa-0000-0000-0000-000000000002"]}, "0.10.0",
                         "select.yml", ["host mig_without_flag", "is a MIG device; set exo_node_mig"]),
    "listed_too_small": (T4_AND_H100, {"exo_node_gpus": [0], "exo_node_min_memory_mib": 20000}, "0.10.0",
                         "select.yml", ["host listed_too_small", "15360 MiB, below exo_node_min_memory_mib 20000"]),
    "ports_collide": (FOUR, {"exo_node_api_port": 50053}, "0.10.0", "select.yml",
                      ["host ports_collide", "tcp port 50053 is used by the API port of %s and the gRPC port of %s"
                       % (uuid(0), uuid(2))]),
    "ports_overflow": (FOUR, {"exo_node_grpc_port": 65534}, "0.10.0", "select.yml",
                       ["host ports_overflow", "port 65537 is beyond 65535"]),
    "dup_a": (FOUR[:1], {"exo_node_id_prefix": "same"}, "0.10.0", "select.yml",
              ["host dup_a: node id same-%s" % uuid(0), "also used by dup_b"]),
    "dup_b": (FOUR[:1], {"exo_node_id_prefix": "same"}, "0.10.0", "select.yml",
              ["host dup_b: node id same-%s" % uuid(0), "also used by dup_a"]),
    "pypi_exo": (None, {"exo_node_source": "index", "exo_node_index_requirement": "exo==0.0.1"}, "0.10.0",
                 "preflight.yml", ["host pypi_exo", "the name exo is an unrelated project"]),
    "old_python": (None, {"exo_node_python": sys.executable, "exo_node_python_min_version": "99.0"}, "0.10.0",
                   "preflight.yml", ["host old_python", sys.executable, "is Python %d.%d" % sys.version_info[:2],
                                     "needs Python 99.0 or later"]),
    "spaced_args": (None, {"exo_node_extra_args": ["--max-generate-tokens 5"]}, "0.10.0", "preflight.yml",
                    ["host spaced_args", "--max-generate-tokens 5"]),
    "port_zero": (None, {"exo_node_udp_port": 0}, "0.10.0", "preflight.yml",
                  ["host port_zero", "exo_node_udp_port is 0; a port is from 1 to 65535"]),
    "missing_source": (None, {"exo_node_source": "path", "exo_node_source_path": "/nonexistent/exo.whl"},
                       "0.10.0", "preflight.yml", ["host missing_source", "/nonexistent/exo.whl"]),
    # The whole role, with facts it may use as they are: it stops before installing anything.
    "whole_role": (FOUR[:1], dict(exo_node_gpus=["GPU-00000000-dead-beef-0000-000000000000"],
                                  exo_node_refresh_facts="never", exo_node_manage_packages=False,
                                  exo_node_python=sys.executable,
                                  **{key: "{{ result_dir }}/../whole_role_paths/" + key for key in (
                                      "exo_node_install_dir", "exo_node_config_dir", "exo_node_data_dir")}),
                   "0.10.0", "main.yml", ["host whole_role", "GPU-00000000-dead-beef-0000-000000000000"]),
}


def _host(tmp, name, gpus, role_vars, version, nvml_lib):
    root = os.path.join(tmp, name)
    simsysfs.write_tree(root, pci=pci_for(gpus or []), numa=["0-15", "16-31"])
    host = {"case_rootfs": root, "ansible_python_interpreter": sys.executable}
    if gpus is not None:
        config = simnvml.write_config(os.path.join(tmp, name + ".nvml.conf"), gpus)
        host["case_env"] = simnvml.environment(nvml_lib, config)
    if version:
        host["case_tinygrad"] = tinygrad(version)
    host.update(role_vars)
    return host


def run_cases(tmp, cases, nvml_lib, extra_vars=None):
    inventory = {"all": {"vars": dict({"ansible_connection": "local",
                                       "exo_node_mig_minors_path": os.path.join(tmp, "mig-minors")},
                                      **(extra_vars or {})),
                         "hosts": {}}}
    for name, spec in cases.items():
        inventory["all"]["hosts"][name] = _host(tmp, name, *spec[:3], nvml_lib=nvml_lib)
        if len(spec) > 3:
            inventory["all"]["hosts"][name]["case_tasks"] = spec[3]
    # What the NVIDIA driver writes for the MIG devices of the A100 above (its minor number is 0).
    with open(os.path.join(tmp, "mig-minors"), "w") as handle:
        handle.write("config 1\nmonitor 2\ngpu0/gi1/access 21\ngpu0/gi1/ci0/access 22\n"
                     "gpu0/gi7/access 81\ngpu0/gi7/ci0/access 82\n")
    return run_playbook(tmp, inventory, PLAYBOOK, cases, timeout=900)


@pytest.fixture(scope="module")
def chosen(tmp_path_factory, nvml_lib):
    proc, results = run_cases(str(tmp_path_factory.mktemp("node-select")), CASES, nvml_lib)
    missing = sorted(set(CASES) - set(results))
    failed = sorted(name for name, result in results.items() if not result["ok"])
    assert proc.returncode == 0 and not missing and not failed, \
        "missing %s, failed %s:\n%s" % (missing, failed, proc.stdout[-6000:])
    return results


@pytest.fixture(scope="module")
def refused(tmp_path_factory, nvml_lib):
    tmp = str(tmp_path_factory.mktemp("node-refused"))
    proc, results = run_cases(tmp, REFUSED, nvml_lib)
    missing = sorted(set(REFUSED) - set(results))
    assert not missing, "missing %s:\n%s" % (missing, proc.stdout[-6000:])
    results["_tmp"] = tmp
    return results


def instances(chosen, name):
    return chosen[name]["instances"]


# ---- what is chosen -----------------------------------------------------------------------------

def test_simulated_every_gpu_gets_one_instance_in_nvml_order(chosen):
    result = instances(chosen, "four")
    assert [i["name"] for i in result] == [uuid(0), uuid(1), uuid(2), uuid(3)]
    assert [i["kind"] for i in result] == ["gpu"] * 4
    assert [i["node_id"] for i in result] == ["four-" + uuid(n) for n in range(4)]
    assert [(i["ports"]["grpc"], i["ports"]["api"]) for i in result] == [(50051 + n, 52415 + n) for n in range(4)]
    assert chosen["four"]["cpu_reason"] is None


def test_simulated_each_instance_is_confined_to_its_own_minor(chosen):
    result = instances(chosen, "four")
    # GPUs 2 and 3 have minors 3 and 2: the device node follows the minor, not the index.
    assert [i["devices"][0] for i in result] == ["/dev/nvidia0 rw", "/dev/nvidia1 rw", "/dev/nvidia3 rw",
                                                 "/dev/nvidia2 rw"]
    for instance in result:
        assert instance["devices"][1:] == ["/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]


def test_simulated_pinned_by_uuid_and_by_the_nv_index_of_the_tinygrad_version(chosen):
    for n, instance in enumerate(instances(chosen, "four")):
        env = instance["env"]
        assert env["CUDA_VISIBLE_DEVICES"] == uuid(n) and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert env["VISIBLE_DEVICES"] == str(n)  # tinygrad 0.10: integer index, NVML order
        assert "DEV" not in env and "NV" not in env  # auto: tinygrad still chooses its backend
        assert env["EXO_HOME"] == env["HOME"] == "/var/lib/exo/" + uuid(n)
    for n, instance in enumerate(instances(chosen, "four_newer_tinygrad")):
        assert instance["env"]["HCQ_VISIBLE_DEVICES"] == str(n) and "VISIBLE_DEVICES" not in instance["env"]


def test_simulated_placement_comes_from_the_pci_facts(chosen):
    result = instances(chosen, "four")
    assert [i["cpu_list"] for i in result] == ["0-7", "8-15", "16-23", "24-31"]
    assert [i["numa_node"] for i in result] == [0, 0, 1, 1]


def test_simulated_capabilities_for_the_topology(chosen):
    capabilities = instances(chosen, "four")[0]["capabilities"]
    assert capabilities["model"] == "Linux Box (NVIDIA H100 80GB HBM3)"
    assert capabilities["memory"] == 81559
    assert capabilities["flops"]["fp16"] > 0 and set(capabilities["flops"]) == {"fp32", "fp16", "int8"}


def test_simulated_explicit_list_by_uuid_index_and_bus_id(chosen):
    # Listed as GPU 3 (UUID, lower case), GPU 1 (index) and GPU 0 (NVML's bus id form): NVML order kept.
    result = instances(chosen, "listed")
    assert [i["name"] for i in result] == [uuid(0), uuid(1), uuid(3)]
    assert [i["slot"] for i in result] == [0, 1, 2]


def test_simulated_minimum_memory(chosen):
    assert [i["name"] for i in instances(chosen, "min_memory")] == [uuid(1)]


def test_simulated_mig_devices_as_their_own_nodes(chosen):
    result = instances(chosen, "mig")
    assert [(i["kind"], i["name"]) for i in result] == [
        ("mig", "MIG-aaaaaaaa-0000-0000-0000-000000000001"),
        ("mig", "MIG-aaaaaaaa-0000-0000-0000-000000000002")]
    assert [i["capabilities"]["memory"] for i in result] == [40192, 9856]
    assert result[0]["env"]["CUDA_VISIBLE_DEVICES"] == "MIG-aaaaaaaa-0000-0000-0000-000000000001"
    # The GPU's node plus the capability nodes of the GPU instance and compute instance.
    assert result[0]["devices"][0] == "/dev/nvidia0 rw"
    assert result[0]["devices"][-2:] == ["/dev/nvidia-caps/nvidia-cap21 r", "/dev/nvidia-caps/nvidia-cap22 r"]
    assert result[1]["devices"][-2:] == ["/dev/nvidia-caps/nvidia-cap81 r", "/dev/nvidia-caps/nvidia-cap82 r"]


def test_simulated_mig_gpu_without_mig_falls_back_with_the_reason(chosen):
    result = instances(chosen, "mig_off")
    assert [i["kind"] for i in result] == ["cpu"]
    assert "MIG mode is on; set exo_node_mig: true" in chosen["mig_off"]["cpu_reason"]


def test_simulated_cpu_instance_without_nvml(chosen):
    result = instances(chosen, "no_nvml")
    assert [(i["kind"], i["name"], i["node_id"]) for i in result] == [("cpu", "cpu", "no_nvml-cpu")]
    assert chosen["no_nvml"]["facts"]["nvml"]["status"] == "library_not_found"
    assert "NVML: library_not_found" in chosen["no_nvml"]["cpu_reason"]
    cpu = result[0]
    assert cpu["devices"] == [] and cpu["cpu_list"] is None and cpu["numa_node"] is None
    # tinygrad's CPU backend, with the variable each version reads; CUDA sees no GPU either.
    assert cpu["env"]["CLANG"] == "1" and cpu["env"]["CUDA_VISIBLE_DEVICES"] == ""
    assert instances(chosen, "no_nvml_cpu_dev")[0]["env"]["DEV"] == "CPU"


def test_simulated_gpu_list_ignored_on_a_cpu_host_with_fallback(chosen):
    assert [i["kind"] for i in instances(chosen, "listed_on_cpu_host")] == ["cpu"]
    assert "exo_node_gpus asks for 0 but this host has no GPU" in chosen["listed_on_cpu_host"]["cpu_reason"]


def test_simulated_forced_backends_use_the_versions_variables(chosen):
    assert instances(chosen, "forced_nv_013")[0]["env"]["DEV"] == "NVK:0+NV"
    forced = instances(chosen, "forced_cuda_010")[0]["env"]
    assert forced["CUDA"] == "1" and forced["VISIBLE_DEVICES"] == "0"


def test_simulated_discovery_arguments(chosen):
    manual = instances(chosen, "four")[1]["args"]
    assert "--discovery-module=manual" in manual and "--discovery-config-path=/etc/exo/topology.json" in manual
    assert "--node-id=four-%s" % uuid(1) in manual and "--node-port=50052" in manual
    assert "--chatgpt-api-port=52416" in manual and not [a for a in manual if a.startswith("--listen-port")]
    udp = instances(chosen, "udp")
    assert ["--listen-port=6000", "--listen-port=6001"] == [a for i in udp for a in i["args"]
                                                            if a.startswith("--listen-port")]
    assert all("--broadcast-port=6000" in i["args"] for i in udp)


def test_simulated_shared_home(chosen):
    assert {i["home"] for i in instances(chosen, "shared_home")} == {"/srv/exo/shared"}


# ---- what is refused ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REFUSED))
def test_simulated_refused_with_host_and_value(refused, name):
    result = refused[name]
    assert result["ok"] is False, result
    message = json.dumps(result["msg"]) if not isinstance(result["msg"], str) else result["msg"]
    for part in REFUSED[name][4]:
        assert part in message, message


def test_simulated_refusal_comes_before_any_change(refused):
    # The role's paths lie below this directory: not one of them was created.
    assert refused["whole_role"]["task"] == "Stop on a request this host cannot meet"
    root = os.path.join(refused["_tmp"], "whole_role_paths")
    assert not os.path.exists(root), os.listdir(root)
