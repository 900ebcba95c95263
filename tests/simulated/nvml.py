# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Simulated NVML for tests: a C ``libnvidia-ml.so.1`` that the real nvidia-ml-py loads.

Typical use::

    from tests.simulated import nvml
    lib_dir = nvml.build()                       # or nvml.build("legacy")
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.H100_SXM, nvml.A100_SXM4_80GB_MIG])
    env = dict(os.environ, **nvml.environment(lib_dir, config))
    subprocess.run([sys.executable, "-c", "import pynvml; pynvml.nvmlInit(); ..."], env=env)

Loading the library into a process
    pynvml opens ``libnvidia-ml.so.1`` by its bare name, and glibc's dlopen reads
    ``LD_LIBRARY_PATH`` only when a process starts. So either start a new process with the
    environment above (what the tests do), or, inside a running process, load the file by its
    full path before pynvml does, with ``ctypes.CDLL(os.path.join(lib_dir, "libnvidia-ml.so.1"))``:
    glibc then hands pynvml the already-loaded library, matched by its SONAME. The library reads
    ``SIMULATED_NVML_CONFIG`` from the environment each time it goes from uninitialized to
    initialized, so a process may set ``os.environ["SIMULATED_NVML_CONFIG"]``, init, shut down and
    init again with another file. Without the variable it reads ``/etc/simulated-nvml.conf``, the
    simulated host's own file (for containers that play a host, whatever the environment of the
    process); without either (or when the named file is missing, which also prints a warning on
    stderr) it is a host whose driver is loaded and that has no GPUs.

Variants
    ``current`` exports every call this simulation knows; ``legacy`` is the same source without
    the calls an R418-era driver lacks (``LEGACY_OMITTED``): pynvml raises
    ``NVMLError_FunctionNotFound`` for those, as on such a host.

Config file format (written by write_config, parsed by libnvidia-ml.c)
    One ``key=value`` per line; ``#`` starts a comment line. Global keys first (driver_version,
    nvml_version, cuda_version, init_error, hang_in, crash_in, and any number of
    ``error=<function> <gpu index or *> <ERROR_NAME>``), then a ``[gpu]`` line per GPU followed by
    its keys, each optionally followed by ``[mig]`` sections for its MIG devices. Values are
    percent-encoded (any byte outside printable ASCII, and ``%``), so names of any bytes fit on a
    line. A key left out means NVML answers NOT_SUPPORTED for it (numa_node, cores,
    max_sm_clock_mhz, cpu_affinity, and mig_current/mig_pending for a non-MIG part). A file the
    library cannot parse makes every nvmlInit* return NVML_ERROR_UNKNOWN, with the line on stderr.

Events file (the fault-injection kit)
    ``SIMULATED_NVML_EVENTS`` (else ``/etc/simulated-nvml.events``) names a file that tests and
    operators append lines to while a process has the library loaded (``inject`` with ``xid``,
    ``ecc_double_bit`` and ``set_keys`` lines): ``xid <gpu> <n>`` and ``ecc_double_bit <gpu>`` are
    events, delivered through ``nvmlEventSetWait_v2`` to the event sets registered for them;
    ``set <gpu> <key>=<value>`` changes any ``[gpu]`` key from then on (health answers,
    ``recovery_action`` for ``nvmlDeviceGetFieldValues``, ``lost=1`` for a GPU that fell off the bus:
    every call about it answers GPU_IS_LOST). At init the library replays the file's ``set`` lines
    and skips its events. docs/health.md shows it to operators.

