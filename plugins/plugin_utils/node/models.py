# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The models the node role places, so that no exo node asks Hugging Face for them.

exo e4238f9ef serves a model id from the repository its model card names for the engine
(exo/models.py), read from EXO_HOME/downloads/<repository, / as --> (exo/download/new_shard_download.py,
download_shard). Before it reads a file there it asks HF_ENDPOINT twice, 30 times each when no one
answers: for the repository's file list (fetch_file_list_with_cache, whose answer it keeps in
<tmp>/exo/<dir>--main--file_list.json) and for model.safetensors.index.json (get_weight_map, kept in
<tmp>/exo/<dir>/). Each lookup is satisfied here:
- the files: each instance's downloads/<dir>/<path> is a hard link to the host's one copy of the
  repository, exo_node_data_dir/models/<repository>, copied there from the store on the controller
  or on the host. A link, not the file itself, so that several instances share one copy; a hard
  link owned by exo and inside EXO_HOME, because tinygrad opens a safetensors file read-write
  (tinygrad/runtime/ops_disk.py, _might_open: O_RDWR|O_CREAT), which a symbolic link into a store
  the unit keeps read-only (ProtectSystem=strict) or root owns would refuse;
- the file list: written in exo's cache with every file's size, which exo compares with the file's;
- the weight map: a hard link to the repository's own index, or, for a single-file model without one,
  an empty map, which exo reads as "every *.safetensors file" (hf_helpers.get_allow_patterns);
- the cache itself: TMPDIR is EXO_HOME/tmp (instances.py), which PrivateTmp= does not empty.
With exo_node_model_source: mirror the role places nothing; HF_ENDPOINT names the mirror.

What every instance is told (instance_env(), its environment): the models it serves, which the
collection's patch of exo (roles/node/files/gpufleet_exo_patches.py) reads to refuse any other with an
error instead of a download; and, with the models placed here, HF_HUB_OFFLINE: transformers asks no hub,
and the patch stops exo's own downloader from asking one.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import posixpath

from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import MODEL_REPOS, check_models

INDEX = "model.safetensors.index.json"
# What huggingface-cli download fetches of a repository for the store: the files the store's check
# (module_utils/_exo_data.py) accepts, never a repository's pickled original weights.
DOWNLOAD_INCLUDE = "--include '*.safetensors' '*.json' '*.txt' 'tokenizer.model' '*.tiktoken'"
# exo's answer to a repository without an index: every *.safetensors file is the shard's.
EMPTY_INDEX = json.dumps({"metadata": {}, "weight_map": {}}, sort_keys=True) + "\n"
GB = 1e9
# The variable the collection's patch of exo reads: the model ids an instance serves, comma-separated.
PLACED_ENV = "GPUFLEET_EXO_PLACED_MODELS"
# What each source adds to the placed models: where exo may still look for them.
SOURCE_ENV = {
    "controller": lambda settings: {"HF_HUB_OFFLINE": "1"},
    "host": lambda settings: {"HF_HUB_OFFLINE": "1"},
    "mirror": lambda settings: {"HF_ENDPOINT": settings["exo_node_model_store"].rstrip("/")},
}


# The variables the placement reads; the role checks all of them in its preflight.
SETTINGS = ("exo_node_models", "exo_node_model_source", "exo_node_model_store", "exo_node_model_mirror_insecure",
            "exo_node_data_dir", "exo_node_user", "exo_node_group")


def model_settings(raw):
    """(values, errors): the placement's variables from raw, the role's defaults for those not given."""
    defaults = role_settings.defaults("node")
    values = dict((name, raw.get(name, defaults[name])) for name in SETTINGS)
    try:
        values["exo_node_models"] = role_settings.as_list("exo_node_models", values["exo_node_models"])
        values["exo_node_model_mirror_insecure"] = role_settings.as_bool(
            "exo_node_model_mirror_insecure", values["exo_node_model_mirror_insecure"])
    except role_settings.SettingError as problem:
        return values, [str(problem)]
    return values, check_models(values)


def repositories(settings):
    """The repositories of exo_node_models, in order, each once (ids of one repository share its files)."""
    repos = []
    for model in settings["exo_node_models"]:
        repo = MODEL_REPOS.get(model)
        if repo and repo not in repos:
            repos.append(repo)
    return repos


def instance_env(settings):
    """The variables exo_node_models gives every instance: none without models (exo downloads as it ships)."""
    if not settings["exo_node_models"]:
        return {}
    env = SOURCE_ENV[settings["exo_node_model_source"]](settings)
    env[PLACED_ENV] = ",".join(settings["exo_node_models"])
    return env


