# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The chip table: real driver names resolve, exo's keys resolve, unknown chips are None."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _chips as chips

# (name as NVML returns it, total memory in MiB as NVML reports it, chip)
NVML_NAMES = [
    ("NVIDIA H100 80GB HBM3", 81559, "NVIDIA H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", 81559, "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", 95830, "NVIDIA H100 NVL"),
    ("NVIDIA H200", 143771, "NVIDIA H200"),
    ("NVIDIA H200 NVL", 143771, "NVIDIA H200 NVL"),
    ("NVIDIA GH200 480GB", 97871, "NVIDIA GH200"),
    ("NVIDIA B200", 183359, "NVIDIA B200"),
    ("NVIDIA A100-SXM4-80GB", 81920, "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", 40960, "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100-PCIE-40GB", 40960, "NVIDIA A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", 81920, "NVIDIA A100 PCIe 80GB"),
    ("Tesla V100-SXM2-32GB", 32768, "NVIDIA V100 SXM2 32GB"),
    ("Tesla V100-SXM2-16GB", 16384, "NVIDIA V100 SXM2 16GB"),
    ("Tesla V100-PCIE-16GB", 16384, "NVIDIA V100 PCIe 16GB"),
    ("Tesla V100-PCIE-32GB", 32768, "NVIDIA V100 PCIe 32GB"),
    ("Tesla V100S-PCIE-32GB", 32768, "NVIDIA V100S PCIe 32GB"),
    ("Tesla T4", 15360, "NVIDIA T4"),
    ("NVIDIA L4", 23034, "NVIDIA L4"),
    ("NVIDIA L40S", 46068, "NVIDIA L40S"),
    ("NVIDIA L40", 46068, "NVIDIA L40"),
    ("NVIDIA A10", 23028, "NVIDIA A10"),
    ("NVIDIA A10G", 23028, "NVIDIA A10G"),
    ("NVIDIA A30", 24576, "NVIDIA A30"),
    ("NVIDIA A40", 46068, "NVIDIA A40"),
    ("NVIDIA A16", 15356, "NVIDIA A16"),
    ("NVIDIA A2", 15356, "NVIDIA A2"),
    ("NVIDIA GeForce RTX 3090", 24576, "NVIDIA GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 4090", 24564, "NVIDIA GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 5090", 32607, "NVIDIA GeForce RTX 5090"),
    ("NVIDIA GeForce RTX 5080", 16303, "NVIDIA GeForce RTX 5080"),
    ("NVIDIA GeForce RTX 5070 Ti", 16303, "NVIDIA GeForce RTX 5070 Ti"),
    ("NVIDIA GeForce RTX 5070", 12227, "NVIDIA GeForce RTX 5070"),
    ("NVIDIA GeForce RTX 5060 Ti", 16311, "NVIDIA GeForce RTX 5060 Ti"),
    ("NVIDIA RTX A6000", 49140, "NVIDIA RTX A6000"),
    ("NVIDIA RTX 6000 Ada Generation", 49140, "NVIDIA RTX 6000 Ada Generation"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
]

# Every key of exo's CHIP_FLOPS, with the name the driver (NVML, pyamdgpuinfo, system_profiler)
# really gives for that part and the memory NVML reports where one name covers several parts.
EXO_KEYS = [
    ("Apple M1", "Apple M1", None),
    ("Apple M1 Pro", "Apple M1 Pro", None),
    ("Apple M1 Max", "Apple M1 Max", None),
    ("Apple M1 Ultra", "Apple M1 Ultra", None),
    ("Apple M2", "Apple M2", None),
    ("Apple M2 Pro", "Apple M2 Pro", None),
    ("Apple M2 Max", "Apple M2 Max", None),
    ("Apple M2 Ultra", "Apple M2 Ultra", None),
    ("Apple M3", "Apple M3", None),
    ("Apple M3 Pro", "Apple M3 Pro", None),
    ("Apple M3 Max", "Apple M3 Max", None),
    ("Apple M3 Ultra", "Apple M3 Ultra", None),
    ("Apple M4", "Apple M4", None),
    ("Apple M4 Pro", "Apple M4 Pro", None),
    ("Apple M4 Max", "Apple M4 Max", None),
    ("Apple A13 Bionic", "Apple A13 Bionic", None),
    ("Apple A14 Bionic", "Apple A14 Bionic", None),
    ("Apple A15 Bionic", "Apple A15 Bionic", None),
    ("Apple A16 Bionic", "Apple A16 Bionic", None),
    ("Apple A17 Pro", "Apple A17 Pro", None),
    ("NVIDIA GEFORCE RTX 4090", "NVIDIA GeForce RTX 4090", None),
    ("NVIDIA GEFORCE RTX 4080", "NVIDIA GeForce RTX 4080", None),
    ("NVIDIA GEFORCE RTX 4080 SUPER", "NVIDIA GeForce RTX 4080 SUPER", None),
    ("NVIDIA GEFORCE RTX 4070 TI SUPER", "NVIDIA GeForce RTX 4070 Ti SUPER", None),
    ("NVIDIA GEFORCE RTX 4070 TI", "NVIDIA GeForce RTX 4070 Ti", None),
    ("NVIDIA GEFORCE RTX 4070 SUPER", "NVIDIA GeForce RTX 4070 SUPER", None),
    ("NVIDIA GEFORCE RTX 4070", "NVIDIA GeForce RTX 4070", None),
    ("NVIDIA GEFORCE RTX 4060 TI 16GB", "NVIDIA GeForce RTX 4060 Ti", 16380),
    ("NVIDIA GEFORCE RTX 4060 TI", "NVIDIA GeForce RTX 4060 Ti", 8188),
    ("NVIDIA GEFORCE RTX 3050", "NVIDIA GeForce RTX 3050", None),
    ("NVIDIA GEFORCE RTX 3060", "NVIDIA GeForce RTX 3060", None),
    ("NVIDIA GEFORCE RTX 3060 TI", "NVIDIA GeForce RTX 3060 Ti", None),
    ("NVIDIA GEFORCE RTX 3070", "NVIDIA GeForce RTX 3070", None),
    ("NVIDIA GEFORCE RTX 3070 TI", "NVIDIA GeForce RTX 3070 Ti", None),
    ("NVIDIA GEFORCE RTX 3080 (10 GB)", "NVIDIA GeForce RTX 3080", 10010),
    ("NVIDIA GEFORCE RTX 3080 (12 GB)", "NVIDIA GeForce RTX 3080", 12045),
    ("NVIDIA GEFORCE RTX 3080 TI", "NVIDIA GeForce RTX 3080 Ti", None),
    ("NVIDIA GEFORCE RTX 3090", "NVIDIA GeForce RTX 3090", None),
    ("NVIDIA GEFORCE RTX 3090 TI", "NVIDIA GeForce RTX 3090 Ti", None),
    ("NVIDIA GEFORCE RTX 2060", "NVIDIA GeForce RTX 2060", None),
    ("NVIDIA GEFORCE RTX 2060 SUPER", "NVIDIA GeForce RTX 2060 SUPER", None),
    ("NVIDIA GEFORCE RTX 2070", "NVIDIA GeForce RTX 2070", None),
    ("NVIDIA GEFORCE RTX 2070 SUPER", "NVIDIA GeForce RTX 2070 SUPER", None),
    ("NVIDIA GEFORCE RTX 2080", "NVIDIA GeForce RTX 2080", None),
    ("NVIDIA GEFORCE RTX 2080 TI", "NVIDIA GeForce RTX 2080 Ti", None),
    ("NVIDIA GEFORCE RTX 2080 SUPER", "NVIDIA GeForce RTX 2080 SUPER", None),
    ("NVIDIA TITAN RTX", "NVIDIA TITAN RTX", None),
    ("NVIDIA GEFORCE GTX 1050 TI", "NVIDIA GeForce GTX 1050 Ti", None),
    ("NVIDIA GEFORCE GTX 1070", "NVIDIA GeForce GTX 1070", None),
    ("NVIDIA GEFORCE GTX 1080", "NVIDIA GeForce GTX 1080", None),
    ("NVIDIA GEFORCE GTX 1080 TI", "NVIDIA GeForce GTX 1080 Ti", None),
    ("NVIDIA GeForce GTX 1660 TI", "NVIDIA GeForce GTX 1660 Ti", None),
    ("NVIDIA RTX A2000", "NVIDIA RTX A2000", None),
    ("NVIDIA RTX A4000", "NVIDIA RTX A4000", None),
    ("NVIDIA RTX A4500", "NVIDIA RTX A4500", None),
    ("NVIDIA RTX A5000", "NVIDIA RTX A5000", None),
    ("NVIDIA RTX A6000", "NVIDIA RTX A6000", None),
    ("NVIDIA RTX 4000 ADA GENERATION", "NVIDIA RTX 4000 Ada Generation", None),
    ("NVIDIA A40 48GB PCIE", "NVIDIA A40", 46068),
    ("NVIDIA A100 40GB PCIE", "NVIDIA A100-PCIE-40GB", 40960),
    ("NVIDIA A800 40GB PCIE", "NVIDIA A800 40GB PCIe", 40960),
    ("NVIDIA A100 80GB PCIE", "NVIDIA A100 80GB PCIe", 81920),
    ("NVIDIA A800 80GB PCIE", "NVIDIA A800 80GB PCIe", 81920),
    ("NVIDIA A100 80GB SXM", "NVIDIA A100-SXM4-80GB", 81920),
    ("NVIDIA A800 80GB SXM", "NVIDIA A800-SXM4-80GB", 81920),
    ("AMD Radeon RX 6900 XT", "AMD Radeon RX 6900 XT", None),
    ("AMD Radeon RX 6800 XT", "AMD Radeon RX 6800 XT", None),
    ("AMD Radeon RX 6800", "AMD Radeon RX 6800", None),
    ("AMD Radeon RX 6700 XT", "AMD Radeon RX 6700 XT", None),
    ("AMD Radeon RX 6700", "AMD Radeon RX 6700", None),
    ("AMD Radeon RX 6600 XT", "AMD Radeon RX 6600 XT", None),
    ("AMD Radeon RX 6600", "AMD Radeon RX 6600", None),
    ("AMD Radeon RX 6500 XT", "AMD Radeon RX 6500 XT", None),
    ("AMD Radeon RX 6400", "AMD Radeon RX 6400", None),
    ("AMD Radeon RX 7900 XTX", "AMD Radeon RX 7900 XTX", None),
    ("AMD Radeon RX 7900 XT", "AMD Radeon RX 7900 XT", None),
    ("AMD Radeon RX 7800 XT", "AMD Radeon RX 7800 XT", None),
    ("AMD Radeon RX 7700 XT", "AMD Radeon RX 7700 XT", None),
    ("AMD Radeon RX 7600", "AMD Radeon RX 7600", None),
    ("AMD Radeon RX 7500", "AMD Radeon RX 7500", None),
]

NVIDIA_EXO_KEYS = [(key, real, memory) for key, real, memory in EXO_KEYS if key.upper().startswith("NVIDIA")]


@pytest.mark.parametrize("name, memory_mib, chip", NVML_NAMES)
def test_real_nvml_names_resolve(name, memory_mib, chip):
    found = chips.lookup(name, memory_mib)
    assert found is not None, name
    assert found["chip"] == chip
    assert found["vendor"] == "nvidia"
    assert (found["fp32"], found["fp16"], found["int8"]) == tuple(chips.CHIPS[chip][k] for k in ("fp32", "fp16", "int8"))


def test_names_match_in_any_case_and_spelling():
    spellings = ["NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3", "NVIDIA  H100   80GB HBM3 ", "H100_80GB_HBM3"]
    assert set(chips.lookup(name)["chip"] for name in spellings) == set(["NVIDIA H100 SXM5 80GB"])
    assert chips.lookup("NVIDIA A100_SXM4_80GB")["chip"] == "NVIDIA A100 SXM4 80GB"
    assert chips.lookup("AMD Radeon(TM) RX 7900 XTX")["chip"] == "AMD Radeon RX 7900 XTX"
    assert chips.lookup(u"AMD Radeon\u2122 RX 7900 XTX")["chip"] == "AMD Radeon RX 7900 XTX"


@pytest.mark.parametrize("memory_mib, chip", [
    (10010, "NVIDIA GeForce RTX 3080 10GB"),     # a 10 GB card as NVML reports it
    (10240, "NVIDIA GeForce RTX 3080 10GB"),
    (12045, "NVIDIA GeForce RTX 3080 12GB"),
    (12288, "NVIDIA GeForce RTX 3080 12GB"),
])
def test_rtx_3080_10gb_and_12gb_told_apart_by_memory(memory_mib, chip):
    found = chips.lookup("NVIDIA GeForce RTX 3080", memory_mib)
    assert found["chip"] == chip
    assert found["fp32"] == chips.CHIPS[chip]["fp32"]


def test_rtx_3080_without_memory_is_the_smaller_part():
    assert chips.lookup("NVIDIA GeForce RTX 3080")["chip"] == "NVIDIA GeForce RTX 3080 10GB"
    assert chips.CHIPS["NVIDIA GeForce RTX 3080 10GB"]["fp32"] < chips.CHIPS["NVIDIA GeForce RTX 3080 12GB"]["fp32"]


@pytest.mark.parametrize("name, memory_mib, chip", [
    ("NVIDIA A100", 40536, "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100", 81251, "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA A100 PCIe", 40536, "NVIDIA A100 PCIe 40GB"),
    ("NVIDIA A100 PCIe", 81251, "NVIDIA A100 PCIe 80GB"),
    ("NVIDIA GeForce RTX 4060 Ti", 8188, "NVIDIA GeForce RTX 4060 Ti 8GB"),
    ("NVIDIA GeForce RTX 4060 Ti", 16380, "NVIDIA GeForce RTX 4060 Ti 16GB"),
])
def test_names_without_a_size_are_told_apart_by_memory(name, memory_mib, chip):
    assert chips.lookup(name, memory_mib)["chip"] == chip


@pytest.mark.parametrize("exo_key, real_name, memory_mib", EXO_KEYS)
def test_every_exo_chip_flops_key_resolves(exo_key, real_name, memory_mib):
    from_driver = chips.lookup(real_name, memory_mib)
    assert from_driver is not None, real_name
    assert chips.lookup(exo_key, memory_mib) == from_driver
    # each of exo's parts keeps exo's figures, or a datasheet's that exo's equal
    assert "exo CHIP_FLOPS" in from_driver["source"]


@pytest.mark.parametrize("exo_key, real_name, memory_mib", NVIDIA_EXO_KEYS)
def test_laptop_names_get_the_desktop_figures_named_as_laptop_parts(exo_key, real_name, memory_mib):
    desktop = chips.lookup(real_name, memory_mib)
    for name in (real_name + " Laptop GPU", exo_key + " LAPTOP GPU", "LAPTOP GPU " + exo_key):
        laptop = chips.lookup(name, memory_mib)
        assert laptop is not None, name
        assert laptop["chip"] == desktop["chip"] + " Laptop GPU"
        assert (laptop["fp32"], laptop["fp16"], laptop["int8"]) == (desktop["fp32"], desktop["fp16"], desktop["int8"])
        assert laptop["source"].startswith(desktop["source"]) and "Laptop GPU is slower" in laptop["source"]


def test_a_trailing_memory_word_is_dropped_for_an_unknown_name():
    assert chips.lookup("NVIDIA L40S 48GB")["chip"] == "NVIDIA L40S"
    assert chips.lookup("NVIDIA GeForce RTX 4090 24GB")["chip"] == "NVIDIA GeForce RTX 4090"
    # a size word that is part of a chip's name stays
    assert chips.lookup("NVIDIA GeForce RTX 4060 Ti 16GB")["chip"] == "NVIDIA GeForce RTX 4060 Ti 16GB"


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 9999",
    "Unknown Chip",
    "NVIDIA",                          # what exo's own trimming leaves of "NVIDIA A100-SXM4-80GB"
    "NVIDIA Tesla",
    "",
    "   ",
    "Laptop GPU",
    "NVIDIA Imaginary 24GB",
    b"\xff\xfe\xfd",
    None,
])
def test_unknown_names_give_none_not_zero(name):
    assert chips.lookup(name) is None
    assert chips.lookup(name, 24576) is None


