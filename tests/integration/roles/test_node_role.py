# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node role's wiring, through ansible-playbook over simulated hosts.

The policy itself is tested in tests/unit/plugins/plugin_utils/node/; here each case is
a simulated host (tests/simulated/hosts.py), an inventory host on a local connection, probed by the
real gpufleet.exo.device_facts, and one ansible-playbook run (node_tasks.yml beside this file) runs
the role's planning tasks, its preflight, or the whole role on it. The whole-role refusals run
twice, in check mode and for real, and must leave the host as it was.
"""

import os
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_data

from tests.helpers import NODE_TASKS as PLAYBOOK, run_playbook, tinygrad_facts as tinygrad
from tests.simulated import hosts as simhosts
from tests.simulated.hosts import uuid


def whole_role(**settings):
    """Settings for a run of the whole role whose paths all lie below result_dir/../paths."""
    base = dict(exo_node_refresh_facts="never", exo_node_manage_packages=False, exo_node_python=sys.executable,
                exo_node_python_max_version="%d.%d" % sys.version_info[:2],
                **dict((key, "{{ result_dir }}/../paths/{{ inventory_hostname }}/" + key)
                       for key in ("exo_node_install_dir", "exo_node_config_dir", "exo_node_data_dir")))
    base.update(settings)
    return base


# name: (simulated host, role variables, tasks file, what the message holds or None when it must pass)
CASES = {
    "four": ("four", {}, "select.yml", None),
    "listed_string": ("four", {"exo_node_gpus": "3, 1"}, "select.yml", None),
    "mig": ("mig", {"exo_node_mig": True}, "select.yml", None),
    "no_nvml": ("cpu_only", {}, "select.yml", None),
    "bad_uuid": ("one", {"exo_node_gpus": ["GPU-00000000-dead-beef-0000-000000000000"]}, "select.yml",
                 ["host bad_uuid", "GPU-00000000-dead-beef-0000-000000000000", "matches no GPU", uuid(0)]),
    "dup_a": ("one", {"exo_node_id_prefix": "same"}, "select.yml",
              ["host dup_a: node id same-%s" % uuid(0), "also used by dup_b"]),
    "dup_b": ("one", {"exo_node_id_prefix": "same"}, "select.yml",
              ["host dup_b: node id same-%s" % uuid(0), "also used by dup_a"]),
    "stranger_in_cluster": ("one", {"exo_node_cluster_hosts": "stranger_in_cluster,gpu99"}, "select.yml",
                            ["host stranger_in_cluster: exo_node_cluster_hosts names \"gpu99\", not in the inventory"]),
    "pypi_exo": ("cpu_only", {"exo_node_source": "index", "exo_node_index_requirement": "exo==0.0.1"}, "preflight.yml",
                 ["host pypi_exo", "the name exo is an unrelated project"]),
    "missing_source": ("cpu_only", {"exo_node_source": "path", "exo_node_source_path": "/nonexistent/exo.whl"},
                       "preflight.yml", ["host missing_source", "/nonexistent/exo.whl"]),
}
# The whole role on hosts it must refuse: before any change, in check mode and for real.
WHOLE = {
    "gpus_13": ("four", whole_role(exo_node_gpus="13"), ["host gpus_13: exo_node_gpus entry '13' matches no GPU"]),
    "as_root": ("one", whole_role(exo_node_user="root"), ["host as_root: exo_node_user is \"root\", a superuser"]),
    "pinned_env": ("one", whole_role(exo_node_extra_env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
                   ["host pinned_env: exo_node_extra_env sets CUDA_VISIBLE_DEVICES"]),
    "negative": ("one", whole_role(exo_node_restart_sec="-5"), ["host negative: exo_node_restart_sec is \"-5\""]),
    "old_python": ("cpu_only", whole_role(exo_node_python_min_version="99.0"),
                   ["host old_python", sys.executable, "is Python %d.%d" % sys.version_info[:2],
                    "exo runs on Python 99.0 to"]),
    # A first run: the facts at hand were not gathered with exo's interpreter, but show the GPUs.
    "first_run": ("four", whole_role(exo_node_refresh_facts="auto", exo_node_gpus=[7]),
                  ["host first_run: exo_node_gpus entry '7' matches no GPU"]),
    # A store the models are not in, or whose file differs from its manifest: found before any change.
    "no_store": ("cpu_only", whole_role(exo_node_models=["llama-3.2-1b"], exo_node_model_store="{{ result_dir }}/../none"),
                 ["/none/unsloth/Llama-3.2-1B-Instruct is missing or empty"]),
    "tampered": ("cpu_only", whole_role(exo_node_models=["llama-3.2-1b"], exo_node_model_store="{{ result_dir }}/../store"),
                 ["/store/unsloth/Llama-3.2-1B-Instruct/model.safetensors differs from its sha256 in gpufleet-model.json"]),
    # Four GPU instances run; a typo in the minimum would leave none of them and run exo on the CPU.
    "typo": ("four", whole_role(exo_node_min_memory_mib="819200"),
             ["host typo: exo_node_min_memory_mib 819200 is above the memory of every GPU here",
              "host typo: this run would stop and remove exo@" + uuid(0), "exo_node_allow_removal: true"]),
    # The proxy's settings, each once read as given: one origin as a string, TLS files the host lacks.
    "origins_string": ("one", whole_role(exo_node_api_proxy=True, exo_node_api_proxy_tokens=["0123456789abcdef0123"],
                                         exo_node_api_proxy_cors_origins="https://chat.example.net"),
                       ['host origins_string: exo_node_api_proxy_cors_origins is the string "https://chat.example.net"; '
                        "give a list"]),
    "tls_missing": ("one", whole_role(exo_node_api_proxy=True, exo_node_api_proxy_tokens=["0123456789abcdef0123"],
                                      exo_node_api_proxy_tls_certificate="/nonexistent/exo.crt",
                                      exo_node_api_proxy_tls_key="/nonexistent/exo.key"),
                    ['host tls_missing: exo_node_api_proxy_tls_certificate is "/nonexistent/exo.crt", which is not a '
                     "file on the host", 'exo_node_api_proxy_tls_key is "/nonexistent/exo.key"']),
}


def model_store(tmp, tampered=False):
    """A store of llama-3.2-1b's repository in tmp/store with its manifest; its weights changed after, if tampered."""
    repo = os.path.join(tmp, "store", "unsloth", "Llama-3.2-1B-Instruct")
    os.makedirs(repo)
    for name, content in (("model.safetensors", b"w" * 64), ("config.json", b"{}"), ("tokenizer.json", b"{}")):
        with open(os.path.join(repo, name), "wb") as handle:
            handle.write(content)
    _exo_data.make_manifest(repo, check_mode=False)
    if tampered:
        with open(os.path.join(repo, "model.safetensors"), "wb") as handle:
            handle.write(b"W" * 64)
    return repo


