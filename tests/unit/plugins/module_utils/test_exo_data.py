# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_data does in exo's data directory and with a model store
(plugins/module_utils/_exo_data.py), in a directory of the test's own: links planted where exo can
write are refused with nothing written through them, and a store is checked against its manifest."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_data as data

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name
REPO = "unsloth/Llama-3.2-1B-Instruct"
MODEL = {"model.safetensors": b"weights" * 100, "config.json": b'{"model_type": "llama"}',
         "tokenizer_config.json": b'{"chat_template": "x"}', "sub/extra.txt": b"x"}


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(content)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def store_with(tmp_path, files=None, manifest=True):
    """A store holding REPO with files (MODEL by default) and, unless told, the manifest of MODEL."""
    store = str(tmp_path / "store")
    repo = os.path.join(store, REPO)
    for path, content in (MODEL if files is None else files).items():
        write(os.path.join(repo, path), content)
    if manifest:
        entries = [{"path": p, "size": len(c), "sha256": hashlib.sha256(c).hexdigest()} for p, c in sorted(MODEL.items())]
        write(os.path.join(repo, data.MANIFEST), json.dumps({"card": "llama-3.2-1b", "files": entries}).encode())
    return store


def directory(path, mode="0750"):
    return {"path": path, "owner": USER, "group": GROUP, "mode": mode}


def place(root, check_mode=False, **given):
    params = {"root": root, "store": None, "directories": [], "copies": [], "verify": {}, "links": [], "seeds": [],
              "user": USER, "group": GROUP}
    params.update(given)
    return data.place(params, check_mode)


def planted(tmp_path):
    """exo's data directory with an EXO_HOME in which exo planted a link to a directory of root's."""
    root, target = str(tmp_path / "data"), str(tmp_path / "etc")
    os.makedirs(os.path.join(root, "gpu0"))
    os.makedirs(target)
    return root, target


# Each place root would write through a link that exo planted: the step and what it is given.
PLANTED = [
    ("a directory", "gpu0/downloads", lambda root: {"directories": [directory(root + "/gpu0/downloads/m")]}),
    ("a seed", "gpu0/tmp", lambda root: {"seeds": [{"dest": root + "/gpu0/tmp/list.json", "content": "[]"}]}),
    ("a seed's own name", "gpu0/list.json",
     lambda root: {"seeds": [{"dest": root + "/gpu0/list.json", "content": "[]"}]}),
    ("a link's own name", "gpu0/model.safetensors",
     lambda root: {"links": [{"src": root + "/models/w", "dest": root + "/gpu0/model.safetensors", "instances": []}]}),
]


@pytest.mark.parametrize("what, link, given", PLANTED, ids=[case[0] for case in PLANTED])
def test_a_link_planted_in_exos_home_is_refused_by_name_with_nothing_written_through_it(tmp_path, what, link, given):
    root, target = planted(tmp_path)
    write(os.path.join(root, "models", "w"), b"weights")
    os.symlink(target if not link.endswith((".json", ".safetensors")) else os.path.join(target, "f"),
               os.path.join(root, link))
    with pytest.raises(data.Refused) as refused:
        place(root, **given(root))
    assert "%s/%s is a symbolic link" % (root, link) in str(refused.value)
    assert os.listdir(target) == []


def test_a_link_in_place_of_the_data_directory_or_the_models_copy_is_refused(tmp_path):
    target = str(tmp_path / "etc")
    os.makedirs(target)
    os.symlink(target, str(tmp_path / "data"))
    with pytest.raises(data.Refused, match="/data is a symbolic link"):
        place(str(tmp_path / "data"), directories=[directory(str(tmp_path / "data"))])
    with pytest.raises(data.Refused, match="/data is a symbolic link"):
        data.inspect(str(tmp_path / "data"), [REPO])
    assert os.listdir(target) == []


