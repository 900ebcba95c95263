# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""exo's data directory and the models placed in it, as the module gpufleet.exo.exo_data works on
them: plain functions over open directories, so that root never follows a link there.

Each instance's EXO_HOME is exo's to write: a compromised exo can put a symbolic link where the role
is about to create a directory, a hard link or a seed, and point it at /etc or a unit directory.
So every path below the data directory is reached one component at a time from an open directory
(os.open(..., dir_fd=...) with O_NOFOLLOW), and a component that is a symbolic link, or not what
the role expects, is refused naming the path: nothing is written through it. A file is written
under a temporary name made with O_CREAT|O_EXCL in the directory already open, then renamed.

A model placed by the role is data, completely: its store holds, for each repository, a manifest
(MANIFEST: each file's path, size and sha256, made where the store is made) that is checked before
any copy, and checked again on the host's copy. Only the files a model needs are accepted, by
suffix from an allowlist (DATA_SUFFIXES, DATA_NAMES), weights only as safetensors, and every JSON
file, whatever its size, without a hook that makes transformers run code (REMOTE_CODE_KEYS). A file
the manifest does not list, one whose bytes differ from it, and any other file are refused, naming
the file and what to do.

A file is read whole once, when it is checked; a file unchanged since is not read again (a 2.5 GB
model took 15 s on every run, for every host). VERIFIED records each file checked with its identity
as it was read: inode, size, modification and change times. The host's copy's files are exo's
(FILE_MODE), but exo cannot write one and keep its change time (only the clock sets it), nor put
another file in the copy's directories, which are root's, as is the copy's VERIFIED; a file whose
identity differs is read again. A store's VERIFIED is its owner's, written where the check can write
it: whoever can change it can change the manifest beside it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import grp
import hashlib
import json
import os
import posixpath
import pwd
import stat

MANIFEST = "gpufleet-model.json"
# In a store, and in root/models beside the host's copies: {path below it: {"sha256", "identity"}} of each
# file read and found right.
VERIFIED = "gpufleet-verified.json"
# The only files a model directory holds (an allowlist: anything else is refused). exo e4238f9ef
# fetches *.json, *.txt, tokenizer.model (sentencepiece), *.tiktoken and the safetensors weights
# (exo/download/hf/hf_helpers.py, get_allow_patterns), and *.py, which is code; a Hugging Face
# repository adds its card (*.md), chat templates (*.jinja) and these names without a suffix.
DATA_SUFFIXES = (".safetensors", ".json", ".txt", ".model", ".tiktoken", ".md", ".jinja")
DATA_NAMES = ("license", ".gitattributes")
# Named apart only to say why and what to give instead. Weights other than safetensors are mostly
# pickles (.bin, .pt, .pth, .ckpt), which run code as they are loaded: exo's tinygrad loads one
# with torch_load (exo/inference/tinygrad/tinygrad_helpers.py), through its own unpickler.
WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".h5", ".msgpack", ".onnx", ".gguf",
                   ".ggml", ".npy", ".npz", ".joblib", ".ot", ".tflite")
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".sh", ".ipynb", ".egg", ".whl")
# The top-level keys of a JSON file that make transformers load a class from code (with
# trust_remote_code; exo e4238f9ef loads tokenizers so): auto_map in any of its configurations
# (config, tokenizer, processor, feature extractor...), custom_pipelines in a model's config.
# Every JSON file is checked, whatever its name or size.
REMOTE_CODE_KEYS = ("auto_map", "custom_pipelines")
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
BLOCK = 1 << 22
# A file's mode in the host's copy: exo's own, as tinygrad opens weights read-write (models.py).
FILE_MODE = 0o640


class Refused(Exception):
    """What stops the module, each problem naming its path; the message is the module's."""

    def __init__(self, problems):
        self.problems = list(problems)
        super(Refused, self).__init__("; ".join(self.problems))


def refuse_link(path):
    return ("%s is a symbolic link, in a directory exo can write; the role never follows one there: "
            "remove it (and find out who planted it) and run again" % path)


def _ids(owner, group):
    """(uid, gid) of owner and group, None for one that does not exist yet (check mode before the account)."""
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        uid = None
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        gid = None
    return uid, gid


def _lstat(parent_fd, name):
    try:
        return os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError as error:
        if error.errno == errno.ENOENT:
            return None
        raise


