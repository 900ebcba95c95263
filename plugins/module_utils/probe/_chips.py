# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GPU can compute, as data: peak figures per chip, the names drivers give the chips,
PCI ids, and CUDA architecture families.

The convention, kept by every row that cites a vendor document:

* Figures are peak TFLOPS (TOPS for int8) of ONE device as the driver presents it (one NVML
  device, one PCI function): a package the driver shows as several devices gets each device's
  share (AMD MI250/MI250X: two GCDs; NVIDIA A16: four GPUs per board).
* No sparsity: where a datasheet gives only "with sparsity" figures, they are halved.
* fp32: FP32 on the general units (CUDA cores, AMD vector units), not tensor/matrix units.
* fp16: dense FP16 on tensor/matrix units, with FP32 accumulation where the vendor gives both
  (GeForce cards run that at half their FP16-accumulate rate). A part without such units gets
  the faster of its native FP16 rate and its FP32 rate: FP16 work can always run in FP32.
* int8: dense INT8 on tensor/matrix units; a part without them gets its DP4A rate (4 x FP32).

Rows citing exo keep the figures of exo's CHIP_FLOPS table (exo-explore/exo e4238f9ef,
exo/topology/device_capabilities.py), which exo compiled from third-party sites. They are kept
so that a node reports what exo itself would, and they do not all follow the convention above
(exo's RTX A-series fp16 is the non-tensor rate, its RTX 2080 Ti int8 repeats the RTX 2080's).
One change: exo gives the GTX 1070/1080/1080 Ti the native Pascal FP16 rate (1/64 of FP32);
here, as the convention says, FP16 work on them runs at the FP32 rate.

Lookups go through `normalise`, so real names in any case, with hyphens or underscores, and
with or without vendor words ("NVIDIA", "Tesla", "GeForce", ...) all meet the same key.
An unknown chip is None, never a row of zeros.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

EXO = "exo CHIP_FLOPS (exo-explore/exo e4238f9ef)"
EXO_PASCAL = EXO + "; fp16 set to the fp32 rate (exo has the 1/64-rate native Pascal FP16)"
EXO_LATER = "exo CHIP_FLOPS as later tinygrad-line tables carry it (entry added for the M3 Ultra, March 2025)"

_A100 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100/), "
         "sparse figures halved; exo CHIP_FLOPS has the same figures")
_A800 = ("NVIDIA A800 40GB/80GB PCIe and A800 SXM4 datasheets, sparse figures halved; "
         "exo CHIP_FLOPS has the same figures")
_A40 = ("NVIDIA A40 datasheet (nvidia.com/en-us/data-center/a40/); "
        "exo CHIP_FLOPS has the same figures")
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/), sparse figures halved"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200/), sparse figures halved"
_GH200 = ("NVIDIA GH200 Grace Hopper Superchip datasheet (nvidia.com/en-us/data-center/grace-hopper-superchip/), "
          "GPU figures, sparse figures halved")
_B200 = ("NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/), per-GPU figures: "
         "FP16 4.5 PFLOPS and INT8 9 POPS with sparsity, halved; FP32 75 TFLOPS")
_B100 = ("NVIDIA HGX B100 specifications (nvidia.com/en-us/data-center/hgx/), eight GPUs: FP16 28 PFLOPS and "
         "INT8 56 POPS with sparsity, FP32 480 TFLOPS; per GPU, sparse figures halved")
_GB200 = ("NVIDIA GB200 NVL72 specifications (nvidia.com/en-us/data-center/gb200-nvl72/), per-GPU figures: "
          "FP16 5 PFLOPS and INT8 10 POPS with sparsity, halved; FP32 80 TFLOPS")
_L40S = "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s/), sparse figures halved"
_L40 = "NVIDIA L40 datasheet (nvidia.com/en-us/data-center/l40/), sparse figures halved"
_L4 = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4/), sparse figures halved"
_A10 = "NVIDIA A10 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a10-gpu/), sparse figures halved"
_A10G = ("AWS and NVIDIA publish no A10G datasheet; figures from Baseten, 'NVIDIA A10 vs A10G for ML model "
         "inference' (baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/)")
_A30 = "NVIDIA A30 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a30-gpu/), sparse figures halved"
_A16 = ("NVIDIA A16 datasheet (nvidia.com/en-us/data-center/products/a16-gpu/): four GPUs per board, "
        "each its own device; per-GPU figures, sparse figures halved")