def _inventory_host(tmp, name, host, settings, tasks, nvml_lib):
    env, root = simhosts.write(tmp, name, nvml_lib, *simhosts.HOSTS[host])
    # The address exo_node_address falls back to, an IP as the role's firewall needs (a local connection ignores it).
    entry = {"case_rootfs": root, "ansible_python_interpreter": sys.executable, "case_tasks": tasks,
             "case_tinygrad": tinygrad("0.10.0"), "case_env": env, "ansible_host": "127.0.0.1"}
    entry.update(settings)
    return entry


def run(tmp, cases, nvml_lib, check=False):
    inventory = {"all": {"vars": {"ansible_connection": "local",
                                  "exo_node_mig_minors_path": os.path.join(tmp, "mig-minors")}, "hosts": {}}}
    for name, (host, settings, tasks) in cases.items():
        inventory["all"]["hosts"][name] = _inventory_host(tmp, name, host, settings, tasks, nvml_lib)
    with open(os.path.join(tmp, "mig-minors"), "w") as handle:
        handle.write(simhosts.MIG_MINORS)
    return run_playbook(tmp, inventory, PLAYBOOK, cases, check=check, timeout=900)


@pytest.fixture(scope="module")
def results(tmp_path_factory, nvml_lib):
    tmp = str(tmp_path_factory.mktemp("node-role"))
    proc, found = run(tmp, dict((name, spec[:3]) for name, spec in CASES.items()), nvml_lib)
    missing = sorted(set(CASES) - set(found))
    assert not missing, "missing %s:\n%s" % (missing, proc.stdout[-6000:])
    return found


