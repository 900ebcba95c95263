# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/inference.py without exo: the table of medians and ratios, the interleaving, and the
model placed in each instance's home by the node role's planner, as exo reads it."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os

import pytest

from tests.helpers import REPO
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_data as exo_data

SPEC = importlib.util.spec_from_file_location("inference_bench", os.path.join(REPO, "benchmarks", "inference.py"))
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def sample(first, rate, rss, ready=10.0, total=None):
    return {"ready_s": ready, "first_token_s": first, "tokens_per_s": rate, "total_s": total, "peak_rss_gb": rss}


def test_the_table_gives_medians_and_ring_over_single():
    samples = {"single": [sample(80.0, 0.30, 7.9), sample(90.0, 0.36, 7.7), sample(70.0, 0.33, 8.1)],
               "ring": [sample(100.0, 0.20, 6.5, ready=20.0), sample(120.0, None, 4.9, ready=30.0)]}
    rows = dict((label, (single, ring, ratio)) for label, single, ring, ratio in bench.table(samples))
    assert rows["first token, s"] == (80.0, 110.0, 110.0 / 80.0)
    # a completion that streamed one token has no rate: the other sample's stands alone
    assert rows["tokens/s after it"] == (0.33, 0.20, 0.20 / 0.33)
    assert rows["peak RSS, largest node, GB"] == pytest.approx((7.9, 5.7, 5.7 / 7.9))
    assert rows["instances ready, s"] == (10.0, 25.0, 2.5)
    # unknown on both sides: no median, no ratio
    assert rows["whole completion, s"] == (None, None, None)
    assert [label for dummy, label in bench.METRICS] == [row[0] for row in bench.table(samples)]


def test_no_ratio_against_an_unknown_or_zero_single():
    samples = {"single": [sample(None, 0.0, 7.9)], "ring": [sample(100.0, 0.2, 6.0)]}
    rows = dict((label, ratio) for label, dummy, dummy2, ratio in bench.table(samples))
    assert rows["first token, s"] is None and rows["tokens/s after it"] is None
    assert rows["peak RSS, largest node, GB"] == 6.0 / 7.9


def test_each_case_goes_first_every_other_round():
    firsts = [bench.order(r)[0][0] for r in range(4)]
    assert firsts == ["single", "ring", "single", "ring"]
    assert all(sorted(bench.order(r)) == sorted(bench.CASES) for r in range(3))


def test_the_model_is_placed_where_exo_reads_it_and_exo_asks_no_hub(tmp_path):
    repo = "unsloth/Llama-3.2-1B-Instruct"
    store = tmp_path / "store"
    (store / repo).mkdir(parents=True)
    (store / repo / "model.safetensors").write_bytes(b"w" * 64)
    (store / repo / "tokenizer.json").write_text("{}")
    exo_data.make_manifest(str(store / repo), check_mode=False)
    homes = [str(tmp_path / "work" / name) for name in ("ring0", "ring1")]
    bench.place(str(store), homes)
    for home in homes:
        downloads = os.path.join(home, "downloads", "unsloth--Llama-3.2-1B-Instruct")
        assert os.path.samefile(os.path.join(downloads, "model.safetensors"), str(store / repo / "model.safetensors"))
        with open(os.path.join(home, "tmp", "exo", "unsloth--Llama-3.2-1B-Instruct--main--file_list.json")) as handle:
            assert json.load(handle) == [{"path": "model.safetensors", "size": 64}, {"path": "tokenizer.json", "size": 2}]
        with open(os.path.join(home, "tmp", "exo", "unsloth--Llama-3.2-1B-Instruct", "model.safetensors.index.json")) as handle:
            assert json.load(handle)["weight_map"] == {}


@pytest.mark.parametrize("text, paths", [
    ("f16:CLANG", [("f16", "CLANG", 0)]),
    ("bf16:llvm:2, f16:CLANG:0", [("bf16", "LLVM", 2), ("f16", "CLANG", 0)]),
    (bench.PATHS, [(d, b, beam) for beam in (0, 2) for d in ("f16", "bf16") for b in ("CLANG", "LLVM")]),
])
def test_paths_are_dtype_backend_and_beam(text, paths):
    assert bench.parse_paths(text) == paths


@pytest.mark.parametrize("text", ["f32:CLANG", "f16:CUDA", "f16", "f16:CLANG:x", "f16:CLANG:2:3"])
def test_a_path_that_is_not_one_is_named(text):
    with pytest.raises(ValueError, match="%r is not DTYPE:BACKEND" % text):
        bench.parse_paths(text)


def test_a_path_selects_its_backend_and_its_search():
    assert bench.path_env("LLVM", 0) == {"LLVM": "1"}
    # the search's compiles in worker processes, one core left to time them
    assert bench.path_env("CLANG", 2, cpus=2) == {"CLANG": "1", "BEAM": "2", "PARALLEL": "1"}
    assert bench.path_env("CLANG", 1, cpus=16) == {"CLANG": "1", "BEAM": "1", "PARALLEL": "15"}
    assert bench.path_env("CLANG", 1, cpus=1)["PARALLEL"] == "1"


@pytest.mark.parametrize("dtype, backend, seconds", [
    # 2.47 GB of 16-bit weights at 13 GB/s: 0.19 s a token where the engine keeps them 16-bit...
    ("f16", "CLANG", 0.19), ("f16", "LLVM", 0.19), ("bf16", "LLVM", 0.19),
    # ...and twice that where exo casts BF16 to float32 (CLANG the default device).
    ("bf16", "CLANG", 0.38),
])
def test_the_limit_is_the_weights_as_held_over_the_bandwidth(dtype, backend, seconds):
    assert bench.token_limit_s(2.47e9, dtype, backend, 13.0) == pytest.approx(seconds, abs=0.005)


def test_each_dtype_has_its_store_and_bf16_is_the_scenarios():
    assert bench.STORES["bf16"] == "exo-models"
    assert set(bench.STORES) == set(d for d, dummy in bench.HELD_BYTES)


def test_the_census_counts_beam_choices_and_compiled_kernels_in_the_instances_cache(tmp_path):
    import sqlite3
    cache = tmp_path / "bf16-CLANG-1-0" / ".cache" / "tinygrad"
    cache.mkdir(parents=True)
    connection = sqlite3.connect(str(cache / "cache.db"))
    # tables as tinygrad names them, its cache VERSION the suffix
    for table, rows in (("beam_search_18", 3), ("compile_clang_jit_18", 5), ("time_linearizer_18", 7)):
        connection.execute("CREATE TABLE '%s' (key text, val blob)" % table)
        connection.executemany("INSERT INTO '%s' VALUES (?, ?)" % table, [(str(i), b"x") for i in range(rows)])
    connection.commit()
    connection.close()
    census = bench.cache_census(str(tmp_path))
    assert (census["beam_kernels"], census["compiled_kernels"]) == (3, 5)
    assert census["cache_mb"] > 0
    # an instance that died before it compiled has no cache
    assert bench.cache_census(str(tmp_path / "none")) == {}