def test_directories_links_and_seeds_are_made_once(tmp_path):
    root = str(tmp_path / "data")
    write(os.path.join(root, "models", "w"), b"weights")
    given = {"directories": [directory(root, "0750"), directory(root + "/gpu0/downloads/m", "0700")],
             "links": [{"src": root + "/models/w", "dest": root + "/gpu0/downloads/m/w", "instances": ["gpu0"]}],
             "seeds": [{"dest": root + "/gpu0/downloads/list.json", "content": "[1]\n"}]}
    first = place(root, **given)
    assert first["changed"] and first["directories"] == [root, root + "/gpu0/downloads/m"]
    assert [r["changed"] for r in first["results"]] == [True, True]
    assert first["results"][0]["item"]["instances"] == ["gpu0"]
    assert os.stat(root + "/gpu0/downloads/m/w").st_ino == os.stat(root + "/models/w").st_ino
    assert oct(os.stat(root + "/gpu0/downloads/m").st_mode & 0o777) == "0o700"
    # a directory made above one listed gets the listed one's owner and mode
    assert oct(os.stat(root + "/gpu0").st_mode & 0o777) == "0o700"
    assert read(root + "/gpu0/downloads/list.json") == b"[1]\n"
    again = place(root, **given)
    assert not again["changed"] and again["directories"] == []
    # a file where the link belongs is replaced by the link (exo's own download of it, say)
    os.unlink(root + "/gpu0/downloads/m/w")
    write(root + "/gpu0/downloads/m/w", b"other")
    assert place(root, **given)["results"][0]["changed"]
    assert os.stat(root + "/gpu0/downloads/m/w").st_ino == os.stat(root + "/models/w").st_ino


def test_check_mode_on_a_new_host_says_what_it_would_make_and_makes_nothing(tmp_path):
    root = str(tmp_path / "new" / "data")
    result = place(root, check_mode=True, directories=[directory(root), directory(root + "/gpu0/tmp/exo")],
                   links=[{"src": root + "/models/w", "dest": root + "/gpu0/w", "instances": ["gpu0"]}],
                   seeds=[{"dest": root + "/gpu0/tmp/exo/list.json", "content": "[]"}],
                   copies=[{"src": REPO + "/w", "dest": root + "/models/w", "sha256": "0" * 64}])
    assert result["changed"] and result["directories"] == [root, root + "/gpu0/tmp/exo"]
    assert result["copied"] == [root + "/models/w"]
    assert [r["changed"] for r in result["results"]] == [True, True]
    assert not os.path.exists(str(tmp_path / "new"))


def test_a_store_that_matches_its_manifest_is_copied_on_the_host_and_checked_there(tmp_path):
    store = store_with(tmp_path)
    manifest = data.check_store(store, [REPO])[0][REPO]
    assert sorted(manifest) == sorted(MODEL)
    root = str(tmp_path / "data")
    kept = root + "/models/" + REPO
    copies = [{"src": store + "/" + REPO + "/" + p, "dest": kept + "/" + p, "sha256": manifest[p]["sha256"]} for p in sorted(MODEL)]
    dirs = [directory(kept), directory(kept + "/sub")]
    first = place(root, store=store, directories=dirs, copies=copies, verify={kept: manifest})
    assert first["copied"] == [c["dest"] for c in copies]
    assert read(kept + "/model.safetensors") == MODEL["model.safetensors"]
    assert oct(os.stat(kept + "/config.json").st_mode & 0o777) == "0o640"
    assert place(root, store=store, directories=dirs, copies=copies, verify={kept: manifest})["copied"] == []
    assert data.inspect(root, [REPO])["placed"] == {REPO: dict((p, len(c)) for p, c in MODEL.items())}
    # the host's copy changed since (exo owns its files): refused after the copy, naming the file, and the
    # link just made to it is taken away, the others kept
    write(kept + "/config.json", b'{"model_type": "llamb"}')
    home = root + "/gpu0/downloads/m"
    links = [{"src": kept + "/" + p, "dest": home + "/" + p, "instances": ["gpu0"]} for p in ("config.json", "model.safetensors")]
    with pytest.raises(data.Refused, match="%s/config.json differs from its sha256" % kept):
        place(root, directories=[directory(home)], links=links, verify={kept: manifest})
    assert os.listdir(home) == ["model.safetensors"]
    # neither is verified now: the one changed, and the one whose new link changed its change time
    assert sorted(data.inspect(root, [REPO])["verified"][REPO]) == ["sub/extra.txt", "tokenizer_config.json"]


