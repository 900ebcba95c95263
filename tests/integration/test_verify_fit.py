# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The smoke test (playbooks/verify.yml) refuses a model its ring cannot hold before any request.

Two hosts over the local connection whose instances the node role published (the fact cache holds
exo_node_instances, as after site.yml): a 16 GB and a 4 GB GPU on one, nothing running. For a model
the ring holds the smoke test goes on to wait for the ring (and fails there: no exo runs); for one
it cannot hold it stops first, on every host of the ring, naming each instance's share and shortfall.
ring_capacity's EXAMPLES run as written over the same hosts.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, examples, indent

BIN = os.path.dirname(sys.executable)


def instance(host, index, memory, chip):
    return {"node_id": "%s-gpu%d" % (host, index), "name": "gpu%d" % index, "kind": "gpu", "gpu_index": index,
            "ports": {"api": 52415 + index, "grpc": 5678 + index},
            "capabilities": {"model": "Linux Box (%s)" % chip, "chip": chip, "memory": memory,
                             "flops": {"fp32": 0, "fp16": 0, "int8": 0}}}


PUBLISHED = {"gf-a": [instance("gf-a", 0, 16384, "NVIDIA A4000")], "gf-b": [instance("gf-b", 0, 4096, "NVIDIA T4")]}


@pytest.fixture
def ring(tmp_path):
    hosts = dict((host, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "gf_published": instances}) for host, instances in PUBLISHED.items())
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"children": {"exo_nodes": {"hosts": hosts}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="jsonfile",
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_NOCOLOR="1")

    def run(playbook, *args):
        return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "inventory.json"), playbook]
                              + list(args), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300, check=False)

    # Published as the node role publishes them (select.yml), into the fact cache the smoke test reads.
    (tmp_path / "publish.yml").write_text(
        "- hosts: exo_nodes\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.set_fact:\n        exo_node_instances: \"{{ gf_published }}\"\n        cacheable: true\n")
    proc = run(str(tmp_path / "publish.yml"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return run


def test_a_model_the_ring_cannot_hold_is_refused_before_any_request(ring):
    proc = ring("playbooks/verify.yml", "-e", "exo_verify_model=llama-3.1-8b", "-e", "exo_verify_timeout=5")
    assert proc.returncode != 0
    assert "TASK [Wait until each instance sees its whole ring]" not in proc.stdout, proc.stdout[-3000:]
    for host in PUBLISHED:
        assert ("host %s: its ring (gf-a, gf-b) cannot hold llama-3.1-8b: 676 MiB short on 1 node(s); gf-b GPU 0: "
                "layers 25-31 need 4362 MiB, 3686 MiB usable; each instance: gf-a-gpu0: layers 0-24, 13002 MiB needed "
                "of 14745 MiB usable; gf-b-gpu0: layers 25-31, 4362 MiB needed of 3686 MiB usable (676 MiB short)"
                % host) in proc.stdout, proc.stdout[-3000:]


def test_a_model_the_ring_holds_goes_on_to_the_ring(ring):
    proc = ring("playbooks/verify.yml", "-e", "exo_verify_model=llama-3.2-1b", "-e", "exo_verify_timeout=3")
    assert "TASK [Wait until each instance sees its whole ring]" in proc.stdout, proc.stdout[-3000:]
    assert "cannot hold" not in proc.stdout


def test_the_filter_example_runs_as_written(ring, tmp_path):
    play = tmp_path / "example.yml"
    play.write_text("- hosts: exo_nodes\n  gather_facts: false\n  tasks:\n" + indent(examples("filter", "ring_capacity")))
    proc = ring(str(play))
    assert proc.returncode == 0 and "ok=1" in proc.stdout, proc.stdout[-3000:]
