# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask this interpreter's tinygrad which backend its ``Device.DEFAULT`` selects, safely.

The tinygrad stage runs this file's text as ``python -c <text>`` with the interpreter whose
tinygrad exo uses, which may be a virtualenv without the collection: the file needs nothing but
the standard library, and it acts only when run as ``__main__``. tinygrad_probe imports it for
``VERSIONS`` and the version rules, so they are defined here once; importing it does nothing.

``Device.DEFAULT`` opens every backend in turn until one works. Since tinygrad 0.10.1 (AMD) and
0.11 (NV and AMD), a backend whose kernel-driver interface fails falls back to a PCI interface
that, run as root, unbinds the kernel driver from the GPU through sysfs (0.14 also removes the
GPU's sibling PCI functions). The probe must never take that path, so the child:

- sets, per tinygrad version, the variables that keep selection on the kernel interface, and
  clears the ones that would force a backend or a GPU list (``VERSIONS``, ``CLEARED_ENV``);
- as root, moves itself into a private mount namespace where /sys and /proc/sys are read-only,
  so no sysfs write can unbind a driver whatever tinygrad does; where they stay writable, it
  opens no device and says why (it fails closed);
- replaces the constructor of tinygrad's PCI and USB interfaces with one that refuses, before
  asking for ``Device.DEFAULT``.

It prints one JSON object on its original stdout: ``installed``, ``version``, ``backend``,
``reason``, ``guards`` and ``python``. docs/tinygrad.md has the per-version facts behind the
tables below, with citations.

Three more modes, chosen by the arguments after ``-c <text>``:

- ``version``: only whether tinygrad is installed and its version, read from its metadata; no
  device is opened (the probe's answer where a GPU is busy, see _busy.py).
- ``check <json>``: whether one backend opens and computes a one-element kernel under the
  environment an exo instance forcing it gets (``check_env``); the JSON names the backend and
  the GPU (``{"backend": "cuda", "gpu": {"index": 0, "uuid": "GPU-..."}}``, gpu null for cpu).
  The answer adds ``ok``, ``device`` (tinygrad's ``Device.DEFAULT`` there), ``error`` (tinygrad's
  exception as type and message) and ``env``.
- ``cuda``: tinygrad is not imported. The CUDA driver itself (``libcuda.so.1`` through ctypes) is
  asked which devices a process with this environment's ``CUDA_VISIBLE_DEVICES`` and
  ``CUDA_DEVICE_ORDER`` sees: ``cuInit``, then each device's UUID and PCI bus id. No context is
  created, so a busy GPU is not disturbed. The answer is ``cuda``: ``status`` (``ok``,
  ``init_error``, ``library_not_found``, ``error``), ``init_error`` (``code``, ``name``),
  ``devices`` (``uuid`` without its tag, ``pci_bus_id`` as the driver writes it) and ``message``.

Every answer also carries ``install``: each directory this interpreter imports from (and its user
site directory), with its modification time, read before anything is imported. Installing,
upgrading or removing a package changes the time of the directory it goes into; the probe's cache
(_cache.py) compares them to know that its answer still holds.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import sys

# Set in every version: no compile cache written into the probing user's home, and no binding
# of a GPU to vfio-pci (tinygrad 0.10.1-0.10.3 default to VFIO=1 on their AMD PCI path).
_QUIET = {"CACHELEVEL": "0", "VFIO": "0"}

# Ordered by first version; a row holds from its version up to the next row's.
# select_env: environment that makes exo's tinygrad use that backend; "{index}" stands for
#   tinygrad's integer GPU list where the selecting variable itself carries it (0.13 and later).
# visible_devices_env: variable holding the integer GPU list for nv and amd, None where the
#   list goes into select_env instead. For cuda, libcuda reads CUDA_VISIBLE_DEVICES.
# guard_env: set by the child before importing tinygrad.
# blocked: "module.Class" of interfaces that bypass the kernel driver; the child disables them.
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
# tinygrad drive GPUs of another machine over the network. The child adds the device names
# found in the installed tinygrad's runtime directory.
CLEARED_ENV = (
    "DEV", "VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "HCQ_VISIBLE_DEVICES",
    "NV_IFACE", "AMD_IFACE", "AMD_DRIVERLESS", "REMOTE", "MOCKGPU", "IOCTL",
    "AMD", "CL", "CLANG", "CLOUD", "CPU", "CUDA", "DSP", "GPU", "HIP", "LLVM", "METAL", "NV",
    "NULL", "PYTHON", "QCOM", "WEBGPU",
)

# The names tinygrad gives its CPU backend; both compile every kernel with a C compiler.
CPU_NAMES = ("CPU", "CLANG")

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE, CLONE_NEWNS = 0x1000, 0x4000, 0x40000, 0x20000
# statvfs flag -> mount flag: a read-only remount must keep the flags the kernel may have locked.
KEPT_FLAGS = ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, 0x400), (2048, 0x800),
              (4096, 0x200000))