def test_a_checked_file_is_recorded_and_found_verified_until_it_changes(tmp_path):
    store = store_with(tmp_path)
    manifest = data.check_store(store, [REPO])[0][REPO]
    root = str(tmp_path / "data")
    kept = root + "/models/" + REPO
    home = root + "/gpu0/downloads/m"
    copies = [{"src": store + "/" + REPO + "/" + p, "dest": kept + "/" + p, "sha256": manifest[p]["sha256"]} for p in sorted(MODEL)]
    dirs = [directory(root + "/models"), directory(kept), directory(kept + "/sub"), directory(home), directory(home + "/sub")]
    links = [{"src": kept + "/" + p, "dest": home + "/" + p, "instances": ["gpu0"]} for p in sorted(MODEL)]
    assert data.inspect(root, [REPO])["verified"] == {REPO: {}}
    # in check mode nothing is recorded
    place(root, check_mode=True, store=store, directories=dirs, copies=copies, verify={kept: manifest}, links=links)
    assert data.inspect(root, [REPO])["verified"] == {REPO: {}}
    assert place(root, store=store, directories=dirs, copies=copies, verify={kept: manifest}, links=links)["changed"]
    everything = dict((p, manifest[p]["sha256"]) for p in MODEL)
    # recorded as the check read them, after the links were made, which changed the files' change time
    assert data.inspect(root, [REPO])["verified"] == {REPO: everything}
    recorded = root + "/models/" + data.VERIFIED
    assert oct(os.stat(recorded).st_mode & 0o777) == "0o600"
    assert os.stat(recorded).st_uid == os.stat(root + "/models").st_uid
    # nothing to check: nothing changes, the record is not written again
    before = os.stat(recorded).st_mtime_ns
    assert not place(root, directories=dirs, links=links)["changed"]
    assert os.stat(recorded).st_mtime_ns == before
    # a file written since, even to the same size and modification time, is not verified any more
    found = os.stat(kept + "/config.json")
    write(kept + "/config.json", MODEL["config.json"].replace(b"llama", b"llamb"))
    os.utime(kept + "/config.json", ns=(found.st_atime_ns, found.st_mtime_ns))
    assert data.inspect(root, [REPO])["verified"] == {REPO: dict((p, h) for p, h in everything.items() if p != "config.json")}
    # a file put in its place (another inode) is not either; nor any file where the record is unreadable
    os.rename(kept + "/sub/extra.txt", kept + "/sub/old")
    write(kept + "/sub/extra.txt", MODEL["sub/extra.txt"])
    assert sorted(data.inspect(root, [REPO])["verified"][REPO]) == ["model.safetensors", "tokenizer_config.json"]
    write(recorded, b"not json")
    assert data.inspect(root, [REPO])["verified"] == {REPO: {}}


def test_a_file_written_while_it_is_checked_is_refused_and_not_recorded(tmp_path, monkeypatch):
    store = store_with(tmp_path)
    manifest = data.check_store(store, [REPO])[0][REPO]
    root = str(tmp_path / "data")
    kept = root + "/models/" + REPO
    copies = [{"src": store + "/" + REPO + "/" + p, "dest": kept + "/" + p, "sha256": manifest[p]["sha256"]} for p in sorted(MODEL)]
    dirs = [directory(root + "/models"), directory(kept), directory(kept + "/sub")]
    read = data.sha256_fd

    def read_while_exo_writes(fd):
        digest = read(fd)
        # exo puts the same bytes back: only the change time tells
        if os.path.realpath("/proc/self/fd/%d" % fd) == kept + "/config.json":
            write(kept + "/config.json", MODEL["config.json"])
        return digest
    monkeypatch.setattr(data, "sha256_fd", read_while_exo_writes)
    with pytest.raises(data.Refused, match="%s/config.json changed while it was checked" % kept):
        place(root, store=store, directories=dirs, copies=copies, verify={kept: manifest})
    assert data.inspect(root, [REPO])["verified"] == {REPO: {}}


