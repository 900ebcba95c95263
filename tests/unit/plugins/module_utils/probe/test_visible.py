# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CUDA_VISIBLE_DEVICES semantics: the real driver's answers on an H100, example cases for what one GPU
cannot show, and properties over random GPU sets; then the CUDA driver asked (over a simulated libcuda.so.1
that answers what the real driver answered) and the facts following it."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ctypes.util
import json
import os
import sys

import pytest
from hypothesis import given, strategies as st

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _deadline as deadline
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe
from ansible_collections.gpufleet.exo.plugins.module_utils.probe._visible import resolve, cuda_order
from tests.helpers import REAL_H100
from tests.simulated import cuda as simcuda

FIXTURES = REAL_H100
with open(os.path.join(FIXTURES, "device_facts.json")) as handle:
    REAL_GPUS = json.load(handle)["gpus"]
with open(os.path.join(FIXTURES, "cuda_visible_devices.json")) as handle:
    REAL_TABLE = json.load(handle)


def driver_answer(result):
    """A result in the table's terms: the UUIDs cuDeviceGetUuid gave, or "cuInit=<code>" when cuInit failed
    with anything but 100 (no device), which the table writes as an empty list."""
    error = result["cuda_init_error"]
    if error is not None and error["code"] != 100:
        assert result["devices"] == []
        return "cuInit=%d" % error["code"]
    assert (error is not None) == (result["devices"] == [])
    return [d["uuid"] for d in result["devices"]]


@pytest.mark.parametrize("row", REAL_TABLE, ids=lambda row: "%r-%s" % (row["CUDA_VISIBLE_DEVICES"],
                                                                       row["CUDA_DEVICE_ORDER"] or "default"))
def test_the_real_driver_table(row):
    result = resolve(REAL_GPUS, row["CUDA_VISIBLE_DEVICES"], row["CUDA_DEVICE_ORDER"])
    assert driver_answer(result) == row["cuda_driver_sees"]


def test_the_real_driver_table_is_whole():
    # 26 values, each with and without CUDA_DEVICE_ORDER=PCI_BUS_ID.
    assert len(REAL_TABLE) == 52 and len(set(row["CUDA_VISIBLE_DEVICES"] for row in REAL_TABLE)) == 26


def make_gpu(index, uuid, bus, fp32=10.0, mig=()):
    return {"index": index, "uuid": uuid, "pci_bus_id": "0000:%02x:00.0" % bus, "flops": {"fp32": fp32},
            "mig": {"supported": bool(mig), "enabled": bool(mig), "pending": bool(mig),
                    "devices": [{"uuid": m, "gpu_instance_id": 1 + i, "compute_instance_id": 0}
                                for i, m in enumerate(mig)]}}


GPUS = [make_gpu(0, "GPU-aaaa1111", 0x1b), make_gpu(1, "GPU-aaaa2222", 0x3b),
        make_gpu(2, "GPU-bbbb3333", 0x5b, mig=("MIG-cccc0001", "MIG-cccc0002"))]


def indices(result):
    return [d["index"] for d in result["devices"]]


def test_unset_means_every_gpu():
    assert indices(resolve(GPUS, None, "PCI_BUS_ID")) == [0, 1, 2]


def test_empty_means_none():
    result = resolve(GPUS, "", "PCI_BUS_ID")
    assert result["devices"] == [] and result["invalid_entry"] is None
    assert result["cuda_init_error"]["code"] == 100 and "is empty" in result["cuda_init_error"]["reason"]


def test_unset_or_a_list_naming_a_gpu_lets_cuda_initialise():
    assert resolve(GPUS, None, None)["cuda_init_error"] is None
    assert resolve(GPUS, "2,-1", None)["cuda_init_error"] is None


def test_no_gpu_at_all_is_not_the_lists_doing():
    assert resolve([], "0", None)["cuda_init_error"] is None


def test_first_invalid_entry_truncates():
    result = resolve(GPUS, "0,2,-1,1", "PCI_BUS_ID")
    assert indices(result) == [0, 2]
    assert result["invalid_entry"] == "-1"


def test_devices_are_renumbered_in_the_order_given():
    result = resolve(GPUS, "2,0", "PCI_BUS_ID")
    assert [(d["cuda_index"], d["index"]) for d in result["devices"]] == [(0, 2), (1, 0)]


def test_full_uuid_and_unique_prefix():
    assert indices(resolve(GPUS, "GPU-aaaa2222,GPU-bb", "PCI_BUS_ID")) == [1, 2]


