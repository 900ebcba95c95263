# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated libcuda.so.1: it compiles cleanly, and it answers only what its table holds (the probe's
use of it is tested in tests/unit/plugins/module_utils/probe/test_visible.py)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import subprocess

from tests.simulated import cuda


def test_simulated_libcuda_compiles_without_warnings(tmp_path):
    result = subprocess.run(["gcc"] + list(cuda.CFLAGS) + ["-Werror", "-Wpedantic", "-o", str(tmp_path / "lib"),
                                                           cuda.SOURCE],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert result.returncode == 0 and result.stdout == "", result.stdout


def test_the_table_holds_every_recorded_answer_once():
    with open(cuda.REAL_H100_ANSWERS) as handle:
        records = json.load(handle)
    table = cuda.recorded_answers()
    assert [entry["recorded"] for entry in table] == records
    assert len(set((entry["visible"], entry["order"]) for entry in table)) == len(records) == 52
    # "cuInit=101" is cuInit's error; an empty list is CUDA_ERROR_NO_DEVICE; a list is what cuInit let through.
    assert sorted(set(entry["init"] for entry in table)) == [0, 100, 101]
    assert all(bool(entry["devices"]) == (entry["init"] == 0) for entry in table)
