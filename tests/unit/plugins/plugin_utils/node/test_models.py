# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The models the node role places (plugins/plugin_utils/node/models.py): from a store on disk, as
gpufleet.exo.exo_data checked its manifests, the copies, each instance's links and exo's cached answers, and what
stops a placement. The role places the synthetic model for real in roles/node/molecule/serve."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import models
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS, plan_node_ok as ok, plan_node_refused as refused

REPO = "unsloth/Llama-3.2-1B-Instruct"
FILES = {"model.safetensors": 1000, "config.json": 10, "tokenizer.json": 20, "sub/extra.txt": 3}


def manifests(repos, files=None):
    """What gpufleet.exo.exo_data (step store) answers for repos whose manifests list files (FILES by default)."""
    files = FILES if files is None else files
    return dict((repo, dict((path, {"size": size, "sha256": "%064x" % size}) for path, size in files.items()))
                for repo in repos)


def settings(**changes):
    values = {"exo_node_models": ["llama-3.2-1b"], "exo_node_model_source": "controller",
              "exo_node_model_store": "/store", "exo_node_data_dir": "/var/lib/exo", "exo_node_user": "exo",
              "exo_node_group": "exo"}
    values.update(changes)
    return values


@pytest.fixture
def instances(probed):
    return ok(probed["one"])["instances"]


def test_a_controller_store_is_copied_once_and_linked_into_every_instance(instances):
    # a store given with ".." and a trailing slash: normalised
    placement = models.placement("h", settings(exo_node_model_store="/srv/../store/"), instances,
                                 store=manifests([REPO]), free=5000)
    assert placement["errors"] == []
    kept = "/var/lib/exo/models/" + REPO
    assert placement["copies"][0] == {"src": "/store/%s/config.json" % REPO, "dest": kept + "/config.json",
                                      "sha256": "%064x" % 10}
    assert [c["dest"] for c in placement["copies"]] == [kept + "/" + p for p in sorted(FILES)]
    assert placement["host_copies"] == []
    # checked against the store's manifest once copied
    assert placement["verify"] == {kept: manifests([REPO])[REPO]}
    assert placement["copy_bytes"] == sum(FILES.values())
    assert placement["store_dirs"] == [kept, kept + "/sub"]
    # root's, all the way from the data directory: exo can swap nothing on the path root copies to
    assert placement["directories"][:3] == [
        {"path": "/var/lib/exo/models", "owner": "root", "group": "exo", "mode": "0750"},
        {"path": kept, "owner": "root", "group": "exo", "mode": "0750"},
        {"path": kept + "/sub", "owner": "root", "group": "exo", "mode": "0750"}]
    assert [d["path"] for d in placement["directories"][3:]] == placement["dirs"]
    assert set(d["owner"] for d in placement["directories"][3:]) == {"exo"}
    # each instance: its downloads link to the host's copy, and exo's two answers are in its TMPDIR
    home = instances[-1]["home"]
    assert {"src": kept + "/model.safetensors", "dest": home + "/downloads/unsloth--Llama-3.2-1B-Instruct/model.safetensors",
            "instances": [instances[-1]["name"]]} in placement["links"]
    seeds = dict((s["dest"], s["content"]) for s in placement["seeds"])
    listing = json.loads(seeds[home + "/tmp/exo/unsloth--Llama-3.2-1B-Instruct--main--file_list.json"])
    assert listing == [{"path": p, "size": FILES[p]} for p in sorted(FILES)]
    assert json.loads(seeds[home + "/tmp/exo/unsloth--Llama-3.2-1B-Instruct/model.safetensors.index.json"]) == \
        {"metadata": {}, "weight_map": {}}
    assert len(placement["seeds"]) == 2 * len(instances)