_A2 = "NVIDIA A2 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a2/), sparse figures halved"
_T4 = "NVIDIA T4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/tesla-t4/)"
_V100 = ("NVIDIA Tesla V100 GPU datasheet (nvidia.com/en-us/data-center/v100/): FP32 and Tensor Performance; "
         "Volta has no INT8 tensor cores, int8 is the DP4A rate, 4 x FP32")
_RTX6000ADA = ("NVIDIA RTX 6000 Ada Generation datasheet and NVIDIA Ada GPU Architecture whitepaper (appendix): "
               "FP16 tensor with FP32 accumulate, INT8 tensor, without sparsity")
_RTXPRO6000 = ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet: 125 TFLOPS FP32 and 4000 AI TOPS "
               "(FP4 with sparsity); fp16 = AI TOPS / 8, int8 = AI TOPS / 4")
_GEFORCE50 = ("NVIDIA GeForce RTX 50 Series specifications (nvidia.com/en-us/geforce/graphics-cards/50-series/): "
              "fp32 = 2 x CUDA cores x boost clock; AI TOPS (FP4 with sparsity) %s: int8 = AI TOPS / 4, "
              "fp16 (FP32 accumulate, half rate on GeForce) = AI TOPS / 16")
_MI300X = ("AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x.html): "
           "peak FP32 vector; FP16 and INT8 without sparsity")
_MI300A = ("AMD Instinct MI300A data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300a.html): "
           "peak FP32 vector; FP16 and INT8 without sparsity")
_MI325X = ("AMD Instinct MI325X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi325x.html): "
           "peak FP32 vector; FP16 and INT8 without sparsity")
_MI250X = ("AMD Instinct MI250X data sheet (amd.com/en/products/accelerators/instinct/mi200/mi250x.html): "
           "47.9 TFLOPS FP32 vector, 383 TFLOPS FP16, 383 TOPS INT8 per module, halved: its two GCDs are two devices")
_MI250 = ("AMD Instinct MI250 data sheet (amd.com/en/products/accelerators/instinct/mi200/mi250.html): "
          "45.3 TFLOPS FP32 vector, 362.1 TFLOPS FP16, 362.1 TOPS INT8 per module, halved: its two GCDs are two devices")
_MI210 = ("AMD Instinct MI210 data sheet (amd.com/en/products/accelerators/instinct/mi200/mi210.html): "
          "peak FP32 vector, FP16 and INT8 matrix")
_MI100 = ("AMD Instinct MI100 data sheet (amd.com/en/products/accelerators/instinct/mi100.html): "
          "peak FP32 vector, FP16 and INT8 matrix")