def test_bytes_names_work_as_older_nvml_bindings_return_them():
    assert chips.lookup(b"NVIDIA H100 80GB HBM3", 81559) == chips.lookup("NVIDIA H100 80GB HBM3", 81559)
    assert chips.lookup(b"Tesla T4")["chip"] == "NVIDIA T4"
    assert chips.normalise(b"Tesla V100-SXM2-32GB") == "V100 SXM2 32GB"
    # undecodable bytes do not raise
    assert chips.normalise(b"NVIDIA \xff A10") == u"\ufffd A10"


def test_normalise_rejects_what_is_not_a_name():
    with pytest.raises(TypeError, match="str or bytes"):
        chips.normalise(1234)


def test_normalise_is_idempotent_and_drops_vendor_words():
    assert chips.normalise("NVIDIA GeForce RTX 3080 (10 GB)") == "RTX 3080 10GB"
    assert chips.normalise("Tesla V100-PCIE-16GB") == "V100 PCIE 16GB"
    assert chips.normalise("AMD Radeon RX 7900 XTX") == "RX 7900 XTX"
    assert chips.normalise("AMD Instinct MI300X") == "MI300X"
    assert chips.normalise("Quadro RTX 8000") == "RTX 8000"
    for name in chips.CHIPS:
        key = chips.normalise(name)
        assert chips.normalise(key) == key