def test_ambiguous_prefix_is_invalid():
    result = resolve(GPUS, "GPU-aaaa", "PCI_BUS_ID")
    assert result["devices"] == [] and result["invalid_entry"] == "GPU-aaaa"


def test_mig_uuid_and_legacy_mig_form():
    result = resolve(GPUS, "MIG-cccc0002,MIG-GPU-bbbb3333/1/0", "PCI_BUS_ID")
    assert [(d["index"], d["mig_uuid"]) for d in result["devices"]] == [(2, "MIG-cccc0002"), (2, "MIG-cccc0001")]


def test_a_device_named_again_by_another_kind_of_entry_ends_the_list():
    result = resolve(GPUS, "1,GPU-aaaa2222,0", "PCI_BUS_ID")
    assert indices(result) == [1] and result["invalid_entry"] == "GPU-aaaa2222"
    assert result["cuda_init_error"] is None


@pytest.mark.parametrize("listed", ["2,0,2", "GPU-aaaa2222,GPU-aaaa22", "MIG-aaaa1111,GPU-aaaa1111",
                                    "MIG-cccc0001,MIG-GPU-bbbb3333/1/0"])
def test_a_device_named_twice_by_the_same_kind_of_entry_stops_cuda(listed):
    result = resolve(GPUS, listed, "PCI_BUS_ID")
    assert result["devices"] == [] and result["invalid_entry"] is None
    error = result["cuda_init_error"]
    assert (error["code"], error["name"]) == (101, "CUDA_ERROR_INVALID_DEVICE")
    assert repr(listed) in error["reason"] and "twice" in error["reason"]


def test_an_invalid_entry_before_a_repeat_ends_the_list_first():
    result = resolve(GPUS, "0,-1,0", "PCI_BUS_ID")
    assert indices(result) == [0] and result["cuda_init_error"] is None


@pytest.mark.parametrize("entry", ["+1", " 1", "1 ", "\t+1 ", "01"])
def test_index_forms_the_driver_reads_as_a_number(entry):
    assert indices(resolve(GPUS, entry, "PCI_BUS_ID")) == [1]


@pytest.mark.parametrize("entry", ["-1", "1x", "0x1", "1.0", "one", "gpu-aaaa2222", "GPU-", "MIG-", "G", "aaaa2222",
                                   "GPU-AAAA2222", "1;2", "1 2"])
def test_entries_that_name_nothing(entry):
    result = resolve(GPUS, entry, "PCI_BUS_ID")
    assert result["devices"] == [] and result["invalid_entry"] == entry
    assert result["cuda_init_error"]["code"] == 100 and repr(entry) in result["cuda_init_error"]["reason"]


def test_either_tag_names_a_gpu_or_a_mig_device():
    assert indices(resolve(GPUS, "MIG-aaaa2222", "PCI_BUS_ID")) == [1]
    result = resolve(GPUS, "GPU-cccc0002", "PCI_BUS_ID")
    assert [(d["index"], d["mig_uuid"]) for d in result["devices"]] == [(2, "MIG-cccc0002")]


def test_index_beyond_the_count_is_invalid():
    assert indices(resolve(GPUS, "1,3,0", "PCI_BUS_ID")) == [1]


def test_fastest_first_puts_the_fastest_part_first():
    mixed = [make_gpu(0, "GPU-slow", 0x1b, fp32=8.1), make_gpu(1, "GPU-fast", 0x3b, fp32=66.9)]
    assert indices(resolve(mixed, "0", None)) == [1]
    assert indices(resolve(mixed, "0", "PCI_BUS_ID")) == [0]


def test_pci_order_is_bus_order_not_nvml_order():
    swapped = [make_gpu(0, "GPU-x", 0x5b), make_gpu(1, "GPU-y", 0x1b)]
    assert [g["index"] for g in cuda_order(swapped, "PCI_BUS_ID")] == [1, 0]


hex_uuid = st.text("0123456789abcdef", min_size=8, max_size=8).map(lambda s: "GPU-" + s)


@st.composite
def gpu_sets(draw):
    uuids = draw(st.lists(hex_uuid, min_size=0, max_size=8, unique=True))
    buses = draw(st.lists(st.integers(0, 255), min_size=len(uuids), max_size=len(uuids), unique=True))
    speeds = draw(st.lists(st.sampled_from([8.1, 19.5, 66.9]), min_size=len(uuids), max_size=len(uuids)))
    return [make_gpu(i, u, b, f) for i, (u, b, f) in enumerate(zip(uuids, buses, speeds))]


entries = st.one_of(st.integers(-2, 9).map(str), hex_uuid, st.sampled_from(["", "GPU-", "MIG-x", "abc"]))