# name, vendor, fp32, fp16, int8, source
_ROWS = (
    # Apple silicon (exo's table)
    ("Apple M1", "apple", 2.29, 4.58, 9.16, EXO),
    ("Apple M1 Pro", "apple", 5.30, 10.60, 21.20, EXO),
    ("Apple M1 Max", "apple", 10.60, 21.20, 42.40, EXO),
    ("Apple M1 Ultra", "apple", 21.20, 42.40, 84.80, EXO),
    ("Apple M2", "apple", 3.55, 7.10, 14.20, EXO),
    ("Apple M2 Pro", "apple", 5.68, 11.36, 22.72, EXO),
    ("Apple M2 Max", "apple", 13.49, 26.98, 53.96, EXO),
    ("Apple M2 Ultra", "apple", 26.98, 53.96, 107.92, EXO),
    ("Apple M3", "apple", 3.55, 7.10, 14.20, EXO),
    ("Apple M3 Pro", "apple", 4.97, 9.94, 19.88, EXO),
    ("Apple M3 Max", "apple", 14.20, 28.40, 56.80, EXO),
    ("Apple M3 Ultra", "apple", 54.26, 108.52, 217.04, EXO_LATER),
    ("Apple M4", "apple", 4.26, 8.52, 17.04, EXO),
    ("Apple M4 Pro", "apple", 5.72, 11.44, 22.88, EXO),
    ("Apple M4 Max", "apple", 18.03, 36.07, 72.14, EXO),
    ("Apple A13 Bionic", "apple", 0.69, 1.38, 2.76, EXO),
    ("Apple A14 Bionic", "apple", 0.75, 1.50, 3.00, EXO),
    ("Apple A15 Bionic", "apple", 1.37, 2.74, 5.48, EXO),
    ("Apple A16 Bionic", "apple", 1.79, 3.58, 7.16, EXO),
    ("Apple A17 Pro", "apple", 2.15, 4.30, 8.60, EXO),

    # NVIDIA GeForce RTX 50 (Blackwell)
    ("NVIDIA GeForce RTX 5090", "nvidia", 104.8, 209.5, 838.0, _GEFORCE50 % "3352"),
    ("NVIDIA GeForce RTX 5080", "nvidia", 56.3, 112.6, 450.3, _GEFORCE50 % "1801"),
    ("NVIDIA GeForce RTX 5070 Ti", "nvidia", 43.9, 87.9, 351.5, _GEFORCE50 % "1406"),
    ("NVIDIA GeForce RTX 5070", "nvidia", 30.8, 61.8, 247.0, _GEFORCE50 % "988"),
    ("NVIDIA GeForce RTX 5060 Ti", "nvidia", 23.7, 47.4, 189.8, _GEFORCE50 % "759"),

    # NVIDIA GeForce RTX 40/30/20, GTX (exo's table)
    ("NVIDIA GeForce RTX 4090", "nvidia", 82.58, 165.16, 330.32, EXO),
    ("NVIDIA GeForce RTX 4080", "nvidia", 48.74, 97.48, 194.96, EXO),
    ("NVIDIA GeForce RTX 4080 SUPER", "nvidia", 52.0, 104.0, 208.0, EXO),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "nvidia", 40.0, 80.0, 160.0, EXO),
    ("NVIDIA GeForce RTX 4070 Ti", "nvidia", 39.43, 78.86, 157.72, EXO),
    ("NVIDIA GeForce RTX 4070 SUPER", "nvidia", 30.0, 60.0, 120.0, EXO),
    ("NVIDIA GeForce RTX 4070", "nvidia", 29.0, 58.0, 116.0, EXO),
    ("NVIDIA GeForce RTX 4060 Ti 16GB", "nvidia", 22.0, 44.0, 88.0, EXO),
    ("NVIDIA GeForce RTX 4060 Ti 8GB", "nvidia", 22.0, 44.0, 88.0, EXO),
    ("NVIDIA GeForce RTX 3050", "nvidia", 9.11, 18.22, 36.44, EXO),
    ("NVIDIA GeForce RTX 3060", "nvidia", 13.0, 26.0, 52.0, EXO),
    ("NVIDIA GeForce RTX 3060 Ti", "nvidia", 16.2, 32.4, 64.8, EXO),
    ("NVIDIA GeForce RTX 3070", "nvidia", 20.3, 40.6, 81.2, EXO),
    ("NVIDIA GeForce RTX 3070 Ti", "nvidia", 21.8, 43.6, 87.2, EXO),
    ("NVIDIA GeForce RTX 3080 10GB", "nvidia", 29.8, 59.6, 119.2, EXO),
    ("NVIDIA GeForce RTX 3080 12GB", "nvidia", 30.6, 61.2, 122.4, EXO),
    ("NVIDIA GeForce RTX 3080 Ti", "nvidia", 34.1, 68.2, 136.4, EXO),
    ("NVIDIA GeForce RTX 3090", "nvidia", 35.6, 71.2, 142.4, EXO),
    ("NVIDIA GeForce RTX 3090 Ti", "nvidia", 40.0, 80.0, 160.0, EXO),
    ("NVIDIA GeForce RTX 2060", "nvidia", 6.45, 12.9, 25.8, EXO),
    ("NVIDIA GeForce RTX 2060 SUPER", "nvidia", 7.2, 14.4, 28.8, EXO),
    ("NVIDIA GeForce RTX 2070", "nvidia", 7.46, 14.93, 29.86, EXO),
    ("NVIDIA GeForce RTX 2070 SUPER", "nvidia", 9.06, 18.12, 36.24, EXO),
    ("NVIDIA GeForce RTX 2080", "nvidia", 10.07, 20.14, 40.28, EXO),
    ("NVIDIA GeForce RTX 2080 Ti", "nvidia", 13.45, 26.9, 40.28, EXO),
    ("NVIDIA GeForce RTX 2080 SUPER", "nvidia", 11.15, 22.30, 44.60, EXO),
    ("NVIDIA TITAN RTX", "nvidia", 16.31, 32.62, 65.24, EXO),
    ("NVIDIA GeForce GTX 1050 Ti", "nvidia", 2.0, 4.0, 8.0, EXO),
    ("NVIDIA GeForce GTX 1070", "nvidia", 6.463, 6.463, 25.852, EXO_PASCAL),
    ("NVIDIA GeForce GTX 1080", "nvidia", 8.873, 8.873, 35.492, EXO_PASCAL),
    ("NVIDIA GeForce GTX 1080 Ti", "nvidia", 11.34, 11.34, 45.36, EXO_PASCAL),
    ("NVIDIA GeForce GTX 1660 Ti", "nvidia", 4.8, 9.6, 19.2, EXO),

    # NVIDIA workstation
    ("NVIDIA RTX A2000", "nvidia", 7.99, 7.99, 31.91, EXO),
    ("NVIDIA RTX A4000", "nvidia", 19.17, 19.17, 76.68, EXO),
    ("NVIDIA RTX A4500", "nvidia", 23.65, 23.65, 94.6, EXO),
    ("NVIDIA RTX A5000", "nvidia", 27.8, 27.8, 111.2, EXO),
    ("NVIDIA RTX A6000", "nvidia", 38.71, 38.71, 154.84, EXO),
    ("NVIDIA RTX 4000 Ada Generation", "nvidia", 26.7, 26.7, 258.0, EXO),
    ("NVIDIA RTX 6000 Ada Generation", "nvidia", 91.1, 364.2, 728.5, _RTX6000ADA),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "nvidia", 125.0, 500.0, 1000.0, _RTXPRO6000),

    # NVIDIA data center: Blackwell, Hopper
    ("NVIDIA B200", "nvidia", 75.0, 2250.0, 4500.0, _B200),
    ("NVIDIA B100", "nvidia", 60.0, 1750.0, 3500.0, _B100),
    ("NVIDIA GB200", "nvidia", 80.0, 2500.0, 5000.0, _GB200),
    ("NVIDIA H100 SXM5 80GB", "nvidia", 67.0, 989.5, 1979.0, _H100),
    ("NVIDIA H100 PCIe", "nvidia", 51.0, 756.5, 1513.0, _H100),
    ("NVIDIA H100 NVL", "nvidia", 60.0, 835.5, 1670.5, _H100),
    ("NVIDIA H200", "nvidia", 67.0, 989.5, 1979.0, _H200),
    ("NVIDIA H200 NVL", "nvidia", 60.0, 835.5, 1670.5, _H200),
    ("NVIDIA GH200", "nvidia", 67.0, 989.5, 1979.0, _GH200),

    # NVIDIA data center: Ada, Ampere, Turing, Volta
    ("NVIDIA L40S", "nvidia", 91.6, 362.05, 733.0, _L40S),
    ("NVIDIA L40", "nvidia", 90.5, 181.05, 362.07, _L40),
    ("NVIDIA L4", "nvidia", 30.3, 121.0, 242.5, _L4),
    ("NVIDIA A100 SXM4 40GB", "nvidia", 19.5, 312.0, 624.0, _A100),
    ("NVIDIA A100 SXM4 80GB", "nvidia", 19.5, 312.0, 624.0, _A100),
    ("NVIDIA A100 PCIe 40GB", "nvidia", 19.5, 312.0, 624.0, _A100),
    ("NVIDIA A100 PCIe 80GB", "nvidia", 19.5, 312.0, 624.0, _A100),
    ("NVIDIA A800 SXM4 80GB", "nvidia", 19.5, 312.0, 624.0, _A800),
    ("NVIDIA A800 PCIe 40GB", "nvidia", 19.5, 312.0, 624.0, _A800),
    ("NVIDIA A800 PCIe 80GB", "nvidia", 19.5, 312.0, 624.0, _A800),
    ("NVIDIA A40", "nvidia", 37.4, 149.7, 299.3, _A40),
    ("NVIDIA A30", "nvidia", 10.3, 165.0, 330.0, _A30),
    ("NVIDIA A10", "nvidia", 31.2, 125.0, 250.0, _A10),
    ("NVIDIA A10G", "nvidia", 35.0, 70.0, 140.0, _A10G),
    ("NVIDIA A16", "nvidia", 4.5, 17.9, 35.9, _A16),
    ("NVIDIA A2", "nvidia", 4.5, 18.0, 36.0, _A2),
    ("NVIDIA T4", "nvidia", 8.1, 65.0, 130.0, _T4),
    ("NVIDIA V100 SXM2 16GB", "nvidia", 15.7, 125.0, 62.8, _V100),
    ("NVIDIA V100 SXM2 32GB", "nvidia", 15.7, 125.0, 62.8, _V100),
    ("NVIDIA V100 PCIe 16GB", "nvidia", 14.0, 112.0, 56.0, _V100),
    ("NVIDIA V100 PCIe 32GB", "nvidia", 14.0, 112.0, 56.0, _V100),
    ("NVIDIA V100S PCIe 32GB", "nvidia", 16.4, 130.0, 65.6, _V100),

    # AMD Instinct
    ("AMD Instinct MI325X", "amd", 163.4, 1307.4, 2614.9, _MI325X),
    ("AMD Instinct MI300X", "amd", 163.4, 1307.4, 2614.9, _MI300X),
    ("AMD Instinct MI300A", "amd", 122.6, 980.6, 1961.2, _MI300A),
    ("AMD Instinct MI250X", "amd", 23.95, 191.5, 191.5, _MI250X),
    ("AMD Instinct MI250", "amd", 22.65, 181.05, 181.05, _MI250),
    ("AMD Instinct MI210", "amd", 22.6, 181.0, 181.0, _MI210),
    ("AMD Instinct MI100", "amd", 23.1, 184.6, 184.6, _MI100),

    # AMD Radeon (exo's table)
    ("AMD Radeon RX 7900 XTX", "amd", 61.4, 122.8, 245.6, EXO),
    ("AMD Radeon RX 7900 XT", "amd", 53.4, 106.8, 213.6, EXO),
    ("AMD Radeon RX 7800 XT", "amd", 42.6, 85.2, 170.4, EXO),
    ("AMD Radeon RX 7700 XT", "amd", 34.2, 68.4, 136.8, EXO),
    ("AMD Radeon RX 7600", "amd", 21.5, 43.0, 86.0, EXO),
    ("AMD Radeon RX 7500", "amd", 16.2, 32.4, 64.8, EXO),
    ("AMD Radeon RX 6900 XT", "amd", 23.04, 46.08, 92.16, EXO),
    ("AMD Radeon RX 6800 XT", "amd", 20.74, 41.48, 82.96, EXO),
    ("AMD Radeon RX 6800", "amd", 16.17, 32.34, 64.68, EXO),
    ("AMD Radeon RX 6700 XT", "amd", 13.21, 26.42, 52.84, EXO),
    ("AMD Radeon RX 6700", "amd", 11.4, 22.8, 45.6, EXO),
    ("AMD Radeon RX 6600 XT", "amd", 10.6, 21.2, 42.4, EXO),
    ("AMD Radeon RX 6600", "amd", 8.93, 17.86, 35.72, EXO),
    ("AMD Radeon RX 6500 XT", "amd", 5.77, 11.54, 23.08, EXO),
    ("AMD Radeon RX 6400", "amd", 3.57, 7.14, 14.28, EXO),
)

