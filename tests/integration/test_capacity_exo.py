# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """capacity.py against real exo e4238f9ef: its partitioning and layer rounding, and its model table.

exo's own RingMemoryWeightedPartitioningStrategy and map_partitions_to_shards run from exo's source
archive, in a virtualenv with the versions of pydantic, psutil and scapy that exo's setup.py pins
(what importing exo.topology needs), on cases drawn at random and on edge cases; capacity.py must
give the same partitions and the same layers. The table of model sizes is read back from the same
archive's files at the lines it cites.
"""

import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
from tests.integration import exo_sources

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(REPO, ".build", "capacity-exo")
# On several workers, with test_exo_wheelhouse.py: the wheelhouse under .build/exo-wheelhouse that
# this file installs from when the directory exists is the one that file builds.
pytestmark = pytest.mark.xdist_group("exo-wheelhouse")
WHEELHOUSE = os.path.join(REPO, ".build", "exo-wheelhouse", "wheelhouse")
PINS = ["pydantic==2.9.2", "psutil==6.0.0", "scapy==2.6.1"]
# Runs inside exo's environment: real exo's functions on every case, one JSON line out.
REAL_EXO = """
import json, sys
from exo.topology.topology import Topology
from exo.topology.device_capabilities import DeviceCapabilities, DeviceFlops
from exo.topology.ring_memory_weighted_partitioning_strategy import RingMemoryWeightedPartitioningStrategy
from exo.topology.partitioning_strategy import map_partitions_to_shards
out = []
for case in json.load(sys.stdin):
    topology = Topology()
    for node_id, memory in case["nodes"]:
        topology.update_node(node_id, DeviceCapabilities(model="m", chip="c", memory=memory,
                                                         flops=DeviceFlops(fp32=0, fp16=0, int8=0)))
    partitions = RingMemoryWeightedPartitioningStrategy().partition(topology)
    shards = map_partitions_to_shards(partitions, case["layers"], "m")
    out.append({"partitions": [[p.node_id, p.start, p.end] for p in partitions],
                "shards": [[s.start_layer, s.end_layer] for s in shards]})