def test_a_lookup_result_is_a_copy():
    found = chips.lookup("NVIDIA L4")
    found["fp32"] = 0
    assert chips.lookup("NVIDIA L4")["fp32"] == chips.CHIPS["NVIDIA L4"]["fp32"] > 0


@pytest.mark.parametrize("chip", sorted(chips.CHIPS))
def test_every_chip_entry_is_well_formed(chip):
    row = chips.CHIPS[chip]
    assert set(row) == set(["vendor", "fp32", "fp16", "int8", "source"])
    assert row["vendor"] in ("nvidia", "amd", "apple")
    for kind in ("fp32", "fp16", "int8"):
        assert isinstance(row[kind], float) and row[kind] > 0, kind
    assert row["fp16"] >= row["fp32"]
    assert isinstance(row["source"], str) and row["source"].strip()
    # its own name finds it
    assert chips.lookup(chip)["chip"] == chip


def test_chip_names_have_distinct_lookup_keys():
    keys = [chips.normalise(chip) for chip in chips.CHIPS]
    assert len(keys) == len(set(keys))


def test_the_table_covers_the_data_center_parts():
    required = [
        "NVIDIA H100 PCIe", "NVIDIA H100 SXM5 80GB", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA H200 NVL",
        "NVIDIA GH200", "NVIDIA B200", "NVIDIA L40S", "NVIDIA L40", "NVIDIA L4", "NVIDIA A10", "NVIDIA A10G",
        "NVIDIA A30", "NVIDIA T4", "NVIDIA V100 PCIe 16GB", "NVIDIA V100 PCIe 32GB", "NVIDIA V100 SXM2 16GB",
        "NVIDIA V100 SXM2 32GB", "AMD Instinct MI300X", "AMD Instinct MI300A", "AMD Instinct MI325X",
        "AMD Instinct MI250X", "AMD Instinct MI250", "AMD Instinct MI210", "AMD Instinct MI100",
    ]
    assert [chip for chip in required if chip not in chips.CHIPS] == []