CHIPS = dict(
    (name, {"vendor": vendor, "fp32": fp32, "fp16": fp16, "int8": int8, "source": source})
    for name, vendor, fp32, fp16, int8, source in _ROWS
)

# Normalised real name -> chip, or -> ((min_memory_mib, chip), ...) in ascending order where one
# name covers parts that differ. NVML reports a little less than the marketing size (a 10 GB card
# shows about 10010 MiB, a 12 GB one about 12045 MiB), so each threshold sits between two sizes.
# A chip's own name needs no alias: its normalised form is found directly.
ALIASES = {
    # NVML names that differ from the chip names
    "H100 80GB HBM3": "NVIDIA H100 SXM5 80GB",
    "GH200 480GB": "NVIDIA GH200",
    "GH200 144G HBM3E": "NVIDIA GH200",
    "A100 80GB PCIE": "NVIDIA A100 PCIe 80GB",
    "A100 SXM 80GB": "NVIDIA A100 SXM4 80GB",
    "A800 80GB PCIE": "NVIDIA A800 PCIe 80GB",
    "A800 40GB PCIE": "NVIDIA A800 PCIe 40GB",
    # names that do not say the memory size
    "A100": ((0, "NVIDIA A100 SXM4 40GB"), (60000, "NVIDIA A100 SXM4 80GB")),
    "A100 SXM4": ((0, "NVIDIA A100 SXM4 40GB"), (60000, "NVIDIA A100 SXM4 80GB")),
    "A100 PCIE": ((0, "NVIDIA A100 PCIe 40GB"), (60000, "NVIDIA A100 PCIe 80GB")),
    "V100 SXM2": ((0, "NVIDIA V100 SXM2 16GB"), (24000, "NVIDIA V100 SXM2 32GB")),
    "V100 PCIE": ((0, "NVIDIA V100 PCIe 16GB"), (24000, "NVIDIA V100 PCIe 32GB")),
    "RTX 3080": ((0, "NVIDIA GeForce RTX 3080 10GB"), (11000, "NVIDIA GeForce RTX 3080 12GB")),
    "RTX 4060 TI": ((0, "NVIDIA GeForce RTX 4060 Ti 8GB"), (12000, "NVIDIA GeForce RTX 4060 Ti 16GB")),
    # exo's own key spellings
    "A40 48GB PCIE": "NVIDIA A40",
    "A100 40GB PCIE": "NVIDIA A100 PCIe 40GB",
    "A100 80GB SXM": "NVIDIA A100 SXM4 80GB",
    "A800 80GB SXM": "NVIDIA A800 SXM4 80GB",
}