def parse_version(text):
    """(major, minor, patch) of a tinygrad version such as "0.10.1.dev20250129" or "v0.12".

    None for a missing or unreadable version ("", "master").
    """
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    if not match:
        return None
    parts = [int(x) for x in match.group(1).split(".")][:3]
    return tuple(parts + [0] * (3 - len(parts)))


def version_row(version):
    """The ``VERSIONS`` row for a tinygrad version string: (first version, facts, assumed).

    ``assumed`` is True when the version is missing, unreadable, older than the table or newer
    than ``RESEARCHED_UP_TO``; the nearest row is used then (the newest for a missing or
    unreadable version). ``facts`` is the table's own dict: copy it before changing it.
    """
    parsed = parse_version(version)
    if parsed is None:
        first, facts = VERSIONS[-1]
        return first, facts, True
    first, facts = VERSIONS[0]
    for row_first, row_facts in VERSIONS:
        if parse_version(row_first) <= parsed:
            first, facts = row_first, row_facts
    assumed = parsed < parse_version(VERSIONS[0][0]) or parsed[:2] > parse_version(RESEARCHED_UP_TO)[:2]
    return first, facts, assumed


def installed_version():
    """(installed, version) of tinygrad for this interpreter, read without importing it."""
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
    """Device names of the installed tinygrad: one per runtime/ops_<name>.py."""
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
    """As root, leave this process with /sys and /proc/sys read-only, the host's mounts untouched.

    Returns whether tinygrad may run: not as root, or as root with both read-only however that came
    about (this namespace, or a container that mounts them so).
    """
    if os.geteuid() != 0:
        guards.append("mount namespace: not needed, not running as root")
        return True
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                           ctypes.c_void_p]

    def failed(what):
        return "%s failed: %s" % (what, os.strerror(ctypes.get_errno()))

    if libc.unshare(CLONE_NEWNS) != 0:
        guards.append("mount namespace: not applied, " + failed("unshare(CLONE_NEWNS)"))
    # Until every mount is private, a new mount here would propagate to the host's namespace.
    elif libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        guards.append("mount namespace: not applied, " + failed("making / private"))
    else:
        _remount_read_only(libc, guards, failed)
    writable = []
    for point in ("/sys", "/proc/sys"):
        try:
            if os.statvfs(point).f_flag & os.ST_RDONLY:
                guards.append("mount namespace: %s read-only" % point)
            else:
                writable.append(point)
        except OSError:
            pass
    return not writable


def _remount_read_only(libc, guards, failed):
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


def block(path, guards):
    """Make constructing the class ``path`` ("module.Class") raise."""
    import importlib
    module_name, dummy, class_name = path.rpartition(".")
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
    """The C compiler the CPU backend of this row would run, when it is not on PATH; else None."""
    import shutil
    name = (os.environ.get(row["cpu_compiler_env"]) if row["cpu_compiler_env"] else None) or "clang"
    return None if shutil.which(name) else name