def message(result):
    return "\n".join(result["msg"]) if isinstance(result["msg"], list) else str(result["msg"])


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][3] is None))
def test_simulated_planned_and_published(results, name):
    assert results[name]["ok"], results[name]


def test_simulated_instances_published_from_the_plan(results):
    four = results["four"]["instances"]
    assert [i["name"] for i in four] == [uuid(n) for n in range(4)]
    assert [i["devices"][0] for i in four] == ["/dev/nvidia0 rw", "/dev/nvidia1 rw", "/dev/nvidia3 rw", "/dev/nvidia2 rw"]
    assert [i["name"] for i in results["listed_string"]["instances"]] == [uuid(1), uuid(3)]
    # The MIG minors file is read from the host and reaches the plan.
    assert results["mig"]["instances"][0]["devices"][-1] == "/dev/nvidia-caps/nvidia-cap22 r"
    assert [i["kind"] for i in results["no_nvml"]["instances"]] == ["cpu"]
    assert "NVML: library_not_found" in results["no_nvml"]["cpu_reason"]


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][3] is not None))
def test_simulated_refused_with_host_and_value(results, name):
    assert results[name]["ok"] is False, results[name]
    for part in CASES[name][3]:
        assert part in message(results[name]), message(results[name])


@pytest.mark.parametrize("check", [True, False], ids=["check", "real"])
def test_simulated_whole_role_refuses_before_any_change(tmp_path, nvml_lib, check):
    tmp = str(tmp_path)
    # The typo host already runs four instances: their files are there before the run.
    instances = os.path.join(tmp, "paths", "typo", "exo_node_config_dir", "instances")
    os.makedirs(instances)
    for n in range(4):
        with open(os.path.join(instances, uuid(n) + ".env"), "w") as handle:
            handle.write("# running\n")
    model_store(tmp, tampered=True)
    before = sorted(os.walk(os.path.join(tmp, "paths")))
    proc, found = run(tmp, dict((name, (host, settings, "main.yml")) for name, (host, settings, dummy) in WHOLE.items()),
                      nvml_lib, check=check)
    assert sorted(found) == sorted(WHOLE), proc.stdout[-6000:]
    for name, (dummy, dummy_settings, parts) in WHOLE.items():
        assert found[name]["ok"] is False, (name, found[name])
        for part in parts:
            assert part in message(found[name]), message(found[name])
    # Nothing was created, changed or removed under any host's paths.
    assert sorted(os.walk(os.path.join(tmp, "paths"))) == before
    assert sorted(os.listdir(instances)) == sorted(uuid(n) + ".env" for n in range(4))


def test_check_mode_runs_a_first_deployment_with_models_to_the_end_and_says_what_it_would_copy(tmp_path, nvml_lib):
    tmp = str(tmp_path)
    repo = model_store(tmp)
    settings = whole_role(exo_node_models=["llama-3.2-1b"], exo_node_model_store="{{ result_dir }}/../store")
    proc, found = run(tmp, {"models": ("cpu_only", settings, "main.yml")}, nvml_lib, check=True)
    assert found["models"]["ok"], (found["models"], proc.stdout[-6000:])
    # Each file it would copy, named by the copy task's items (the paths as the inventory spells them).
    kept = os.path.join(tmp, "results", "..", "paths", "models", "exo_node_data_dir", "models", "unsloth",
                        "Llama-3.2-1B-Instruct")
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        assert "changed: [models] => (item=%s)" % os.path.join(kept, name) in proc.stdout, proc.stdout[-6000:]
    assert not os.path.exists(os.path.join(tmp, "paths"))