print(json.dumps(out))
"""


def _python312():
    """A CPython 3.12 (exo's pinned pydantic-core has wheels up to 3.12), as scripts/bootstrap.sh finds one."""
    pyenv = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, universal_newlines=True, check=False) \
        if shutil.which("pyenv") else None
    candidates = sorted(glob.glob(os.path.join(pyenv.stdout.strip(), "versions", "3.12.*", "bin", "python3.12"))) \
        if pyenv and pyenv.returncode == 0 else []
    candidates.append(shutil.which("python3.12") or "")
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="module")
def exo_source():
    archive = exo_sources.archives(os.path.join(WORK, "archives"))["exo"]
    source = os.path.join(WORK, "exo")
    if not os.path.isdir(os.path.join(source, "exo")):
        with tarfile.open(archive) as tar:
            tar.extractall(WORK, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        top = [d for d in os.listdir(WORK) if d not in ("archives", "venv", "exo")]
        if top:
            os.rename(os.path.join(WORK, top[0]), source)
    return source


@pytest.fixture(scope="module")
def real_exo(exo_source):
    """Runs real exo's partitioning on a list of cases."""
    venv = os.path.join(WORK, "venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".ready")):
        interpreter = _python312()
        if interpreter is None:
            pytest.skip("no CPython 3.12 for exo's pinned pydantic")
        subprocess.run([interpreter, "-m", "venv", "--clear", venv], check=True)
        offline = ["--no-index", "--find-links", WHEELHOUSE] if os.path.isdir(WHEELHOUSE) else []
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + offline + PINS, check=True)
        open(os.path.join(venv, ".ready"), "w").close()

    def run(cases):
        proc = subprocess.run([python, "-c", REAL_EXO], input=json.dumps(cases), stdout=subprocess.PIPE,
                              universal_newlines=True, check=True, env=dict(os.environ, PYTHONPATH=exo_source))
        return json.loads(proc.stdout)
    return run


def _cases():
    rng = random.Random(9)
    sizes = [81559, 81920, 65536, 40192, 24576, 16384, 10240, 9856, 2048, 512, 128887]
    cases = [
        {"nodes": [["a", 81559]], "layers": 16},
        {"nodes": [["a", 100], ["b", 100], ["c", 100]], "layers": 16},  # ties: exo orders by node id
        {"nodes": [["big", 1000000], ["tiny", 1]], "layers": 16},
        {"nodes": [["x%d" % i, 10240] for i in range(40)], "layers": 16},  # more nodes than layers
    ]
    for _case in range(300):
        count = rng.randint(1, 14)
        cases.append({"nodes": [["n%02d" % i, rng.choice(sizes)] for i in range(count)],
                      "layers": rng.choice([16, 28, 32, 80])})
    return cases


def test_partitions_and_layers_are_exos(real_exo):
    cases = _cases()
    expected = real_exo(cases)
    empty = 0
    for case, real in zip(cases, expected):
        nodes = [tuple(n) for n in case["nodes"]]
        assert [list(p) for p in capacity.partition(nodes)] == real["partitions"], case
        assert [list(r) for r in capacity.shards(capacity.partition(nodes), case["layers"])] == real["shards"], case
        rows = capacity.assignment(nodes, case["layers"])
        # exo's node at ring position i runs shards[i] (orchestration/node.py, get_current_shard).
        assert [list(row[2]) if row[2] else None for row in rows] == \
            [real["shards"][i] if i < len(real["shards"]) else None for i in range(len(rows))], case
        empty += any(row[1] is None for row in rows)
    assert empty > 0, "no case had a node whose share rounds to no layer"


def _read(source, location):
    path, lines = location.split(":")
    first, last = (lines.split("-") + [lines])[:2]
    with open(os.path.join(source, path)) as handle:
        text = handle.read().split("\n")
    return "\n".join(text[int(first) - 1:int(last or first)])


def test_the_model_table_is_what_exo_says_at_the_lines_it_cites(exo_source):
    for model_id, layers, repo, source in capacity.MODELS:
        text = _read(exo_source, source)
        assert '"%s"' % model_id in text and '"layers": %d' % layers in text, (model_id, source, text)
        assert '"TinygradDynamicShardInferenceEngine": "%s"' % repo in text, (model_id, source, text)
    for name, p in capacity.PARAMETER_SETS.items():
        text = _read(exo_source, p["source"])
        assert '"%s"' % name in text, (name, text)
        for key in ("dim", "n_heads", "n_kv_heads", "n_layers", "vocab_size", "hidden_dim"):
            assert re.search(r'"%s": %d\b' % (key, p[key]), text), (name, key, text)
        assert ('"tie_word_embeddings": True' in text) == p["tie_word_embeddings"], (name, text)
    rule = _read(exo_source, capacity.PARAMETER_SET_RULE_SOURCE)
    assert re.findall(r'"(\w+)" if "(\w+)" in shard\.model_id\.lower\(\)', rule) == \
        [(name, text) for text, name in capacity.PARAMETER_SET_RULES if text]
    assert rule.rstrip().endswith('else "%s"' % capacity.PARAMETER_SET_RULES[-1][1])
    dtype = _read(exo_source, capacity.DTYPE_SOURCE)
    assert 'Device.DEFAULT == "CLANG"' in dtype and "dtypes.float32" in dtype and "cast(dtypes.float16)" in dtype
    assert "max_context=%d" % capacity.MAX_CONTEXT in _read(exo_source, capacity.MAX_CONTEXT_SOURCE)
    assert "max_states=%d" % capacity.PROMPT_STATES in _read(exo_source, capacity.PROMPT_STATES_SOURCE.split(";", maxsplit=1)[0])


def test_every_model_card_is_in_one_table(exo_source):
    text = _read(exo_source, "exo/models.py:1-156")
    cards = re.findall(r'^  "([^"]+)": \{', text, re.M)
    assert sorted(cards) == sorted([m[0] for m in capacity.MODELS] + list(capacity.OTHER_ENGINES))
    other = _read(exo_source, capacity.OTHER_ENGINES_SOURCE)
    for model_id in capacity.OTHER_ENGINES:
        line = next(entry for entry in other.split("\n") if '"%s":' % model_id in entry)
        assert "Tinygrad" not in line, line


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