def test_files_already_there_are_not_counted_and_too_little_space_stops_the_run(instances):
    data = "/data"
    placement = models.placement("h", settings(exo_node_data_dir=data), instances, store=manifests([REPO]),
                                 placed={REPO: {"model.safetensors": 1000}}, free=20)
    assert placement["copy_bytes"] == 33
    assert placement["errors"] == ["host h: the models need 0.00 GB more in %s (exo_node_data_dir) and it has 0.00 GB "
                                   "free; free space there, or choose fewer exo_node_models" % data]


# What exo_data (step inspect) found verified on the host, and what is still copied and checked there.
VERIFIED_CASES = [
    ("nothing verified", None, sorted(FILES)),
    ("all verified, with the store's sha256", dict((p, "%064x" % size) for p, size in FILES.items()), []),
    ("one verified with another sha256 (the store changed)",
     dict((p, "%064x" % (size + (p == "config.json"))) for p, size in FILES.items()), ["config.json"]),
    ("one not verified (changed on the host since)",
     dict((p, "%064x" % size) for p, size in FILES.items() if p != "model.safetensors"), ["model.safetensors"]),
]


@pytest.mark.parametrize("source", ["controller", "host"])
@pytest.mark.parametrize("what, verified, checked", VERIFIED_CASES, ids=[case[0] for case in VERIFIED_CASES])
def test_files_verified_on_the_host_are_neither_copied_nor_checked_again(instances, source, what, verified, checked):
    placement = models.placement("h", settings(exo_node_model_source=source), instances, store=manifests([REPO]),
                                 verified=verified and {REPO: verified})
    kept = "/var/lib/exo/models/" + REPO
    copies = placement["copies" if source == "controller" else "host_copies"]
    assert [c["dest"] for c in copies] == [kept + "/" + path for path in checked]
    assert placement["verify"] == ({kept: dict((p, manifests([REPO])[REPO][p]) for p in checked)} if checked else {})
    # every instance is still linked to every file, and exo's answers still list them all
    assert len(placement["links"]) == len(FILES) * len(instances)


def test_a_repository_index_is_linked_and_a_host_store_is_copied_on_the_host(instances):
    store = "/mnt/store"
    files = dict(FILES, **{"model.safetensors.index.json": 5})
    placement = models.placement("h", settings(exo_node_model_source="host", exo_node_model_store=store), instances,
                                 store=manifests([REPO], files))
    kept = "/var/lib/exo/models/" + REPO
    assert placement["copies"] == []
    assert placement["host_copies"][0] == {"src": "%s/%s/config.json" % (store, REPO), "dest": kept + "/config.json",
                                           "sha256": "%064x" % 10}
    home = instances[0]["home"]
    assert {"src": kept + "/model.safetensors.index.json",
            "dest": home + "/tmp/exo/unsloth--Llama-3.2-1B-Instruct/model.safetensors.index.json",
            "instances": [instances[0]["name"]]} in placement["links"]


def test_a_store_without_the_model_is_refused_with_what_to_do(instances):
    placement = models.placement("h", settings(exo_node_models=["llama-3.2-1b", "llama-3.2-1b-8bit"]), instances,
                                 store=manifests([REPO], {"config.json": 10}))
    assert placement["errors"] == [
        "host h: exo_node_model_store has no *.safetensors file of %s (for exo_node_models llama-3.2-1b, "
        "llama-3.2-1b-8bit) in /store/%s on the controller; put the files a model needs there "
        "(huggingface-cli download %s --local-dir /store/%s --include '*.safetensors' '*.json' '*.txt' 'tokenizer.model' "
        "'*.tiktoken', then remove its .cache) and make its manifest" % (REPO, REPO, REPO, REPO)]


def test_a_mirror_places_nothing_and_names_itself_in_the_environment(probed):
    mirror = settings(exo_node_model_source="mirror", exo_node_model_store="https://mirror.example:8080/")
    placement = models.placement("h", mirror, [], store={})
    assert placement["links"] == [] and placement["summary"] == [
        "models llama-3.2-1b: from the mirror https://mirror.example:8080/ (HF_ENDPOINT), downloaded by exo itself"]
    instances = ok(probed["one"], **mirror)["instances"]
    assert set(i["env"]["HF_ENDPOINT"] for i in instances) == {"https://mirror.example:8080"}


