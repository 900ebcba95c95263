#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_data
short_description: exo's data directory and the models placed in it, never following a link
version_added: 1.0.0
description:
  - Works below O(root), exo's data directory, whose instances' C(EXO_HOME) exo can write; every
    path below O(root) is reached one component at a time from an open directory, without following
    a symbolic link (C(O_NOFOLLOW)), and a symbolic link found there is refused, naming its path;
    nothing is written through it. Files are written under a temporary name in their directory, then
    renamed.
  - With O(step=manifest), writes the manifest C(gpufleet-model.json) of the model directory O(path),
    each file's C(path), C(size) and C(sha256), keeping the manifest's other keys. Run it where the
    store is made. A model is data, completely. Only the files a model needs are accepted, by suffix
    (C(*.safetensors), C(*.json), C(*.txt), C(*.model), C(*.tiktoken), C(*.md), C(*.jinja), and
    C(LICENSE) and C(.gitattributes)); weights only as safetensors (C(*.bin), C(*.pt), C(*.pth),
    C(*.pkl), C(*.gguf), ... are refused); and every JSON file, whatever its size, without a
    remote-code hook (C(auto_map), C(custom_pipelines)). Any other file is refused, naming it and what to do.
  - With O(step=store), checks each repository of O(repos) in the store O(path) against its manifest,
    and refuses, naming each file, a missing store or manifest, a file the manifest does not list, one
    whose sha256 differs, one it lists that is missing, and a file a model does not need (as with
    O(step=manifest)). It records each file it read in the store's C(gpufleet-verified.json) (mode 0600, the
    store's owner's), where it can write it and not in check mode, and reads a file again only where its
    inode, size, modification or change time differ from those recorded. Changes nothing else.
  - With O(step=inspect), says what O(root)C(/models) holds of O(repos), which of its files are unchanged since
    they were checked, and how many bytes are free there. Changes nothing.
  - With O(step=place), makes O(directories), copies O(copies) from the store O(path) on the host, makes the
    hard links O(links), checks the host's copy against the store's manifest (O(verify)), taking away a link
    just made to a file it refuses, then writes the files O(seeds) (the answers to exo's lookups, see the
    filter P(gpufleet.exo.node_models#filter)). It records each file it checked with its identity as it read
    it, so that O(step=inspect) finds the file verified and it is not read again until it changes (exo, which
    owns the files, cannot write one without changing its change time). The links come before the check
    because a new link changes its file's change time.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  step:
    description: What the module does (see the description).
    type: str
    choices: [manifest, store, inspect, place]
    required: true
  root:
    description: exo's data directory (C(exo_node_data_dir)); its parent is trusted, nothing below it is.
      Required with O(step=inspect) and O(step=place).
    type: path
  path:
    description: The model directory (O(step=manifest)), or the store of repositories (O(step=store), and
      O(step=place) with O(copies)).
    type: path
  repos:
    description: The repositories (C(owner/name), directories of the store and of O(root)C(/models)).
    type: list
    elements: str
    default: []
  directories:
    description: Directories below O(root) to make, each a dict of C(path), C(owner), C(group) and C(mode)
      (a missing directory above one is made with the same).
    type: list
    elements: dict
    default: []
  copies:
    description: Files copied from the store O(path) on the host, each a dict of C(src), C(dest) (below O(root))
      and C(sha256); a file whose C(dest) has that sha256 already is left alone.
    type: list
    elements: dict
    default: []
  verify:
    description: Directories of the host's copy, each with the manifest it must match (by path, each file's C(size) and C(sha256)).
    type: dict
    default: {}
  links:
    description: Hard links to make, each a dict of C(src) and C(dest), both below O(root), and C(instances),
      the instances that read C(dest).
    type: list
    elements: dict
    default: []
  seeds:
    description: Files to write, each a dict of C(dest) below O(root) and C(content).
    type: list
    elements: dict
    default: []
  user:
    description: The owner of the files copied and written (C(exo_node_user)).
    type: str
    default: exo
  group:
    description: Their group (C(exo_node_group)).
    type: str
    default: exo
attributes:
  check_mode:
    support: full
    description: Reads and checks everything and says what would change; a directory still to be made
      counts as empty.
  diff_mode:
    support: none
    description: Model files are large and binary.
"""

EXAMPLES = r"""
# Where the store is made, after huggingface-cli download (or scripts/exo-synthetic-model.py).
- name: Write the manifest of a model in the store
  gpufleet.exo.exo_data:
    step: manifest
    path: /srv/exo-models/unsloth/Llama-3.2-1B-Instruct

- name: Check the store against its manifests
  gpufleet.exo.exo_data:
    step: store
    path: /srv/exo-models
    repos: [unsloth/Llama-3.2-1B-Instruct]
  register: store

- name: Make a directory of exo's, refusing a link planted on the way
  gpufleet.exo.exo_data:
    step: place
    root: /var/lib/exo
    directories:
      - {path: /var/lib/exo/gpu0/tmp, owner: exo, group: exo, mode: "0750"}
"""

RETURN = r"""
files:
  description: With O(step=manifest), the manifest's entries (C(path), C(size), C(sha256)).
  returned: with O(step=manifest)
  type: list
  elements: dict
store:
  description: With O(step=store), each repository's manifest, by repository and path, each file's C(size) and C(sha256).
  returned: with O(step=store)
  type: dict
placed:
  description: With O(step=inspect), the size of each file in O(root)C(/models/<repo>), by repository and path.
  returned: with O(step=inspect)
  type: dict
verified:
  description:
    - With O(step=inspect), the sha256 of each file of RV(placed) unchanged since O(step=place) checked it, by
      repository and path. A file is unchanged while its inode, size, modification and change times
      are those recorded in O(root)C(/models/gpufleet-verified.json) (root's, mode 0600) when it was checked.
  returned: with O(step=inspect)
  type: dict
free:
  description: With O(step=inspect), the bytes free to exo's user in O(root)'s file system.
  returned: with O(step=inspect)
  type: int
directories:
  description: With O(step=place), the directories made or given their owner or mode.
  returned: with O(step=place)
  type: list
  elements: str
copied:
  description: With O(step=place), the files copied from the store on the host.
  returned: with O(step=place)
  type: list
  elements: str
results:
  description:
    - With O(step=place), one entry per link and seed, C({changed, item}), as a loop's results, so that
      the filter P(gpufleet.exo.node_outcome#filter) restarts the instances a new link serves.
  returned: with O(step=place)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_data import (
    Refused, check_store, inspect, make_manifest, place)

# Each step and the options it needs, in the order of the documentation.
STEPS = (("manifest", ["path"]), ("store", ["path"]), ("inspect", ["root"]), ("place", ["root"]))


def main():
    module = AnsibleModule(
        argument_spec=dict(step=dict(type="str", required=True, choices=[step for step, _needs in STEPS]),
                           root=dict(type="path"), path=dict(type="path"),
                           repos=dict(type="list", elements="str", default=[]),
                           directories=dict(type="list", elements="dict", default=[]),
                           copies=dict(type="list", elements="dict", default=[]),
                           verify=dict(type="dict", default={}),
                           links=dict(type="list", elements="dict", default=[]),
                           seeds=dict(type="list", elements="dict", default=[]),
                           user=dict(type="str", default="exo"), group=dict(type="str", default="exo")),
        required_if=[("step", step, needs) for step, needs in STEPS],
        supports_check_mode=True)
    params, step = module.params, module.params["step"]
    try:
        if step == "manifest":
            changed, files = make_manifest(params["path"], module.check_mode)
            result = {"changed": changed, "files": files}
        elif step == "store":
            store, recorded = check_store(params["path"], params["repos"], module.check_mode)
            result = {"changed": recorded, "store": store}
        elif step == "inspect":
            result = dict(inspect(params["root"], params["repos"]), changed=False)
        else:
            result = place(dict(params, store=params["path"]), module.check_mode)
    except Refused as refused:
        module.fail_json(msg=str(refused), problems=refused.problems)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