def _targets(value):
    return [value] if isinstance(value, str) else [pair[1] for pair in value]


@pytest.mark.parametrize("key", sorted(chips.ALIASES))
def test_every_alias_is_a_normalised_key_with_targets_in_chips(key):
    value = chips.ALIASES[key]
    assert chips.normalise(key) == key
    # an alias never shadows a chip's own name
    assert key not in [chips.normalise(chip) for chip in chips.CHIPS]
    for chip in _targets(value):
        assert chip in chips.CHIPS
    if not isinstance(value, str):
        thresholds = [pair[0] for pair in value]
        assert thresholds == sorted(set(thresholds))


@pytest.mark.parametrize("key", sorted(chips.PCI_IDS))
def test_every_pci_id_is_well_formed_with_targets_in_chips(key):
    assert re.match(r"^[0-9a-f]{4}:[0-9a-f]{4}$", key)
    vendor = {"1002": "amd", "10de": "nvidia"}[key.split(":")[0]]
    for chip in _targets(chips.PCI_IDS[key]):
        assert chips.CHIPS[chip]["vendor"] == vendor


@pytest.mark.parametrize("vendor_id, device_id, chip", [
    ("0x1002", "0x74a1", "AMD Instinct MI300X"),        # sysfs spelling
    ("1002", "74a1", "AMD Instinct MI300X"),
    ("0X1002", "0X74A1", "AMD Instinct MI300X"),
    (0x1002, 0x74a1, "AMD Instinct MI300X"),
    (" 0x1002\n", "0x74a1\n", "AMD Instinct MI300X"),   # as read from a sysfs file
    ("0x1002", "0x74a0", "AMD Instinct MI300A"),
    ("0x1002", "0x74a5", "AMD Instinct MI325X"),
    ("0x1002", "0x7408", "AMD Instinct MI250X"),
    ("0x1002", "0x740c", "AMD Instinct MI250"),
    ("0x1002", "0x740f", "AMD Instinct MI210"),
    ("0x1002", "0x738c", "AMD Instinct MI100"),
    ("0x10de", "0x2330", "NVIDIA H100 SXM5 80GB"),
    ("0x10de", "0x1eb8", "NVIDIA T4"),
])
def test_pci_ids_resolve(vendor_id, device_id, chip):
    assert chips.lookup_pci(vendor_id, device_id) == chip