class Tree(object):
    """The directories below root, each opened once without following a link.

    root's own parent is trusted (root's, like /var/lib); root and everything below it is not. In
    check mode a directory still to be made is None, and so is everything below it.
    """

    def __init__(self, root, check_mode=False):
        self.root = posixpath.normpath(root)
        self.check_mode = check_mode
        self.fds = {}
        self.changed = []

    def close(self):
        for fd in self.fds.values():
            if fd is not None:
                os.close(fd)
        self.fds = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def parts(self, path):
        """path's components below root's parent; refused where path is not below root."""
        path = posixpath.normpath(path)
        if path != self.root and not path.startswith(self.root.rstrip("/") + "/"):
            raise Refused(["%s is not inside %s; the role writes nothing outside exo's data directory" % (path, self.root)])
        return [posixpath.basename(self.root)] + [p for p in path[len(self.root):].split("/") if p]

    def _top(self):
        top = posixpath.dirname(self.root)
        if top not in self.fds:
            if not os.path.isdir(top):
                if self.check_mode:
                    self.fds[top] = None
                    return None
                os.makedirs(top, 0o755)
            self.fds[top] = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        return self.fds[top]

    def dir(self, path, make=None):
        """The open directory path (None where check mode would make it). make: (uid, gid, mode) with
        which a missing directory, and each missing one above it, is made; without, a missing one is
        refused."""
        fd = self._top()
        current = posixpath.dirname(self.root)
        for name in self.parts(path):
            current = posixpath.join(current, name)
            if current in self.fds:
                fd = self.fds[current]
                continue
            fd = self._open(fd, name, current, make)
            self.fds[current] = fd
        return fd

    def _open(self, parent, name, path, make):
        if parent is None:
            # Below a directory check mode would make.
            if make is not None:
                self.changed.append(path)
            return None
        found = _lstat(parent, name)
        if found is None:
            if make is None:
                raise Refused(["%s is missing" % path])
            self.changed.append(path)
            if self.check_mode:
                return None
            os.mkdir(name, make[2], dir_fd=parent)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            _own(fd, make)
            return fd
        if stat.S_ISLNK(found.st_mode):
            raise Refused([refuse_link(path)])
        if not stat.S_ISDIR(found.st_mode):
            raise Refused(["%s is not a directory; move it away and run again" % path])
        # O_NOFOLLOW: a link swapped in since the lstat is refused by the kernel (ELOOP).
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Refused([refuse_link(path)])
            raise

    def entry(self, path):
        """(the open directory that holds path, path's name there)."""
        return self.dir(posixpath.dirname(path)), posixpath.basename(path)


def _own(fd, want):
    """Give the open file or directory fd the (uid, gid, mode) of want; True where it changed."""
    uid, gid, mode = want
    found = os.fstat(fd)
    changed = False
    if (uid is not None and found.st_uid != uid) or (gid is not None and found.st_gid != gid):
        os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
        changed = True
    if stat.S_IMODE(found.st_mode) != mode:
        os.fchmod(fd, mode)
        changed = True
    return changed


def _want(owner, group, mode, check_mode):
    """(uid, gid, mode); an owner or group that does not exist is refused, except in check mode before
    the role has made the account."""
    uid, gid = _ids(owner, group)
    if not check_mode and (uid is None or gid is None):
        raise Refused(["the user %s or the group %s does not exist; make them first" % (owner, group)])
    return uid, gid, int(str(mode), 8)


def directories(tree, entries):
    """Make each directory of entries ({"path", "owner", "group", "mode"}) and give it its owner and mode;
    the paths changed, in order."""
    changed = []
    for entry in entries:
        want = _want(entry["owner"], entry["group"], entry["mode"], tree.check_mode)
        before = len(tree.changed)
        fd = tree.dir(entry["path"], make=want)
        made = len(tree.changed) > before
        if made or (fd is not None and _settle(fd, want, tree.check_mode)):
            changed.append(entry["path"])
    return changed


def _settle(fd, want, check_mode):
    """Give fd want's owner and mode (in check mode only say whether it would); True where it changes.
    An owner that does not exist yet (check mode before the account is made) counts as a change."""
    if check_mode:
        uid, gid, mode = want
        found = os.fstat(fd)
        return found.st_uid != uid or found.st_gid != gid or stat.S_IMODE(found.st_mode) != mode
    return _own(fd, want)