@pytest.mark.parametrize("changes, message", [
    ({"exo_node_models": ["llama-9"]}, 'exo_node_models entry "llama-9" is not a model exo\'s tinygrad engine serves'),
    ({"exo_node_model_store": ""}, 'exo_node_model_store is ""; with exo_node_model_source: controller'),
    ({"exo_node_model_source": "host", "exo_node_model_store": "models"}, "give an absolute path on the host"),
    ({"exo_node_model_source": "mirror", "exo_node_model_store": "ftp://x"}, "give the http:// or https:// URL"),
    # A mirror over plain HTTP, unless the operator says the network is trusted (below).
    ({"exo_node_model_source": "mirror", "exo_node_model_store": "http://mirror.lan"},
     'exo_node_model_store is "http://mirror.lan", a mirror over plain HTTP, where anyone on the path can change '
     "the models exo downloads; give its https:// URL, or set exo_node_model_mirror_insecure: true"),
    ({"exo_node_model_mirror_insecure": "maybe"}, 'exo_node_model_mirror_insecure is "maybe"; give true or false'),
])
def test_model_settings_that_cannot_work_are_refused_by_name(changes, message):
    values, errors = models.model_settings(settings(**changes))
    assert len(errors) == 1 and message in errors[0], errors
    # The role's preflight refuses them with the same message: node_models takes the settings it checked.
    assert check_settings(dict(NODE_SETTINGS, **settings(**changes)))[1] == errors


def test_a_plain_http_mirror_is_taken_where_the_operator_says_the_network_is_trusted(probed):
    mirror = settings(exo_node_model_source="mirror", exo_node_model_store="http://mirror.lan",
                      exo_node_model_mirror_insecure=True)
    assert models.model_settings(mirror)[1] == []
    assert set(i["env"]["HF_ENDPOINT"] for i in ok(probed["one"], **mirror)["instances"]) == {"http://mirror.lan"}


# What every instance is told of exo_node_models: the models it serves (the patch of exo refuses any other), and,
# with the models placed by the role, that it runs offline.
@pytest.mark.parametrize("changes, env", [
    ({"exo_node_models": []}, {}),
    ({}, {"HF_HUB_OFFLINE": "1", "GPUFLEET_EXO_PLACED_MODELS": "llama-3.2-1b"}),
    ({"exo_node_model_source": "host", "exo_node_models": ["llama-3.2-1b", "llama-3.2-3b"]},
     {"HF_HUB_OFFLINE": "1", "GPUFLEET_EXO_PLACED_MODELS": "llama-3.2-1b,llama-3.2-3b"}),
    # A mirror is asked by exo itself: not offline, but only for the models listed.
    ({"exo_node_model_source": "mirror", "exo_node_model_store": "https://mirror.example/"},
     {"HF_ENDPOINT": "https://mirror.example", "GPUFLEET_EXO_PLACED_MODELS": "llama-3.2-1b"}),
    ({"exo_node_models": [], "exo_node_model_source": "mirror", "exo_node_model_store": "https://mirror.example/"}, {}),
])
def test_each_instance_is_told_the_models_it_serves_and_whether_it_runs_offline(probed, changes, env):
    assert models.instance_env(settings(**changes)) == env
    instances = ok(probed["one"], **settings(**changes))["instances"]
    for name in ("HF_HUB_OFFLINE", "HF_ENDPOINT", models.PLACED_ENV):
        assert set(i["env"].get(name) for i in instances) == {env.get(name)}, name


def test_the_served_models_cannot_be_set_beside_exo_node_models(probed):
    refused(probed["one"], "exo_node_extra_env sets GPUFLEET_EXO_PLACED_MODELS, which the role sets from "
            "exo_node_models; set that instead", exo_node_extra_env={models.PLACED_ENV: "llama-3.1-8b"})