@pytest.mark.parametrize("memory_mib, chip", [
    (24560, "AMD Radeon RX 7900 XTX"),
    (20464, "AMD Radeon RX 7900 XT"),
    (16368, None),                     # 7900 GRE: same id, not in the table
    (None, "AMD Radeon RX 7900 XT"),   # without VRAM, the smaller part
])
def test_one_pci_id_for_several_radeons_is_told_apart_by_vram(memory_mib, chip):
    assert chips.lookup_pci("0x1002", "0x744c", memory_mib) == chip


def test_unknown_pci_ids_give_none():
    assert chips.lookup_pci("0x1002", "0x0001") is None
    assert chips.lookup_pci("0x8086", "0x56a0") is None


@pytest.mark.parametrize("vendor_id, device_id", [("0x1002", "zzzz"), ("", "74a1"), ("0x10020", "74a1"), (None, "74a1")])
def test_malformed_pci_ids_are_refused_with_a_message(vendor_id, device_id):
    with pytest.raises(ValueError, match="hex digits"):
        chips.lookup_pci(vendor_id, device_id)


@pytest.mark.parametrize("major, minor, family", [
    (3, 7, "kepler"), (5, 2, "maxwell"), (6, 0, "pascal"), (6, 1, "pascal"),
    (7, 0, "volta"), (7, 2, "volta"), (7, 5, "turing"),
    (8, 0, "ampere"), (8, 6, "ampere"), (8, 7, "ampere"), (8, 9, "ada-lovelace"),
    (9, 0, "hopper"), (10, 0, "blackwell"), (10, 3, "blackwell"), (12, 0, "blackwell"), (12, 1, "blackwell"),
])
def test_architecture_of_compute_capability(major, minor, family):
    assert chips.architecture(major, minor) == family


