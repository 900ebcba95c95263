# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The simulated libnvidia-ml.so.1, exercised through the real nvidia-ml-py (pynvml). pynvml runs
# in child processes: glibc reads LD_LIBRARY_PATH only at process start, and a crash or hang must
# not take the test run with it.

import ctypes
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.simulated import nvml

pytest.importorskip("pynvml")

PRELUDE = "import ctypes, json, os, sys\nimport pynvml as n\n"

# Child-side helpers: everything pynvml reports about a GPU or its MIG devices, errors as
# exception class names.
HELPERS = """
def text(value):
    # pynvml hands char arrays of structs back as str or bytes, depending on its version
    return value.decode() if isinstance(value, bytes) else value

def attempt(call, *args):
    try:
        return call(*args)
    except n.NVMLError as e:
        return type(e).__name__

def device(h):
    pci = n.nvmlDeviceGetPciInfo(h)
    memory = n.nvmlDeviceGetMemoryInfo(h)
    return {
        "name": attempt(n.nvmlDeviceGetName, h),
        "uuid": n.nvmlDeviceGetUUID(h),
        "memory": [memory.total, memory.free, memory.used],
        "memory_v2_total": n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2).total,
        "bus_id": text(pci.busId), "bus_id_legacy": text(pci.busIdLegacy),
        "pci": [pci.domain, pci.bus, pci.device, pci.pciDeviceId],
        "minor": attempt(n.nvmlDeviceGetMinorNumber, h),
        "cc": list(n.nvmlDeviceGetCudaComputeCapability(h)),
        "architecture": n.nvmlDeviceGetArchitecture(h),
        "cores": attempt(n.nvmlDeviceGetNumGpuCores, h),
        "sm_clock": attempt(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM),
        "mem_clock": attempt(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_MEM),
        "numa_node": attempt(n.nvmlDeviceGetNumaNodeId, h),
        "cpu_affinity": attempt(lambda: list(n.nvmlDeviceGetCpuAffinity(h, 2))),
        "mig_mode": attempt(n.nvmlDeviceGetMigMode, h),
        "is_mig": n.nvmlDeviceIsMigDeviceHandle(h).value,
    }

def mig_devices(h):
    found = []
    for i in range(n.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
        except n.NVMLError_NotFound:
            continue
        found.append({
            "index": i, "name": n.nvmlDeviceGetName(m), "uuid": n.nvmlDeviceGetUUID(m),
            "memory_total": n.nvmlDeviceGetMemoryInfo(m).total,
            "gi": n.nvmlDeviceGetGpuInstanceId(m), "ci": n.nvmlDeviceGetComputeInstanceId(m),
            "is_mig": n.nvmlDeviceIsMigDeviceHandle(m).value,
            "parent": n.nvmlDeviceGetUUID(n.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(m)),
            "bus_id": text(n.nvmlDeviceGetPciInfo(m).busId),
            "by_uuid": n.nvmlDeviceGetName(n.nvmlDeviceGetHandleByUUID(n.nvmlDeviceGetUUID(m))),
        })
    return found
"""


@pytest.fixture(scope="module")
def current_lib():
    return nvml.build()


@pytest.fixture(scope="module")
def legacy_lib():
    return nvml.build("legacy")


def child_env(lib_dir=None, config=None):
    env = dict(os.environ)
    for key in ("LD_LIBRARY_PATH", nvml.CONFIG_ENV, "LD_PRELOAD"):
        env.pop(key, None)
    if lib_dir is not None:
        env.update(nvml.environment(lib_dir, config) if config else {"LD_LIBRARY_PATH": lib_dir})
    return env


