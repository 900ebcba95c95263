# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tinygrad_child.py as a file: imported, it does nothing; read from a zip archive the way Ansible
ships module_utils, it is what tinygrad_probe hands to the child interpreter.

What the child program does when run is tested in test_tinygrad.py.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad_child as tinygrad_child
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe

TIMEOUT = 120  # generous: the host is shared; this only stops a hung child from hanging the suite
PACKAGE = "ansible_collections/gpufleet/exo/plugins/module_utils/probe"
MODULE_UTILS = os.path.dirname(os.path.abspath(tinygrad_probe.__file__))


def target_pythons():
    """One interpreter per Python 3.9-3.13 under pyenv (the target Pythons the module supports)."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = []
    for minor in range(9, 14):
        found += sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor, "bin", "python3")))[:1]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no Python 3.9-3.13 under pyenv here"))]


def run(python, code, *args, **kwargs):
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([python, "-I", "-c", code] + list(args), env=environ, cwd=kwargs.get("cwd"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False)


IMPORT_BY_PATH = r'''
import importlib.util, sys
spec = importlib.util.spec_from_file_location("tinygrad_child", sys.argv[1])
child = importlib.util.module_from_spec(spec)
spec.loader.exec_module(child)
print("still here, %d rows" % len(child.VERSIONS))
'''


def test_importing_the_child_does_nothing(tmp_path):
    # Run, the file takes over fds 1 and 2 and exits at once; imported, it must only define.
    proc = run(sys.executable, IMPORT_BY_PATH, tinygrad_child.__file__, cwd=str(tmp_path))
    assert (proc.returncode, proc.stdout.decode(), proc.stderr.decode()) == (
        0, "still here, %d rows\n" % len(tinygrad_child.VERSIONS), "")


def ansiballz_like_zip(path):
    """module_utils packed as AnsiballZ packs them: the two files and an __init__.py per package."""
    parts = PACKAGE.split("/")
    with zipfile.ZipFile(str(path), "w") as archive:
        for depth in range(1, len(parts) + 1):
            archive.writestr("/".join(parts[:depth]) + "/__init__.py", "")
        for name in ("_tinygrad.py", "_tinygrad_child.py"):
            archive.write(os.path.join(MODULE_UTILS, name), PACKAGE + "/" + name)
    return str(path)


FROM_ZIP = r'''
import json, subprocess, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe
child = subprocess.run([sys.executable, "-I", "-c", tinygrad_probe.SCRIPT], stdout=subprocess.PIPE).stdout
print(json.dumps({"origin": tinygrad_probe.__file__, "script": tinygrad_probe.SCRIPT,
                  "child": json.loads(child.decode())}))
'''


@pytest.mark.parametrize("python", target_pythons())
def test_script_read_from_a_zip_archive_runs_in_the_child(tmp_path, python):
    archive = ansiballz_like_zip(tmp_path / "payload.zip")
    proc = run(python, FROM_ZIP, archive, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    seen = json.loads(proc.stdout.decode())
    assert seen["origin"].startswith(archive + os.sep)
    with open(tinygrad_child.__file__) as handle:
        assert seen["script"] == handle.read()
    # No tinygrad in an isolated pyenv interpreter: the child ran and said so.
    assert seen["child"]["python"] == python and seen["child"]["installed"] is False
    assert seen["child"]["reason"] == "tinygrad is not installed for this interpreter"


# --- the environment of a backend check: what the node role gives an instance ---------------

@pytest.mark.parametrize("version, backend, device", [
    ("0.10.0", "cpu", "CLANG"), ("0.10.2", "cpu", "CPU"), ("0.14.0", "cpu", "CPU"),
    ("0.10.0", "nv", "NV"), ("0.11.0", "nv", "NV"), ("0.14.0", "nv", "NV"),
    ("0.10.3", "amd", "AMD"), ("0.14.0", "amd", "AMD"), ("0.10.0", "cuda", "CUDA"), ("0.14.0", "cuda", "CUDA"),
])
def test_selected_device_is_what_select_env_forces(version, backend, device):
    row = tinygrad_child.version_row(version)[1]
    assert tinygrad_child.selected_device(row["select_env"][backend]) == device


GPU = {"index": 2, "uuid": "GPU-9b7c0002-1111-2222-3333-444455556666"}


@pytest.mark.parametrize("version, backend, gpu, expected", [
    # The CPU instance hides every GPU from CUDA.
    ("0.10.0", "cpu", None, {"CUDA_VISIBLE_DEVICES": "", "CLANG": "1"}),
    ("0.14.0", "cpu", None, {"CUDA_VISIBLE_DEVICES": "", "DEV": "CPU"}),
    # A GPU instance: its UUID in PCI order, its index in tinygrad's NV list where there is one.
    ("0.10.0", "nv", GPU, {"CUDA_VISIBLE_DEVICES": GPU["uuid"], "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                           "VISIBLE_DEVICES": "2", "NV": "1"}),
    ("0.12.0", "cuda", GPU, {"CUDA_VISIBLE_DEVICES": GPU["uuid"], "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                             "HCQ_VISIBLE_DEVICES": "2", "DEV": "CUDA"}),
    ("0.14.0", "nv", GPU, {"CUDA_VISIBLE_DEVICES": GPU["uuid"], "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                           "DEV": "NVK:2+NV"}),
    # No GPU known (no NVML): tinygrad's own first GPU.
    ("0.10.0", "cuda", None, {"CUDA": "1"}),
])
def test_check_env_is_the_instance_environment(version, backend, gpu, expected):
    row = tinygrad_child.version_row(version)[1]
    assert tinygrad_child.check_env(row, backend, gpu) == expected


def test_stage_argv_names_the_mode():
    assert tinygrad_probe.stage_argv("/py") == ["/py", "-c", tinygrad_probe.SCRIPT]
    assert tinygrad_probe.stage_argv("/py", "version")[3:] == ["version"]
    check = tinygrad_probe.stage_argv("/py", "check", "nv", dict(GPU, name="ignored"))
    assert check[3] == "check" and json.loads(check[4]) == {"backend": "nv", "gpu": GPU}


@pytest.mark.parametrize("raw, gpu, failure, expected", [
    ({"installed": True, "ok": True, "device": "CPU", "env": {"DEV": "CPU"}, "error": None}, None, None,
     {"status": "ok", "device": "CPU", "gpu": None, "env": {"DEV": "CPU"}, "error": None, "reason": None}),
    ({"installed": True, "ok": False, "device": "CLANG", "env": {"CLANG": "1"},
      "error": {"type": "FileNotFoundError", "message": "no clang"}}, None, None,
     {"status": "failed", "device": "CLANG", "gpu": None, "env": {"CLANG": "1"},
      "error": {"type": "FileNotFoundError", "message": "no clang"}, "reason": "FileNotFoundError: no clang"}),
    ({"installed": False, "reason": "tinygrad is not installed for this interpreter"}, GPU, None,
     {"status": "failed", "device": None, "gpu": GPU["uuid"], "env": None,
      "error": {"type": "NotInstalled", "message": "tinygrad is not installed for this interpreter"},
      "reason": "NotInstalled: tinygrad is not installed for this interpreter"}),
    ({"installed": True, "ok": False, "error": None, "reason": "importing tinygrad failed: X"}, None, None,
     {"status": "failed", "device": None, "gpu": None, "env": None,
      "error": {"type": "ImportError", "message": "importing tinygrad failed: X"},
      "reason": "ImportError: importing tinygrad failed: X"}),
    (None, GPU, {"type": "timeout", "message": "no answer within 10.0 s"},
     {"status": "failed", "device": None, "gpu": GPU["uuid"], "env": None,
      "error": {"type": "timeout", "message": "no answer within 10.0 s"}, "reason": "timeout: no answer within 10.0 s"}),
])
def test_check_entry(raw, gpu, failure, expected):
    assert tinygrad_probe.check_entry(raw, gpu, failure) == expected