# "LAPTOP GPU" before or after a desktop name: exo gives laptop parts the desktop figures, and
# so does this table, naming the laptop part and marking the figures as an upper bound.
LAPTOP_WORDS = "LAPTOP GPU"
LAPTOP_NOTE = "; figures of the desktop part, as exo uses them: the Laptop GPU is slower"

# "vendor:device" in lower-case hex -> chip, or -> ((min_memory_mib, chip), ...) as in ALIASES.
# Names per the PCI ID database, pci.ids 2026.05.24 (pciutils/pciids).
PCI_IDS = {
    # AMD Instinct: "Arcturus", "Aldebaran/MI200", "Aqua Vanjaram"
    "1002:738c": "AMD Instinct MI100",
    "1002:738e": "AMD Instinct MI100",
    "1002:7408": "AMD Instinct MI250X",
    # "Instinct MI250X/MI250": both carry 64 GB per GCD, so the slower MI250 is the safe reading
    "1002:740c": "AMD Instinct MI250",
    "1002:740f": "AMD Instinct MI210",
    "1002:74a0": "AMD Instinct MI300A",
    "1002:74a1": "AMD Instinct MI300X",
    "1002:74a9": "AMD Instinct MI300X",
    "1002:74b5": "AMD Instinct MI300X",
    "1002:74bd": "AMD Instinct MI300X",
    "1002:74a5": "AMD Instinct MI325X",
    "1002:74b9": "AMD Instinct MI325X",
    # AMD Radeon: one id, several cards told apart by VRAM (7900 GRE/7900M, 16 GB, are not here)
    "1002:744c": ((18000, "AMD Radeon RX 7900 XT"), (22000, "AMD Radeon RX 7900 XTX")),
    "1002:747e": ((10000, "AMD Radeon RX 7700 XT"), (14000, "AMD Radeon RX 7800 XT")),
    "1002:73df": ((9000, "AMD Radeon RX 6700"), (11000, "AMD Radeon RX 6700 XT")),
    "1002:73af": "AMD Radeon RX 6900 XT",
    "1002:749f": "AMD Radeon RX 7500",
    # NVIDIA, for hosts whose driver is missing
    "10de:2901": "NVIDIA B200",
    "10de:2941": "NVIDIA GB200",
    "10de:2330": "NVIDIA H100 SXM5 80GB",
    "10de:2331": "NVIDIA H100 PCIe",
    "10de:2321": "NVIDIA H100 NVL",
    "10de:2335": "NVIDIA H200",
    "10de:233b": "NVIDIA H200 NVL",
    "10de:2342": "NVIDIA GH200",
    "10de:2348": "NVIDIA GH200",
    "10de:26b9": "NVIDIA L40S",
    "10de:26b5": "NVIDIA L40",
    "10de:27b8": "NVIDIA L4",
    "10de:20b0": "NVIDIA A100 SXM4 40GB",
    "10de:20b2": "NVIDIA A100 SXM4 80GB",
    "10de:20b1": "NVIDIA A100 PCIe 40GB",
    "10de:20f1": "NVIDIA A100 PCIe 40GB",
    "10de:20b5": "NVIDIA A100 PCIe 80GB",
    "10de:20f3": "NVIDIA A800 SXM4 80GB",
    "10de:20f5": "NVIDIA A800 PCIe 80GB",
    "10de:20f6": "NVIDIA A800 PCIe 40GB",
    "10de:2235": "NVIDIA A40",
    "10de:20b7": "NVIDIA A30",
    "10de:2236": "NVIDIA A10",
    "10de:2237": "NVIDIA A10G",
    "10de:1eb8": "NVIDIA T4",
    "10de:1db1": "NVIDIA V100 SXM2 16GB",
    "10de:1df5": "NVIDIA V100 SXM2 16GB",
    "10de:1db5": "NVIDIA V100 SXM2 32GB",
    "10de:1db4": "NVIDIA V100 PCIe 16GB",
    "10de:1db6": "NVIDIA V100 PCIe 32GB",
    "10de:1df6": "NVIDIA V100S PCIe 32GB",
    "10de:2bb1": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "10de:26b1": "NVIDIA RTX 6000 Ada Generation",
    "10de:27b2": "NVIDIA RTX 4000 Ada Generation",
    "10de:2230": "NVIDIA RTX A6000",
    "10de:2231": "NVIDIA RTX A5000",
    "10de:2232": "NVIDIA RTX A4500",
    "10de:24b0": "NVIDIA RTX A4000",
    "10de:2531": "NVIDIA RTX A2000",
    "10de:2571": "NVIDIA RTX A2000",
    "10de:2b85": "NVIDIA GeForce RTX 5090",
    "10de:2c02": "NVIDIA GeForce RTX 5080",
    "10de:2c05": "NVIDIA GeForce RTX 5070 Ti",
    "10de:2f04": "NVIDIA GeForce RTX 5070",
    "10de:2d04": "NVIDIA GeForce RTX 5060 Ti",
    "10de:2684": "NVIDIA GeForce RTX 4090",
    "10de:2203": "NVIDIA GeForce RTX 3090 Ti",
    "10de:2204": "NVIDIA GeForce RTX 3090",
    "10de:2208": "NVIDIA GeForce RTX 3080 Ti",
    "10de:2206": "NVIDIA GeForce RTX 3080 10GB",
    "10de:2216": "NVIDIA GeForce RTX 3080 10GB",
    "10de:220a": "NVIDIA GeForce RTX 3080 12GB",
    "10de:1e02": "NVIDIA TITAN RTX",
}