def run_python(code, env, timeout=30):
    return subprocess.run([sys.executable, "-c", PRELUDE + HELPERS + textwrap.dedent(code)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, check=False)


def run_json(code, env):
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_simulated_nvml_compiles_without_warnings(tmp_path):
    for variant, flags in sorted(nvml.VARIANT_FLAGS.items()):
        result = subprocess.run(["gcc"] + list(nvml.CFLAGS + flags) + ["-Werror", "-Wpedantic", "-o",
                                str(tmp_path / variant), nvml.SOURCE],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                check=False)
        assert result.returncode == 0 and result.stdout == "", result.stdout


def test_simulated_nvml_build_is_cached_per_source_and_variant(monkeypatch, tmp_path):
    monkeypatch.setenv(nvml.CACHE_ENV, str(tmp_path))
    current = nvml.build()
    library = os.path.join(current, nvml.LIBRARY_NAME)
    built_at = os.stat(library).st_mtime_ns
    assert nvml.build() == current
    assert os.stat(library).st_mtime_ns == built_at
    legacy = nvml.build("legacy")
    assert legacy != current and os.path.isfile(os.path.join(legacy, nvml.LIBRARY_NAME))
    assert sorted(os.listdir(current)) == [nvml.LIBRARY_NAME]
    with pytest.raises(ValueError, match="variant 'ancient' is unknown"):
        nvml.build("ancient")


def test_simulated_nvml_exports_exactly_its_functions(current_lib, legacy_lib):
    # Loaded by full path: pynvml is not involved and nothing else in this process uses NVML.
    current = ctypes.CDLL(os.path.join(current_lib, nvml.LIBRARY_NAME))
    legacy = ctypes.CDLL(os.path.join(legacy_lib, nvml.LIBRARY_NAME))
    assert [f for f in nvml.FUNCTIONS if not hasattr(current, f)] == []
    assert [f for f in nvml.LEGACY_OMITTED if hasattr(legacy, f)] == []
    kept = [f for f in nvml.FUNCTIONS if f not in nvml.LEGACY_OMITTED]
    assert [f for f in kept if not hasattr(legacy, f)] == []
    # Internal helpers stay hidden, like any real library's.
    assert not hasattr(current, "load_config")


def test_simulated_nvml_reports_configured_values(current_lib, tmp_path):
    gpus = [
        nvml.gpu("NVIDIA H100 80GB HBM3", 81559, cores=16896, max_sm_clock_mhz=1980, numa_node=1,
                 cpu_affinity="0-3,64", pci_device_id=0x2330),
        nvml.A100_SXM4_80GB_MIG,
        nvml.gpu("Tesla T4", 15360, uuid="GPU-0f0e0d0c-0b0a-0908-0706-050403020100",
                 pci_bus_id="0001:3b:00.0", minor=5, cc=(7, 5)),
        nvml.A100_SXM4_80GB,
    ]
    config = nvml.write_config(str(tmp_path / "nvml.conf"), gpus, driver_version="535.104.05", cuda_version=12020)
    out = run_json("""
    before = attempt(n.nvmlDeviceGetCount)
    n.nvmlInit()
    gpus = []
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        info = device(h)
        if info["mig_mode"] != "NVMLError_NotSupported":
            info["max_mig"] = n.nvmlDeviceGetMaxMigDeviceCount(h)
            info["migs"] = mig_devices(h)
        info["by_bus_id"] = n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByPciBusId(info["bus_id"].lower()[4:]))
        gpus.append(info)
    print(json.dumps({
        "before": before,
        "driver": n.nvmlSystemGetDriverVersion(), "nvml": n.nvmlSystemGetNVMLVersion(),
        "cuda": n.nvmlSystemGetCudaDriverVersion(), "cuda_v2": n.nvmlSystemGetCudaDriverVersion_v2(),
        "gpus": gpus,
        "unknown_uuid": attempt(n.nvmlDeviceGetHandleByUUID, "GPU-00000000-0000-0000-0000-000000000000"),
        "bad_index": attempt(n.nvmlDeviceGetHandleByIndex, 4),
    }))
    """, child_env(current_lib, config))

    assert out["before"] == "NVMLError_Uninitialized"
    assert (out["driver"], out["nvml"], out["cuda"], out["cuda_v2"]) == ("535.104.05", "12.535.104.05", 12020, 12020)
    assert out["unknown_uuid"] == "NVMLError_NotFound"
    assert out["bad_index"] == "NVMLError_InvalidArgument"
    expected = nvml.resolved(gpus)
    assert len(out["gpus"]) == len(expected)
    for got, want in zip(out["gpus"], expected):
        total = want["memory_mib"] * 1024 * 1024
        assert got["name"] == want["name"].decode()
        assert got["uuid"] == got["by_bus_id"] == want["uuid"]
        assert got["memory"] == [total, total, 0] and got["memory_v2_total"] == total
        assert got["bus_id"] == want["pci_bus_id"]
        assert got["minor"] == want["minor"]
        assert got["cc"] == list(want["cc"])
        assert got["architecture"] == want["architecture"]
        assert got["cores"] == (want["cores"] if want["cores"] is not None else "NVMLError_NotSupported")
        assert got["mem_clock"] == "NVMLError_NotSupported"
        assert got["is_mig"] == 0

    h100, a100_mig, t4, a100 = out["gpus"]
    assert h100["sm_clock"] == 1980 and h100["numa_node"] == 1
    assert h100["cpu_affinity"] == [0b1111, 1]
    assert h100["pci"] == [0, 0x18, 0, 0x233010DE] and h100["bus_id_legacy"] == "0000:18:00.0"
    assert h100["mig_mode"] == "NVMLError_NotSupported"
    assert t4["bus_id"] == "00000001:3B:00.0" and t4["bus_id_legacy"] == "0001:3B:00.0"
    assert t4["uuid"] == "GPU-0f0e0d0c-0b0a-0908-0706-050403020100" and t4["minor"] == 5
    for unsupported in ("sm_clock", "numa_node", "cpu_affinity", "cores"):
        assert t4[unsupported] == "NVMLError_NotSupported"
    assert a100["mig_mode"] == [0, 0] and a100["max_mig"] == 0 and a100["migs"] == []

    assert a100_mig["mig_mode"] == [1, 1] and a100_mig["max_mig"] == 7
    want_migs = expected[1]["mig"]["devices"]
    assert [m["index"] for m in a100_mig["migs"]] == [0, 1]
    for got, want in zip(a100_mig["migs"], want_migs):
        assert got["name"] == got["by_uuid"] == want["name"]
        assert got["uuid"] == want["uuid"] and got["uuid"].startswith("MIG-")
        assert got["memory_total"] == want["memory_mib"] * 1024 * 1024
        assert (got["gi"], got["ci"]) == (want["gi"], want["ci"])
        assert got["is_mig"] == 1
        assert got["parent"] == a100_mig["uuid"] and got["bus_id"] == a100_mig["bus_id"]
    assert [m["name"] for m in a100_mig["migs"]] == [
        "NVIDIA A100-SXM4-80GB MIG 3g.40gb", "NVIDIA A100-SXM4-80GB MIG 1g.10gb"]


def test_simulated_nvml_ready_made_gpus_come_back_as_configured(current_lib, tmp_path):
    ready = [nvml.H100_SXM, nvml.V100_SXM2_32GB, nvml.RTX_3080_10GB, nvml.RTX_3080_12GB, nvml.T4,
             nvml.FUTURE_X1]
    config = nvml.write_config(str(tmp_path / "nvml.conf"), ready)
    out = run_json("""
    n.nvmlInit()
    rows = []
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        rows.append([n.nvmlDeviceGetName(h), n.nvmlDeviceGetMemoryInfo(h).total // 2**20,
                     list(n.nvmlDeviceGetCudaComputeCapability(h)), n.nvmlDeviceGetNumGpuCores(h),
                     n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM), n.nvmlDeviceGetArchitecture(h)])
    print(json.dumps(rows))
    """, child_env(current_lib, config))
    assert out == [[g["name"].decode(), g["memory_mib"], list(g["cc"]), g["cores"], g["max_sm_clock_mhz"],
                    g["architecture"]] for g in ready]
    assert out[0][:4] == ["NVIDIA H100 80GB HBM3", 81559, [9, 0], 132 * 128]
    assert out[-1][-1] == nvml.ARCH_UNKNOWN


def test_simulated_nvml_non_utf8_name_reaches_pynvml_as_raw_bytes(current_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.NON_UTF8_NAME])
    out = run_json("""
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    try:
        decoded = n.nvmlDeviceGetName(h)
    except UnicodeDecodeError as e:
        decoded = type(e).__name__
    buf = ctypes.create_string_buffer(96)
    rc = n._nvmlGetFunctionPointer("nvmlDeviceGetName")(h, buf, ctypes.c_uint(96))
    small = n._nvmlGetFunctionPointer("nvmlDeviceGetName")(h, buf, ctypes.c_uint(4))
    print(json.dumps({"decoded": decoded, "rc": rc, "raw": list(buf.value), "small": small}))
    """, child_env(current_lib, config))
    assert out["decoded"] == "UnicodeDecodeError"
    assert out["rc"] == 0 and bytes(out["raw"]) == b"NVIDIA \xff\xfe GPU"
    assert out["small"] == nvml.ERROR_CODES["INSUFFICIENT_SIZE"]


