# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The rings of docs/node.md ("Rings"), as Ansible makes them from the example inventory as written.

A role of the test's own takes the node role's defaults file as its defaults (the same precedence:
below the inventory's group variables) and writes what each host's exo_node_ring and
exo_node_cluster_hosts came out as; the role's check of the ring (cluster.ring_errors, run by its
preflight) then takes those values. The hosts are the example's, on a local connection.
"""

import json
import os
import re
import subprocess

import yaml

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.cluster import ring_errors
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import BIN, NODE_SETTINGS, REPO

PLAYBOOK = """
- name: Write each host's ring
  hosts: exo_nodes
  gather_facts: false
  roles: [ring_of]
"""
TASKS = """
- name: Write what the node role's defaults make of this host's ring
  ansible.builtin.copy:
    content: "{{ {'ring': exo_node_ring, 'hosts': exo_node_cluster_hosts} | to_json }}"
    dest: "{{ result_dir }}/{{ inventory_hostname }}.json"
    mode: "0600"
"""


def example():
    with open(os.path.join(REPO, "docs", "node.md")) as handle:
        section = handle.read().split("## Rings\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```yaml\n(# inventory/rings.yml\n.*?)```", section, re.S).group(1)


def rings_of(tmp, inventory_text, *extra):
    """{host: {"ring", "hosts"}} as the node role's defaults resolve them over the inventory."""
    role = os.path.join(tmp, "roles", "ring_of")
    os.makedirs(os.path.join(role, "tasks"))
    os.symlink(os.path.join(REPO, "roles", "node", "defaults"), os.path.join(role, "defaults"))
    with open(os.path.join(role, "tasks", "main.yml"), "w") as handle:
        handle.write(TASKS)
    results = os.path.join(tmp, "results")
    os.makedirs(results)
    files = {"rings.yml": inventory_text, "playbook.yml": PLAYBOOK,
             "local.json": json.dumps({"all": {"vars": {"ansible_connection": "local", "result_dir": results}}})}
    for name, text in files.items():
        with open(os.path.join(tmp, name), "w") as handle:
            handle.write(text)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_ROLES_PATH=os.path.join(tmp, "roles"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", os.path.join(tmp, "rings.yml"),
                           "-i", os.path.join(tmp, "local.json"), os.path.join(tmp, "playbook.yml")] + list(extra),
                          cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    found = {}
    for name in os.listdir(results):
        with open(os.path.join(results, name)) as handle:
            found[name[:-len(".json")]] = json.load(handle)
    return found


def checked(host, resolved, **given):
    values, errors = check_settings(dict(NODE_SETTINGS, exo_node_ring=resolved["ring"],
                                         exo_node_cluster_hosts=resolved["hosts"], **given))
    assert errors == []
    return ring_errors(values, host)


def test_each_group_of_the_example_is_a_ring_of_its_own_hosts(tmp_path):
    text = example()
    groups = yaml.safe_load(text)["all"]["children"]["exo_nodes"]["children"]
    found = rings_of(str(tmp_path), text)
    assert found == dict((host, {"ring": name, "hosts": list(group["hosts"])})
                         for name, group in groups.items() for host in group["hosts"])
    assert all(checked(host, resolved) == [] for host, resolved in found.items())


def test_without_exo_node_ring_the_play_is_one_ring_refused_above_its_bound(tmp_path):
    text = "\n".join(line for line in example().splitlines() if "exo_node_ring:" not in line)
    found = rings_of(str(tmp_path), text)
    assert set(len(resolved["hosts"]) for resolved in found.values()) == set([5])
    assert checked("gpu01.example.net", found["gpu01.example.net"]) == []
    assert checked("gpu01.example.net", found["gpu01.example.net"], exo_node_ring_max_hosts=4)[0].startswith(
        "its ring (every host of the play, as exo_node_ring is not set) holds 5 hosts, more than "
        "exo_node_ring_max_hosts (4)")