def test_a_store_is_read_whole_once_and_again_only_where_a_file_changed(tmp_path, monkeypatch):
    store = store_with(tmp_path)
    recorded = os.path.join(store, data.VERIFIED)
    # in check mode it is read, and nothing recorded
    assert data.check_store(store, [REPO], check_mode=True)[1] is False and not os.path.exists(recorded)
    manifest, changed = data.check_store(store, [REPO])
    assert changed and oct(os.stat(recorded).st_mode & 0o777) == "0o600"
    read = []
    real = data.sha256_fd
    monkeypatch.setattr(data, "sha256_fd", lambda fd: read.append(os.path.realpath("/proc/self/fd/%d" % fd)) or real(fd))
    assert data.check_store(store, [REPO]) == (manifest, False) and read == []
    # the same bytes written again: read again, and recorded
    write(os.path.join(store, REPO, "config.json"), MODEL["config.json"])
    assert data.check_store(store, [REPO]) == (manifest, True)
    assert read == [os.path.join(store, REPO, "config.json")]
    # other bytes, with the size and modification time kept: refused, as without the record
    path = os.path.join(store, REPO, "model.safetensors")
    found = os.stat(path)
    write(path, MODEL["model.safetensors"].upper())
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))
    with pytest.raises(data.Refused, match="model.safetensors differs from its sha256"):
        data.check_store(store, [REPO])
    # a store its checker cannot write (the tests run as root, who can): read whole, and checked the same
    write(path, MODEL["model.safetensors"])

    def refused(*args):
        raise OSError(13, "Permission denied")
    monkeypatch.setattr(data, "_replace", refused)
    del read[:]
    assert data.check_store(store, [REPO]) == (manifest, False) and read == [path]


# What a store may not hold, and what the refusal names.
BAD_STORES = [
    ("tampered", dict(MODEL, **{"model.safetensors": b"Weights" * 100}), "model.safetensors differs from its sha256"),
    ("unlisted", dict(MODEL, **{"notes.txt": b"x"}), "notes.txt is not in gpufleet-model.json"),
    ("missing", dict((p, c) for p, c in MODEL.items() if p != "sub/extra.txt"), "sub/extra.txt is missing"),
]


@pytest.mark.parametrize("what, files, message", BAD_STORES, ids=[case[0] for case in BAD_STORES])
def test_a_store_that_differs_from_its_manifest_is_refused_naming_the_file(tmp_path, what, files, message):
    store = store_with(tmp_path, files)
    with pytest.raises(data.Refused) as refused:
        data.check_store(store, [REPO])
    assert "%s/%s/%s" % (store, REPO, message) in str(refused.value)


# Above the 16 MiB under which a JSON file was once the only kind checked for a hook.
BIG = b" " * (17 << 20)
HOOK = b'"auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", null]}'
# Files a model does not need, each put in the store beside MODEL: the file, its bytes, what its refusal says.
NOT_DATA = [
    ("code", "tokenization_evil.py", b"import os", "is a code file"),
    ("pickled weights", "pytorch_model.bin", b"\x80\x02}q\x00.", "holds weights in a format other than safetensors"),
    ("a pickle", "tokenizer.pkl", b"\x80\x04N.", "holds weights in a format other than safetensors"),
    ("torch weights", "original/consolidated.00.pth", b"PK", "holds weights in a format other than safetensors"),
    ("gguf weights", "model-q4.gguf", b"GGUF", "holds weights in a format other than safetensors"),
    ("an unknown suffix", "weights.dat", b"x", "is not a file a model needs"),
    ("no suffix", "setup", b"#!/bin/sh", "is not a file a model needs"),
    ("a hook", "tokenizer_config.json", b"{" + HOOK + b"}", "has auto_map, a hook that makes transformers run code"),
    ("a hook in a JSON of any name", "video_preprocessor_config.json", b"{" + HOOK + b"}", "has auto_map, a hook"),
    ("a pipeline hook", "config.json", b'{"custom_pipelines": {"text-generation": {"impl": "p.P"}}}',
     "has custom_pipelines, a hook"),
    ("a hook in a JSON above 16 MiB", "tokenizer.json", b"{" + HOOK + b"," + BIG + b'"model": {}}', "has auto_map, a hook"),
]