def _open_file(tree, path):
    """An open regular file at path (no link followed), or None where it or its directory is missing."""
    parent, name = tree.entry(path)
    if parent is None:
        return None
    found = _lstat(parent, name)
    if found is None:
        return None
    if stat.S_ISLNK(found.st_mode):
        raise Refused([refuse_link(path)])
    if not stat.S_ISREG(found.st_mode):
        raise Refused(["%s is not a regular file; move it away and run again" % path])
    return os.open(name, READ_FLAGS, dir_fd=parent)


def sha256_fd(fd):
    digest = hashlib.sha256()
    while True:
        block = os.read(fd, BLOCK)
        if not block:
            return digest.hexdigest()
        digest.update(block)


def _replace(parent, name, fill, want):
    """Write a new file into the open directory parent under a temporary name, then rename it to name."""
    temp = ".%s.gpufleet-%d" % (name, os.getpid())
    fd = os.open(temp, NEW_FLAGS, 0o600, dir_fd=parent)
    try:
        fill(fd)
        _own(fd, want)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp, dir_fd=parent)
        raise
    os.close(fd)
    os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)


def seed(tree, path, content, want):
    """Write content at path with want's owner and mode, unless it is there already; True where it changed."""
    data = content.encode("utf-8")
    fd = _open_file(tree, path)
    if fd is not None:
        try:
            same = os.fstat(fd).st_size == len(data) and os.read(fd, len(data) + 1) == data
            if same:
                return _settle(fd, want, tree.check_mode)
        finally:
            os.close(fd)
    parent, name = tree.entry(path)
    if not tree.check_mode:
        _replace(parent, name, lambda out: os.write(out, data), want)
    return True


def link(tree, src, dest):
    """Make dest a hard link to src (both below root, no link followed); True where it changed."""
    src_dir, src_name = tree.entry(src)
    dest_dir, dest_name = tree.entry(dest)
    found = _lstat(dest_dir, dest_name) if dest_dir is not None else None
    if found is not None:
        if stat.S_ISLNK(found.st_mode):
            raise Refused([refuse_link(dest)])
        if not stat.S_ISREG(found.st_mode):
            raise Refused(["%s is not a regular file; move it away and run again" % dest])
    source = _lstat(src_dir, src_name) if src_dir is not None else None
    if source is not None and not stat.S_ISREG(source.st_mode):
        raise Refused([refuse_link(src) if stat.S_ISLNK(source.st_mode) else "%s is not a regular file" % src])
    if found is not None and source is not None and (found.st_dev, found.st_ino) == (source.st_dev, source.st_ino):
        return False
    if tree.check_mode:
        return True
    if source is None:
        raise Refused(["%s is missing; the host's copy of the model is incomplete" % src])
    temp = ".%s.gpufleet-%d" % (dest_name, os.getpid())
    os.link(src_name, temp, src_dir_fd=src_dir, dst_dir_fd=dest_dir, follow_symlinks=False)
    os.rename(temp, dest_name, src_dir_fd=dest_dir, dst_dir_fd=dest_dir)
    return True


def file_problem(tree, path):
    """Why the model file path is refused (None where it is data a model needs)."""
    name = posixpath.basename(path).lower()
    suffix = posixpath.splitext(name)[1]
    if suffix in CODE_SUFFIXES:
        return "%s is a code file; a model directory holds data only: remove it from the store" % path
    if suffix in WEIGHT_SUFFIXES:
        return ("%s holds weights in a format other than safetensors (a pickle runs code as it is loaded); only "
                "*.safetensors weights are accepted: remove it from the store and put the repository's "
                "*.safetensors there instead" % path)
    if suffix not in DATA_SUFFIXES and name not in DATA_NAMES:
        return ("%s is not a file a model needs; a model directory holds only *%s files, LICENSE and .gitattributes: "
                "remove it from the store" % (path, ", *".join(DATA_SUFFIXES)))
    if suffix != ".json":
        return None
    try:
        loaded = json.loads(_read(tree, path).decode("utf-8"))
    except ValueError:
        return "%s is not JSON; transformers could not read it: fix the store" % path
    keys = sorted(k for k in REMOTE_CODE_KEYS if isinstance(loaded, dict) and k in loaded)
    if keys:
        return ("%s has %s, a hook that makes transformers run code from the model's directory; "
                "remove the key from the store's file and make its manifest again" % (path, ", ".join(keys)))
    return None


