# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Simulated CUDA driver for tests: a C ``libcuda.so.1`` that answers from a table of recorded answers.

Typical use::

    from tests.simulated import cuda
    lib_dir = cuda.build()
    config = cuda.write_config(str(tmp_path / "cuda.conf"), cuda.recorded_answers())
    env = dict(os.environ, **cuda.environment(lib_dir, config), CUDA_VISIBLE_DEVICES="0")

The simulation has no rules of its own for CUDA_VISIBLE_DEVICES: it is a table. Each answer says,
for one value of CUDA_VISIBLE_DEVICES and of CUDA_DEVICE_ORDER (None: unset), what cuInit returns
and, when it succeeds, the devices in CUDA's order (UUID without its tag, PCI bus id).
``recorded_answers()`` turns the real driver's answers on the real H100 host
(tests/fixtures/real-h100/cuda_visible_devices.json: 26 values, each with and without
CUDA_DEVICE_ORDER=PCI_BUS_ID) into such a table. There, a list of UUIDs is what
cuDeviceGetCount and cuDeviceGetUuid gave; "cuInit=101" is cuInit's error; an empty list is
cuInit's CUDA_ERROR_NO_DEVICE (100), as _visible.py records for that driver. The fixture does not
record the PCI bus id form cuDeviceGetPCIBusId writes; the table gives the H100's bus id in NVML's
form, which the probe reads like any other.

An environment the table does not hold makes cuInit return CUDA_ERROR_UNKNOWN (999) with a line
on stderr. ``hang=True`` makes cuInit block forever, for the deadline.
"""

import json
import os

from tests.simulated import nvml as simnvml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "libcuda.c")
LIBRARY_NAME = "libcuda.so.1"
CONFIG_ENV = "SIMULATED_CUDA_CONFIG"
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-shared", "-fvisibility=hidden",
          "-Wl,-soname," + LIBRARY_NAME)
REAL_H100_ANSWERS = os.path.join(simnvml.REPO_ROOT, "tests", "fixtures", "real-h100", "cuda_visible_devices.json")
# The real H100's PCI bus id (NVML's form); the fixture's answers name the GPU by UUID only.
REAL_H100_BUS_ID = "00000000:00:06.0"
NO_DEVICE = 100


def build():
    """Compile the library (once per source version) and return the directory holding it."""
    cache = os.environ.get(simnvml.CACHE_ENV) or os.path.join(simnvml.REPO_ROOT, ".build", "simulated-nvml")
    return simnvml.build_library(SOURCE, LIBRARY_NAME, CFLAGS, os.path.join(cache, "cuda"))


def environment(lib_dir, config_path):
    """Variables that make a new process load this library with this table."""
    return {"LD_LIBRARY_PATH": lib_dir, CONFIG_ENV: config_path}


def answer(visible, order, init=0, devices=()):
    """One entry of the table: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (None: unset), cuInit's code and,
    when it is 0, the devices as (uuid, pci bus id)."""
    return {"visible": visible, "order": order, "init": init, "devices": list(devices)}


def recorded_answers(path=REAL_H100_ANSWERS, bus_id=REAL_H100_BUS_ID):
    """The real driver's answers of the fixture as a table; the record of each answer is kept under "recorded"."""
    with open(path) as handle:
        records = json.load(handle)
    table = []
    for record in records:
        seen = record["cuda_driver_sees"]
        if isinstance(seen, str):
            init, devices = int(seen.split("=", 1)[1]), []
        else:
            init, devices = (0, [(uuid, bus_id) for uuid in seen]) if seen else (NO_DEVICE, [])
        entry = answer(record["CUDA_VISIBLE_DEVICES"], record["CUDA_DEVICE_ORDER"], init, devices)
        entry["recorded"] = record
        table.append(entry)
    return table


def _token(value):
    if value is None:
        return "-"
    return "=" + "".join(chr(b) if 0x21 <= b < 0x7F and b != 0x25 else "%%%02X" % b
                         for b in bytearray(value.encode("utf-8")))


def _untagged(uuid):
    tag, sep, rest = uuid.partition("-")
    return rest if sep and tag in ("GPU", "MIG") else uuid


def write_config(path, answers, hang=False):
    """Write the table for the library at path and return path."""
    lines = ["# simulated CUDA driver: recorded answers (tests/simulated/cuda.py)"]
    if hang:
        lines.append("hang_in=cuInit")
    for entry in answers:
        devices = ",".join("%s@%s" % (_untagged(uuid), bus) for uuid, bus in entry["devices"]) or "-"
        lines.append("answer=%s %s %d %s" % (_token(entry["visible"]), _token(entry["order"]), entry["init"], devices))
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path