INIT_ERRORS = {
    "DRIVER_NOT_LOADED": "NVMLError_DriverNotLoaded",
    "LIB_RM_VERSION_MISMATCH": "NVMLError_LibRmVersionMismatch",
    "NO_PERMISSION": "NVMLError_NoPermission",
    "GPU_IS_LOST": "NVMLError_GpuIsLost",
    "RESET_REQUIRED": "NVMLError_ResetRequired",
    "TIMEOUT": "NVMLError_Timeout",
    "UNKNOWN": "NVMLError_Unknown",
}


def test_simulated_nvml_init_errors_map_to_pynvml_exceptions(current_lib, tmp_path):
    # One process walks through every config: the library rereads the file at each init.
    configs = [nvml.write_config(str(tmp_path / (name + ".conf")), [nvml.T4], init_error=name)
               for name in INIT_ERRORS]
    healthy = nvml.write_config(str(tmp_path / "healthy.conf"), [nvml.T4, nvml.H100_SXM])
    out = run_json("""
    raised = []
    for path in %r:
        os.environ["SIMULATED_NVML_CONFIG"] = path
        try:
            n.nvmlInit()
            raised.append("no error")
        except n.NVMLError as e:
            raised.append(type(e).__name__)
    after = []
    for init in (n.nvmlInit, lambda: n._nvmlGetFunctionPointer("nvmlInit_v2")()):
        os.environ["SIMULATED_NVML_CONFIG"] = %r
        init()
        after.append([n.nvmlDeviceGetName(n.nvmlDeviceGetHandleByIndex(i)) for i in range(n.nvmlDeviceGetCount())])
        n.nvmlShutdown()
    print(json.dumps({"raised": raised, "after": after}))
    """ % (configs, healthy), child_env(current_lib))
    assert out["raised"] == list(INIT_ERRORS.values())
    assert out["after"] == [["Tesla T4", "NVIDIA H100 80GB HBM3"]] * 2


