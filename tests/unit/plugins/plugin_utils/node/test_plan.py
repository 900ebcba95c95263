# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node role's planner, called directly on the facts the probe really reports.

The facts are those gpufleet.exo.device_facts reports on simulated hosts (tests/simulated/hosts.py:
the simulated libnvidia-ml under the real nvidia-ml-py, simulated /sys), as recorded in
tests/fixtures/simulated (the fixture probed; tests/integration/modules/test_simulated_facts.py keeps
the recordings true), and from the real H100 of tests/fixtures/real-h100 (what the real host reported).
tinygrad's part comes from the probe's own table for the version a test names. The settings start from
the role's defaults, as Ansible would give them.

Which GPU gets an instance: test_gpu_choice.py; the cluster: test_cluster.py; what a run found:
test_outcome.py, beside this file.
"""

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan, settings
from tests.helpers import NODE_SETTINGS as SETTINGS, REAL_H100 as FIXTURES, checked, node_templates, with_tinygrad
from tests.helpers import plan_node as plan, plan_node_ok as ok, plan_node_refused as refused
from tests.simulated.hosts import uuid

REAL_H100 = os.path.join(FIXTURES, "device_facts.json")


# ---- what is chosen -----------------------------------------------------------------------------

def test_every_gpu_gets_one_instance_in_nvml_order(probed):
    result = ok(probed["four"])
    assert [i["name"] for i in result["instances"]] == [uuid(n) for n in range(4)]
    assert [i["kind"] for i in result["instances"]] == ["gpu"] * 4
    assert [i["node_id"] for i in result["instances"]] == ["h-" + uuid(n) for n in range(4)]
    assert [(i["ports"]["grpc"], i["ports"]["api"]) for i in result["instances"]] == [(50051 + n, 52415 + n)
                                                                                      for n in range(4)]
    assert result["cpu_reason"] is None


def test_eight_gpus_take_eight_slots(probed):
    result = ok(probed["eight"])
    assert [i["ports"]["grpc"] for i in result["instances"]] == list(range(50051, 50059))
    assert result["device_paths"] == sorted(["/dev/nvidia%d" % n for n in range(8)]
                                            + ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"])


def test_each_instance_is_confined_to_its_own_minor(probed):
    result = ok(probed["four"])["instances"]
    assert [i["devices"][0] for i in result] == ["/dev/nvidia0 rw", "/dev/nvidia1 rw", "/dev/nvidia3 rw",
                                                 "/dev/nvidia2 rw"]
    for instance in result:
        assert instance["devices"][1:] == ["/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]


def test_pinned_by_uuid_and_by_the_nv_index_of_the_tinygrad_version(probed):
    for n, instance in enumerate(ok(probed["four"])["instances"]):
        env = instance["env"]
        assert env["CUDA_VISIBLE_DEVICES"] == uuid(n) and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert env["VISIBLE_DEVICES"] == str(n)  # tinygrad 0.10: integer index, NVML order
        assert "DEV" not in env and "NV" not in env  # auto: tinygrad still chooses its backend
        assert env["EXO_HOME"] == env["HOME"] == "/var/lib/exo/" + uuid(n)
    for n, instance in enumerate(ok(probed["four"], version="0.12.0")["instances"]):
        assert instance["env"]["HCQ_VISIBLE_DEVICES"] == str(n) and "VISIBLE_DEVICES" not in instance["env"]


def test_placement_comes_from_the_pci_facts(probed):
    result = ok(probed["four"])["instances"]
    assert [i["cpu_list"] for i in result] == ["0-7", "8-15", "16-23", "24-31"]
    assert [i["numa_node"] for i in result] == [0, 0, 1, 1]
    unplaced = ok(probed["four"], exo_node_cpu_affinity=False, exo_node_numa_policy="")["instances"]
    assert [(i["cpu_list"], i["numa_node"]) for i in unplaced] == [(None, None)] * 4


def test_capabilities_for_the_topology(probed):
    capabilities = ok(probed["four"])["instances"][0]["capabilities"]
    assert capabilities["model"] == "Linux Box (NVIDIA H100 80GB HBM3)"
    assert capabilities["memory"] == 81559
    assert capabilities["flops"]["fp16"] > 0 and set(capabilities["flops"]) == {"fp32", "fp16", "int8"}
    # A part the table lacks: exo needs numbers, so 0.0, as the probe's own exo section says.
    unknown = ok(probed["unknown_part"])["instances"][0]["capabilities"]
    assert unknown["flops"] == {"fp32": 0.0, "fp16": 0.0, "int8": 0.0} and unknown["memory"] == 65536


def test_real_h100_plans_one_pinned_instance_advertising_the_probes_figures():
    with open(REAL_H100) as handle:
        facts = json.load(handle)
    result = ok(facts, version=None)
    [instance] = result["instances"]
    assert instance["name"] == instance["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-af19d7dd-02be-25eb-14d1-c456b69ba1fa"
    assert instance["devices"][0] == "/dev/nvidia0 rw" and instance["cpu_list"] == "0-15"
    assert instance["numa_node"] is None  # the VM has no NUMA node
    # tinygrad 0.14 has no variable that restricts NV without selecting it.
    assert "VISIBLE_DEVICES" not in instance["env"] and "HCQ_VISIBLE_DEVICES" not in instance["env"]
    # The same figures the probe computed for exo's view of that host: defined once.
    assert instance["capabilities"] == facts["exo"]


def test_mig_devices_as_their_own_nodes(probed):
    result = ok(probed["mig"], exo_node_mig=True)["instances"]
    assert [(i["kind"], i["name"]) for i in result] == [
        ("mig", "MIG-aaaaaaaa-0000-0000-0000-000000000001"),
        ("mig", "MIG-aaaaaaaa-0000-0000-0000-000000000002")]
    assert [i["capabilities"]["memory"] for i in result] == [40192, 9856]
    assert result[0]["env"]["CUDA_VISIBLE_DEVICES"] == "MIG-aaaaaaaa-0000-0000-0000-000000000001"
    # The GPU's node plus the capability nodes of the GPU instance and compute instance.
    assert result[0]["devices"][0] == "/dev/nvidia0 rw"
    assert result[0]["devices"][-2:] == ["/dev/nvidia-caps/nvidia-cap21 r", "/dev/nvidia-caps/nvidia-cap22 r"]
    assert result[1]["devices"][-2:] == ["/dev/nvidia-caps/nvidia-cap81 r", "/dev/nvidia-caps/nvidia-cap82 r"]


def test_cpu_instance_without_nvml(probed):
    assert probed["cpu_only"]["nvml"]["status"] == "library_not_found"
    result = ok(probed["cpu_only"])
    [cpu] = result["instances"]
    assert (cpu["kind"], cpu["name"], cpu["node_id"]) == ("cpu", "cpu", "h-cpu")
    assert "NVML: library_not_found" in result["cpu_reason"]
    assert cpu["devices"] == [] and cpu["cpu_list"] is None and cpu["numa_node"] is None
    # tinygrad's CPU backend, with the variable each version reads; CUDA sees no GPU either.
    assert cpu["env"]["CLANG"] == "1" and cpu["env"]["CUDA_VISIBLE_DEVICES"] == ""
    assert ok(probed["cpu_only"], version="0.14.0")["instances"][0]["env"]["DEV"] == "CPU"
    assert cpu["capabilities"]["model"] == "Linux Box (CPU)" and cpu["capabilities"]["memory"] == 16384


def test_forced_backends_use_the_versions_variables(probed):
    assert ok(probed["one"], version="0.13.0", exo_node_tinygrad_backend="nv")["instances"][0]["env"]["DEV"] == "NVK:0+NV"
    forced = ok(probed["one"], exo_node_tinygrad_backend="cuda")["instances"][0]["env"]
    assert forced["CUDA"] == "1" and forced["VISIBLE_DEVICES"] == "0"


def test_discovery_and_engine_arguments(probed):
    manual = ok(probed["four"])["instances"][1]["args"]
    assert "--discovery-module=manual" in manual and "--discovery-config-path=/etc/exo/topology.json" in manual
    assert "--node-id=h-%s" % uuid(1) in manual and "--node-port=50052" in manual
    assert "--chatgpt-api-port=52416" in manual and "--inference-engine=tinygrad" in manual
    assert not [a for a in manual if a.startswith("--listen-port")]
    udp = ok(probed["one"], exo_node_discovery="udp", exo_node_udp_port=6000, exo_node_broadcast_port=6000)["instances"]
    assert [a for i in udp for a in i["args"] if a.startswith(("--listen-port", "--broadcast-port"))] == [
        "--listen-port=6000", "--broadcast-port=6000"]
    dummy = ok(probed["one"], exo_node_inference_engine="dummy")["instances"][0]["args"]
    assert "--inference-engine=dummy" in dummy


def test_extras_are_added_after_the_roles_own(probed):
    [instance] = ok(probed["one"], exo_node_extra_args=["--max-parallel-downloads=2"], exo_node_extra_env={"DEBUG": 2},
                    exo_node_device_allow_extra=["/dev/infiniband/uverbs0 rw"])["instances"]
    assert instance["args"][-1] == "--max-parallel-downloads=2" and instance["extra_env"] == ["DEBUG"]
    assert instance["devices"][-1] == "/dev/infiniband/uverbs0 rw"


def test_shared_home(probed):
    result = ok(probed["two"], exo_node_shared_home=True, exo_node_data_dir="/srv/exo")["instances"]
    assert {i["home"] for i in result} == {"/srv/exo/shared"}


# ---- what is refused: requests this host cannot meet --------------------------------------------

def test_ports_collide(probed):
    errors = plan(probed["four"], exo_node_api_port=50053)["errors"]
    assert errors[0].startswith("host h: tcp port 50053 is used by the API port of %s and the gRPC port of %s; move"
                                % (uuid(0), uuid(2))), errors
    assert len(errors) == 2 and "tcp port 50054" in errors[1]


def test_ports_overflow(probed):
    refused(probed["four"], "port 65537 is beyond 65535", exo_node_grpc_port=65534)


def test_forced_backend_unknown_to_the_tinygrad_version(probed):
    facts = with_tinygrad(probed["one"])
    del facts["tinygrad"]["select_env"]["nv"]
    result = node_plan.instances(facts, checked(dict(SETTINGS, exo_node_tinygrad_backend="nv")), "h")
    assert result["errors"] and "exo_node_tinygrad_backend is nv but the variable that selects it is unknown" \
        in result["errors"][0]


def test_mig_minors_missing(probed):
    result = node_plan.instances(with_tinygrad(probed["mig"]), checked(dict(SETTINGS, exo_node_mig=True)), "h",
                                 mig_minors_text=None, mig_minors_error="No such file")
    assert len(result["errors"]) == 4
    assert "gpu0/gi1/access is not in /proc/driver/nvidia-caps/mig-minors (reading it failed: No such file)" \
        in result["errors"][0]


# ---- what is refused: settings, one message per problem -----------------------------------------

@pytest.mark.parametrize("name, value, parts", [
    ("exo_node_gpus", {"a": 1}, ["exo_node_gpus is {\"a\": 1}; give a list"]),
    ("exo_node_gpus", "[0, 2", ["exo_node_gpus is \"[0, 2\", which is not a JSON list"]),
    ("exo_node_gpus", [[0]], ["exo_node_gpus entry [0] is not a GPU"]),
    ("exo_node_gpus", [" "], ["exo_node_gpus entry \" \" is not a GPU"]),
    ("exo_node_min_memory_mib", "20 GiB", ["exo_node_min_memory_mib is \"20 GiB\", not a whole number"]),
    ("exo_node_min_memory_mib", -1, ["exo_node_min_memory_mib is -1; it must be 0 or more"]),
    ("exo_node_mig", "maybe", ["exo_node_mig is \"maybe\"; give true or false"]),
    ("exo_node_grpc_port", 0, ["exo_node_grpc_port is 0; it must be from 1 to 65535"]),
    ("exo_node_udp_port", "70000", ["exo_node_udp_port is \"70000\"; it must be from 1 to 65535"]),
    ("exo_node_restart_sec", -1, ["exo_node_restart_sec is -1"]),
    ("exo_node_discovery_timeout", -5, ["exo_node_discovery_timeout is -5"]),
    ("exo_node_wait_for_peers", -1, ["exo_node_wait_for_peers is -1"]),
    ("exo_node_max_exposure", 11, ["exo_node_max_exposure is 11; it must be from 0.0 to 10.0"]),
    ("exo_node_requests_in_flight", 0, ["exo_node_requests_in_flight is 0; it must be from 1 to 64"]),
    ("exo_node_request_queue", "x", ["exo_node_request_queue is \"x\", not a whole number; give one such as 8"]),
    ("exo_node_discovery", "mdns", ["exo_node_discovery is \"mdns\"; choose one of \"manual\", \"udp\""]),
    ("exo_node_id_prefix", "gpu 01", ["exo_node_id_prefix is \"gpu 01\""]),
    ("exo_node_data_dir", "var/lib/exo", ["exo_node_data_dir is \"var/lib/exo\"; give an absolute path"]),
    ("exo_node_address", " ", ['exo_node_address is " ", which is empty; give the address']),
    ("exo_node_extra_args", "--max-parallel-downloads=2", ["exo_node_extra_args is the string", "give a list"]),
    ("exo_node_extra_args", ["run"], ["exo_node_extra_args entry \"run\" is not '--flag'", "positional"]),
    ("exo_node_extra_args", ["--max-generate-tokens 5"], ["\"--max-generate-tokens 5\" is not '--flag'"]),
    ("exo_node_extra_args", ["--node-port=6000"], ["sets --node-port, which the role sets from exo_node_grpc_port"]),
    ("exo_node_extra_args", ["--inference-engine=dummy"], ["from exo_node_inference_engine"]),
    # exo's parser takes an unambiguous prefix of a flag as the flag (argparse's allow_abbrev).
    ("exo_node_extra_args", ["--chatgpt-api-p=8000"], ["sets --chatgpt-api-port, which the role sets from exo_node_api_port"]),
    ("exo_node_extra_args", ["--node-h=0.0.0.0"], ["sets --node-host, which the role sets from exo_node_address"]),
    ("exo_node_extra_args", ["--inference=dummy"], ["sets --inference-engine, which the role sets from exo_node_inference_engine"]),
    ("exo_node_extra_args", ["--no-disable-tui"], ["sets --no-disable-tui, which the role sets; remove it"]),
    ("exo_node_extra_args", ["--d=1"], ["names --d, which exo's parser finds ambiguous (--default-model, --data, "]),
    ("exo_node_extra_args", ["--max-tokens=5"], ["names --max-tokens, which is not a flag of exo e4238f9ef"]),
    ("exo_node_extra_args", ["--system-prompt=$HOME"], ["holds quotes, backslashes or '$'"]),
    # Every address, where the role needs a host's own or its clients'.
    ("exo_node_api_clients", ["0.0.0.0/0"], ["exo_node_api_clients entry \"0.0.0.0/0\" is every address"]),
    ("exo_node_api_clients", ["::/0"], ["exo_node_api_clients entry \"::/0\" is every address"]),
    ("exo_node_address", "0.0.0.0", ["exo_node_address is \"0.0.0.0\", every address"]),
    ("exo_node_address", "::", ["exo_node_address is \"::\", every address"]),
    # Directories of the system, whose owner and mode the role would change.
    ("exo_node_data_dir", "/etc", ["exo_node_data_dir is \"/etc\", a directory of the system", "such as /var/lib/exo"]),
    ("exo_node_install_dir", "/usr/", ["exo_node_install_dir is \"/usr/\", a directory of the system"]),
    ("exo_node_config_dir", "/", ["exo_node_config_dir is \"/\", a directory of the system"]),
    # the root health watcher's ReadWritePaths= and --metrics: one path, never the system's
    ("exo_node_health_textfile_dir", "/etc", ["exo_node_health_textfile_dir is \"/etc\", a directory of the system",
                                              "such as /var/lib/prometheus/node-exporter"]),
    ("exo_node_health_textfile_dir", "/var/lib/node exporter/textfile",
     ["exo_node_health_textfile_dir", "systemd would read whitespace, control characters"]),
    ("exo_node_health_textfile_dir", "/var/lib/node-exporter\x1b[2J", ["exo_node_health_textfile_dir", "control characters"]),
    ("exo_node_data_dir", "/var/lib/exo\x07", ["exo_node_data_dir", "control characters"]),
    ("exo_node_extra_env", {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, ["sets CUDA_VISIBLE_DEVICES, which the role sets"]),
    ("exo_node_extra_env", {"EXO_NODE_ARGS": "--x"}, ["sets EXO_NODE_ARGS, which the role sets from exo_node_extra_args"]),
    ("exo_node_extra_env", {"VISIBLE_DEVICES": "1"}, ["sets VISIBLE_DEVICES, which tinygrad 0.10.0 reads"]),
    ("exo_node_extra_env", {"X": "a\"b"}, ["exo_node_extra_env X is not a plain value (a str with one of those)"]),
    ("exo_node_extra_env", {"1X": "a"}, ["exo_node_extra_env name \"1X\""]),
    ("exo_node_device_allow_extra", ["/dev/foo rwx"], ["\"/dev/foo rwx\" is not a DeviceAllow= value"]),
    ("exo_node_device_allow_extra", ["/dev/nvidia1 rw"], ["\"/dev/nvidia1 rw\" gives every instance a GPU's device node"]),
    ("exo_node_device_allow_extra", ["char-nvidia-frontend rw"], ["undoes each instance's pinning to its own GPU"]),
    ("exo_node_device_allow_extra", ["/dev/nvidia-caps/nvidia-cap21 r"], ["choose the GPUs with exo_node_gpus"]),
    ("exo_node_user", "root", ["exo_node_user is \"root\", a superuser"]),
    # exo's requirements (exo_requirements.check_settings), checked with the others before any change
    ("exo_node_skip_requirements", ["tinygrad"], ["must not name tinygrad, which exo imports; give exo_node_tinygrad_requirement"]),
    ("exo_node_replace_requirements", {"opencv-python": "opencv-python-headless==4.10"},
     ["exo_node_replace_requirements: 'opencv-python-headless==4.10' is not a package name"]),
    ("exo_node_tinygrad_requirement", "numpy==2.0.0", ["exo_node_tinygrad_requirement 'numpy==2.0.0' names numpy, not tinygrad"]),
])
def test_bad_setting_named_with_its_value(probed, name, value, parts):
    refused(probed["one"], *parts, **{name: value})


def test_hf_endpoint_beside_placed_models_is_refused(probed):
    refused(probed["one"], "exo_node_extra_env sets HF_ENDPOINT while the role places exo_node_models",
            exo_node_models=["llama-3.2-1b"], exo_node_model_store="/srv/models",
            exo_node_extra_env={"HF_ENDPOINT": "https://hf-mirror.example"})
    assert ok(probed["one"], exo_node_extra_env={"HF_ENDPOINT": "https://hf-mirror.example"})["instances"]
    assert ok(probed["one"], exo_node_extra_env={"OTHER": "x"}, exo_node_models=["llama-3.2-1b"],
              exo_node_model_store="/srv/models")["instances"]


def test_udp_discovery_that_never_meets_is_refused(probed):
    """exo listens on --listen-port and broadcasts to --broadcast-port: ports that differ, or a second instance
    on a host (listening on the base plus its slot), never hear the ring."""
    refused(probed["one"], "exo_node_udp_port is 6000 and exo_node_broadcast_port 6001: exo's UDP discovery listens",
            exo_node_discovery="udp", exo_node_udp_port=6000, exo_node_broadcast_port=6001)
    refused(probed["two"], "host h has 2 instances and exo_node_discovery is udp", exo_node_discovery="udp")


def test_api_clients_without_the_firewall_are_refused(probed):
    refused(probed["one"], "exo_node_api_clients lists 1 client(s), but exo_node_firewall is false",
            exo_node_firewall=False, exo_node_api_clients=["192.0.2.10"])
    assert ok(probed["one"], exo_node_firewall=False)["instances"]


@pytest.mark.parametrize("given, flag", [
    ("--node-id", "--node-id"),  # exact, though also the start of --node-id-filter
    ("--node-id-f", "--node-id-filter"),
    ("--max-g", "--max-generate-tokens"),
    ("--d", None),  # ambiguous
    ("--tokens", None),
])
def test_extra_arguments_are_matched_as_exos_parser_matches_them(given, flag):
    assert settings.exo_flag(given)[0] == flag


def test_every_bad_setting_gets_its_own_message(probed):
    # The settings' own, as the preflight refuses them; the service user's once they pass, from its account.
    result = plan(probed["one"], exo_node_user="root", exo_node_restart_sec=-1, exo_node_extra_args=["run"],
                  exo_node_extra_env={"HOME": "/root"})
    assert len(result["errors"]) == 3 and result["instances"] == []
    assert all(e.startswith("host h: exo_node_") for e in result["errors"])
    user = plan(probed["one"], exo_node_user="root")
    assert len(user["errors"]) == 1 and user["instances"] == []
    assert user["errors"][0].startswith('host h: exo_node_user is "root", a superuser')


def test_settings_alone_before_the_facts():
    assert node_plan.instances(None, checked(SETTINGS), "h")["errors"] == []
    # A refused setting stops the role's preflight, before the planner.
    assert plan(None, version=None, exo_node_api_port=0)["errors"] == [
        "host h: exo_node_api_port is 0; it must be from 1 to 65535"]


def test_preview_leaves_what_depends_on_exos_tinygrad_to_the_final_plan(probed):
    facts = with_tinygrad(probed["one"])
    del facts["tinygrad"]["select_env"]["nv"]
    settings = checked(dict(SETTINGS, exo_node_tinygrad_backend="nv", exo_node_extra_env={"VISIBLE_DEVICES": "1"}))
    assert len(node_plan.instances(facts, settings, "h")["errors"]) == 1
    preview = node_plan.instances(facts, settings, "h", preview=True)
    assert preview["errors"] == [] and [i["name"] for i in preview["instances"]] == [uuid(0)]
    # What the GPUs decide is checked all the same.
    assert node_plan.instances(facts, checked(dict(settings, exo_node_gpus=[7])), "h", preview=True)["errors"]


def test_accounts_the_role_did_not_create_are_refused(probed):
    stranger = ["x", "1000", "1000", "Alice", "/home/alice", "/bin/bash"]
    refused(probed["one"], "exo_node_user is \"exo\", an existing account the role did not create",
            "exo_node_user_adopt: true", account=stranger)
    refused(probed["one"], "a superuser", account=["x", "0", "0", "exo nodes", "/", "/bin/sh"])
    assert ok(probed["one"], account=stranger, exo_node_user_adopt=True)["instances"]
    assert ok(probed["one"], account=["x", "998", "998", "exo nodes", "/var/lib/exo", "/usr/sbin/nologin"])["instances"]
    refused(probed["one"], "exo_node_user_adopt is true but the account \"exo\" does not exist", exo_node_user_adopt="yes")


@pytest.mark.parametrize("facts, parts", [
    ({"pci": []}, ["lacks schema_version, nvml, gpus, host, tinygrad, backend"]),
    ("gpus: none", ["is \"gpus: none\", not the facts of gpufleet.exo.device_facts"]),
])
def test_foreign_facts_are_named(facts, parts):
    result = node_plan.instances(facts, checked(SETTINGS), "h")
    assert len(result["errors"]) == 1 and all(p in result["errors"][0] for p in parts), result["errors"]
    assert "gather them with gpufleet.exo.device_facts" in result["errors"][0]


def test_partial_facts_are_named(probed):
    facts = copy.deepcopy(probed["one"])
    del facts["gpus"][0]["minor"]
    refused(facts, "gpus entry", "lacks minor", version=None)
    facts = dict(probed["one"], schema_version=2)
    refused(facts, "has schema_version 2; this role reads schema 1", version=None)


# ---- no silent teardown -------------------------------------------------------------------------

def test_a_setting_never_removes_running_instances(probed):
    # A shorter exo_node_gpus on a host running four GPU instances: they stay, the run stops.
    running = [uuid(n) for n in range(4)]
    message = refused(probed["four"], "would stop and remove exo@%s" % ", exo@".join(running[1:]),
                      "their GPUs are still on the host", "exo_node_allow_removal: true",
                      existing=running, exo_node_gpus=[0])
    assert "CPU" not in message
    allowed = ok(probed["four"], existing=running, exo_node_gpus=[0], exo_node_allow_removal=True)
    assert allowed["removed"] == running[1:] and [i["name"] for i in allowed["instances"]] == running[:1]


def test_a_gpu_that_left_the_host_goes_and_the_others_stay(probed):
    result = ok(probed["four"], existing=[uuid(n) for n in range(4)] + [uuid(9)])
    assert result["removed"] == [uuid(9)]


def test_broken_nvml_never_removes_gpu_instances(probed):
    refused(probed["nvml_broken"], "would stop and remove exo@" + uuid(0),
            "NVML cannot tell whether the GPU is still there", existing=[uuid(0)])


def test_the_cpu_node_gives_way_to_gpu_nodes(probed):
    assert ok(probed["one"], existing=["cpu"])["removed"] == ["cpu"]


def test_existing_instances_are_read_from_their_env_files(probed):
    result = ok(probed["four"], existing=["/etc/exo/instances/%s.env" % uuid(0), "/etc/exo/instances/cpu.env"])
    assert result["existing"] == [uuid(0), "cpu"] and result["removed"] == ["cpu"]


def test_extra_env_values_stay_out_of_the_published_instances_and_reach_only_the_env_file(probed):
    """exo_node_extra_env may hold a secret (HF_TOKEN): the instances, a cacheable fact every run publishes, name it
    only; the env file, which only root and exo's group read, holds its value after the role's own."""
    secret = "hf_0123456789abcdefSECRET"
    [instance] = ok(probed["one"], exo_node_extra_env={"HF_TOKEN": secret, "DEBUG": 2})["instances"]
    assert secret not in json.dumps(instance) and instance["extra_env"] == ["DEBUG", "HF_TOKEN"]
    text = node_templates().get_template("instance.env.j2").render(
        item=instance, ansible_managed="Ansible managed", exo_node_discovery="manual",
        exo_node_extra_env={"HF_TOKEN": secret, "DEBUG": 2})
    lines = text.splitlines()
    assert 'HF_TOKEN="%s"' % secret in lines and 'DEBUG="2"' in lines
    # every variable once, sorted by name as dictsort sorts (case aside), as before
    names = [line.split("=", 1)[0] for line in lines if "=" in line and not line.startswith("#")][1:]
    assert names == sorted(names, key=str.lower) and len(names) == len(set(names)) == len(instance["env"]) + 2


@pytest.mark.parametrize("name", ["node_plan", "node_firewall", "node_proxy", "node_files", "node_models", "node_install"])
def test_a_planner_refuses_the_settings_as_given_by_name(name):
    from ansible.errors import AnsibleFilterError
    from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
    calls = {"node_plan": lambda f, s: f(None, s, "h"), "node_firewall": lambda f, s: f([], {"peers": {}}, s),
             "node_proxy": lambda f, s: f([], s), "node_files": lambda f, s: f([], [], s, {}),
             "node_models": lambda f, s: f(s, [], "h"), "node_install": lambda f, s: f(s)}
    with pytest.raises(AnsibleFilterError, match="^%s takes the node role's settings as its preflight checked them" % name):
        calls[name](FilterModule().filters()[name], dict(SETTINGS))
