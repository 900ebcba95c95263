# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tinygrad stage's answer kept between gatherings (_cache.py): a re-gather of an unchanged host
reuses it and says so, equal to the first answer field for field but for the marks; a change of any
input that decides it asks tinygrad again, one test per input; only root's own directory is trusted.

Each gathering runs gather() in a fresh process on a simulated host (the simulated libnvidia-ml is found
at process start), with a simulated tinygrad that answers at once."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import probe
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _cache as cache
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _deadline as deadline
from tests.helpers import COLLECTIONS, device_module, simulated_tinygrad
from tests.simulated import hosts as simhosts
from tests.simulated import nvml as simnvml

GATHER = ("import json, sys\n"
          "from ansible_collections.gpufleet.exo.plugins.module_utils.probe import gather\n"
          "print(json.dumps(gather(**json.loads(sys.argv[1]))))\n")
# The marks of a kept answer.
MARKS = ("cached", "cached_since")
KEY = {"rootfs": "/", "python": "/usr/bin/python3", "answer": 1}
# Only root's answers are kept (and only root can give a file away, as one test does).
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the cache is root's")


class Host:
    """A simulated host with one H100 and a tinygrad that selects CPU; gather() runs there."""

    def __init__(self, tmp_path, nvml_lib, python):
        self.tmp = tmp_path
        self.nvml_lib = nvml_lib
        self.cache_dir = str(tmp_path / "cache")
        self.gpus = [simhosts.h100(0)]
        self.config = {}
        self.site = tmp_path / "site"
        simulated_tinygrad(self.site, "0.10.0", {"tinygrad/device.py": device_module("return 'CPU'")})
        self.env = {"PYTHONPATH": os.pathsep.join([str(self.site), COLLECTIONS])}
        self.args = {"tinygrad_python": python, "backends": [], "timeout": 60}
        self.nvml_env, self.root = simhosts.write(str(tmp_path), "host", nvml_lib, self.gpus)

    def gather(self):
        simnvml.write_config(self.nvml_env[simnvml.CONFIG_ENV], self.gpus, **self.config)
        # pytest names the test and its phase in PYTEST_CURRENT_TEST: a variable that changes like a session's.
        environ = dict((k, v) for k, v in os.environ.items()
                       if k not in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "PYTEST_CURRENT_TEST"))
        environ.update(self.nvml_env, **self.env)
        args = dict(self.args, rootfs=self.root, tinygrad_cache=self.cache_dir)
        proc = subprocess.run([sys.executable, "-c", GATHER, json.dumps(args)], env=environ, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        return json.loads(proc.stdout.decode())


@pytest.fixture
def host(tmp_path, nvml_lib, bare_python):
    return Host(tmp_path, nvml_lib, bare_python)


def without_marks(facts):
    """The facts but for the marks, and timings_ms: what each stage took, measured anew on each gathering."""
    facts = json.loads(json.dumps(facts))
    facts.pop("timings_ms")
    for mark in MARKS:
        facts["tinygrad"].pop(mark)
    return facts


@pytest.fixture
def kept(host):
    """The host after a first gathering, checked to be reused as it is by a second one."""
    first = host.gather()
    assert (first["tinygrad"]["cached"], first["tinygrad"]["cached_since"]) == (False, None)
    assert first["tinygrad"]["version"] == "0.10.0" and first["tinygrad"]["backend"] == "CPU"
    again = host.gather()
    assert again["tinygrad"]["cached"] is True and again["tinygrad"]["cached_since"]
    assert "tinygrad" in first["timings_ms"] and "tinygrad" not in again["timings_ms"]
    assert without_marks(again) == without_marks(first)
    return host


def asks_again(host):
    facts = host.gather()
    return facts["tinygrad"]["cached"] is False and "tinygrad" in facts["timings_ms"]


def test_an_unchanged_host_is_answered_from_the_cache_field_for_field(kept):
    assert kept.gather()["tinygrad"]["cached"] is True


def test_the_driver_version(kept):
    kept.config = {"driver_version": "560.35.03"}
    assert asks_again(kept)


def test_a_gpus_uuid(kept):
    kept.gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=simhosts.uuid(7), pci_bus_id=simhosts.bus(0),
                             minor=0, cc=(9, 0))]
    assert asks_again(kept)


def test_a_gpus_bus_id(kept):
    kept.gpus = [simnvml.gpu("NVIDIA H100 80GB HBM3", 81559, uuid=simhosts.uuid(0), pci_bus_id="0000:99:00.0",
                             minor=0, cc=(9, 0))]
    assert asks_again(kept)