def test_simulated_nvml_reinit_reads_a_new_config_and_nests_like_nvml(current_lib, tmp_path):
    first = nvml.write_config(str(tmp_path / "first.conf"), [nvml.T4])
    second = nvml.write_config(str(tmp_path / "second.conf"), [nvml.H100_SXM, nvml.H100_SXM])
    out = run_json("""
    seen = []
    os.environ["SIMULATED_NVML_CONFIG"] = %r
    n.nvmlInit()
    os.environ["SIMULATED_NVML_CONFIG"] = %r
    n.nvmlInit()
    n.nvmlShutdown()
    seen.append(n.nvmlDeviceGetCount())   # a nested init keeps the config it started with
    n.nvmlShutdown()
    try:
        n.nvmlShutdown()
    except n.NVMLError as e:
        seen.append(type(e).__name__)
    n.nvmlInit()
    seen.append(n.nvmlDeviceGetCount())
    print(json.dumps(seen))
    """ % (first, second), child_env(current_lib))
    assert out == [1, "NVMLError_Uninitialized", 2]


def test_simulated_nvml_without_config_is_a_host_without_gpus(current_lib, tmp_path):
    code = """
    n.nvmlInit()
    print(json.dumps([n.nvmlDeviceGetCount(), n.nvmlSystemGetDriverVersion()]))
    """
    assert run_json(code, child_env(current_lib)) == [0, "550.54.15"]
    missing = run_python(code, child_env(current_lib, str(tmp_path / "absent.conf")))
    assert missing.returncode == 0 and json.loads(missing.stdout)[0] == 0
    assert "absent.conf" in missing.stderr