def selected_device(select_env):
    """The tinygrad device a backend's select_env forces: "NVK:0+NV" -> NV, {"CLANG": "1"} -> CLANG."""
    if "DEV" in select_env:
        return select_env["DEV"].rpartition("+")[2]
    return next(name for name, value in sorted(select_env.items()) if value == "1")


def check_env(row, backend, gpu):
    """The variables of an exo instance that forces ``backend`` on ``gpu`` (None: the CPU instance).

    As the node role writes them (plugins/plugin_utils/node): the CPU instance hides every GPU from CUDA; a GPU
    instance names its GPU by UUID in PCI order and by index in tinygrad's own list.
    """
    index = gpu["index"] if gpu else 0
    env = {}
    if backend == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif gpu:
        env.update(CUDA_VISIBLE_DEVICES=gpu["uuid"], CUDA_DEVICE_ORDER="PCI_BUS_ID")
        if row["visible_devices_env"].get("nv"):
            env[row["visible_devices_env"]["nv"]] = str(index)
    env.update((name, value.replace("{index}", str(index))) for name, value in row["select_env"][backend].items())
    return env


def _guarded(result, env=None):
    """Install every guard and import tinygrad's Device: (row, Device), or None with the reason set.

    ``env`` is set after the caller's environment is cleared, before tinygrad is imported.
    """
    installed, version = installed_version()
    result["version"] = version
    if not installed:
        result["reason"] = "tinygrad is not installed for this interpreter"
        return None
    result["installed"] = True
    row = version_row(version)[1]
    guards = result["guards"]
    if not read_only_namespace(guards):
        # Fail closed: as root with /sys writable, tinygrad's PCI interfaces could unbind a GPU's driver.
        result["reason"] = "not opened: running as root, the probe could not make /sys and /proc/sys read-only (%s)" % (
            "; ".join(g[len("mount namespace: "):] for g in guards if g.startswith("mount namespace: ")))
        return None
    for name in sorted(set(CLEARED_ENV) | runtime_device_names()):
        if name in os.environ and name not in row["guard_env"]:
            del os.environ[name]
            guards.append("env cleared: " + name)
    for name, value in sorted(row["guard_env"].items()):
        os.environ[name] = value
        guards.append("env set: %s=%s" % (name, value))
    if env is not None:
        env = env(row)
        os.environ.update(env)
        result["env"] = env
    try:
        from tinygrad.device import Device
    except Exception as exc:
        result["reason"] = "importing tinygrad failed: %s: %s" % (type(exc).__name__, exc)
        return None
    for path in row["blocked"]:
        block(path, guards)
    return row, Device


def _error(exc):
    return {"type": type(exc).__name__, "message": str(exc).strip()[:2000]}


def check(result, request):
    """Fill ``result`` with whether the requested backend opens and computes, every guard in place."""
    backend, gpu = request["backend"], request.get("gpu")
    result.update(backend=backend, ok=False, device=None, error=None, env=None)
    guarded = _guarded(result, lambda row: check_env(row, backend, gpu))
    if guarded is None:
        return
    row, Device = guarded
    expected = selected_device(row["select_env"][backend])
    try:
        device = Device.DEFAULT
        result["device"] = device
        if device != expected:
            result["error"] = {"type": "WrongDevice", "message": "tinygrad selected %s, not %s, under %s" % (
                device, expected, " ".join("%s=%s" % item for item in sorted(result["env"].items())))}
            return
        from tinygrad import Tensor
        value = (Tensor([1.0], device=device) + 1).tolist()
    except Exception as exc:
        result["error"] = _error(exc)
        return
    if value != [2.0]:
        result["error"] = {"type": "WrongResult", "message": "1 + 1 computed on %s gave %r" % (device, value)}
        return
    result["ok"] = True


def probe(result):
    """Fill ``result`` with tinygrad's choice, with every guard in place first."""
    guarded = _guarded(result)
    if guarded is None:
        return
    row, Device = guarded
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


