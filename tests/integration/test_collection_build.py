# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-galaxy collection build` makes an artifact that installs and runs."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def run(args, cwd, env):
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    return proc.stdout.decode()


def test_built_collection_installs_and_runs(tmp_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_LOCAL_TEMP=str(tmp_path))
    env.pop("ANSIBLE_CONFIG", None)
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), REPO],
        str(tmp_path), env)
    artifact = glob.glob(str(tmp_path / "gpufleet-exo-*.tar.gz"))
    assert len(artifact) == 1
    listing = subprocess.run(["tar", "-tzf", artifact[0]], stdout=subprocess.PIPE, check=True).stdout.decode()
    assert "plugins/modules/device_facts.py" in listing and "playbooks/site.yml" in listing
    assert ".build/" not in listing and ".venv/" not in listing
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-p", str(tmp_path / "collections"),
         artifact[0]], str(tmp_path), env)
    output = run([os.path.join(BIN, "ansible"), "localhost", "-o", "-m", "gpufleet.exo.device_facts", "-a",
                  "tinygrad=false", "-e", "ansible_python_interpreter=%s" % sys.executable], str(tmp_path), env)
    facts = json.loads(output.split(" => ", 1)[1])["ansible_facts"]["device_capabilities"]
    assert facts["schema_version"] == 1
    doc = run([os.path.join(BIN, "ansible-doc"), "gpufleet.exo.device_facts"], str(tmp_path), env)
    assert "tinygrad_python" in doc
