# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's install phase (--tags install) on this machine, as root through a local connection: what the
tests of the wheelhouses (test_exo_wheelhouse.py, test_exo_built_wheelhouse.py) run the role with."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys

import yaml

from tests.helpers import REPO

BIN = os.path.dirname(sys.executable)


def install_phase(tmp_path, variables, verbose=False):
    """Run it with the role variables given, exo's directories under tmp_path and no package managed; the
    finished ansible-playbook process (its output in stdout)."""
    given = dict(exo_node_manage_packages=False, exo_node_refresh_facts="never", exo_node_cpu_packages=[],
                 **dict((key, str(tmp_path / key)) for key in ("exo_node_install_dir", "exo_node_config_dir",
                                                               "exo_node_data_dir")))
    given.update(variables)
    inventory = {"all": {"hosts": {"localhost": dict(given, ansible_connection="local",
                                                     ansible_python_interpreter=sys.executable)}}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{
        "hosts": "all", "gather_facts": False,
        "tasks": [{"name": "Probe", "gpufleet.exo.device_facts": {"tinygrad": False}, "tags": ["always"]},
                  {"name": "Run the node role", "ansible.builtin.include_role": {"name": "gpufleet.exo.node"},
                   "tags": ["install"]}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.json"), "--tags",
                           "install"] + (["-v"] if verbose else []) + [str(tmp_path / "play.yml")],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=900, check=False)
