# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo.exo_data through ansible-playbook on this machine: its EXAMPLES as written but for their
paths and owner (a store of the test's own, exo's data directory in a temporary directory), docs/node.md's
command that makes a manifest, a link planted in an EXO_HOME, refused by name with nothing written
through it, and the record of the files checked, which a second run reads, through Ansible's results."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import re
import shlex
import subprocess

import yaml

from tests.helpers import BIN, REPO, examples, local_inventory, recap, run_example as run_in, tasks_play

REPO_DIR = "unsloth/Llama-3.2-1B-Instruct"
USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name
with open(os.path.join(REPO, "docs", "node.md")) as _handle:
    # The command docs/node.md gives for a store's manifest.
    MANIFEST_COMMAND = re.search(r"^(ansible localhost -m gpufleet\.exo\.exo_data .*)$", _handle.read(), re.M).group(1)


def run_example(tmp, text, inventory, check=False):
    os.makedirs(tmp)
    return run_in(tmp, text, inventory, check=check)


def store(tmp_path):
    repo = tmp_path / "store" / REPO_DIR
    repo.mkdir(parents=True)
    (repo / "model.safetensors").write_bytes(b"w" * 64)
    (repo / "config.json").write_text('{"model_type": "llama"}')
    return repo


def moved(text, tmp_path):
    return text.replace("/srv/exo-models", str(tmp_path / "store")).replace("/var/lib/exo", str(tmp_path / "data"))


def test_the_examples_make_and_check_a_manifest_and_make_exos_directory(tmp_path):
    repo = store(tmp_path)
    text = moved(examples("module", "exo_data"), tmp_path).replace("owner: exo, group: exo",
                                                                   "owner: %s, group: %s" % (USER, GROUP))
    tasks = yaml.safe_load(text) + [{"name": "Show the store", "ansible.builtin.debug": {"var": "store.store"}}]
    proc = run_example(str(tmp_path / "run"), tasks_play(yaml.safe_dump(tasks)), local_inventory())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    with open(str(repo / "gpufleet-model.json")) as handle:
        assert [f["path"] for f in json.load(handle)["files"]] == ["config.json", "model.safetensors"]
    # the store's check answers each file's sha256, as the manifest has it
    assert '"store": {"%s": {"config.json": {"sha256": "%s"' % (REPO_DIR, hashlib.sha256(b'{"model_type": "llama"}').hexdigest()) \
        in proc.stdout, proc.stdout[-3000:]
    assert os.path.isdir(str(tmp_path / "data" / "gpu0" / "tmp"))


def test_the_documented_command_makes_a_manifest_and_a_tampered_file_is_refused_by_name(tmp_path):
    repo = store(tmp_path)
    argv = [os.path.join(BIN, a) if a == "ansible" else a for a in shlex.split(moved(MANIFEST_COMMAND, tmp_path))]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    made = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    assert made.returncode == 0 and "CHANGED" in made.stdout, made.stdout
    (repo / "model.safetensors").write_bytes(b"W" * 64)
    check = {"name": "Check the store", "gpufleet.exo.exo_data": {"step": "store", "path": str(tmp_path / "store"),
                                                                  "repos": [REPO_DIR]}}
    proc = run_example(str(tmp_path / "run"), tasks_play(yaml.safe_dump([check])), local_inventory())
    assert recap(proc, "localhost")["failed"] == 1
    assert "%s/model.safetensors differs from its sha256 in gpufleet-model.json" % repo in proc.stdout, proc.stdout[-3000:]