def test_a_gpu_becoming_busy(kept):
    kept.gpus = [simhosts.h100(0, memory_used_mib=81496, processes=[(4242, 81016)])]
    facts = kept.gather()
    assert facts["tinygrad"]["cached"] is False and facts["tinygrad"]["reason"].startswith("not asked to open")


def test_tinygrads_version(kept):
    shutil.rmtree(str(kept.site / "tinygrad-0.10.0.dist-info"))
    simulated_tinygrad(kept.site, "0.14.0", {})
    facts = kept.gather()
    assert facts["tinygrad"]["cached"] is False and facts["tinygrad"]["version"] == "0.14.0"


def test_a_package_installed_beside_tinygrad(kept):
    (kept.site / "other.py").write_text("")
    assert asks_again(kept)


def test_the_interpreter(kept, tmp_path):
    other = tmp_path / "python"
    os.symlink(kept.args["tinygrad_python"], str(other))
    kept.args["tinygrad_python"] = str(other)
    assert asks_again(kept)


def test_the_environment_that_selects_devices(kept):
    kept.env["CUDA_VISIBLE_DEVICES"] = simhosts.uuid(0)
    assert asks_again(kept)


def test_a_new_connection_is_the_same_environment(kept):
    kept.env.update(SSH_CONNECTION="10.0.0.9 50022 10.0.0.1 22", PWD="/somewhere")
    assert kept.gather()["tinygrad"]["cached"] is True


def test_the_backends_asked_for(kept):
    kept.args["backends"] = ["cpu"]
    facts = kept.gather()
    assert facts["tinygrad"]["cached"] is False and list(facts["tinygrad"]["backends"]) == ["cpu"]


def test_a_reboot(kept):
    boot_id = kept.tmp / "host" / "proc" / "sys" / "kernel" / "random" / "boot_id"
    boot_id.parent.mkdir(parents=True, exist_ok=True)
    boot_id.write_text("a6e5bd52-6f04-4c6c-9c61-3c6a4bb1a7a8\n")
    assert asks_again(kept)


def unchanged_install(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    return [[str(site), os.stat(str(site)).st_mtime_ns]]


def test_a_stage_that_failed_is_not_kept(tmp_path):
    kept = probe._Cache(str(tmp_path / "c"), sys.executable, {})
    kept.key = KEY
    install = unchanged_install(tmp_path)
    outcomes = {"tinygrad": deadline.Outcome(value={"install": install}),
                "tinygrad_cpu": deadline.Outcome(kind="timeout", message="no answer within 1.0 s; stage abandoned")}
    kept.save(outcomes, ["tinygrad", "tinygrad_cpu"], {"backend": "CPU"})
    assert cache.load(str(tmp_path / "c"), KEY) is None
    kept.save(outcomes, ["tinygrad"], {"backend": "CPU"})
    assert cache.load(str(tmp_path / "c"), KEY)["tinygrad"] == {"backend": "CPU"}


# ---- what is trusted -------------------------------------------------------------------------


def test_a_kept_answer_is_read_back(tmp_path):
    cache.save(str(tmp_path / "c"), KEY, unchanged_install(tmp_path), {"backend": "CPU"})
    assert cache.load(str(tmp_path / "c"), KEY)["tinygrad"] == {"backend": "CPU"}
    assert cache.load(str(tmp_path / "c"), dict(KEY, answer=2)) is None
    assert oct(os.stat(str(tmp_path / "c")).st_mode & 0o777) == "0o700"


def test_a_directory_others_can_write_is_not_trusted(tmp_path):
    cache.save(str(tmp_path / "c"), KEY, [], {"backend": "CPU"})
    os.chmod(str(tmp_path / "c"), 0o777)
    assert cache.load(str(tmp_path / "c"), KEY) is None


def test_a_file_of_another_user_is_not_trusted(tmp_path):
    cache.save(str(tmp_path / "c"), KEY, [], {"backend": "CPU"})
    for name in os.listdir(str(tmp_path / "c")):
        os.chown(str(tmp_path / "c" / name), 1000, 1000)
    assert cache.load(str(tmp_path / "c"), KEY) is None


def test_an_install_that_changed_voids_the_answer(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    cache.save(str(tmp_path / "c"), KEY, [[str(site), os.stat(str(site)).st_mtime_ns - 1]], {"backend": "CPU"})
    assert cache.load(str(tmp_path / "c"), KEY) is None


def test_session_variables_are_left_out_of_the_key():
    def key(environ):
        return cache.inputs("/", sys.executable, "script", environ, [], True, [], None, [])
    assert key({"SSH_CONNECTION": "a", "PATH": "/bin"}) == key({"SSH_CONNECTION": "b", "PATH": "/bin"})
    assert key({"PATH": "/bin"}) != key({"PATH": "/usr/bin"})