# cuda.h: CUresult values the probe relies on.
CUDA_SUCCESS = 0


def _cuda_uuid(raw):
    """A CUuuid's 16 bytes as NVML writes a UUID's digits (8-4-4-4-12), without the GPU-/MIG- tag."""
    digits = "".join("%02x" % byte for byte in bytearray(raw))
    return "-".join(digits[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def cuda_devices(result):
    """Fill ``result["cuda"]`` with what the CUDA driver answers for this process's environment."""
    import ctypes
    answer = {"status": "error", "init_error": None, "devices": [], "message": None}
    result["cuda"] = answer
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        answer.update(status="library_not_found", message="libcuda.so.1 cannot be loaded: %s" % exc)
        return

    def error_name(code):
        text = ctypes.c_char_p()
        getter = getattr(lib, "cuGetErrorName", None)
        if getter is not None and getter(code, ctypes.byref(text)) == CUDA_SUCCESS and text.value:
            return text.value.decode("ascii", "replace")
        return None

    code = lib.cuInit(0)
    if code != CUDA_SUCCESS:
        answer.update(status="init_error", init_error={"code": code, "name": error_name(code)})
        return

    def call(name, *args):
        code = getattr(lib, name)(*args)
        if code != CUDA_SUCCESS:
            raise RuntimeError("%s returned %d (%s)" % (name, code, error_name(code)))

    # cuDeviceGetUuid_v2 (CUDA 11.4) gives a MIG device's own UUID; the first version, its GPU's.
    uuid_call = "cuDeviceGetUuid_v2" if hasattr(lib, "cuDeviceGetUuid_v2") else "cuDeviceGetUuid"
    count, device = ctypes.c_int(), ctypes.c_int()
    raw, bus = (ctypes.c_ubyte * 16)(), ctypes.create_string_buffer(64)
    try:
        call("cuDeviceGetCount", ctypes.byref(count))
        for ordinal in range(count.value):
            call("cuDeviceGet", ctypes.byref(device), ordinal)
            call(uuid_call, raw, device)
            call("cuDeviceGetPCIBusId", bus, len(bus), device)
            answer["devices"].append({"uuid": _cuda_uuid(raw), "pci_bus_id": bus.value.decode("ascii", "replace")})
    except RuntimeError as exc:
        answer["message"] = str(exc)
        return
    answer["status"] = "ok"


def install_times():
    """[directory, st_mtime_ns or None] for each entry of sys.path and the user site directory."""
    import site
    paths = [p for p in sys.path if p]
    try:
        paths.append(site.getusersitepackages())
    except Exception:
        pass
    times = []
    for path in paths:
        try:
            times.append([path, os.stat(path).st_mtime_ns])
        except OSError:
            times.append([path, None])
    return times


def main():
    """Probe, print the result as one JSON object on the original stdout, and exit."""
    # tinygrad and the C libraries it loads print freely: they get /dev/null, the result a
    # duplicate of the original stdout.
    out = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    result = {"installed": False, "version": None, "backend": None, "reason": None, "guards": [],
              "python": sys.executable}
    args = sys.argv[1:]
    # python -c puts the working directory first on sys.path: a tinygrad folder there is not
    # what exo imports.
    while "" in sys.path:
        sys.path.remove("")
    try:
        result["install"] = install_times()
        if args[:1] == ["version"]:
            result["installed"], result["version"] = installed_version()
        elif args[:1] == ["check"]:
            check(result, json.loads(args[1]))
        elif args[:1] == ["cuda"]:
            cuda_devices(result)
        else:
            probe(result)
    except BaseException as exc:
        result["reason"] = "probe failed: %s: %s" % (type(exc).__name__, exc)
    data = json.dumps(result).encode("utf-8")
    while data:
        data = data[os.write(out, data):]
    # Skips tinygrad's atexit handlers, which synchronise opened devices and can hang.
    os._exit(0)


if __name__ == "__main__":
    main()