def placement(host, settings, instances, store=None, placed=None, free=None, verified=None):
    """What the role does for exo_node_models on host: {"errors", "repos", "copies", "host_copies",
    "store_dirs", "dirs", "directories", "verify", "links", "seeds", "copy_bytes", "summary"}.

    store: the store's manifests as the module gpufleet.exo.exo_data (step store) checked them,
    {repo: {path: {"size", "sha256"}}}; placed: what exo_data (step inspect) found in
    exo_node_data_dir/models, {repo: {path: size}}; verified: the files of placed unchanged since the
    store's sha256 was checked on them, {repo: {path: sha256}}, neither copied nor checked again; free: the
    bytes free there. Each is None until its task has run. The manifest itself is not placed: exo would
    ask the hub for a file it lists.
    """
    result = {"errors": [], "repos": repositories(settings), "copies": [], "host_copies": [], "store_dirs": [],
              "dirs": [], "directories": [], "verify": {}, "links": [], "seeds": [], "copy_bytes": 0, "summary": []}
    source = settings["exo_node_model_source"]
    if not result["repos"] or source == "mirror" or store is None:
        if result["repos"] and source == "mirror":
            result["summary"] = ["models %s: from the mirror %s (HF_ENDPOINT), downloaded by exo itself"
                                 % (", ".join(settings["exo_node_models"]), settings["exo_node_model_store"])]
        return result
    root = posixpath.normpath(settings["exo_node_model_store"])
    where = "on the controller" if source == "controller" else "on the host"
    copies = result["copies" if source == "controller" else "host_copies"]
    # Each EXO_HOME once (a shared home serves several instances), with the instances that read it.
    homes = {}
    for i in instances:
        homes.setdefault((i["home"], i["env"]["TMPDIR"]), []).append(i["name"])
    for repo in result["repos"]:
        manifest = store.get(repo) or {}
        files = dict((path, entry["size"]) for path, entry in manifest.items())
        if not any(path.endswith(".safetensors") for path in files):
            result["errors"].append(
                "host %s: exo_node_model_store has no *.safetensors file of %s (for exo_node_models %s) in %s/%s %s; "
                "put the files a model needs there (huggingface-cli download %s --local-dir %s/%s %s, then remove "
                "its .cache) and make its manifest"
                % (host, repo, ", ".join(m for m in settings["exo_node_models"] if MODEL_REPOS.get(m) == repo),
                   root, repo, where, repo, root, repo, DOWNLOAD_INCLUDE))
            continue
        have = (placed or {}).get(repo) or {}
        missing = sum(size for path, size in files.items() if have.get(path) != size)
        kept = posixpath.join(settings["exo_node_data_dir"], "models", repo)
        checked = (verified or {}).get(repo) or {}
        unchecked = [path for path in sorted(files) if checked.get(path) != manifest[path]["sha256"]]
        copies += [{"src": posixpath.join(root, repo, path), "dest": posixpath.join(kept, path),
                    "sha256": manifest[path]["sha256"]} for path in unchecked]
        if unchecked:
            result["verify"][kept] = dict((path, manifest[path]) for path in unchecked)
        result["store_dirs"] += _parents(kept, files)
        result["copy_bytes"] += missing
        name = repo.replace("/", "--")
        for (home, tmp), readers in sorted(homes.items()):
            downloads = posixpath.join(home, "downloads", name)
            result["dirs"] += _parents(downloads, files) + [posixpath.join(tmp, "exo", name)]
            # An instance keeps what it loaded (tinygrad holds the files open): a new link restarts it.
            result["links"] += [{"src": posixpath.join(kept, path), "dest": posixpath.join(downloads, path),
                                 "instances": readers} for path in sorted(files)]
            listing = [{"path": path, "size": size} for path, size in sorted(files.items())]
            result["seeds"].append({"dest": posixpath.join(tmp, "exo", "%s--main--file_list.json" % name),
                                    "content": json.dumps(listing, sort_keys=True) + "\n"})
            index = posixpath.join(tmp, "exo", name, INDEX)
            if INDEX in files:
                result["links"].append({"src": posixpath.join(kept, INDEX), "dest": index, "instances": readers})
            else:
                result["seeds"].append({"dest": index, "content": EMPTY_INDEX})
        result["summary"].append("model %s: %d files, %.2f GB, kept in %s (%.2f GB to copy from %s %s)" % (
            repo, len(files), sum(files.values()) / GB, kept, missing / GB, posixpath.join(root, repo), where))
    if free is not None and result["copy_bytes"] > free:
        result["errors"].append("host %s: the models need %.2f GB more in %s (exo_node_data_dir) and it has %.2f GB "
                                "free; free space there, or choose fewer exo_node_models"
                                % (host, result["copy_bytes"] / GB, settings["exo_node_data_dir"], free / GB))
    result["store_dirs"] = sorted(set(result["store_dirs"]))
    result["dirs"] = sorted(set(result["dirs"]))
    # Both with their owners, for one task: the host's copy is root's, each instance's own the service user's.
    # The host's copy's directories are root's, like the data directory above them (files.py): exo can
    # change nothing on the path the controller's copy is written to.
    user, group = settings["exo_node_user"], settings["exo_node_group"]
    models = posixpath.join(settings["exo_node_data_dir"], "models")
    result["directories"] = ([{"path": path, "owner": "root", "group": group, "mode": "0750"}
                              for path in [models] + result["store_dirs"]]
                             + [{"path": path, "owner": user, "group": group, "mode": "0750"} for path in result["dirs"]])
    return result


def _parents(top, files):
    """top and every directory below it that holds one of files (relative paths)."""
    dirs = set([top])
    for path in files:
        parent = posixpath.dirname(path)
        while parent:
            dirs.add(posixpath.join(top, parent))
            parent = posixpath.dirname(parent)
    return sorted(dirs)