Behaviour worth knowing
    Init is reference counted like NVML's; a nested init keeps the loaded config. Calls before
    init return UNINITIALIZED; unknown handles INVALID_ARGUMENT. A MIG device handle answers
    GetName, GetUUID, GetMemoryInfo (its own values), GetGpuInstanceId, GetComputeInstanceId,
    IsMigDeviceHandle, GetDeviceHandleFromMigDeviceHandle, and the physical GPU's PCI info,
    compute capability, architecture, NUMA node, CPU affinity and clocks. Max MIG device count is
    0 while MIG is disabled; GetMigDeviceHandleByIndex answers NOT_FOUND for an empty slot below
    it. Memory is all free unless a GPU's ``memory_used_mib`` says otherwise;
    GetComputeRunningProcesses_v3 lists the GPU's ``processes`` (pid and MiB).
    ``errors`` matches a call by C function name and by the GPU
    index the call concerns (a MIG handle's parent; the index argument of GetHandleByIndex).
"""

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import uuid as uuidlib

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "libnvidia-ml.c")
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE_ENV = "SIMULATED_NVML_CACHE"
CONFIG_ENV = "SIMULATED_NVML_CONFIG"
EVENTS_ENV = "SIMULATED_NVML_EVENTS"
LIBRARY_NAME = "libnvidia-ml.so.1"

CFLAGS = (
    "-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared", "-fvisibility=hidden", "-pthread",
    "-Wl,-soname," + LIBRARY_NAME,
)
VARIANT_FLAGS = {
    "current": (),
    "legacy": ("-DSIMULATED_NVML_LEGACY",),
}

# Every symbol the library exports; hang_in, crash_in and errors must name one of them.
FUNCTIONS = (
    "nvmlInit", "nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString",
    "nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion", "nvmlSystemGetCudaDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetCount", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID", "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMinorNumber", "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetCpuAffinity", "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceIsMigDeviceHandle", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetEccMode", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetRemappedRows", "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetComputeMode",
    "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetTemperature",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetGpuFabricInfoV",
    "nvmlEventSetCreate", "nvmlDeviceGetSupportedEventTypes", "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2",
    "nvmlEventSetFree", "nvmlDeviceGetFieldValues",
)

# Calls an R418-era driver does not export (the ``legacy`` variant leaves them out).
LEGACY_OMITTED = (
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetArchitecture", "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceIsMigDeviceHandle", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetRemappedRows", "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetGpuFabricInfoV",
)

# NVML_ERROR_<name> -> nvmlReturn_t value, as in nvml.h.
ERROR_CODES = {
    "UNINITIALIZED": 1, "INVALID_ARGUMENT": 2, "NOT_SUPPORTED": 3, "NO_PERMISSION": 4,
    "ALREADY_INITIALIZED": 5, "NOT_FOUND": 6, "INSUFFICIENT_SIZE": 7, "INSUFFICIENT_POWER": 8,
    "DRIVER_NOT_LOADED": 9, "TIMEOUT": 10, "IRQ_ISSUE": 11, "LIBRARY_NOT_FOUND": 12,
    "FUNCTION_NOT_FOUND": 13, "CORRUPTED_INFOROM": 14, "GPU_IS_LOST": 15, "RESET_REQUIRED": 16,
    "OPERATING_SYSTEM": 17, "LIB_RM_VERSION_MISMATCH": 18, "IN_USE": 19, "MEMORY": 20,
    "NO_DATA": 21, "VGPU_ECC_NOT_SUPPORTED": 22, "INSUFFICIENT_RESOURCES": 23,
    "FREQ_NOT_SUPPORTED": 24, "ARGUMENT_VERSION_MISMATCH": 25, "DEPRECATED": 26, "NOT_READY": 27,
    "GPU_NOT_FOUND": 28, "INVALID_STATE": 29, "RESET_TYPE_NOT_SUPPORTED": 30, "UNKNOWN": 999,
}

# nvmlDeviceArchitecture_t by CUDA compute capability; anything else is NVML_DEVICE_ARCH_UNKNOWN.
ARCHITECTURE_BY_CC = {
    (3, 0): 2, (3, 2): 2, (3, 5): 2, (3, 7): 2,            # kepler
    (5, 0): 3, (5, 2): 3, (5, 3): 3,                       # maxwell
    (6, 0): 4, (6, 1): 4, (6, 2): 4,                       # pascal
    (7, 0): 5, (7, 2): 5,                                  # volta
    (7, 5): 6,                                             # turing
    (8, 0): 7, (8, 6): 7, (8, 7): 7,                       # ampere
    (8, 9): 8,                                             # ada
    (9, 0): 9,                                             # hopper
    (10, 0): 10, (10, 1): 10, (10, 3): 10, (12, 0): 10, (12, 1): 10,   # blackwell
}
ARCH_UNKNOWN = 0xFFFFFFFF

MAX_GPUS = 64
MAX_MIG_DEVICES = 8
DEFAULT_MIG_MAX_DEVICES = 7
MAX_CPUS = 4096
NVIDIA_VENDOR_ID = 0x10DE


# ---- building -----------------------------------------------------------------------------

def _cache_root():
    return os.environ.get(CACHE_ENV) or os.path.join(REPO_ROOT, ".build", "simulated-nvml")


def build(variant="current"):
    """Compile the library (once per source version) and return the directory holding it."""
    if variant not in VARIANT_FLAGS:
        raise ValueError("simulated NVML variant %r is unknown: use one of %s"
                         % (variant, ", ".join(sorted(VARIANT_FLAGS))))
    return build_library(SOURCE, LIBRARY_NAME, CFLAGS + VARIANT_FLAGS[variant], os.path.join(_cache_root(), variant))


def build_library(source_path, library_name, flags, prefix):
    """Compile a simulated library (once per source and flags) into <prefix>-<digest>/; return that directory."""
    with open(source_path, "rb") as f:
        source = f.read()
    # The headers beside the source (percent.h) are part of it.
    for header in sorted(glob.glob(os.path.join(os.path.dirname(source_path), "*.h"))):
        with open(header, "rb") as f:
            source += f.read()
    digest = hashlib.sha256(source + "\0".join(flags).encode()).hexdigest()[:16]
    lib_dir = "%s-%s" % (prefix, digest)
    target = os.path.join(lib_dir, library_name)
    if os.path.exists(target):
        return lib_dir

    compiler = shutil.which("gcc") or shutil.which("cc")
    if not compiler:
        raise RuntimeError("building the simulated %s needs a C compiler: install gcc "
                           "(apt-get install gcc) or put one on PATH" % library_name)
    if not os.path.isdir(lib_dir):
        os.makedirs(lib_dir, exist_ok=True)
    # Several test processes may build at once: each writes its own file, the rename is atomic.
    fd, partial = tempfile.mkstemp(prefix=library_name + ".", suffix=".partial", dir=lib_dir)
    os.close(fd)
    try:
        result = subprocess.run([compiler] + list(flags) + ["-o", partial, source_path],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, check=False)
        if result.returncode != 0:
            raise RuntimeError("compiling %s failed (%s, exit %d):\n%s"
                               % (source_path, compiler, result.returncode, result.stdout))
        os.chmod(partial, 0o755)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return lib_dir


def environment(lib_dir, config_path, events_path=None):
    """Variables that make a new process load this library with this config (and events file)."""
    env = {"LD_LIBRARY_PATH": lib_dir, CONFIG_ENV: config_path}
    if events_path is not None:
        env[EVENTS_ENV] = events_path
    return env


# ---- describing GPUs ----------------------------------------------------------------------

def _check_int(what, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        limit = "%d or more" % low if high is None else "from %d to %d" % (low, high)
        raise ValueError("%s must be an integer %s, got %r" % (what, limit, value))
    return value


def _normalise_bus_id(bus_id):
    """Any of 0000:3b:00.0, 00000000:3B:00.0 or 3b:00.0 -> NVML's 00000000:3B:00.0."""
    text = bus_id.strip()
    parts = text.split(":")
    try:
        if len(parts) == 2 and "." in parts[1]:
            parts = ["0"] + parts
        domain, bus = int(parts[0], 16), int(parts[1], 16)
        device, function = parts[2].partition(".")[::2]
        device, function = int(device, 16), int(function or "0", 16)
    except (ValueError, IndexError):
        raise ValueError("pci_bus_id %r is not a PCI address like 0000:3b:00.0" % (bus_id,))
    if len(parts) != 3 or domain > 0xFFFFFFFF or bus > 0xFF or device > 0x1F or function != 0:
        raise ValueError("pci_bus_id %r is not a GPU's PCI address (domain:bus:device.0)" % (bus_id,))
    return "%08X:%02X:%02X.0" % (domain, bus, device)


def _cpu_list(cpus):
    """A cpulist string ("0-3,8") or an iterable of CPU numbers -> sorted CPU numbers."""
    if isinstance(cpus, str):
        numbers = set()
        for part in filter(None, cpus.replace(" ", "").split(",")):
            first, last = part.partition("-")[::2]
            try:
                numbers.update(range(int(first), int(last or first) + 1))
            except ValueError:
                raise ValueError("cpu_affinity %r is not a CPU list like 0-31,64-95" % (cpus,))
        cpus = numbers
    result = sorted(set(cpus))
    for cpu in result:
        _check_int("a CPU in cpu_affinity", cpu, 0, MAX_CPUS - 1)
    return result


def _cpu_ranges(cpus):
    ranges = []
    for cpu in cpus:
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def _mig_device(spec, position):
    if not isinstance(spec, dict):
        raise ValueError("MIG device %d must be a dict with memory_mib (and uuid, gi, ci, name), got %r"
                         % (position, spec))
    unknown = set(spec) - {"uuid", "memory_mib", "gi", "ci", "name"}
    if unknown:
        raise ValueError("MIG device %d has unknown keys %s: use uuid, memory_mib, gi, ci, name"
                         % (position, sorted(unknown)))
    if "memory_mib" not in spec:
        raise ValueError("MIG device %d needs memory_mib" % position)
    return {
        "uuid": spec.get("uuid"),
        "memory_mib": _check_int("MIG device memory_mib", spec["memory_mib"], 1),
        "gi": _check_int("MIG device gi", spec.get("gi", position + 1), 0),
        "ci": _check_int("MIG device ci", spec.get("ci", 0), 0),
        "name": spec.get("name"),
    }


# Health groups of gpu(health=...): each maps to the config keys it sets, in order. A group left
# out answers NOT_SUPPORTED, as on a part without it (no ECC on consumer GPUs, no fabric without
# NVSwitch).
HEALTH_GROUPS = {
    "ecc": ("ecc_current", "ecc_pending", "ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"),
    "retired_pages_pending": ("retired_pages_pending",),
    "remapped_rows": ("remapped_correctable", "remapped_uncorrectable", "remapped_pending", "remapped_failed"),
    "persistence_mode": ("persistence_mode",),
    "compute_mode": ("compute_mode",),
    "pcie": ("pcie_gen", "pcie_max_gen", "pcie_width", "pcie_max_width"),
    "temperature_c": ("temperature_c",),
    "clock_event_reasons": ("clock_event_reasons",),
    "fabric": ("fabric_state", "fabric_status", "fabric_clique_id"),
    # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION through nvmlDeviceGetFieldValues: 0 none, 1 reset, 2 reboot ...
    "recovery_action": ("recovery_action",),
}


def _health(health):
    """{group: value or tuple} -> [(config key, integer)], checked against HEALTH_GROUPS."""
    if not isinstance(health, dict):
        raise ValueError("health must be a dict of %s, got %r" % (", ".join(sorted(HEALTH_GROUPS)), health))
    lines = []
    for group, value in sorted(health.items()):
        if group not in HEALTH_GROUPS:
            raise ValueError("health has unknown key %r: use %s" % (group, ", ".join(sorted(HEALTH_GROUPS))))
        keys = HEALTH_GROUPS[group]
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        if len(values) != len(keys):
            raise ValueError("health %s needs %d values (%s), got %r" % (group, len(keys), ", ".join(keys), value))
        lines += [(key, _check_int("health " + key, v, 0)) for key, v in zip(keys, values)]
    return lines


def gpu(name, memory_mib, uuid=None, pci_bus_id=None, minor=None, cc=(9, 0), cores=None,
        max_sm_clock_mhz=None, numa_node=None, cpu_affinity=None, mig=None, name_bytes=None,
        pci_device_id=None, architecture=None, memory_used_mib=0, processes=(), health=None, event_types=None):
    """One simulated GPU, as a dict for write_config.

    uuid, pci_bus_id and minor default to values derived from the GPU's position in the list.
    None for numa_node, cores, max_sm_clock_mhz or cpu_affinity makes NVML answer NOT_SUPPORTED;
    mig None is a non-MIG part. mig=dict(current=1, pending=1, devices=[dict(memory_mib=..., uuid=...,
    gi=..., ci=..., name=...)], max_devices=7). name_bytes (raw bytes) overrides name, for names
    that are not UTF-8. pci_device_id is the PCI device id (0x2330), architecture an
    nvmlDeviceArchitecture_t (default: from cc). memory_used_mib is the memory NVML reports in use
    (the rest is free); processes the compute processes on the GPU as (pid, used MiB) pairs.
    health: {group: values} for HEALTH_GROUPS, e.g.
    dict(ecc=(1, 1, 0, 0), remapped_rows=(0, 0, 1, 0), pcie=(5, 5, 16, 16), fabric=(3, 0, 1)).
    event_types: the nvmlEventType* mask the GPU delivers (default XID and double-bit ECC; 0 for a
    part whose events NVML does not deliver).
    """
    raw_name = name_bytes if name_bytes is not None else name
    if isinstance(raw_name, str):
        raw_name = raw_name.encode("utf-8")
    if not isinstance(raw_name, bytes) or not raw_name or b"\0" in raw_name:
        raise ValueError("GPU name must be a non-empty str (or name_bytes bytes) without NUL, got %r" % (raw_name,))
    if len(raw_name) > 95:
        raise ValueError("GPU name %r is longer than NVML's 95 bytes" % (raw_name,))
    if not (isinstance(cc, (tuple, list)) and len(cc) == 2):
        raise ValueError("cc must be a (major, minor) pair like (9, 0), got %r" % (cc,))
    cc = (_check_int("cc major", cc[0], 0), _check_int("cc minor", cc[1], 0))
    if mig is not None:
        if not isinstance(mig, dict):
            raise ValueError("mig must be None (a non-MIG part) or a dict(current=, pending=, devices=[...]), got %r"
                             % (mig,))
        unknown = set(mig) - {"current", "pending", "devices", "max_devices"}
        if unknown:
            raise ValueError("mig has unknown keys %s: use current, pending, devices, max_devices" % sorted(unknown))
        devices = [_mig_device(spec, i) for i, spec in enumerate(mig.get("devices") or [])]
        max_devices = _check_int("mig max_devices", mig.get("max_devices", DEFAULT_MIG_MAX_DEVICES),
                                 0, MAX_MIG_DEVICES)
        if len(devices) > max_devices:
            raise ValueError("mig lists %d devices but max_devices is %d" % (len(devices), max_devices))
        mig = {
            "current": _check_int("mig current", mig.get("current", 0), 0, 1),
            "pending": _check_int("mig pending", mig.get("pending", mig.get("current", 0)), 0, 1),
            "devices": devices,
            "max_devices": max_devices,
        }
    return {
        "name": raw_name,
        "memory_mib": _check_int("memory_mib", memory_mib, 1),
        "uuid": uuid,
        "pci_bus_id": None if pci_bus_id is None else _normalise_bus_id(pci_bus_id),
        "minor": None if minor is None else _check_int("minor", minor, 0),
        "cc": cc,
        "cores": None if cores is None else _check_int("cores", cores, 0),
        "max_sm_clock_mhz": None if max_sm_clock_mhz is None else _check_int("max_sm_clock_mhz", max_sm_clock_mhz, 0),
        "numa_node": None if numa_node is None else _check_int("numa_node", numa_node, -1),
        "cpu_affinity": None if cpu_affinity is None else _cpu_list(cpu_affinity),
        "mig": mig,
        "pci_device_id": None if pci_device_id is None else _check_int("pci_device_id", pci_device_id, 0, 0xFFFF),
        "architecture": (ARCHITECTURE_BY_CC.get(cc, ARCH_UNKNOWN) if architecture is None
                         else _check_int("architecture", architecture, 0, ARCH_UNKNOWN)),
        "memory_used_mib": _check_int("memory_used_mib", memory_used_mib, 0, memory_mib),
        "processes": _processes(processes),
        "health": _health(health or {}),
        "event_types": None if event_types is None else _check_int("event_types", event_types, 0),
    }


def _processes(processes):
    """(pid, used MiB) pairs, checked; the config line holds about 60 of them."""
    checked = []
    for entry in processes:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise ValueError("processes must be (pid, used MiB) pairs, got %r" % (entry,))
        checked.append((_check_int("process pid", entry[0], 1), _check_int("process used MiB", entry[1], 0)))
    if len(checked) > 60:
        raise ValueError("the simulated NVML holds at most 60 processes per GPU, got %d" % len(checked))
    return checked


def default_uuid(index):
    """The UUID a GPU at this position gets when none is given."""
    return "GPU-%s" % uuidlib.UUID(bytes=hashlib.sha256(b"simulated-gpu-%d" % index).digest()[:16])


def default_mig_uuid(gpu_index, mig_index):
    return "MIG-%s" % uuidlib.UUID(bytes=hashlib.sha256(b"simulated-mig-%d-%d" % (gpu_index, mig_index)).digest()[:16])


def default_pci_bus_id(index):
    return "%08X:%02X:00.0" % (0, (0x18 + 0x10 * index) % 0x100)


def resolved(gpus):
    """The GPUs with every position-derived default filled in, as the library will report them."""
    result = []
    for index, spec in enumerate(gpus):
        spec = dict(spec)
        spec["uuid"] = spec["uuid"] or default_uuid(index)
        spec["pci_bus_id"] = spec["pci_bus_id"] or default_pci_bus_id(index)
        spec["minor"] = index if spec["minor"] is None else spec["minor"]
        if spec["mig"] is not None:
            mig = dict(spec["mig"])
            mig["devices"] = [dict(d, uuid=d["uuid"] or default_mig_uuid(index, i),
                                   name=d["name"] or spec["name"].decode("utf-8", "replace") + " MIG")
                              for i, d in enumerate(mig["devices"])]
            spec["mig"] = mig
        result.append(spec)
    return result


# ---- writing the config -------------------------------------------------------------------

def _encode(value):
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, int):
        return str(value)
    if b"\0" in value:
        raise ValueError("config value %r contains a NUL byte" % (value,))
    return "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x25 else "%%%02X" % b for b in bytearray(value))