@pytest.mark.parametrize("major, minor", [(4, 0), (11, 0), (13, 0), (0, 0), (9, None), (None, None)])
def test_unknown_compute_capability_gives_none(major, minor):
    assert chips.architecture(major, minor) is None


def test_estimate_flops_arithmetic():
    # 1000 cores at 1500 MHz, one FMA (2 FLOP) per core per clock: 3 TFLOPS
    estimate = chips.estimate_flops(1000, 1500, 9, 0)
    fp16_ratio, int8_ratio = chips.ESTIMATE_RATIOS[9][0][1:]
    assert estimate == {"fp32": 3.0, "fp16": round(3.0 * fp16_ratio, 2), "int8": round(3.0 * int8_ratio, 2)}
    assert chips.estimate_flops(16896, 1980, 9)["fp32"] == round(16896 * 1980 * 2 / 1e6, 2)


def test_estimate_without_minor_takes_the_smallest_ratios_of_that_major():
    with_minor = [chips.estimate_flops(1000, 1500, 8, minor) for minor in (0, 6, 9)]
    without = chips.estimate_flops(1000, 1500, 8)
    assert without["fp16"] == min(e["fp16"] for e in with_minor)
    assert without["int8"] == min(e["int8"] for e in with_minor)


def test_estimate_for_an_unknown_architecture_keeps_fp16_and_int8_at_the_fp32_rate():
    estimate = chips.estimate_flops(1000, 1500, 42)
    assert estimate == {"fp32": 3.0, "fp16": 3.0, "int8": 3.0}