@given(gpu_sets(), st.lists(entries, max_size=10), st.sampled_from([None, "PCI_BUS_ID", "FASTEST_FIRST"]))
def test_property_result_is_the_valid_prefix_of_the_list(gpus, listed, order):
    result = resolve(gpus, ",".join(listed), order)
    devices = result["devices"]
    if (result["cuda_init_error"] or {}).get("code") == 101:
        # Only a repeat stops CUDA, and then no device is visible.
        assert devices == [] and result["invalid_entry"] is None
        assert len(set(listed)) < len(listed)
        return
    assert (result["cuda_init_error"] is not None) == (bool(gpus) and devices == [])
    # Each visible device comes from one entry, in order, and no device appears twice.
    assert len(devices) <= len(listed)
    assert len(set(d["index"] for d in devices)) == len(devices)
    assert [d["cuda_index"] for d in devices] == list(range(len(devices)))
    if result["invalid_entry"] is None:
        assert len(devices) == (len(listed) if ",".join(listed).strip() else 0)
    else:
        assert listed[len(devices)] == result["invalid_entry"]


@given(gpu_sets(), st.sampled_from(["PCI_BUS_ID", "FASTEST_FIRST"]))
def test_property_indices_select_in_cuda_order(gpus, order):
    cuda = cuda_order(gpus, order)
    listed = list(reversed(range(len(gpus))))
    result = resolve(gpus, ",".join(map(str, listed)), order)
    assert indices(result) == [cuda[i]["index"] for i in listed]


@given(gpu_sets())
def test_property_full_uuids_select_exactly_those_gpus(gpus):
    result = resolve(gpus, ",".join(g["uuid"] for g in reversed(gpus)), None)
    assert [d["uuid"] for d in result["devices"]] == [g["uuid"] for g in reversed(gpus)]
    assert result["invalid_entry"] is None


@given(gpu_sets(), st.sampled_from(["PCI_BUS_ID", "FASTEST_FIRST"]), st.data())
def test_property_a_repeat_stops_cuda_by_the_same_kind_and_ends_the_list_by_another(gpus, order, data):
    if not gpus:
        return
    position = data.draw(st.integers(0, len(gpus) - 1))
    gpu = cuda_order(gpus, order)[position]
    same = resolve(gpus, "%d,%d" % (position, position), order)
    assert same["devices"] == [] and same["cuda_init_error"]["code"] == 101
    same = resolve(gpus, "%s,MIG-%s" % (gpu["uuid"], gpu["uuid"][len("GPU-"):]), order)
    assert same["devices"] == [] and same["cuda_init_error"]["code"] == 101
    other = resolve(gpus, "%s,%d" % (gpu["uuid"], position), order)
    assert indices(other) == [gpu["index"]] and other["invalid_entry"] == str(position)
    assert other["cuda_init_error"] is None


@given(gpu_sets(), st.sampled_from(["PCI_BUS_ID", "FASTEST_FIRST"]))
def test_property_index_spellings_and_tags_name_the_same_gpu(gpus, order):
    for position, gpu in enumerate(cuda_order(gpus, order)):
        for entry in ("+%d" % position, " %d " % position):
            assert indices(resolve(gpus, entry, order)) == [gpu["index"]]
        assert indices(resolve(gpus, "MIG-" + gpu["uuid"][len("GPU-"):], order)) == [gpu["index"]]
        assert resolve(gpus, "gpu-" + gpu["uuid"][len("GPU-"):], order)["devices"] == []


@given(gpu_sets())
def test_property_unset_shows_all_and_empty_shows_none(gpus):
    assert len(resolve(gpus, None, None)["devices"]) == len(gpus)
    assert resolve(gpus, "", None)["devices"] == []


# ---- the CUDA driver asked: the guarded child's cuda mode over the simulated libcuda.so.1 ----------
# The simulation answers from a table (tests/simulated/cuda.py); recorded_answers() is the real driver's
# table. Where a test gives answers of its own, they are the simulation's, not recordings.

@pytest.fixture(scope="module")
def cuda_lib():
    return simcuda.build()