def _missing(refused):
    """Whether a refusal is only that a directory is missing (Tree.dir)."""
    return any(problem.endswith(" is missing") for problem in refused.problems)


def walk(tree, top):
    """{relative path: os.stat_result} of the regular files below the directory top (none where top is
    missing); a link or another kind of file is refused, naming it."""
    files, problems = {}, []
    try:
        fd = tree.dir(top)
    except Refused as refused:
        if _missing(refused):
            return files
        raise
    if fd is None:
        return files
    stack = [(fd, "")]
    while stack:
        dir_fd, rel = stack.pop()
        for name in sorted(os.listdir(dir_fd)):
            path = posixpath.join(rel, name)
            found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(found.st_mode):
                stack.append((tree.dir(posixpath.join(top, path)), path))
            elif stat.S_ISREG(found.st_mode):
                files[path] = found
            elif stat.S_ISLNK(found.st_mode):
                problems.append(refuse_link(posixpath.join(top, path)))
            else:
                problems.append("%s is not a regular file" % posixpath.join(top, path))
    if problems:
        raise Refused(problems)
    return files


def _file_sha256(tree, path):
    fd = _open_file(tree, path)
    if fd is None:
        return None
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def _read(tree, path):
    """path's bytes, or None where it is missing."""
    fd = _open_file(tree, path)
    if fd is None:
        return None
    try:
        return os.read(fd, os.fstat(fd).st_size + 1)
    finally:
        os.close(fd)


def read_manifest(tree, repo_dir):
    """{path: {"size", "sha256"}} of repo_dir's manifest."""
    path = posixpath.join(repo_dir, MANIFEST)
    fd = _open_file(tree, path)
    if fd is None:
        raise Refused(["%s has no %s, the sha256 of each of its files; make it where the store is made "
                       "(gpufleet.exo.exo_data with manifest=%s, see docs/node.md) and run again" % (repo_dir, MANIFEST, repo_dir)])
    os.close(fd)
    try:
        manifest = json.loads(_read(tree, path).decode("utf-8"))
        return dict((entry["path"], {"size": int(entry["size"]), "sha256": str(entry["sha256"])})
                    for entry in manifest["files"])
    except (ValueError, KeyError, TypeError) as error:
        raise Refused(["%s is not a manifest of files with their path, size and sha256 (%s); make it again" % (path, error)])


def check_store(store, repos, check_mode=False):
    """{repo: {path: {"size", "sha256"}}} of each repository in store, checked against its manifest.

    Refused, naming each file: a store or repository that is missing, a manifest missing or
    unreadable, a file the manifest does not list or lists with other bytes, a file it lists that
    is missing, and a file a model does not need (file_problem: code, weights other than safetensors,
    a remote-code hook, anything else)."""
    result, problems, checked = {}, [], {}
    with Tree(store) as tree:
        entries = read_verified(tree, tree.root)
        for repo in repos:
            repo_dir = posixpath.join(tree.root, repo)
            try:
                files = walk(tree, repo_dir)
                if not files:
                    raise Refused(["%s is missing or empty; put the repository's files there and make its "
                                   "manifest" % repo_dir])
                manifest = read_manifest(tree, repo_dir)
                result[repo] = manifest
                problems += _compare(tree, repo_dir, files, manifest, entries, checked)
            except Refused as refused:
                problems += refused.problems
        if problems:
            raise Refused(problems)
        recorded = False
        if checked and not check_mode:
            try:
                recorded = record_verified(tree, tree.root, checked)
            except OSError:
                pass  # a store its checker cannot write (not its owner, read-only): read whole on every run
    return result, recorded


def _compare(tree, repo_dir, files, manifest, entries, checked):
    """What is wrong with files (walk's answer) in repo_dir against manifest, each problem naming its file.
    A file unchanged since its check (entries, VERIFIED's) is not read; one read and found right is added
    to checked."""
    problems = []
    for rel in sorted(files):
        path = posixpath.join(repo_dir, rel)
        if rel == MANIFEST:
            continue
        problem = file_problem(tree, path)
        if problem:
            problems.append(problem)
        elif rel not in manifest:
            problems.append("%s is not in %s; remove it, or make the manifest again where the store is made"
                            % (path, MANIFEST))
        elif files[rel].st_size != manifest[rel]["size"] or not (
                _recorded(tree, path, files[rel], entries) == manifest[rel]["sha256"]
                or _check_file(tree, path, manifest[rel]["sha256"], checked)):
            problems.append("%s differs from its sha256 in %s (tampered or changed since); put the repository's "
                            "own file back, or make the manifest again where the store is made" % (path, MANIFEST))
    problems += ["%s is missing; %s lists it" % (posixpath.join(repo_dir, rel), MANIFEST)
                 for rel in sorted(manifest) if rel not in files]
    return problems


