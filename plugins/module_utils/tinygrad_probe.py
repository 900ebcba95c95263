# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask a Python interpreter's tinygrad which backend its ``Device.DEFAULT`` selects, safely.

``Device.DEFAULT`` opens every backend in turn until one works. Since tinygrad 0.10.1 (AMD) and
0.11 (NV and AMD), a backend whose kernel-driver interface fails falls back to a PCI interface
that, run as root, unbinds the kernel driver from the GPU through sysfs (0.14 also removes the
GPU's sibling PCI functions). The probe must never take that path, so ``SCRIPT``:

- sets, per tinygrad version, the variables that keep selection on the kernel interface, and
  clears the ones that would force a backend or a GPU list (``VERSIONS``, ``CLEARED_ENV``);
- as root, moves itself into a private mount namespace where /sys and /proc/sys are read-only,
  so no sysfs write can unbind a driver whatever tinygrad does;
- replaces the constructor of tinygrad's PCI and USB interfaces with one that refuses, before
  asking for ``Device.DEFAULT``.

docs/tinygrad.md has the per-version facts behind the tables below, with citations.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import re

# tinygrad device name -> the backend vocabulary of docs/facts.md; names not listed map to None.
BACKENDS = {
    "CUDA": "cuda",
    "NV": "nv",
    "AMD": "amd",
    "CPU": "cpu",
    "CLANG": "cpu",
    "LLVM": "cpu",
    "METAL": None,
    "QCOM": None,
    "GPU": None,
    "CL": None,
    "HIP": None,
    "DSP": None,
    "WEBGPU": None,
    "PYTHON": None,
    "NULL": None,
}

# Set in every version: no compile cache written into the probing user's home, and no binding
# of a GPU to vfio-pci (tinygrad 0.10.1-0.10.3 default to VFIO=1 on their AMD PCI path).
_QUIET = {"CACHELEVEL": "0", "VFIO": "0"}

# Ordered by first version; a row holds from its version up to the next row's.
# select_env: environment that makes exo's tinygrad use that backend; "{index}" stands for
#   tinygrad's integer GPU list where the selecting variable itself carries it (0.13 and later).
# visible_devices_env: variable holding the integer GPU list for nv and amd, None where the
#   list goes into select_env instead. For cuda, libcuda reads CUDA_VISIBLE_DEVICES.
# guard_env: set by SCRIPT before importing tinygrad.
# blocked: "module.Class" of interfaces that bypass the kernel driver; SCRIPT disables them.
# cpu_compiler_env: variable naming the C compiler of the CPU backend (None: always "clang").
VERSIONS = [
    ("0.10.0", {
        "select_env": {"cuda": {"CUDA": "1"}, "nv": {"NV": "1"}, "amd": {"AMD": "1"},
                       "cpu": {"CLANG": "1"}},
        "visible_devices_env": {"nv": "VISIBLE_DEVICES", "amd": "VISIBLE_DEVICES"},
        "guard_env": dict(_QUIET),
        "blocked": ["tinygrad.runtime.ops_amd.PCIIface"],
        "cpu_compiler_env": None,
    }),
    ("0.10.2", {
        "select_env": {"cuda": {"CUDA": "1"}, "nv": {"NV": "1"}, "amd": {"AMD": "1"},
                       "cpu": {"CPU": "1"}},
        "visible_devices_env": {"nv": "VISIBLE_DEVICES", "amd": "VISIBLE_DEVICES"},
        "guard_env": dict(_QUIET),
        "blocked": ["tinygrad.runtime.ops_amd.PCIIface"],
        "cpu_compiler_env": "CC",
    }),
    ("0.10.3", {
        "select_env": {"cuda": {"CUDA": "1"}, "nv": {"NV": "1"},
                       "amd": {"AMD": "1", "AMD_IFACE": "KFD"}, "cpu": {"CPU": "1"}},
        "visible_devices_env": {"nv": "VISIBLE_DEVICES", "amd": "VISIBLE_DEVICES"},
        "guard_env": dict(_QUIET, AMD_IFACE="KFD"),
        "blocked": ["tinygrad.runtime.ops_amd.PCIIface", "tinygrad.runtime.ops_amd.USBIface"],
        "cpu_compiler_env": "CC",
    }),
    ("0.11.0", {
        "select_env": {"cuda": {"DEV": "CUDA"}, "nv": {"DEV": "NV", "NV_IFACE": "NVK"},
                       "amd": {"DEV": "AMD", "AMD_IFACE": "KFD"}, "cpu": {"DEV": "CPU"}},
        "visible_devices_env": {"nv": "VISIBLE_DEVICES", "amd": "VISIBLE_DEVICES"},
        "guard_env": dict(_QUIET, NV_IFACE="NVK", AMD_IFACE="KFD"),
        "blocked": ["tinygrad.runtime.support.system.PCIIfaceBase", "tinygrad.runtime.ops_amd.USBIface"],
        "cpu_compiler_env": "CC",
    }),
    ("0.12.0", {
        "select_env": {"cuda": {"DEV": "CUDA"}, "nv": {"DEV": "NV", "NV_IFACE": "NVK"},
                       "amd": {"DEV": "AMD", "AMD_IFACE": "KFD"}, "cpu": {"DEV": "CPU"}},
        "visible_devices_env": {"nv": "HCQ_VISIBLE_DEVICES", "amd": "HCQ_VISIBLE_DEVICES"},
        "guard_env": dict(_QUIET, NV_IFACE="NVK", AMD_IFACE="KFD"),
        "blocked": ["tinygrad.runtime.support.system.PCIIfaceBase", "tinygrad.runtime.ops_amd.USBIface"],
        "cpu_compiler_env": "CC",
    }),
    # From 0.13 *_IFACE and HCQ_VISIBLE_DEVICES are assertion errors; DEV carries interface and
    # GPU list ("NVK:0,1+NV"), and pins the device, so no variable can restrict the interface
    # while letting tinygrad choose: the probe relies on the namespace and the blocked classes.
    ("0.13.0", {
        "select_env": {"cuda": {"DEV": "CUDA"}, "nv": {"DEV": "NVK:{index}+NV"},
                       "amd": {"DEV": "KFD:{index}+AMD"}, "cpu": {"DEV": "CPU"}},
        "visible_devices_env": {"nv": None, "amd": None},
        "guard_env": dict(_QUIET),
        "blocked": ["tinygrad.runtime.support.system.PCIIfaceBase", "tinygrad.runtime.ops_amd.USBIface"],
        "cpu_compiler_env": "CC",
    }),
]

# Newest release whose sources the table was checked against; later ones get the last row, flagged.
RESEARCHED_UP_TO = "0.14.0"

# Cleared before tinygrad is imported, so that the answer is about the host and not about the
# caller's environment: any variable named like a tinygrad device forces that device (and one
# holding a non-integer, such as PYTHON=/usr/bin/python3, makes Device.DEFAULT raise ValueError),
# and stray GPU lists or interface choices change what tinygrad opens. REMOTE (0.13+) would make
# tinygrad drive GPUs of another machine over the network. SCRIPT adds the device names found
# in the installed tinygrad's runtime directory.
CLEARED_ENV = (
    "DEV", "VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "HCQ_VISIBLE_DEVICES",
    "NV_IFACE", "AMD_IFACE", "AMD_DRIVERLESS", "REMOTE", "MOCKGPU", "IOCTL",
    "AMD", "CL", "CLANG", "CLOUD", "CPU", "CUDA", "DSP", "GPU", "HIP", "LLVM", "METAL", "NV",
    "NULL", "PYTHON", "QCOM", "WEBGPU",
)

_SCRIPT_TEMPLATE = r'''
import json, os, sys
# The result goes to the original stdout; tinygrad and the C libraries it loads print freely.
_OUT = os.dup(1)
_NULL = os.open(os.devnull, os.O_WRONLY)
os.dup2(_NULL, 1)
os.dup2(_NULL, 2)

TABLE = __TABLE__
CLEARED_ENV = __CLEARED__
CPU_NAMES = ("CPU", "CLANG")
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE, CLONE_NEWNS = 0x1000, 0x4000, 0x40000, 0x20000
# statvfs flag -> mount flag: a read-only remount must keep the flags the kernel may have locked.
KEPT_FLAGS = ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, 0x400), (2048, 0x800),
              (4096, 0x200000))
result = {"installed": False, "version": None, "backend": None, "reason": None, "guards": [],
          "python": sys.executable}


def emit():
    data = json.dumps(result).encode("utf-8")
    while data:
        data = data[os.write(_OUT, data):]
    # Skips tinygrad's atexit handlers, which synchronise opened devices and can hang.
    os._exit(0)


def parse_version(text):
    import re
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    if not match:
        return None
    parts = [int(x) for x in match.group(1).split(".")][:3]
    return tuple(parts + [0] * (3 - len(parts)))


def row_for(version):
    parsed = parse_version(version)
    if parsed is None:
        return TABLE[-1]
    chosen = TABLE[0]
    for row in TABLE:
        if parse_version(row["first"]) <= parsed:
            chosen = row
    return chosen


def installed_version():
    try:
        from importlib import metadata
    except ImportError:
        try:
            import pkg_resources
            return True, pkg_resources.get_distribution("tinygrad").version
        except Exception:
            pass
    else:
        try:
            return True, metadata.version("tinygrad")
        except Exception:
            pass
    # A source checkout on the path has no metadata but imports all the same.
    import importlib.util
    return importlib.util.find_spec("tinygrad") is not None, None


def runtime_device_names():
    import importlib.util
    spec = importlib.util.find_spec("tinygrad")
    names = set()
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            entries = os.listdir(os.path.join(folder, "runtime"))
        except OSError:
            continue
        names.update(e[4:-3].upper() for e in entries if e.startswith("ops_") and e.endswith(".py"))
    return names


def mount_points_under(prefixes):
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split(" ")[4]
            point = point.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            point = point.replace("\\134", "\\")
            if any(point == p or point.startswith(p + "/") for p in prefixes):
                found.append(point)
    return found


def read_only_namespace(guards):
    if os.geteuid() != 0:
        guards.append("mount namespace: not needed, not running as root")
        return
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                           ctypes.c_void_p]

    def failed(what):
        return "%s failed: %s" % (what, os.strerror(ctypes.get_errno()))

    if libc.unshare(CLONE_NEWNS) != 0:
        guards.append("mount namespace: not applied, " + failed("unshare(CLONE_NEWNS)"))
        return
    # Until every mount is private, a new mount here would propagate to the host's namespace.
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        guards.append("mount namespace: not applied, " + failed("making / private"))
        return
    if os.path.isdir("/proc/sys") and libc.mount(b"/proc/sys", b"/proc/sys", None, MS_BIND | MS_REC, None) != 0:
        guards.append("mount namespace: " + failed("bind-mounting /proc/sys"))
    for point in mount_points_under(("/sys", "/proc/sys")):
        kept = 0
        try:
            flags = os.statvfs(point).f_flag
            kept = sum(ms for st, ms in KEPT_FLAGS if flags & st)
        except OSError:
            pass
        target = point.encode("utf-8", "surrogateescape")
        if libc.mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None) != 0:
            guards.append("mount namespace: %s stays writable, %s" % (point, failed("read-only remount")))
    for point in ("/sys", "/proc/sys"):
        try:
            if os.statvfs(point).f_flag & os.ST_RDONLY:
                guards.append("mount namespace: %s read-only" % point)
        except OSError:
            pass


def block(path, guards):
    import importlib
    module_name, _, class_name = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return  # tinygrad cannot reach an interface it cannot import either
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        return

    def refuse(self, *args, **kwargs):
        raise RuntimeError("%s is disabled while probing: it bypasses the kernel driver" % path)
    cls.__init__ = refuse
    guards.append("blocked: " + path)


def cpu_compiler_missing(row):
    import shutil
    name = (os.environ.get(row["cpu_compiler_env"]) if row["cpu_compiler_env"] else None) or "clang"
    return None if shutil.which(name) else name


def main():
    # python -c puts the working directory first on sys.path: a tinygrad folder there is not
    # what exo imports.
    while "" in sys.path:
        sys.path.remove("")
    installed, version = installed_version()
    result["version"] = version
    if not installed:
        result["reason"] = "tinygrad is not installed for this interpreter"
        return
    result["installed"] = True
    row = row_for(version)
    guards = result["guards"]
    read_only_namespace(guards)
    for name in sorted(set(CLEARED_ENV) | runtime_device_names()):
        if name in os.environ and name not in row["guard_env"]:
            del os.environ[name]
            guards.append("env cleared: " + name)
    for name, value in sorted(row["guard_env"].items()):
        os.environ[name] = value
        guards.append("env set: %s=%s" % (name, value))
    try:
        from tinygrad.device import Device
    except Exception as exc:
        result["reason"] = "importing tinygrad failed: %s: %s" % (type(exc).__name__, exc)
        return
    for path in row["blocked"]:
        block(path, guards)
    try:
        backend = Device.DEFAULT
    except Exception as exc:
        result["reason"] = ("%s: %s" % (type(exc).__name__, exc)).strip()[:2000]
        return
    result["backend"] = backend
    if backend in CPU_NAMES:
        missing = cpu_compiler_missing(row)
        if missing:
            result["reason"] = ("tinygrad selected %s but the C compiler %r is not on PATH: "
                                "every kernel will fail to compile" % (backend, missing))


try:
    main()
except BaseException as exc:
    result["reason"] = "probe failed: %s: %s" % (type(exc).__name__, exc)
emit()
'''


def _script_table():
    return [dict(first=first, guard_env=facts["guard_env"], blocked=facts["blocked"],
                 cpu_compiler_env=facts["cpu_compiler_env"]) for first, facts in VERSIONS]


# Run as [python, "-c", SCRIPT]; it prints one JSON object on its original stdout.
SCRIPT = _SCRIPT_TEMPLATE.replace("__TABLE__", repr(_script_table())).replace(
    "__CLEARED__", repr(CLEARED_ENV))


def _parse_version(text):
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not match:
        return None
    parts = [int(x) for x in match.group(1).split(".")][:3]
    return tuple(parts + [0] * (3 - len(parts)))


def version_facts(version):
    """The VERSIONS facts for a tinygrad version string such as "0.10.0".

    Returns a copy with "first_version" (the row used) and "assumed": True when the version is
    missing, unreadable, older than the table or newer than RESEARCHED_UP_TO; the nearest row is
    used then (the newest for a missing or unreadable version).
    """
    if version is not None and not isinstance(version, str):
        raise TypeError("tinygrad version must be a string like '0.10.0' or None, not %s %r"
                        % (type(version).__name__, version))
    parsed = _parse_version(version) if version is not None else None
    first, facts = VERSIONS[-1]
    assumed = parsed is None or parsed[:2] > _parse_version(RESEARCHED_UP_TO)[:2]
    if parsed is not None:
        if parsed < _parse_version(VERSIONS[0][0]):
            first, facts = VERSIONS[0]
            assumed = True
        else:
            for row_first, row_facts in VERSIONS:
                if _parse_version(row_first) <= parsed:
                    first, facts = row_first, row_facts
    result = copy.deepcopy(facts)
    result["first_version"] = first
    result["assumed"] = assumed
    return result


def interpret(raw, python=None):
    """Turn SCRIPT's output into the ``tinygrad`` section of docs/facts.md.

    ``raw`` is the decoded JSON object (or its text), or None when the child gave no result
    (killed at the deadline, crashed). ``python`` names the interpreter for that case.
    """
    if isinstance(raw, (bytes, str)):
        try:
            raw = json.loads(raw)
        except ValueError:
            return _failed(python, "tinygrad probe printed something that is not JSON: %r" % raw[:200])
    if raw is None:
        return _failed(python, "tinygrad probe gave no result (killed at the deadline or crashed)")
    if not isinstance(raw, dict):
        raise TypeError("interpret() takes the tinygrad probe's JSON object, its text or None, "
                        "not %s" % type(raw).__name__)
    installed = bool(raw.get("installed"))
    section = {
        "installed": installed,
        "version": raw.get("version"),
        "python": raw.get("python") or python,
        "backend": raw.get("backend"),
        "reason": raw.get("reason"),
        "select_env": None,
        "visible_devices_env": None,
        "guards": list(raw.get("guards") or []),
    }
    if installed:
        facts = version_facts(section["version"])
        section["select_env"] = facts["select_env"]
        section["visible_devices_env"] = facts["visible_devices_env"]
    return section


def _failed(python, reason):
    return {"installed": None, "version": None, "python": python, "backend": None, "reason": reason,
            "select_env": None, "visible_devices_env": None, "guards": []}