def _check_function(what, name):
    if name not in FUNCTIONS:
        raise ValueError("%s %r is not a function of the simulated NVML: use one of %s"
                         % (what, name, ", ".join(FUNCTIONS)))
    return name


def _check_error(what, name):
    if name not in ERROR_CODES:
        raise ValueError("%s %r is not an NVML error name: use one of %s (NVML_ERROR_ without the prefix)"
                         % (what, name, ", ".join(ERROR_CODES)))
    return name


def write_config(path, gpus, init_error=None, driver_version="550.54.15", cuda_version=12040, hang_in=None,
                 crash_in=None, errors=None):
    """Write a config file for the library at path and return path.

    init_error: an NVML error name (DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH, NO_PERMISSION,
    GPU_IS_LOST, TIMEOUT, UNKNOWN ...) that nvmlInit* returns. hang_in: a C function that blocks
    forever (ignoring SIGTERM; only SIGKILL ends it). crash_in: a C function that segfaults.
    errors: {(function, gpu_index or None): error name} makes that call fail for that GPU (None:
    every GPU, and calls that concern no GPU).
    """
    gpus = list(gpus)
    if len(gpus) > MAX_GPUS:
        raise ValueError("the simulated NVML holds at most %d GPUs, got %d" % (MAX_GPUS, len(gpus)))
    _check_int("cuda_version", cuda_version, 0)
    lines = ["# simulated NVML configuration (tests/simulated/nvml.py)",
             "driver_version=" + _encode(driver_version),
             "nvml_version=" + _encode("%d.%s" % (cuda_version // 1000, driver_version)),
             "cuda_version=%d" % cuda_version]
    if init_error is not None:
        lines.append("init_error=" + _check_error("init_error", init_error))
    if hang_in is not None:
        lines.append("hang_in=" + _check_function("hang_in", hang_in))
    if crash_in is not None:
        lines.append("crash_in=" + _check_function("crash_in", crash_in))
    for key, error in sorted((errors or {}).items(), key=repr):
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError("errors keys must be (function, gpu_index or None), got %r" % (key,))
        function, index = key
        _check_function("errors function", function)
        if index is not None:
            _check_int("errors gpu index", index, 0, MAX_GPUS - 1)
        _check_error("errors value", error)
        lines.append("error=%s %s %s" % (function, "*" if index is None else index, error))

    for spec in resolved(gpus):
        lines += ["[gpu]",
                  "name=" + _encode(spec["name"]),
                  "uuid=" + _encode(spec["uuid"]),
                  "memory_mib=%d" % spec["memory_mib"],
                  "pci_bus_id=" + spec["pci_bus_id"],
                  "minor=%d" % spec["minor"],
                  "compute_capability=%d.%d" % spec["cc"],
                  "architecture=%d" % spec["architecture"],
                  "memory_used_mib=%d" % spec["memory_used_mib"],
                  "processes=" + ",".join("%d:%d" % entry for entry in spec["processes"])]
        if spec["pci_device_id"] is not None:
            lines.append("pci_device_id=0x%08X" % (spec["pci_device_id"] << 16 | NVIDIA_VENDOR_ID))
        optional = (("cores", spec["cores"]), ("max_sm_clock_mhz", spec["max_sm_clock_mhz"]),
                    ("numa_node", spec["numa_node"]))
        lines += ["%s=%d" % (key, value) for key, value in optional if value is not None]
        if spec["cpu_affinity"] is not None:
            lines.append("cpu_affinity=" + _cpu_ranges(spec["cpu_affinity"]))
        lines += ["%s=%d" % pair for pair in spec.get("health", ())]
        if spec.get("event_types") is not None:
            lines.append("event_types=0x%X" % spec["event_types"])
        mig = spec["mig"]
        if mig is not None:
            lines += ["mig_current=%d" % mig["current"], "mig_pending=%d" % mig["pending"],
                      "mig_max_devices=%d" % mig["max_devices"]]
            for device in mig["devices"]:
                lines += ["[mig]",
                          "name=" + _encode(device["name"]),
                          "uuid=" + _encode(device["uuid"]),
                          "memory_mib=%d" % device["memory_mib"],
                          "gpu_instance_id=%d" % device["gi"],
                          "compute_instance_id=%d" % device["ci"]]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


# ---- the events file: faults injected into processes that have the library loaded -----------

# The [gpu] keys a "set" line may change; the library accepts any [gpu] key, these are the ones
# whose change a running process notices.
SETTABLE = tuple(key for keys in HEALTH_GROUPS.values() for key in keys) + ("lost", "event_types")


def _gpu_index(index):
    return _check_int("GPU index", index, 0, MAX_GPUS - 1)


def xid(index, number):
    """An events-file line: an XID critical error event on the GPU at index."""
    return "xid %d %d" % (_gpu_index(index), _check_int("xid", number, 0, 0xFFFFFFFF))


def ecc_double_bit(index):
    """An events-file line: a double-bit ECC error event."""
    return "ecc_double_bit %d" % _gpu_index(index)


def set_keys(index, **keys):
    """Events-file lines that change what NVML answers about the GPU from now on, e.g.
    set_keys(0, recovery_action=1, ecc_uncorrected_volatile=2), set_keys(0, lost=1)."""
    unknown = sorted(set(keys) - set(SETTABLE))
    if unknown:
        raise ValueError("set_keys: %s cannot be set: use %s" % (", ".join(unknown), ", ".join(SETTABLE)))
    return ["set %d %s=%d" % (_gpu_index(index), key, _check_int(key, value, 0)) for key, value in sorted(keys.items())]


def inject(path, *lines):
    """Append lines (strings or lists of them) to the events file at path; the library reads them
    at its next call."""
    flat = []
    for line in lines:
        flat += line if isinstance(line, list) else [line]
    with open(path, "a") as handle:
        handle.write("".join(line + "\n" for line in flat))
        handle.flush()


# ---- ready-made GPUs (names and sizes as NVML reports them on real parts) ------------------

# What the real H100 answered (tests/fixtures/real-h100/health.json): a healthy GPU, idle.
HEALTHY_H100 = dict(ecc=(1, 1, 0, 0), remapped_rows=(0, 0, 0, 0), persistence_mode=1, compute_mode=0,
                    pcie=(5, 5, 16, 16), temperature_c=35, clock_event_reasons=0x1)

H100_SXM = gpu("NVIDIA H100 80GB HBM3", 81559, cc=(9, 0), cores=132 * 128, max_sm_clock_mhz=1980,
               pci_device_id=0x2330)
A100_SXM4_80GB_MIG = gpu(
    "NVIDIA A100-SXM4-80GB", 81920, cc=(8, 0), cores=108 * 64, max_sm_clock_mhz=1410, pci_device_id=0x20B2,
    mig=dict(current=1, pending=1, devices=[
        dict(name="NVIDIA A100-SXM4-80GB MIG 3g.40gb", memory_mib=40192, gi=1, ci=0),
        dict(name="NVIDIA A100-SXM4-80GB MIG 1g.10gb", memory_mib=9856, gi=7, ci=0),
    ]))
A100_SXM4_80GB = gpu("NVIDIA A100-SXM4-80GB", 81920, cc=(8, 0), cores=108 * 64, max_sm_clock_mhz=1410,
                     pci_device_id=0x20B2, mig=dict(current=0, pending=0))
V100_SXM2_32GB = gpu("Tesla V100-SXM2-32GB", 32510, cc=(7, 0), cores=80 * 64, max_sm_clock_mhz=1530,
                     pci_device_id=0x1DB5)
RTX_3080_10GB = gpu("NVIDIA GeForce RTX 3080", 10240, cc=(8, 6), cores=68 * 128, max_sm_clock_mhz=2100,
                    pci_device_id=0x2206)
RTX_3080_12GB = gpu("NVIDIA GeForce RTX 3080", 12288, cc=(8, 6), cores=70 * 128, max_sm_clock_mhz=2100,
                    pci_device_id=0x220A)
T4 = gpu("Tesla T4", 15360, cc=(7, 5), cores=40 * 64, max_sm_clock_mhz=1590, pci_device_id=0x1EB8)
FUTURE_X1 = gpu("NVIDIA Future GPU X1", 196608, cc=(11, 0), cores=192 * 128, max_sm_clock_mhz=2400)
NON_UTF8_NAME = gpu(None, 16384, name_bytes=b"NVIDIA \xff\xfe GPU", cc=(8, 9), cores=76 * 128,
                    max_sm_clock_mhz=2520)