def _check_file(tree, path, sha256, checked):
    """Whether the file at path has sha256, read whole; where it has, and was not written while it was read,
    its VERIFIED entry is added to checked."""
    fd = _open_file(tree, path)
    if fd is None:
        return False
    try:
        found = _identity(os.fstat(fd))
        right = sha256_fd(fd) == sha256
        if right and _identity(os.fstat(fd)) == found:
            checked[_key(tree, path)] = {"sha256": sha256, "identity": found}
    finally:
        os.close(fd)
    return right


def check_copy(tree, kept, manifest, checked):
    """Problems of the host's copy kept (a directory below tree's root) against manifest: each file the
    manifest lists must be there with its bytes (others are left alone), and not be written while it is
    read. Those that pass are added to checked (VERIFIED's entries)."""
    problems = []
    for rel in sorted(manifest):
        path = posixpath.join(kept, rel)
        if not _check_file(tree, path, manifest[rel]["sha256"], checked):
            problems.append("%s differs from its sha256 in the store's %s (tampered on the host, or the copy "
                            "failed); remove it and run again" % (path, MANIFEST))
        elif _key(tree, path) not in checked:
            problems.append("%s changed while it was checked (written by exo?); stop exo's instances and run again"
                            % path)
    return problems


def make_manifest(directory, check_mode):
    """Write directory's MANIFEST from its files (each one's path, size and sha256), keeping the other keys
    of a manifest there; a file a model does not need (file_problem) is refused. (changed, files)."""
    with Tree(directory, check_mode) as tree:
        files = walk(tree, tree.root)
        problems = []
        entries = []
        for rel in sorted(files):
            if rel == MANIFEST:
                continue
            path = posixpath.join(tree.root, rel)
            problem = file_problem(tree, path)
            if problem:
                problems.append(problem)
                continue
            entries.append({"path": rel, "size": files[rel].st_size, "sha256": _file_sha256(tree, path)})
        if problems:
            raise Refused(problems)
        manifest = {}
        if MANIFEST in files:
            try:
                manifest = json.loads(_read(tree, posixpath.join(tree.root, MANIFEST)).decode("utf-8"))
            except ValueError:
                manifest = {}
        before = json.dumps(manifest, sort_keys=True)
        manifest["files"] = entries
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        changed = json.dumps(manifest, sort_keys=True) != before
        if changed and not check_mode:
            found = os.fstat(tree.dir(tree.root))
            _replace(tree.dir(tree.root), MANIFEST, lambda out: os.write(out, text.encode("utf-8")),
                     (found.st_uid, found.st_gid, 0o644))
        return changed, entries


def copy_in(tree, store, src, dest, want):
    """Copy the store's file src to dest below tree's root (no link followed on either side)."""
    with Tree(store) as source:
        fd = _open_file(source, src)
        if fd is None:
            raise Refused(["%s is missing from the store" % src])
        try:
            parent, name = tree.entry(dest)

            def fill(out):
                while True:
                    block = os.read(fd, BLOCK)
                    if not block:
                        return
                    while block:
                        block = block[os.write(out, block):]
            _replace(parent, name, fill, want)
        finally:
            os.close(fd)


