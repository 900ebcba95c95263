#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: device_facts
short_description: Probe what a host can really compute for exo, safely
version_added: 0.1.0
description:
  - Gathers C(device_capabilities), that is the GPUs NVML sees, the display devices on the PCI bus and their
    kernel drivers, AMD GPUs, which GPUs a CUDA process would see under the current
    E(CUDA_VISIBLE_DEVICES), the backend tinygrad would select, the host's CPUs and memory, and the
    capabilities an exo node on this host would advertise.
  - Never fails because of the host. Missing libraries (nvidia-ml-py, psutil, tinygrad), a missing or
    mismatched driver, a GPU that fell off the bus or a crashing library are reported in the facts
    (C(nvml.status), C(errors)) and the host falls back to the CPU backend with a reason.
  - NVML, vendor libraries and tinygrad's device selection each run in a child process with a
    deadline (O(timeout)); a stage that hangs, even in the kernel, is abandoned, so the module returns
    within the deadline plus a small margin.
  - Changes nothing on the host. When run as root, tinygrad's selection runs in a private mount
    namespace with C(/sys) read-only, and with the variables that keep each tinygrad version off
    its PCI fallback, which would otherwise unbind kernel drivers.
  - Can run inside M(ansible.builtin.gather_facts) through C(facts_modules).
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  timeout:
    description:
      - Deadline in seconds for the risky stages (NVML, AMD libraries, tinygrad), which run at once.
      - A stage that misses it is abandoned and reported with kind C(timeout).
    type: float
    default: 10.0
  tinygrad:
    description:
      - Whether to ask tinygrad which backend it would select.
      - Selecting opens devices (a CUDA context, GPU queues) and takes about a second; turn it off
        for a quick inventory.
    type: bool
    default: true
  tinygrad_python:
    description:
      - The Python interpreter whose tinygrad to probe, for example the one of exo's virtualenv
        (C(/opt/exo/bin/python)).
      - Defaults to the interpreter running this module.
    type: path
  rootfs:
    description:
      - Where the host's C(/sys) and C(/proc) are read, for inspecting a mounted image or a simulated host.
    type: path
    default: /
requirements:
  - nvidia-ml-py on the target to see NVIDIA GPUs (reported, not required)
  - psutil on the target (optional; C(/proc) is read otherwise)
  - tinygrad on the target or in O(tinygrad_python) to learn its backend (optional)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: N/A
    details: The module changes nothing.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
notes:
  - Supports check mode; it never changes anything.
  - All values the host could not give are V(null), never a made-up V(0); see C(errors).
  - C(docs/facts.md) in the collection shows every key of C(device_capabilities) with an example.
"""

EXAMPLES = r"""
- name: Probe the hosts
  gpufleet.exo.device_facts:

- name: Show what exo would use
  ansible.builtin.debug:
    msg: "{{ ansible_facts.device_capabilities.backend }}: {{ ansible_facts.device_capabilities.exo }}"

- name: Quick inventory without tinygrad's device selection
  gpufleet.exo.device_facts:
    tinygrad: false
    timeout: 5

- name: Probe the tinygrad that exo's virtualenv runs
  gpufleet.exo.device_facts:
    tinygrad_python: /opt/exo/bin/python