def test_a_link_planted_in_an_exo_home_is_refused_by_name_and_nothing_is_written_through_it(tmp_path):
    data, target = tmp_path / "data", tmp_path / "etc-systemd"
    (data / "gpu0").mkdir(parents=True)
    target.mkdir()
    # What a compromised exo can do in its own EXO_HOME: its downloads and its TMPDIR become links.
    os.symlink(str(target), str(data / "gpu0" / "downloads"))
    os.symlink(str(target), str(data / "gpu0" / "tmp"))
    (data / "models").mkdir()
    (data / "models" / "w").write_bytes(b"w")
    place = {"name": "Place", "gpufleet.exo.exo_data": {
        "step": "place", "root": str(data), "user": USER, "group": GROUP,
        "directories": [{"path": str(data / "gpu0" / "downloads" / "m"), "owner": USER, "group": GROUP, "mode": "0750"}],
        "links": [{"src": str(data / "models" / "w"), "dest": str(data / "gpu0" / "downloads" / "m" / "w"), "instances": []}],
        "seeds": [{"dest": str(data / "gpu0" / "tmp" / "exo.service"), "content": "[Service]\n"}]}}
    for check in (True, False):
        proc = run_example(str(tmp_path / ("run-%s" % check)), tasks_play(yaml.safe_dump([place])), local_inventory(),
                           check=check)
        assert recap(proc, "localhost")["failed"] == 1, proc.stdout[-3000:]
        assert "%s is a symbolic link, in a directory exo can write" % (data / "gpu0" / "downloads") in proc.stdout
        assert os.listdir(str(target)) == []
    # Without the directory, the seed's link is the one refused.
    place["gpufleet.exo.exo_data"].update(directories=[], links=[])
    proc = run_example(str(tmp_path / "run-seed"), tasks_play(yaml.safe_dump([place])), local_inventory())
    assert "%s is a symbolic link" % (data / "gpu0" / "tmp") in proc.stdout, proc.stdout[-3000:]
    assert os.listdir(str(target)) == []


def test_a_second_run_finds_the_copy_verified_until_a_file_changes(tmp_path):
    repo = store(tmp_path)
    data = tmp_path / "data"
    kept, home = data / "models" / REPO_DIR, data / "gpu0" / "downloads" / "m"
    manifest = dict((name, {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()})
                    for name, content in ((p.name, p.read_bytes()) for p in repo.iterdir()))
    for name in manifest:
        kept.mkdir(parents=True, exist_ok=True)
        (kept / name).write_bytes((repo / name).read_bytes())

    def directory(path):
        return {"path": str(path), "owner": USER, "group": GROUP, "mode": "0750"}
    place = {"name": "Place", "gpufleet.exo.exo_data": {
        "step": "place", "root": str(data), "user": USER, "group": GROUP,
        "directories": [directory(data / "models"), directory(kept), directory(home)],
        "verify": {str(kept): manifest},
        "links": [{"src": str(kept / name), "dest": str(home / name), "instances": ["gpu0"]} for name in sorted(manifest)]}}
    inspect = {"name": "Inspect", "gpufleet.exo.exo_data": {"step": "inspect", "root": str(data), "repos": [REPO_DIR]}}

    def verified(proc):
        """What the inspect step answered (ansible-playbook -v shows each result as JSON)."""
        return [json.loads(line.split(" => ", 1)[1])["verified"] for line in proc.stdout.splitlines()
                if line.startswith("ok: [localhost] => {") and '"verified"' in line]
    proc = run_example(str(tmp_path / "run-1"), tasks_play(yaml.safe_dump([inspect, place, inspect])), local_inventory())
    assert recap(proc, "localhost") == {"ok": 3, "changed": 1, "failed": 0}, proc.stdout[-3000:]
    everything = dict((name, entry["sha256"]) for name, entry in manifest.items())
    assert verified(proc) == [{REPO_DIR: {}}, {REPO_DIR: everything}], proc.stdout[-3000:]
    # exo writes a file again, the same size and modification time: only its change time tells
    found = os.stat(str(kept / "config.json"))
    (kept / "config.json").write_text('{"model_type": "llamb"}')
    os.utime(str(kept / "config.json"), ns=(found.st_atime_ns, found.st_mtime_ns))
    proc = run_example(str(tmp_path / "run-2"), tasks_play(yaml.safe_dump([inspect])), local_inventory())
    assert verified(proc) == [{REPO_DIR: {"model.safetensors": everything["model.safetensors"]}}], proc.stdout[-3000:]