def _identity(found):
    """What changes whenever a file's bytes do (VERIFIED). Not the device: a store shared over NFS has
    another on each host that mounts it."""
    return [found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def _key(tree, path):
    return "/".join(tree.parts(path)[1:])


def read_verified(tree, directory):
    """The entries of directory's VERIFIED; none where it is missing or unreadable (every file is read)."""
    try:
        data = _read(tree, posixpath.join(directory, VERIFIED))
        entries = json.loads(data.decode("utf-8")) if data else {}
    except ValueError:
        return {}
    except Refused as refused:
        if _missing(refused):
            return {}
        raise
    return entries if isinstance(entries, dict) else {}


def _recorded(tree, path, found, entries):
    """The sha256 the file at path (found: its lstat) had when it was read, where it has not changed since."""
    entry = entries.get(_key(tree, path))
    return entry.get("sha256") if isinstance(entry, dict) and entry.get("identity") == _identity(found) else None


def still_verified(tree, top, files, entries):
    """{relative path: sha256} of files (walk's answer for the directory top) unchanged since their check."""
    found = {}
    for rel, now in files.items():
        sha256 = _recorded(tree, posixpath.join(top, rel), now, entries)
        if sha256:
            found[rel] = sha256
    return found


def record_verified(tree, directory, checked):
    """Add checked (entries of files just read) to directory's VERIFIED, its owner's alone; True where it changed."""
    entries = read_verified(tree, directory)
    before = dict(entries)
    entries.update(checked)
    if entries == before:
        return False
    text = json.dumps(entries, indent=1, sort_keys=True) + "\n"
    parent = tree.dir(directory)
    found = os.fstat(parent)
    _replace(parent, VERIFIED, lambda out: os.write(out, text.encode("utf-8")), (found.st_uid, found.st_gid, 0o600))
    return True


def free_bytes(path):
    """Bytes free to an unprivileged user in the file system of path (or of its nearest existing parent)."""
    while not os.path.exists(path) and path not in ("/", ""):
        path = posixpath.dirname(path)
    found = os.statvfs(path or "/")
    return found.f_bavail * found.f_frsize


def inspect(root, repos):
    """What the host holds: {"placed": {repo: {path: size}} of root/models, "verified": {repo: {path: sha256}}
    of those unchanged since their check, "free": bytes free there}."""
    placed, verified = {}, {}
    with Tree(root, check_mode=True) as tree:
        entries = read_verified(tree, posixpath.join(tree.root, "models"))
        for repo in repos:
            top = posixpath.join(tree.root, "models", repo)
            files = walk(tree, top)
            placed[repo] = dict((rel, found.st_size) for rel, found in files.items())
            verified[repo] = still_verified(tree, top, files, entries)
    return {"placed": placed, "verified": verified, "free": free_bytes(root)}


def unlink_refused(tree, results, checked, verify):
    """Take away the links just made (results) to the files of verify the check refused (not in checked)."""
    refused = set(_key(tree, posixpath.join(kept, rel)) for kept, manifest in verify.items() for rel in manifest)
    refused -= set(checked)
    for result in results:
        if result["changed"] and _key(tree, result["item"]["src"]) in refused:
            parent, name = tree.entry(result["item"]["dest"])
            os.unlink(name, dir_fd=parent)


def place(params, check_mode):
    """Directories, copies from a store on the host, links, the check of the host's copy and seeds, in
    that order. Returns {"changed", "directories", "copied", "results"} where results holds one
    entry per link and seed ({"changed", "item"}), as a loop's results, for the filter node_outcome.

    Each file checked is recorded in VERIFIED with its identity as it was read: the next inspect finds it
    verified until it changes. The links come first because a new link changes its file's identity (its
    change time); a link made to a file the check refuses is taken away again."""
    # The owner of the files it writes; asked only where there are some.
    file_want = (_want(params["user"], params["group"], "%o" % FILE_MODE, check_mode)
                 if params["copies"] or params["seeds"] else None)
    with Tree(params["root"], check_mode) as tree:
        made = directories(tree, params["directories"])
        copied = []
        for copy in params["copies"]:
            if _file_sha256(tree, copy["dest"]) != copy["sha256"]:
                copied.append(copy["dest"])
                if not check_mode:
                    copy_in(tree, params["store"], copy["src"], copy["dest"], file_want)
        results = []
        for item in params["links"]:
            results.append({"changed": link(tree, item["src"], item["dest"]), "item": item})
        checked = {}
        if not check_mode:
            problems = []
            for kept, manifest in sorted(params["verify"].items()):
                problems += check_copy(tree, kept, manifest, checked)
            if problems:
                unlink_refused(tree, results, checked, params["verify"])
                raise Refused(problems)
        for item in params["seeds"]:
            results.append({"changed": seed(tree, item["dest"], item["content"], file_want),
                            "item": {"dest": item["dest"], "instances": []}})
        recorded = bool(checked) and record_verified(tree, posixpath.join(tree.root, "models"), checked)
    changed = bool(made or copied or recorded or any(r["changed"] for r in results))
    return {"changed": changed, "directories": made, "copied": copied, "results": results}
