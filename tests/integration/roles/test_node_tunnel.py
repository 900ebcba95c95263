# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The ring's tunnel filters' examples (node_tunnel, node_tunnel_ring), run as they are written on
two hosts of one play over the local connection: the addresses each host gets, and its peers; and the
module exo_ring_key's, with the simulated wg."""

import json
import os
import sys

from tests.helpers import examples, local_inventory, recap, run_example as playbook, tasks_play
from tests.simulated import wg as simwg

KEYS = {"gpu-a": "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "gpu-b": "TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0="}


def inventory():
    hosts = dict((name, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "exo_node_address": "192.0.2.1%d" % n, "ring_public_key": KEYS[name]})
                 for n, name in enumerate(sorted(KEYS)))
    return {"all": {"hosts": hosts}}


def test_node_tunnel_example(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(examples("filter", "node_tunnel")), inventory())
    assert recap(proc, "gpu-a")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Show the tunnel of a host in a ring of three]")[1]
    assert '"msg": [\n        true,\n        "exo-ring",\n        "10.213.0.2",\n        51820,\n        []\n    ]' in shown, shown[:2000]


def test_node_tunnel_ring_example(tmp_path):
    proc = playbook(str(tmp_path), tasks_play(examples("filter", "node_tunnel_ring")), inventory())
    assert recap(proc, "gpu-a")["failed"] == 0 and recap(proc, "gpu-b")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Show each host's WireGuard peers]")[1]
    # each host's one peer is the other, at its own address and its place in the ring's sorted names
    compact = "".join(shown.split())
    assert 'ok:[gpu-a]=>{"msg":[["gpu-b","192.0.2.11:51820","10.213.0.2/32"]]}' in compact, shown[:2000]
    assert 'ok:[gpu-b]=>{"msg":[["gpu-a","192.0.2.10:51820","10.213.0.1/32"]]}' in compact, shown[:2000]


def test_exo_ring_key_example_makes_the_key_once(tmp_path):
    """exo_ring_key's EXAMPLES as written but for the key's path, with the simulated wg on PATH."""
    key = tmp_path / "ring" / "private.key"
    text = examples("module", "exo_ring_key").replace("/etc/exo/ring/private.key", str(key))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    simwg.install(str(bin_dir))
    play = tasks_play(text).replace("  tasks:\n", "  environment:\n    PATH: %s\n  tasks:\n"
                                    % json.dumps(str(bin_dir) + os.pathsep + os.environ["PATH"]), 1)
    for run in (1, 2):
        (tmp_path / str(run)).mkdir()
        proc = playbook(str(tmp_path / str(run)), play, local_inventory())
        assert recap(proc, "localhost") == {"ok": 2, "changed": 1 if run == 1 else 0, "failed": 0}, proc.stdout[-4000:]
        said = proc.stdout.split("TASK [Say the public key, which the ring's other hosts need]")[1]
        assert '"msg": "localhost: %s"' % simwg.public_key(key.read_text()) in said, said[:2000]
    assert oct(key.stat().st_mode & 0o777) == "0o600" and key.read_text().strip() not in proc.stdout