# CUDA compute capability -> family, as NVIDIA's gpu-feature-discovery labels nvidia.com/gpu.family:
# major -> ((first minor, family), ...); a minor takes the last row at or below it.
ARCHITECTURES = {
    1: ((0, "tesla"),),
    2: ((0, "fermi"),),
    3: ((0, "kepler"),),
    5: ((0, "maxwell"),),
    6: ((0, "pascal"),),
    7: ((0, "volta"), (5, "turing")),
    8: ((0, "ampere"), (9, "ada-lovelace")),
    9: ((0, "hopper"),),
    10: ((0, "blackwell"),),
    12: ((0, "blackwell"),),
}

# Rough: dense FP16-tensor and INT8 rates as multiples of the FP32 rate, per compute capability,
# read off the datasheet parts of each generation (data-center and workstation parts, whose
# FP32-accumulate tensor rate is full; GeForce gets half that FP16 figure).
# major -> ((first minor, fp16_per_fp32, int8_per_fp32), ...)
ESTIMATE_RATIOS = {
    3: ((0, 1.0, 1.0),),
    5: ((0, 1.0, 1.0),),
    6: ((0, 2.0, 1.0), (1, 1.0, 4.0)),       # P100: 2x FP16, no DP4A; GP10x: DP4A, slow FP16
    7: ((0, 8.0, 4.0), (5, 8.0, 16.0)),      # V100 (no INT8 tensor cores); T4
    8: ((0, 16.0, 32.0), (6, 4.0, 8.0)),     # A100, A30; GA10x (A10, A40) and Ada (L4, L40S)
    9: ((0, 14.8, 29.6),),                   # H100, H200
    10: ((0, 30.0, 60.0),),                  # B200
    12: ((0, 4.0, 8.0),),                    # RTX PRO 6000 Blackwell
}
# Without a known ratio FP16 and INT8 work can still run at the FP32 rate.
DEFAULT_RATIO = (1.0, 1.0)