def test_simulated_nvml_rejects_a_broken_config_at_init(current_lib, tmp_path):
    broken = tmp_path / "broken.conf"
    broken.write_text("driver_version=1\n[gpu]\nname=X\nwattage=300\n")
    result = run_python("""
    try:
        n.nvmlInit()
    except n.NVMLError as e:
        print(type(e).__name__)
    """, child_env(current_lib, str(broken)))
    assert result.stdout.strip() == "NVMLError_Unknown"
    assert "broken.conf:4" in result.stderr and "wattage" in result.stderr


def test_simulated_nvml_legacy_variant_lacks_newer_calls(legacy_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.A100_SXM4_80GB_MIG], driver_version="418.87.01",
                               cuda_version=10010)
    out = run_json("""
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    print(json.dumps({
        "count": n.nvmlDeviceGetCount(), "name": n.nvmlDeviceGetName(h),
        "bus_id": text(n.nvmlDeviceGetPciInfo(h).busId), "driver": n.nvmlSystemGetDriverVersion(),
        "cuda": n.nvmlSystemGetCudaDriverVersion(),
        "numa": attempt(n.nvmlDeviceGetNumaNodeId, h), "cores": attempt(n.nvmlDeviceGetNumGpuCores, h),
        "mig": attempt(n.nvmlDeviceGetMigMode, h), "cuda_v2": attempt(n.nvmlSystemGetCudaDriverVersion_v2),
        "memory_v2": attempt(n.nvmlDeviceGetMemoryInfo, h, n.nvmlMemory_v2),
    }))
    """, child_env(legacy_lib, config))
    assert out["count"] == 1 and out["name"] == "NVIDIA A100-SXM4-80GB"
    assert out["bus_id"] == nvml.default_pci_bus_id(0)
    assert (out["driver"], out["cuda"]) == ("418.87.01", 10010)
    for omitted in ("numa", "cores", "mig", "cuda_v2", "memory_v2"):
        assert out[omitted] == "NVMLError_FunctionNotFound", omitted


def test_simulated_nvml_injects_per_call_errors(current_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.H100_SXM, nvml.A100_SXM4_80GB_MIG], errors={
        ("nvmlDeviceGetName", 1): "GPU_IS_LOST",
        ("nvmlDeviceGetMemoryInfo", None): "NO_PERMISSION",
        ("nvmlSystemGetDriverVersion", None): "LIB_RM_VERSION_MISMATCH",
    })
    out = run_json("""
    n.nvmlInit()
    h0, h1 = n.nvmlDeviceGetHandleByIndex(0), n.nvmlDeviceGetHandleByIndex(1)
    mig = n.nvmlDeviceGetMigDeviceHandleByIndex(h1, 0)
    print(json.dumps([attempt(n.nvmlDeviceGetName, h0), attempt(n.nvmlDeviceGetName, h1),
                      attempt(n.nvmlDeviceGetName, mig), attempt(n.nvmlDeviceGetMemoryInfo, h0),
                      attempt(n.nvmlSystemGetDriverVersion), n.nvmlDeviceGetUUID(h1)[:4]]))
    """, child_env(current_lib, config))
    assert out == ["NVIDIA H100 80GB HBM3", "NVMLError_GpuIsLost", "NVMLError_GpuIsLost",
                   "NVMLError_NoPermission", "NVMLError_LibRmVersionMismatch", "GPU-"]