def ask_driver(cuda_lib, tmp_path, answers, visible=None, order=None, timeout=60.0, hang=False):
    """The child's answer for this environment, as gather() hands it to resolve()."""
    table = simcuda.write_config(str(tmp_path / "cuda.conf"), answers, hang=hang)
    env = dict((k, v) for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"))
    env.update(simcuda.environment(cuda_lib, table))
    env.update((name, value) for name, value in (("CUDA_VISIBLE_DEVICES", visible), ("CUDA_DEVICE_ORDER", order))
               if value is not None)
    stage = deadline.Stage(argv=tinygrad_probe.stage_argv(sys.executable, "cuda"), env=env)
    outcome = deadline.run_stages({"cuda": stage}, timeout)["cuda"]
    return outcome.value["cuda"] if outcome.ok else {"status": outcome.kind, "message": outcome.message}


RECORDED = simcuda.recorded_answers()


@pytest.mark.parametrize("entry", RECORDED, ids=lambda entry: "%r-%s" % (entry["visible"], entry["order"] or "default"))
def test_the_facts_are_the_drivers_answer(cuda_lib, tmp_path, entry):
    answer = ask_driver(cuda_lib, tmp_path, RECORDED, entry["visible"], entry["order"])
    result = resolve(REAL_GPUS, entry["visible"], entry["order"], answer)
    assert result["source"] == "driver" and result["driver"] == {"status": answer["status"], "message": None}
    assert driver_answer(result) == entry["recorded"]["cuda_driver_sees"]
    # The rules were written from these very answers.
    assert result["rules_agree"] is True and result["rules_reading"] is None
    assert result["devices"] == resolve(REAL_GPUS, entry["visible"], entry["order"])["devices"]


def test_where_the_rules_read_otherwise_the_facts_follow_the_driver(cuda_lib, tmp_path):
    # A UUID in upper case: the rules read no device (they compare UUIDs case-sensitively); this
    # simulated driver reads the GPU, and the facts say so and what the rules read.
    upper = "GPU-" + REAL_GPUS[0]["uuid"][4:].upper()
    answers = [simcuda.answer(upper, None, 0, [(REAL_GPUS[0]["uuid"], "0000:00:06.0")])]
    result = resolve(REAL_GPUS, upper, None, ask_driver(cuda_lib, tmp_path, answers, upper))
    assert [d["uuid"] for d in result["devices"]] == [REAL_GPUS[0]["uuid"]] and result["devices"][0]["index"] == 0
    assert result["cuda_init_error"] is None and result["invalid_entry"] is None
    assert (result["source"], result["rules_agree"]) == ("driver", False)
    assert result["rules_reading"] == {"devices": [], "cuda_init_error": 100}
    assert resolve(REAL_GPUS, upper, None)["invalid_entry"] == upper


def test_a_driver_that_refuses_where_the_rules_see_a_gpu_leaves_no_gpu(cuda_lib, tmp_path):
    answers = [simcuda.answer("0", None, 101)]
    result = resolve(REAL_GPUS, "0", None, ask_driver(cuda_lib, tmp_path, answers, "0"))
    assert result["devices"] == [] and result["rules_agree"] is False
    assert result["cuda_init_error"] == {"code": 101, "name": "CUDA_ERROR_INVALID_DEVICE", "reason": (
        "the CUDA driver's cuInit returned CUDA_ERROR_INVALID_DEVICE (101): a CUDA program sees no GPU")}
    assert result["rules_reading"] == {"devices": [REAL_GPUS[0]["uuid"]], "cuda_init_error": None}


def test_an_environment_the_simulation_has_no_answer_for_is_an_error_not_a_guess(cuda_lib, tmp_path):
    answer = ask_driver(cuda_lib, tmp_path, RECORDED, "0abc")
    assert answer["status"] == "init_error" and answer["init_error"] == {"code": 999, "name": "CUDA_ERROR_UNKNOWN"}


def test_a_hanging_cuinit_is_abandoned_at_the_deadline_and_the_rules_answer(cuda_lib, tmp_path):
    answer = ask_driver(cuda_lib, tmp_path, RECORDED, "0", timeout=1.0, hang=True)
    assert answer["status"] == "timeout"
    result = resolve(REAL_GPUS, "0", None, answer)
    assert (result["source"], result["rules_agree"], result["driver"]["status"]) == ("rules", None, "timeout")
    assert [d["uuid"] for d in result["devices"]] == [REAL_GPUS[0]["uuid"]]


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="this host has a CUDA driver")
def test_without_libcuda_the_rules_answer(tmp_path):
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    stage = deadline.Stage(argv=tinygrad_probe.stage_argv(sys.executable, "cuda"), env=env)
    answer = deadline.run_stages({"cuda": stage}, 60.0)["cuda"].value["cuda"]
    assert answer["status"] == "library_not_found" and "libcuda.so.1" in answer["message"]
    result = resolve(REAL_GPUS, None, None, answer)
    assert (result["source"], result["driver"]) == ("rules", {"status": "library_not_found",
                                                              "message": answer["message"]})