_VENDOR_WORDS = frozenset(("NVIDIA", "TESLA", "GEFORCE", "QUADRO", "AMD", "ATI", "RADEON", "INSTINCT"))
_MARKS = re.compile(u"\\(TM\\)|\\(R\\)|\u2122|\u00ae", re.IGNORECASE)
_SEPARATORS = re.compile(r"[-_(),]")
_SIZE_WORD = re.compile(r"^\d+(\.\d+)?GB$")
_HEX_ID = re.compile(r"^[0-9a-f]{1,4}$")


def normalise(name):
    """The lookup key of a chip name: upper case, vendor words dropped, "-", "_", "(", ")" and ","
    read as spaces, "10 GB" joined to "10GB", whitespace collapsed. Bytes are decoded as UTF-8."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", errors="replace")
    if not isinstance(name, str):
        raise TypeError("chip name must be str or bytes, got %s (%r)" % (type(name).__name__, name))
    text = _SEPARATORS.sub(" ", _MARKS.sub(" ", name)).upper()
    words = []
    for word in text.split():
        if word in _VENDOR_WORDS:
            continue
        if word == "GB" and words and words[-1].isdigit():
            words[-1] += "GB"
            continue
        words.append(word)
    return " ".join(words)


def _canonical_index():
    index = {}
    for chip in CHIPS:
        key = normalise(chip)
        if key in index:
            raise ValueError("chips %r and %r share the lookup key %r: rename one" % (index[key], chip, key))
        index[key] = chip
    return index


_CANONICAL = _canonical_index()


def _pick(target, memory_mib):
    """A chip name from an ALIASES or PCI_IDS value; without memory, the smallest part."""
    if target is None or isinstance(target, str):
        return target
    if memory_mib is None:
        return target[0][1]
    chosen = None
    for min_memory_mib, chip in target:
        if memory_mib >= min_memory_mib:
            chosen = chip
    return chosen


def _resolve(key, memory_mib):
    if key in _CANONICAL:
        return _CANONICAL[key]
    return _pick(ALIASES.get(key), memory_mib)


def _without_size_word(key):
    words = key.split()
    if len(words) > 1 and _SIZE_WORD.match(words[-1]):
        return " ".join(words[:-1])
    return None


def _without_laptop_words(key):
    if key.endswith(" " + LAPTOP_WORDS):
        return key[:-len(LAPTOP_WORDS) - 1]
    if key.startswith(LAPTOP_WORDS + " "):
        return key[len(LAPTOP_WORDS) + 1:]
    return None


def _find(key, memory_mib):
    chip = _resolve(key, memory_mib)
    if chip is None:
        shorter = _without_size_word(key)
        if shorter:
            chip = _resolve(shorter, memory_mib)
    return chip


def _result(chip, laptop=False):
    row = CHIPS[chip]
    result = {"chip": chip, "vendor": row["vendor"], "fp32": row["fp32"], "fp16": row["fp16"],
              "int8": row["int8"], "source": row["source"]}
    if laptop:
        result["chip"] += " Laptop GPU"
        result["source"] += LAPTOP_NOTE
    return result


def lookup(name, memory_mib=None):
    """{"chip", "vendor", "fp32", "fp16", "int8", "source"} for a chip name as NVML, amdsmi or
    system_profiler gives it, or None when the chip is unknown. memory_mib (the device's total
    memory) tells apart parts that share a name."""
    if name is None:
        return None
    key = normalise(name)
    if not key:
        return None
    chip = _find(key, memory_mib)
    if chip is not None:
        return _result(chip)
    desktop = _without_laptop_words(key)
    if desktop:
        chip = _find(desktop, memory_mib)
        if chip is not None:
            return _result(chip, laptop=True)
    return None


def _pci_part(value, what):
    if isinstance(value, int) and not isinstance(value, bool):
        value = "%x" % value
    if isinstance(value, bytes):
        value = value.decode("ascii", errors="replace")
    text = value.strip().lower() if isinstance(value, str) else ""
    if text.startswith("0x"):
        text = text[2:]
    if not _HEX_ID.match(text):
        raise ValueError("PCI %s must be 1 to 4 hex digits, optionally after 0x (as in sysfs: 0x1002), "
                         "got %r" % (what, value))
    return text.zfill(4)


def lookup_pci(vendor_id, device_id, memory_mib=None):
    """The chip of a PCI vendor and device id ("0x1002"/"1002"/0x1002), or None when unknown.
    memory_mib (VRAM) tells apart cards that share an id."""
    key = "%s:%s" % (_pci_part(vendor_id, "vendor id"), _pci_part(device_id, "device id"))
    return _pick(PCI_IDS.get(key), memory_mib)


def _by_minor(rows, minor):
    chosen = None
    for row in rows:
        if minor >= row[0]:
            chosen = row
    return chosen


def architecture(major, minor):
    """The GPU family of a CUDA compute capability ("hopper" for 9.0), or None when unknown."""
    rows = ARCHITECTURES.get(major)
    if rows is None or minor is None:
        return None
    row = _by_minor(rows, minor)
    return row[1] if row else None


def estimate_flops(cores, max_sm_clock_mhz, major, minor=None):
    """Rough {"fp32", "fp16", "int8"} TFLOPS of an NVIDIA part missing from the table: FP32 is
    cores x max SM clock x 2 (one FMA per core per clock); FP16 and INT8 scale it by
    ESTIMATE_RATIOS. Without the minor version the smallest ratios of that major are used.
    None when the core count or the clock is missing."""
    if not cores or not max_sm_clock_mhz or cores < 0 or max_sm_clock_mhz < 0:
        return None
    fp32 = cores * max_sm_clock_mhz * 2 / 1e6
    rows = ESTIMATE_RATIOS.get(major)
    if rows is None:
        fp16_ratio, int8_ratio = DEFAULT_RATIO
    elif minor is None:
        fp16_ratio = min(row[1] for row in rows)
        int8_ratio = min(row[2] for row in rows)
    else:
        fp16_ratio, int8_ratio = _by_minor(rows, minor)[1:]
    return {"fp32": round(fp32, 2), "fp16": round(fp32 * fp16_ratio, 2), "int8": round(fp32 * int8_ratio, 2)}