def test_simulated_nvml_crash_in_kills_the_process_with_sigsegv(current_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.T4], crash_in="nvmlDeviceGetUUID")
    result = run_python("""
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    print(n.nvmlDeviceGetName(h), flush=True)
    n.nvmlDeviceGetUUID(h)
    print("survived", flush=True)
    """, child_env(current_lib, config))
    assert result.returncode == -signal.SIGSEGV
    assert result.stdout == "Tesla T4\n"


def _ignores_sigterm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_simulated_nvml_hang_in_blocks_until_sigkill(current_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.T4], hang_in="nvmlDeviceGetName")
    proc = subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent("""
    n.nvmlInit()
    print(n.nvmlDeviceGetUUID(n.nvmlDeviceGetHandleByIndex(0)), flush=True)
    n.nvmlDeviceGetName(n.nvmlDeviceGetHandleByIndex(0))
    print("returned", flush=True)
    """)], env=child_env(current_lib, config), stdout=subprocess.PIPE, universal_newlines=True)
    try:
        assert proc.stdout.readline().startswith("GPU-")
        deadline = time.monotonic() + 2
        while not _ignores_sigterm(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _ignores_sigterm(proc.pid), "the hanging call never started"
        proc.terminate()
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
    finally:
        proc.kill()
        remaining = proc.communicate(timeout=10)[0]
    assert proc.returncode == -signal.SIGKILL
    assert remaining == ""


def test_simulated_nvml_can_be_preloaded_by_path_in_a_running_process(current_lib, tmp_path):
    config = nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.T4, nvml.V100_SXM2_32GB])
    env = child_env()
    env[nvml.CONFIG_ENV] = config
    out = run_json("""
    ctypes.CDLL(os.path.join(%r, "libnvidia-ml.so.1"))
    n.nvmlInit()
    print(json.dumps([n.nvmlDeviceGetName(n.nvmlDeviceGetHandleByIndex(i)) for i in range(n.nvmlDeviceGetCount())]))
    """ % current_lib, env)
    assert out == ["Tesla T4", "Tesla V100-SXM2-32GB"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(hang_in="nvmlDeviceGetNope"), "hang_in 'nvmlDeviceGetNope' is not a function"),
    (dict(crash_in="GetName"), "crash_in 'GetName' is not a function"),
    (dict(init_error="LIBRARY_MISSING"), "init_error 'LIBRARY_MISSING' is not an NVML error name"),
    (dict(errors={("nvmlDeviceGetName", 0): "LOST"}), "errors value 'LOST'"),
    (dict(errors={"nvmlDeviceGetName": "GPU_IS_LOST"}), r"errors keys must be \(function, gpu_index or None\)"),
])
def test_simulated_nvml_write_config_names_bad_input(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        nvml.write_config(str(tmp_path / "nvml.conf"), [nvml.T4], **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(pci_bus_id="3b:00"), "pci_bus_id '3b:00' is not a PCI address"),
    (dict(pci_bus_id="0000:3b:00.1"), "not a GPU's PCI address"),
    (dict(memory_mib=0), "memory_mib must be an integer 1 or more"),
    (dict(cc="9.0"), r"cc must be a \(major, minor\) pair"),
    (dict(mig=dict(current=1, devices=[dict(uuid="MIG-x")])), "MIG device 0 needs memory_mib"),
    (dict(cpu_affinity="0-3,x"), "cpu_affinity '0-3,x' is not a CPU list"),
])
def test_simulated_nvml_gpu_names_bad_input(kwargs, message):
    args = dict(name="Tesla T4", memory_mib=15360)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        nvml.gpu(**args)


def test_simulated_nvml_gpu_accepts_sysfs_bus_ids_and_cpu_lists():
    spec = nvml.gpu("Tesla T4", 15360, pci_bus_id="0000:af:00.0", cpu_affinity=[3, 1, 2, 8])
    assert spec["pci_bus_id"] == "00000000:AF:00.0"
    assert spec["cpu_affinity"] == [1, 2, 3, 8]
    assert nvml.gpu("Tesla T4", 15360, cpu_affinity="1-3,8")["cpu_affinity"] == [1, 2, 3, 8]