@pytest.mark.parametrize("cores, clock", [(None, 1980), (16896, None), (0, 1980), (16896, 0), (-1, 1980)])
def test_estimate_needs_cores_and_clock(cores, clock):
    assert chips.estimate_flops(cores, clock, 9) is None


# CUDA cores and boost clock from each part's datasheet or architecture whitepaper
@pytest.mark.parametrize("chip, cores, clock_mhz, major, minor", [
    ("NVIDIA H100 SXM5 80GB", 16896, 1980, 9, 0),
    ("NVIDIA A100 SXM4 80GB", 6912, 1410, 8, 0),
    ("NVIDIA A30", 3584, 1440, 8, 0),
    ("NVIDIA A10", 9216, 1695, 8, 6),
    ("NVIDIA L4", 7424, 2040, 8, 9),
    ("NVIDIA L40S", 18176, 2520, 8, 9),
    ("NVIDIA T4", 2560, 1590, 7, 5),
    ("NVIDIA V100 SXM2 32GB", 5120, 1530, 7, 0),
    ("NVIDIA B200", 18944, 1980, 10, 0),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 24064, 2617, 12, 0),
])
def test_estimates_for_known_parts_land_near_their_datasheet_figures(chip, cores, clock_mhz, major, minor):
    estimate = chips.estimate_flops(cores, clock_mhz, major, minor)
    for kind in ("fp32", "fp16", "int8"):
        assert estimate[kind] == pytest.approx(chips.CHIPS[chip][kind], rel=0.05), kind