# As part of fact gathering, in a play: gather_facts reads the variable ansible_facts_modules
# (module_defaults of gather_facts would pass facts_modules on to setup, which refuses it).
- name: Gather the standard facts and the device facts
  hosts: gpu_hosts
  gather_facts: true
  vars:
    ansible_facts_modules: [ansible.builtin.setup, gpufleet.exo.device_facts]
    ansible_facts_parallel: false
  tasks: []
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    device_capabilities:
      description: What this host can compute. See docs/facts.md for every key and an example.
      returned: always
      type: dict
      contains:
        schema_version:
          description: Version of this structure.
          type: int
          sample: 1
        backend:
          description: What an exo node here would run on, V(cuda), V(nv), V(amd) or V(cpu).
          type: str
          sample: cuda
        fallback_reason:
          description: Why the backend is V(cpu); V(null) otherwise.
          type: str
          sample: "no GPU on the PCI bus; tinygrad 0.14.0 found no usable device (no usable devices)"
        driver_needed:
          description: NVIDIA GPU hardware is on the bus but its driver is missing or not loaded.
          type: bool
        driver_reason:
          description: Why C(driver_needed) is what it is.
          type: str
        exo:
          description: exo's DeviceCapabilities (model, chip, memory in MiB, flops in TFLOPS) for the
            device an exo node here would use.
          type: dict
          sample: {model: "Linux Box (NVIDIA H100 80GB HBM3)", chip: "NVIDIA H100 SXM5 80GB", memory: 81559,
                   flops: {fp32: 66.9, fp16: 989.4, int8: 1978.9}}
        gpus:
          description: Every GPU NVML sees, in NVML index order, with index, minor, uuid, name, chip,
            memory_mib, pci_bus_id, compute_capability, architecture, mig, numa_node, cpu_list,
            flops (with C(source) V(table), V(estimated) or V(unknown)) and health.
          - C(health) is what NVML says about the GPU's fitness (ECC, remapped rows, retired pages,
            persistence and compute mode, PCIe link, temperature, clock event reasons, NVLink fabric)
            with C(verdict) V(ok), V(degraded) or V(unusable) and its C(reasons).
          type: list
          elements: dict
        visible:
          description: The GPUs a process started with this environment would see, by the CUDA driver's
            rules for E(CUDA_VISIBLE_DEVICES) and E(CUDA_DEVICE_ORDER) (docs/facts.md), with
            C(cuda_visible_devices), C(device_order), C(devices), C(invalid_entry) (the entry where the
            driver stops reading the list) and C(cuda_init_error), V(null) unless the list leaves CUDA
            no GPU; then C(code) (V(100) no device, V(101) a device named twice), C(name) and C(reason).
          type: dict
        pci:
          description: Display-class PCI devices of NVIDIA, AMD and Intel with the kernel driver bound
            to each (V(none) when unbound).
          type: list
          elements: dict
        nvswitches:
          description:
            - NVSwitch devices on the PCI bus (NVIDIA, class 0680) with bus_id, device_id and driver; where there
              are any, the GPUs need the fabric manager (the driver role installs it).
          type: list
          elements: dict
        nvml:
          description: NVML's status (V(ok), V(not_installed), V(library_not_found), V(driver_not_loaded),
            V(version_mismatch), V(no_permission), V(gpu_lost), V(timeout), V(error)), message,
            driver_version, cuda_driver_version and library_version.
          type: dict
        amd:
          description: AMD GPUs with VRAM from sysfs, named by amdsmi or pyamdgpuinfo when installed.
          type: list
          elements: dict
        tinygrad:
          description: tinygrad's version, the backend its C(Device.DEFAULT) selects here or why none,
            and the environment that selects each backend for that version.
          type: dict
        host:
          description: CPU model, logical CPUs, NUMA nodes and memory in MiB.
          type: dict
        libraries:
          description: Versions of nvidia-ml-py, psutil and tinygrad, V(null) where missing.
          type: dict
        errors:
          description: What went wrong, as stage, kind and message.
          type: list
          elements: dict
        timings_ms:
          description: Milliseconds spent per stage.
          type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            timeout=dict(type="float", default=10.0),
            tinygrad=dict(type="bool", default=True),
            tinygrad_python=dict(type="path"),
            rootfs=dict(type="path", default="/"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["timeout"] > 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %s" % params["timeout"])
    if not os.path.isdir(params["rootfs"]):
        module.fail_json(msg="rootfs %s is not a directory: give the root of the host to probe, or leave it at /"
                         % params["rootfs"])
    facts = gather(rootfs=params["rootfs"], timeout=params["timeout"], tinygrad=params["tinygrad"],
                   tinygrad_python=params["tinygrad_python"])
    module.exit_json(changed=False, ansible_facts={"device_capabilities": facts})


if __name__ == "__main__":
    main()
