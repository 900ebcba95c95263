# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tinygrad stage: SCRIPT (the text of tinygrad_child.py) run for real, against the installed
tinygrad and simulated ones, and the version rules the child and the module share.

Simulated tinygrad packages are small stand-ins written to a temporary folder (with their own
dist-info, so the script reads a version from metadata as it does for a real install); they
report what they see from inside the probe instead of touching hardware.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad_child as tinygrad_child
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tp
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import conclusions
from tests.helpers import device_module, simulated_tinygrad

TIMEOUT = 120  # generous: the host is shared; this only stops a hung child from hanging the suite


def old_pythons():
    """Python 3.8 interpreters of pyenv, when this machine has them: SCRIPT must run there too."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    return sorted(glob.glob(os.path.join(root, "versions", "3.8*", "bin", "python")))[:1]


def run_script(python, tmp_path, env=None, pythonpath=None, args=(), wrapper=()):
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        environ["PYTHONPATH"] = pythonpath
    environ.update(env or {})
    proc = subprocess.run(list(wrapper) + [python] + list(args) + ["-c", tp.SCRIPT], cwd=str(tmp_path), env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    text = proc.stdout.decode("utf-8")
    try:
        result = json.loads(text)
    except ValueError:
        raise AssertionError("stdout is not one JSON object: %r (stderr %r)" % (text[:2000], proc.stderr[-2000:]))
    assert proc.returncode == 0 and isinstance(result, dict)
    # Every answer carries the directories of the interpreter's path with their times (test_cache.py).
    assert all(len(entry) == 2 for entry in result.pop("install"))
    return result


def can_probe_here():
    return not (shutil.which("clang") or os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd"))


# --- the real tinygrad of the interpreter running the tests ---------------------------------

@pytest.mark.skipif(importlib.util.find_spec("tinygrad") is None, reason="tinygrad is not installed here")
def test_installed_tinygrad_reports_its_choice(tmp_path):
    from importlib import metadata
    result = run_script(sys.executable, tmp_path)
    assert result["installed"] is True
    assert result["version"] == metadata.version("tinygrad")
    assert result["python"] == sys.executable
    if can_probe_here():
        # No GPU device nodes and no C compiler: tinygrad 0.14 opens nothing it can use.
        assert result["backend"] is None
        assert "no usable devices" in result["reason"]
    else:
        assert result["backend"] in conclusions.BACKENDS
    facts = tp.version_facts(result["version"])
    for name, value in facts["guard_env"].items():
        assert "env set: %s=%s" % (name, value) in result["guards"]
    if not facts["first_version"].startswith("0.10."):
        assert "blocked: tinygrad.runtime.support.system.PCIIfaceBase" in result["guards"]


@pytest.mark.skipif(importlib.util.find_spec("tinygrad") is None, reason="tinygrad is not installed here")
def test_installed_tinygrad_debug_output_stays_off_stdout(tmp_path):
    # DEBUG makes tinygrad print library loading and device opening on stdout.
    result = run_script(sys.executable, tmp_path, env={"DEBUG": "4"})
    assert result["installed"] is True


# --- no tinygrad --------------------------------------------------------------------------

def test_interpreter_without_tinygrad(tmp_path, bare_python):
    result = run_script(bare_python, tmp_path)
    assert result == {"installed": False, "version": None, "backend": None,
                      "reason": "tinygrad is not installed for this interpreter", "guards": [],
                      "python": bare_python}


@pytest.mark.skipif(not old_pythons(), reason="no Python 3.8 under pyenv on this machine")
def test_python38_without_tinygrad(tmp_path):
    python = old_pythons()[0]
    result = run_script(python, tmp_path, args=["-I"])
    assert result["installed"] is False and result["python"] == python


def test_simulated_tinygrad_in_working_directory_is_ignored(tmp_path, bare_python):
    # python -c searches the working directory first; exo never imports from there.
    simulated_tinygrad(tmp_path, None, {"tinygrad/device.py": device_module('return "CUDA"')})
    result = run_script(bare_python, tmp_path)
    assert result["installed"] is False


# --- simulated tinygrad packages ------------------------------------------------------------

@pytest.fixture(params=["bare"] + ["py38"] * bool(old_pythons()))
def probe_python(request, bare_python):
    return bare_python if request.param == "bare" else old_pythons()[0]


def test_simulated_tinygrad_printing_everywhere_keeps_stdout_one_json_object(tmp_path, probe_python):
    site = simulated_tinygrad(tmp_path / "site", "0.10.0", {
        "tinygrad/__init__.py": """
            import os, sys
            print("simulated tinygrad: import chatter")
            sys.stderr.write("simulated tinygrad: warning\\n")
            os.write(1, b"simulated tinygrad: raw fd 1\\n")
            os.write(2, b"simulated tinygrad: raw fd 2\\n")
        """,
        "tinygrad/device.py": device_module("""
            print("simulated tinygrad: opened device CUDA")
            os.write(1, b"{\\"not\\": \\"the result\\"}\\n")
            return "CUDA"
        """),
    })
    result = run_script(probe_python, tmp_path, pythonpath=site)
    assert result["installed"] is True and result["version"] == "0.10.0"
    assert result["backend"] == "CUDA" and result["reason"] is None


def test_simulated_tinygrad_failure_reason_is_reported(tmp_path, probe_python):
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", {
        "tinygrad/device.py": device_module('raise RuntimeError("no usable devices")')})
    result = run_script(probe_python, tmp_path, pythonpath=site)
    assert result["backend"] is None and result["reason"] == "RuntimeError: no usable devices"


def test_simulated_tinygrad_that_cannot_be_imported(tmp_path, probe_python):
    site = simulated_tinygrad(tmp_path / "site", "0.10.1", {
        "tinygrad/device.py": "from tinygrad.runtime.autogen.am import am\n"})
    result = run_script(probe_python, tmp_path, pythonpath=site)
    assert result["installed"] is True and result["backend"] is None
    assert result["reason"].startswith("importing tinygrad failed: ModuleNotFoundError")


def test_simulated_tinygrad_without_metadata_is_installed_with_unknown_version(tmp_path, probe_python):
    site = simulated_tinygrad(tmp_path / "site", None, {"tinygrad/device.py": device_module('return "NV"')})
    result = run_script(probe_python, tmp_path, pythonpath=site)
    assert result["installed"] is True and result["version"] is None and result["backend"] == "NV"
    # Unknown version: the newest rules apply, which set no *_IFACE variable.
    assert "env set: CACHELEVEL=0" in result["guards"]
    assert not any(g.startswith("env set: NV_IFACE") for g in result["guards"])


ENV_SEEN = ["NV_IFACE", "AMD_IFACE", "VFIO", "CACHELEVEL", "DEV", "CUDA_VISIBLE_DEVICES",
            "VISIBLE_DEVICES", "PYTHON", "NV", "SIMULATED", "REMOTE", "HOME"]


@pytest.mark.parametrize("version,expected", [
    ("0.10.0", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": None, "AMD_IFACE": None}),
    ("0.10.3", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": None, "AMD_IFACE": "KFD"}),
    ("0.11.0", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": "NVK", "AMD_IFACE": "KFD"}),
    ("0.12.0", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": "NVK", "AMD_IFACE": "KFD"}),
    ("0.14.0", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": None, "AMD_IFACE": None}),
    # Read by the same rules as version_facts: a prefix, a short form, a local build.
    ("v0.12.0", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": "NVK", "AMD_IFACE": "KFD"}),
    ("0.11", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": "NVK", "AMD_IFACE": "KFD"}),
    ("0.10.3+local", {"VFIO": "0", "CACHELEVEL": "0", "NV_IFACE": None, "AMD_IFACE": "KFD"}),
])
def test_simulated_tinygrad_sees_the_guard_environment_of_its_version(tmp_path, bare_python, version, expected):
    site = simulated_tinygrad(tmp_path / "site", version, {
        "tinygrad/runtime/ops_simulated.py": "",
        "tinygrad/device.py": device_module(
            'raise RuntimeError(json.dumps({k: os.environ.get(k) for k in %r}))' % ENV_SEEN)})
    caller = {"NV_IFACE": "PCI", "AMD_IFACE": "PCI", "VFIO": "1", "DEV": "NV", "NV": "1",
              "CUDA_VISIBLE_DEVICES": "GPU-9b7c1d2e", "VISIBLE_DEVICES": "1",
              "PYTHON": "/usr/bin/python3", "REMOTE": "192.0.2.1:6667", "SIMULATED": "1"}
    result = run_script(bare_python, tmp_path, pythonpath=site, env=caller)
    seen = json.loads(result["reason"].split(": ", 1)[1])
    assert {k: seen[k] for k in expected} == expected
    # Whatever forces a device, a GPU list or a remote machine is gone; the rest is untouched.
    assert seen["DEV"] is seen["NV"] is seen["CUDA_VISIBLE_DEVICES"] is seen["VISIBLE_DEVICES"] is None
    assert seen["PYTHON"] is None and seen["REMOTE"] is None and seen["HOME"] == os.environ.get("HOME")
    # A device name known only from the installed package's runtime folder (ops_simulated.py).
    assert seen["SIMULATED"] is None and "env cleared: SIMULATED" in result["guards"]
    assert "env cleared: CUDA_VISIBLE_DEVICES" in result["guards"]


SIMULATED_PCI = {
    "tinygrad/runtime/support/__init__.py": "",
    "tinygrad/runtime/support/system.py": """
        import os
        class PCIIfaceBase:
            def __init__(self, dev, dev_id, **kwargs):
                # The real one unbinds the kernel driver here; this one leaves a mark instead.
                with open(os.environ["SIMULATED_MARK"], "a") as mark:
                    mark.write("PCIIfaceBase reached\\n")
    """,
    "tinygrad/runtime/ops_nv.py": """
        from tinygrad.runtime.support.system import PCIIfaceBase
        class PCIIface(PCIIfaceBase):
            def __init__(self, dev, dev_id):
                super().__init__(dev, dev_id, vendor=0x10de)
    """,
    "tinygrad/runtime/ops_amd.py": """
        import os
        class USBIface:
            def __init__(self, dev, dev_id):
                with open(os.environ["SIMULATED_MARK"], "a") as mark:
                    mark.write("USBIface reached\\n")
    """,
    "tinygrad/device.py": device_module("""
        from tinygrad.runtime.ops_nv import PCIIface
        from tinygrad.runtime.ops_amd import USBIface
        errors = []
        for iface in (PCIIface, USBIface):
            try:
                iface(self, 0)
            except Exception as exc:
                errors.append(str(exc))
        if errors:
            raise RuntimeError("; ".join(errors))
        return "NV"
    """),
}


def test_simulated_pci_and_usb_interfaces_are_never_constructed(tmp_path, probe_python):
    mark = tmp_path / "reached"
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", SIMULATED_PCI)
    result = run_script(probe_python, tmp_path, pythonpath=site, env={"SIMULATED_MARK": str(mark)})
    assert not mark.exists(), mark.read_text()
    assert result["backend"] is None
    assert "tinygrad.runtime.support.system.PCIIfaceBase is disabled while probing" in result["reason"]
    assert "tinygrad.runtime.ops_amd.USBIface is disabled while probing" in result["reason"]
    assert "blocked: tinygrad.runtime.support.system.PCIIfaceBase" in result["guards"]
    assert "blocked: tinygrad.runtime.ops_amd.USBIface" in result["guards"]


def test_simulated_pci_interface_is_reachable_without_the_probe(tmp_path, bare_python):
    # The simulation itself is sound: imported directly, it does reach the PCI interface.
    mark = tmp_path / "reached"
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", SIMULATED_PCI)
    environ = dict(os.environ, PYTHONPATH=site, SIMULATED_MARK=str(mark))
    subprocess.run([bare_python, "-c", "from tinygrad.device import Device; Device.DEFAULT"],
                   env=environ, cwd=str(tmp_path), check=True, timeout=TIMEOUT)
    assert mark.read_text() == "PCIIfaceBase reached\nUSBIface reached\n"


def read_only(path):
    return bool(os.statvfs(path).f_flag & os.ST_RDONLY)


@pytest.mark.skipif(os.geteuid() != 0, reason="the mount namespace guard applies to root only")
def test_simulated_tinygrad_as_root_finds_sys_and_proc_sys_read_only(tmp_path, probe_python):
    before = (read_only("/sys"), read_only("/proc/sys"))
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", {"tinygrad/device.py": device_module("""
        ro = lambda p: bool(os.statvfs(p).f_flag & os.ST_RDONLY)
        raise RuntimeError("simulated: /sys read-only=%s, /proc/sys read-only=%s" % (ro("/sys"), ro("/proc/sys")))
    """)})
    result = run_script(probe_python, tmp_path, pythonpath=site)
    refused = [g for g in result["guards"] if g.startswith("mount namespace: not applied")]
    if refused:
        pytest.skip("this machine refuses a mount namespace: %s" % refused[0])
    assert result["reason"] == "RuntimeError: simulated: /sys read-only=True, /proc/sys read-only=True"
    assert "mount namespace: /sys read-only" in result["guards"]
    assert "mount namespace: /proc/sys read-only" in result["guards"]
    # The host's own mounts are untouched.
    assert (read_only("/sys"), read_only("/proc/sys")) == before


OUTER_NAMESPACE = r'''
import json, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE).stdout.decode()
points = [line.split(" ")[4] for line in open("/proc/self/mountinfo")]
print(json.dumps({"probe": json.loads(out), "proc_sys_mounts": points.count("/proc/sys")}))
'''


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_simulated_tinygrad_namespace_does_not_leak_into_a_shared_parent(tmp_path, bare_python):
    # Most hosts run systemd, which makes / shared: a mount made in the probe's namespace would
    # appear in the host's unless the probe makes its copy private first. Reproduced in a
    # throwaway namespace with shared propagation, which disappears with its last process.
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", {"tinygrad/device.py": device_module('return "CPU"')})
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ.update(PYTHONPATH=site, CC="sh")
    proc = subprocess.run(["unshare", "--mount", "--propagation", "shared", bare_python, "-c", OUTER_NAMESPACE,
                           bare_python, "-c", tp.SCRIPT], env=environ, cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)
    if proc.returncode != 0:
        pytest.skip("cannot create a mount namespace here: %s" % proc.stderr.decode()[-500:])
    outer = json.loads(proc.stdout.decode())
    assert "mount namespace: /proc/sys read-only" in outer["probe"]["guards"]
    assert outer["proc_sys_mounts"] == 0


@pytest.mark.parametrize("version,env,compiler_found", [
    ("0.14.0", {}, False),
    ("0.14.0", {"CC": "simulated-cc"}, True),
    ("0.10.2", {"CC": "simulated-cc"}, True),
    # 0.10.0 and 0.10.1 always run "clang", whatever CC says.
    ("0.10.0", {"CC": "simulated-cc"}, False),
])
def test_simulated_cpu_backend_needs_its_c_compiler(tmp_path, bare_python, version, env, compiler_found):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "simulated-cc"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    name = "CLANG" if version == "0.10.0" else "CPU"
    site = simulated_tinygrad(tmp_path / "site", version, {"tinygrad/device.py": device_module('return %r' % name)})
    result = run_script(bare_python, tmp_path, pythonpath=site, env=dict(env, PATH=str(bin_dir)))
    assert result["backend"] == name
    if compiler_found:
        assert result["reason"] is None
    else:
        assert "C compiler 'clang' is not on PATH" in result["reason"]


# --- the version rules: tinygrad_child.parse_version and version_row, behind version_facts ---

@pytest.mark.parametrize("text,parsed", [
    ("0.10.0", (0, 10, 0)),
    ("0.10.1.dev20250129", (0, 10, 1)),
    ("v0.12.0", (0, 12, 0)),
    (" 0.11", (0, 11, 0)),
    ("1", (1, 0, 0)),
    ("0.10.3+local", (0, 10, 3)),
    ("0.14.0rc1", (0, 14, 0)),
    (None, None),
    ("", None),
    ("master", None),
    ("dev-0.10", None),
])
def test_parse_version(text, parsed):
    assert tinygrad_child.parse_version(text) == parsed


def test_version_row_is_the_table_row():
    first, facts, assumed = tinygrad_child.version_row("0.12.0")
    assert (first, assumed) == ("0.12.0", False)
    assert facts is dict(tinygrad_child.VERSIONS)["0.12.0"]


def test_version_rows_are_in_order_and_reach_the_researched_release():
    firsts = [tinygrad_child.parse_version(first) for first, facts in tinygrad_child.VERSIONS]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    assert firsts[-1] <= tinygrad_child.parse_version(tinygrad_child.RESEARCHED_UP_TO)


@pytest.mark.parametrize("version,row,cpu,nv_visible,nv_select", [
    ("0.10.0", "0.10.0", {"CLANG": "1"}, "VISIBLE_DEVICES", {"NV": "1"}),
    ("0.10.1", "0.10.0", {"CLANG": "1"}, "VISIBLE_DEVICES", {"NV": "1"}),
    ("0.10.2", "0.10.2", {"CPU": "1"}, "VISIBLE_DEVICES", {"NV": "1"}),
    ("0.10.3", "0.10.3", {"CPU": "1"}, "VISIBLE_DEVICES", {"NV": "1"}),
    ("0.11.0", "0.11.0", {"DEV": "CPU"}, "VISIBLE_DEVICES", {"DEV": "NV", "NV_IFACE": "NVK"}),
    ("0.12.0", "0.12.0", {"DEV": "CPU"}, "HCQ_VISIBLE_DEVICES", {"DEV": "NV", "NV_IFACE": "NVK"}),
    ("0.13.0", "0.13.0", {"DEV": "CPU"}, None, {"DEV": "NVK:{index}+NV"}),
    ("0.14.0", "0.13.0", {"DEV": "CPU"}, None, {"DEV": "NVK:{index}+NV"}),
])
def test_version_facts_per_release(version, row, cpu, nv_visible, nv_select):
    facts = tp.version_facts(version)
    assert facts["first_version"] == row and facts["assumed"] is False
    assert facts["select_env"]["cpu"] == cpu
    assert facts["select_env"]["nv"] == nv_select
    assert facts["visible_devices_env"]["nv"] == nv_visible


def test_version_facts_amd_uses_the_kernel_interface_from_0_10_3():
    assert tp.version_facts("0.10.2")["select_env"]["amd"] == {"AMD": "1"}
    assert tp.version_facts("0.10.3")["select_env"]["amd"] == {"AMD": "1", "AMD_IFACE": "KFD"}
    assert tp.version_facts("0.12.0")["select_env"]["amd"] == {"DEV": "AMD", "AMD_IFACE": "KFD"}
    assert tp.version_facts("0.14.0")["select_env"]["amd"] == {"DEV": "KFD:{index}+AMD"}


@pytest.mark.parametrize("version,row,assumed", [
    ("0.10.1.dev20250129", "0.10.0", False),
    ("v0.12.0", "0.12.0", False),
    ("0.11", "0.11.0", False),
    ("0.14.3", "0.13.0", False),
    ("0.15.0", "0.13.0", True),
    ("1.0.0", "0.13.0", True),
    ("0.9.2", "0.10.0", True),
    (None, "0.13.0", True),
    ("", "0.13.0", True),
    ("master", "0.13.0", True),
    ("0.14.0rc1", "0.13.0", False),
])
def test_version_facts_unusual_versions(version, row, assumed):
    facts = tp.version_facts(version)
    assert (facts["first_version"], facts["assumed"]) == (row, assumed)


def test_version_facts_rejects_non_strings():
    with pytest.raises(TypeError, match="tinygrad version must be a string"):
        tp.version_facts(0.14)


def test_version_facts_returns_a_copy():
    tp.version_facts("0.14.0")["select_env"]["nv"]["DEV"] = "changed"
    assert tp.version_facts("0.14.0")["select_env"]["nv"]["DEV"] == "NVK:{index}+NV"


def test_backends_vocabulary():
    assert [conclusions.BACKENDS.get(n) for n in ("CUDA", "NV", "AMD", "CPU", "CLANG", "LLVM", "METAL", "CL", "X")] \
        == ["cuda", "nv", "amd", "cpu", "cpu", "cpu", None, None, None]


# --- interpret --------------------------------------------------------------------------

def test_interpret_a_child_that_gave_nothing():
    section = tp.interpret(None, python="/opt/exo/bin/python")
    assert section["installed"] is None and section["backend"] is None
    assert section["python"] == "/opt/exo/bin/python"
    assert "no result" in section["reason"]
    assert section["select_env"] is None and section["visible_devices_env"] is None


def test_interpret_text_that_is_not_json():
    section = tp.interpret("Segmentation fault")
    assert section["installed"] is None and "not JSON" in section["reason"]


def test_interpret_rejects_other_types():
    with pytest.raises(TypeError, match="JSON object"):
        tp.interpret(["installed"])


def test_interpret_not_installed():
    section = tp.interpret({"installed": False, "version": None, "backend": None, "python": "/usr/bin/python3",
                            "reason": "tinygrad is not installed for this interpreter", "guards": []})
    assert section == {"installed": False, "version": None, "python": "/usr/bin/python3", "backend": None,
                       "reason": "tinygrad is not installed for this interpreter", "select_env": None,
                       "visible_devices_env": None, "guards": []}


def test_simulated_exo_pin_interpreted(tmp_path, bare_python):
    # exo pins a commit between 0.10.0 and 0.10.1 whose metadata says 0.10.0.
    site = simulated_tinygrad(tmp_path / "site", "0.10.0", {"tinygrad/device.py": device_module('return "NV"')})
    section = tp.interpret(run_script(bare_python, tmp_path, pythonpath=site))
    assert section["installed"] is True and section["version"] == "0.10.0" and section["backend"] == "NV"
    assert section["select_env"]["nv"] == {"NV": "1"} and section["select_env"]["cpu"] == {"CLANG": "1"}
    assert section["visible_devices_env"] == {"nv": "VISIBLE_DEVICES", "amd": "VISIBLE_DEVICES"}
    assert "env set: VFIO=0" in section["guards"]


# --- real releases, when virtualenvs of them are at hand ---------------------------------

RELEASE_VENVS = os.environ.get("TINYGRAD_RELEASE_VENVS")


@pytest.mark.skipif(not RELEASE_VENVS, reason="set TINYGRAD_RELEASE_VENVS to a folder of <version>/bin/python")
@pytest.mark.parametrize("version", ["0.10.0", "0.10.1", "0.10.2", "0.10.3", "0.11.0", "0.12.0", "0.13.0", "0.14.0"])
def test_release(tmp_path, version):
    python = os.path.join(RELEASE_VENVS or "", version, "bin", "python")
    if not os.path.exists(python):
        pytest.skip("no virtualenv with tinygrad %s at %s" % (version, python))
    result = run_script(python, tmp_path)
    assert result["installed"] is True and result["version"] == version
    facts = tp.version_facts(version)
    for name, value in facts["guard_env"].items():
        assert "env set: %s=%s" % (name, value) in result["guards"]
    if can_probe_here():
        cpu = facts["select_env"]["cpu"]
        if version == "0.14.0":  # compiles with clang while opening the CPU device
            assert result["backend"] is None and "no usable devices" in result["reason"]
        else:  # opens the CPU device and fails only at the first kernel
            assert result["backend"] == (cpu.get("DEV") or list(cpu)[0])
            assert "C compiler 'clang' is not on PATH" in result["reason"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv(1)")
def test_simulated_tinygrad_is_not_opened_as_root_without_its_guards(tmp_path, probe_python):
    # Without CAP_SYS_ADMIN, root cannot make a mount namespace: /sys stays as the host has it.
    if read_only("/sys") and read_only("/proc/sys"):
        pytest.skip("/sys and /proc/sys are read-only here already: nothing to refuse")
    mark = tmp_path / "opened"
    site = simulated_tinygrad(tmp_path / "site", "0.14.0", {"tinygrad/device.py": device_module("""
        open(%r, "w").write("Device.DEFAULT evaluated")
        return "CUDA"
    """ % str(mark))})
    result = run_script(probe_python, tmp_path, pythonpath=site,
                        wrapper=["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--"])
    assert not mark.exists()
    assert (result["installed"], result["backend"]) == (True, None)
    assert result["reason"].startswith("not opened: running as root, the probe could not make /sys and /proc/sys "
                                       "read-only (not applied, unshare(CLONE_NEWNS) failed: Operation not permitted")
    # Without the guard the same tinygrad is opened: the refusal is the guard's doing.
    assert run_script(probe_python, tmp_path, pythonpath=site)["backend"] == "CUDA" and mark.exists()