@pytest.mark.parametrize("what, path, content, says", NOT_DATA, ids=[case[0] for case in NOT_DATA])
def test_a_file_a_model_does_not_need_is_refused_by_name_in_the_store_and_in_its_manifest(
        tmp_path, what, path, content, says):
    store = store_with(tmp_path, dict(MODEL, **{path: content}))
    repo = os.path.join(store, REPO)
    with pytest.raises(data.Refused) as refused:
        data.check_store(store, [REPO])
    assert "%s/%s %s" % (repo, path, says) in str(refused.value)
    manifest = read(os.path.join(repo, data.MANIFEST))
    with pytest.raises(data.Refused) as refused:
        data.make_manifest(repo, check_mode=False)
    assert "%s/%s %s" % (repo, path, says) in str(refused.value)
    assert read(os.path.join(repo, data.MANIFEST)) == manifest


# A repository as huggingface-cli downloads it (less its own .cache): every kind of file a model needs, and a
# big tokenizer.json whose vocabulary has a token auto_map, which is no hook (transformers reads the top level).
DATA_ONLY = dict(MODEL, **{
    "README.md": b"# Llama", "LICENSE": b"license", "USE_POLICY.md": b"policy", ".gitattributes": b"*.safetensors lfs",
    "tokenizer.model": b"\x0a\x05", "cl100k.tiktoken": b"IQ== 0", "merges.txt": b"a b", "chat_template.jinja": b"{{ x }}",
    "model.safetensors.index.json": b'{"metadata": {}, "weight_map": {}}', "original/params.json": b'{"dim": 2048}',
    "tokenizer.json": b'{"model": {"vocab": {"auto_map": 1}},' + BIG + b'"version": "1.0"}'})


def test_a_model_of_data_only_is_listed_in_its_manifest_and_accepted(tmp_path):
    store = store_with(tmp_path, DATA_ONLY, manifest=False)
    changed, files = data.make_manifest(os.path.join(store, REPO), check_mode=False)
    assert changed and [f["path"] for f in files] == sorted(DATA_ONLY)
    assert sorted(data.check_store(store, [REPO])[0][REPO]) == sorted(DATA_ONLY)


def test_a_store_without_the_repository_or_its_manifest_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(data.Refused, match="%s/%s is missing or empty" % (tmp_path / "none", REPO)):
        data.check_store(str(tmp_path / "none"), [REPO])
    store = store_with(tmp_path, manifest=False)
    with pytest.raises(data.Refused, match="has no gpufleet-model.json.*step=manifest|manifest=%s" % store):
        data.check_store(store, [REPO])


def test_the_manifest_is_made_from_the_files_and_keeps_what_else_it_says(tmp_path):
    store = store_with(tmp_path)
    repo = os.path.join(store, REPO)
    with open(os.path.join(repo, data.MANIFEST)) as handle:
        before = json.load(handle)
    write(os.path.join(repo, "config.json"), b'{"model_type": "llama", "new": 1}')
    changed, files = data.make_manifest(repo, check_mode=False)
    assert changed and [f["path"] for f in files] == sorted(MODEL)
    with open(os.path.join(repo, data.MANIFEST)) as handle:
        after = json.load(handle)
    assert after["card"] == before["card"] and after["files"] == files
    assert data.check_store(store, [REPO])[0][REPO]["config.json"]["size"] == len(b'{"model_type": "llama", "new": 1}')
    assert data.make_manifest(repo, check_mode=False)[0] is False
    write(os.path.join(repo, "modeling.py"), b"")
    with pytest.raises(data.Refused, match="modeling.py is a code file"):
        data.make_manifest(repo, check_mode=False)
