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
  tinygrad_cache:
    description:
      - Whether root keeps the answer of the tinygrad stage (and of O(backends)) between gatherings, and
        reuses it while nothing that decides it has changed; the facts then say C(tinygrad.cached) and
        since when (C(tinygrad.cached_since)).
      - What decides it is the probe's own code, the boot, the GPUs on the PCI bus and their kernel
        drivers, the NVIDIA driver's version and its GPUs' UUIDs, bus ids and MIG devices and whether they
        are busy, the interpreter O(tinygrad_python) and every directory it imports from (installing,
        upgrading or removing tinygrad or any other package there counts), the environment (less the
        variables each login or connection sets anew, such as E(SSH_CONNECTION) and E(PWD)), O(backends)
        and the user. A stage that timed out or crashed is not kept.
      - The answers are kept in C(/run/gpufleet-exo/tinygrad), which only root can write and a reboot
        empties; without root nothing is kept, and a directory or file another user could write is
        ignored.
    type: bool
    default: true
  backends:
    description:
      - Backends whose opening to check, each in a child of O(tinygrad_python) with the probe's guards,
        under the environment an exo instance forcing it gets (the CPU instance's, or a GPU instance's
        pinned to one idle GPU); the result is C(tinygrad.backends), per backend V(ok), V(failed) with
        tinygrad's error (type and message), or V(skipped) with the reason.
      - Each check opens its device and compiles and runs a one-element kernel (about a second), so
        none is made by default.
      - A GPU backend is never checked on a busy GPU (one whose memory other processes hold); with
        every GPU busy it is V(skipped).
    type: list
    elements: str
    choices: [cuda, nv, amd, cpu]
    default: []
  visible_per_gpu:
    description:
      - Whether to ask, for every GPU and MIG device NVML lists, which devices a CUDA process given that one
        device alone sees (E(CUDA_VISIBLE_DEVICES) set to its UUID, E(CUDA_DEVICE_ORDER=PCI_BUS_ID), the
        environment the node role gives each GPU instance); the answers are C(visible.per_gpu).
      - Where libcuda.so.1 loads, the CUDA driver is asked, one child process per device, without creating a
        context (a busy GPU is not disturbed); elsewhere the rules answer, as for C(visible).
    type: bool
    default: false
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
  - psutil on the target (optional; asked only where C(/proc) does not give the CPUs and memory)
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

- name: Ask the CUDA driver what a process given each GPU alone sees, as the node role does
  gpufleet.exo.device_facts:
    tinygrad: false
    visible_per_gpu: true

- name: Show each GPU's answer
  ansible.builtin.debug:
    msg: "{{ item.cuda_visible_devices }}: {{ item.devices }} ({{ item.source }})"
  loop: "{{ ansible_facts.device_capabilities.visible.per_gpu }}"

- name: Probe the tinygrad that exo's virtualenv runs
  gpufleet.exo.device_facts:
    tinygrad_python: /opt/exo/bin/python

- name: Check that tinygrad's CUDA and CPU backends open and compute
  gpufleet.exo.device_facts:
    backends: [cuda, cpu]

- name: Show each backend's answer
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value.status }} {{ item.value.reason or '' }}"
  loop: "{{ ansible_facts.device_capabilities.tinygrad.backends | dict2items }}"

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
      description: What this host can compute. Every key below is always present; a value the host could
        not give is V(null), and C(errors) says why. docs/facts.md in the collection shows an example.
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
        backend_reason:
          description: Why the backend is V(cuda) although tinygrad did not select a GPU, a busy GPU
            (other processes hold its memory) that NVML sees healthy; V(null) otherwise.
          type: str
        driver_needed:
          description: NVIDIA GPU hardware is on the bus but its driver is missing or not loaded.
          type: bool
        driver_reason:
          description: Why C(driver_needed) is what it is.
          type: str
          sample: nvidia driver bound to every NVIDIA GPU
        exo:
          description: exo's DeviceCapabilities for the device an exo node here would use, in exo's own
            shape (numbers, never V(null)); on AMD, tinygrad's first AMD GPU (the first in KFD order), with its
            own name, memory and flops.
          type: dict
          contains:
            model:
              description: The model exo shows.
              type: str
              sample: Linux Box (NVIDIA H100 80GB HBM3)
            chip:
              description: The chip exo shows.
              type: str
              sample: NVIDIA H100 SXM5 80GB
            memory:
              description: Memory in MiB, what exo's partitioning weighs.
              type: int
              sample: 81559
            flops:
              description: TFLOPS; V(0.0) for a part whose figures are unknown (C(gpus[].flops.source) says which).
              type: dict
              contains:
                fp32:
                  description: FP32 TFLOPS.
                  type: float
                  sample: 66.9
                fp16:
                  description: FP16 TFLOPS.
                  type: float
                  sample: 989.4
                int8:
                  description: INT8 TOPS.
                  type: float
                  sample: 1978.9
        gpus:
          description: Every GPU NVML sees, in NVML index order.
          type: list
          elements: dict
          contains:
            index:
              description: NVML index.
              type: int
            minor:
              description: The N of /dev/nvidiaN, which may differ from the index.
              type: int
            uuid:
              description: The GPU's UUID.
              type: str
              sample: GPU-9b7c0000-1111-2222-3333-444455556666
            name:
              description: The name as NVML returns it.
              type: str
              sample: NVIDIA H100 80GB HBM3
            chip:
              description: The normalised chip name of the chip table; V(null) for a part the table lacks.
              type: str
              sample: NVIDIA H100 SXM5 80GB
            memory_mib:
              description: Total memory in MiB.
              type: int
              sample: 81559
            memory_used_mib:
              description: Memory in use in MiB (the driver's own reservation included); V(null) when NVML
                does not say.
              type: int
            memory_free_mib:
              description: Free memory in MiB; V(null) when NVML does not say.
              type: int
            processes:
              description: The compute processes NVML lists on the GPU; V(null) when NVML does not say.
              type: list
              elements: dict
              contains:
                pid:
                  description: Process id, in the host's PID namespace.
                  type: int
                used_memory_mib:
                  description: The memory it holds in MiB; V(null) when NVML does not say.
                  type: int
            busy:
              description: Other processes hold the GPU's memory, so that opening it could take memory they
                need; V(null) when NVML reported neither memory nor processes.
              type: bool
            busy_reason:
              description: Why C(busy) is true; V(null) otherwise.
              type: str
            pci_bus_id:
              description: PCI bus id in sysfs form (lower case, 4-digit domain).
              type: str
              sample: "0000:3b:00.0"
            compute_capability:
              description: CUDA compute capability.
              type: str
              sample: "9.0"
            architecture:
              description: The architecture, from the compute capability.
              type: str
              sample: hopper
            numa_node:
              description: The GPU's NUMA node; V(null) when the platform does not say.
              type: int
            cpu_list:
              description: CPUs local to the GPU, in sysfs cpulist form; V(null) when unknown.
              type: str
              sample: 0-31,64-95
            flops:
              description: The GPU's TFLOPS and where they come from; V(null) figures when unknown, never V(0).
              type: dict
              contains: &gpu_flops
                fp32:
                  description: FP32 TFLOPS.
                  type: float
                fp16:
                  description: FP16 TFLOPS.
                  type: float
                int8:
                  description: INT8 TOPS.
                  type: float
                source:
                  description: V(table) (the chip table), V(estimated) (cores and clocks, NVIDIA GPUs only) or
                    V(unknown).
                  type: str
            mig:
              description: The GPU's MIG mode and devices.
              type: dict
              contains:
                supported:
                  description: The part supports MIG.
                  type: bool
                enabled:
                  description: MIG mode now.
                  type: bool
                pending:
                  description: MIG mode after the next GPU reset.
                  type: bool
                devices:
                  description: The MIG devices, when enabled.
                  type: list
                  elements: dict
                  contains:
                    index:
                      description: MIG device index on its GPU.
                      type: int
                    uuid:
                      description: The MIG device's UUID.
                      type: str
                      sample: MIG-aaaaaaaa-0000-0000-0000-000000000001
                    memory_mib:
                      description: Its memory in MiB.
                      type: int
                    gpu_instance_id:
                      description: Its GPU instance id.
                      type: int
                    compute_instance_id:
                      description: Its compute instance id.
                      type: int
            watcher:
              description: What the GPU health watcher (docs/health.md) says of the GPU, from its state file;
                V(null) where it does not watch the GPU (no watcher, a file it could not read, a GPU without
                an instance).
              type: dict
              contains:
                drained:
                  description: The watcher holds the GPU out of its ring now (its instance stopped).
                  type: bool
                healthy:
                  description: The GPU serves, as the watcher sees it.
                  type: bool
                needs:
                  description: What its faults ask for, V(none), V(drain), V(reset) or V(reboot).
                  type: str
                reason:
                  description: Why it went out or came back, as the journal says it.
                  type: str
                since:
                  description: When it went out or came back, in seconds since the epoch.
                  type: float
                last_fault:
                  description: When its last draining fault came, in seconds since the epoch.
                  type: float
                instance:
                  description: What C(systemctl is-active) last said of its instance.
                  type: str
                stopped_by_watcher:
                  description: The watcher stopped its instance, and starts it again.
                  type: bool
                breaker:
                  description: Why the circuit breaker keeps the watcher from draining it, else V(null).
                  type: str
                remedy:
                  description: What the watcher did or did not do about a reset, and why.
                  type: str
                reset_at:
                  description: When the watcher last reset it, since its last fault.
                  type: float
                resets:
                  description: The watcher's resets of the GPU within the last hour.
                  type: int
                xids:
                  description: Faults seen by class, floods merged (docs/health.md).
                  type: dict
                  contains:
                    application:
                      description: Application errors, which never drain a GPU.
                      type: int
                    drain:
                      description: Faults that drain it until the health gate lets it back.
                      type: int
                    reset:
                      description: Faults a reset clears.
                      type: int
                    reboot:
                      description: Faults only a reboot clears.
                      type: int
            health:
              description: What NVML says about the GPU's fitness to serve; V(null) values where NVML does
                not say (an old driver, a part without the feature), which no rule judges.
              type: dict
              contains:
                ecc:
                  description: ECC mode and uncorrected error counts.
                  type: dict
                  contains:
                    enabled:
                      description: ECC is on now.
                      type: bool
                    enabled_after_reboot:
                      description: ECC will be on after the next reboot.
                      type: bool
                    uncorrected_volatile:
                      description: Uncorrected errors since the driver loaded.
                      type: int
                    uncorrected_aggregate:
                      description: Uncorrected errors over the GPU's life.
                      type: int
                remapped_rows:
                  description: Memory row remapping (Ampere and later).
                  type: dict
                  contains:
                    correctable:
                      description: Rows remapped for correctable errors.
                      type: int
                    uncorrectable:
                      description: Rows remapped for uncorrectable errors.
                      type: int
                    pending:
                      description: A remapping waits for a GPU reset.
                      type: bool
                    failed:
                      description: A remapping failed.
                      type: bool
                retired_pages_pending:
                  description: A page retirement waits for a reboot (parts before Ampere).
                  type: bool
                persistence_mode:
                  description: Persistence mode is on.
                  type: bool
                compute_mode:
                  description: V(default), V(exclusive_thread), V(prohibited) or V(exclusive_process).
                  type: str
                pcie:
                  description: The PCIe link now and at most.
                  type: dict
                  contains:
                    generation:
                      description: Current link generation.
                      type: int
                    max_generation:
                      description: Highest link generation.
                      type: int
                    width:
                      description: Current link width.
                      type: int
                    max_width:
                      description: Widest link width.
                      type: int
                temperature_c:
                  description: GPU temperature in degrees Celsius.
                  type: int
                clock_event_reasons:
                  description: Why the clocks are held back now (V(gpu_idle), V(sw_power_cap), V(hw_slowdown),
                    V(sw_thermal_slowdown), V(hw_thermal_slowdown), V(hw_power_brake_slowdown), ...).
                  type: list
                  elements: str
                fabric:
                  description: The NVLink fabric state on NVSwitch systems; V(null) where NVML has no such call.
                  type: dict
                  contains:
                    state:
                      description: V(not_supported), V(not_started), V(in_progress), V(completed) or V(unknown).
                      type: str
                    status:
                      description: V(success) or V(error N).
                      type: str
                    clique_id:
                      description: The GPU's NVLink clique.
                      type: int
                lost:
                  description: NVML reported the GPU lost or needing a reset.
                  type: bool
                verdict:
                  description: V(ok) (nothing known is wrong), V(degraded) or V(unusable).
                  type: str
                reasons:
                  description: Why the verdict is not V(ok), one sentence each.
                  type: list
                  elements: str
        visible:
          description: The GPUs a process started with this environment would see under E(CUDA_VISIBLE_DEVICES)
            and E(CUDA_DEVICE_ORDER), as the CUDA driver itself answers where C(libcuda.so.1) loads
            (C(source) V(driver)), else by the driver's rules (V(rules), docs/facts.md), with
            C(cuda_visible_devices), C(device_order), C(devices), C(invalid_entry) (the entry where the
            driver stops reading the list) and C(cuda_init_error), V(null) unless the list leaves CUDA
            no GPU; then C(code) (V(100) no device, V(101) a device named twice), C(name) and C(reason).
          type: dict
          contains:
            cuda_visible_devices:
              description: The raw value of E(CUDA_VISIBLE_DEVICES); V(null) when unset.
              type: str
            device_order:
              description: V(FASTEST_FIRST) or V(PCI_BUS_ID) (E(CUDA_DEVICE_ORDER)).
              type: str
            devices:
              description: The visible GPUs, in CUDA order.
              type: list
              elements: dict
              contains:
                cuda_index:
                  description: The index a CUDA process uses.
                  type: int
                index:
                  description: The NVML index (C(gpus[].index)).
                  type: int
                uuid:
                  description: The GPU's UUID.
                  type: str
                mig_uuid:
                  description: The MIG device's UUID where the entry names one; V(null) otherwise.
                  type: str
            invalid_entry:
              description: The first invalid entry, where CUDA stops reading the list; V(null) when none.
              type: str
            source:
              description: V(driver) (the CUDA driver was asked, through C(cuInit) and the device calls, without
                creating a context) or V(rules) (no driver to ask; C(driver) says why).
              type: str
            driver:
              description: Whether the CUDA driver answered.
              type: dict
              contains:
                status:
                  description: V(ok), V(init_error) (C(cuInit) refused; C(cuda_init_error) has its code),
                    V(library_not_found), V(error), V(timeout), V(crash) or V(not_asked) (no NVIDIA GPU on the bus).
                  type: str
                message:
                  description: Why the driver gave no device list; V(null) otherwise.
                  type: str
            rules_agree:
              description: Whether the rules reach the devices (or the C(cuInit) error) the driver answered;
                V(null) without the driver's answer.
              type: bool
            rules_reading:
              description: What the rules read where they disagree with the driver; V(null) otherwise.
              type: dict
              contains:
                devices:
                  description: The UUIDs (a MIG device's own) of the devices the rules see, in CUDA order.
                  type: list
                  elements: str
                cuda_init_error:
                  description: The C(cuInit) error code the rules expect; V(null) for none.
                  type: int
            cuda_init_error:
              description: How C(cuInit) fails when the list leaves CUDA no GPU; V(null) otherwise.
              type: dict
              contains: &cuda_init_error
                code:
                  description: V(100) (no device), V(101) (a device named twice) or, from the driver, any other
                    C(CUresult).
                  type: int
                name:
                  description: The CUDA error's name.
                  type: str
                  sample: CUDA_ERROR_NO_DEVICE
                reason:
                  description: Why, in words.
                  type: str
            per_gpu:
              description: With O(visible_per_gpu), what a CUDA process given one GPU or MIG device alone by its
                UUID sees, one entry per device (GPUs in NVML order, then MIG devices); the node role refuses an
                instance whose environment shows anything but its own device.
              type: list
              elements: dict
              returned: when O(visible_per_gpu) is true
              contains:
                cuda_visible_devices:
                  description: The E(CUDA_VISIBLE_DEVICES) asked about, the device's UUID.
                  type: str
                device_order:
                  description: The E(CUDA_DEVICE_ORDER) asked about, always V(PCI_BUS_ID).
                  type: str
                source:
                  description: V(driver) (the CUDA driver answered) or V(rules), as C(visible.source).
                  type: str
                devices:
                  description: The UUIDs (a MIG device's own) of the devices seen, in CUDA order.
                  type: list
                  elements: str
                cuda_init_error:
                  description: How C(cuInit) fails with this environment; V(null) when it does not.
                  type: dict
                  contains: *cuda_init_error
                rules_agree:
                  description: Whether the rules read the same as the driver; V(null) without the driver's answer.
                  type: bool
        pci:
          description: Display-class PCI devices (0300, 0302, 0380) of NVIDIA, AMD and Intel, from sysfs.
          type: list
          elements: dict
          contains:
            bus_id:
              description: PCI bus id.
              type: str
              sample: "0000:3b:00.0"
            vendor:
              description: V(nvidia), V(amd) or V(intel).
              type: str
            vendor_id:
              description: PCI vendor id.
              type: str
              sample: "0x10de"
            device_id:
              description: PCI device id.
              type: str
              sample: "0x2330"
            class:
              description: PCI class.
              type: str
              sample: "0x0302"
            driver:
              description: The kernel driver bound to the device (V(nvidia), V(nouveau), V(amdgpu),
                V(vfio-pci), ...), V(none) when unbound.
              type: str
            numa_node:
              description: The device's NUMA node; V(null) when the platform does not say.
              type: int
            cpu_list:
              description: CPUs local to the device; V(null) when unknown.
              type: str
        nvswitches:
          description: NVSwitch devices on the PCI bus (NVIDIA, class 0680); where there are any, the GPUs
            need the fabric manager (the driver role installs it).
          type: list
          elements: dict
          contains:
            bus_id:
              description: PCI bus id.
              type: str
            device_id:
              description: PCI device id.
              type: str
            driver:
              description: The kernel driver bound to it, V(none) when unbound.
              type: str
        nvml:
          description: What NVML answered.
          type: dict
          contains:
            status:
              description: V(ok), V(not_installed), V(library_not_found), V(driver_not_loaded),
                V(version_mismatch) (a reboot is pending), V(no_permission), V(gpu_lost), V(timeout) or V(error).
              type: str
            message:
              description: NVML's error when the status is not V(ok).
              type: str
            driver_version:
              description: The driver's version.
              type: str
              sample: "550.54.15"
            cuda_driver_version:
              description: The CUDA version the driver supports.
              type: str
              sample: "12.4"
            library_version:
              description: nvidia-ml-py's version; V(null) when not installed.
              type: str
        amd:
          description: AMD GPUs in PCI bus order, with VRAM, NUMA node, KFD topology node and render node from
            sysfs (no AMD library, no device opened), named by amdsmi or pyamdgpuinfo when installed.
          type: list
          elements: dict
          contains:
            bus_id:
              description: PCI bus id.
              type: str
            device_id:
              description: PCI device id, as sysfs writes it.
              type: str
              sample: "0x74a1"
            numa_node:
              description: The NUMA node sysfs gives its PCI device; V(null) where the kernel writes -1.
              type: int
            cpu_list:
              description: The CPUs local to it, as sysfs local_cpulist writes them; V(null) without that file.
              type: str
              sample: 0-15
            kfd_node:
              description: The number N of its KFD topology node (/sys/devices/virtual/kfd/kfd/topology/nodes/N);
                V(null) when KFD lists none for it.
              type: int
            kfd_index:
              description: Its position among the KFD nodes of GPUs in node order, the integer tinygrad's AMD
                backend selects it by (docs/tinygrad.md); V(null) without a KFD node.
              type: int
            gpu_id:
              description: KFD's gpu_id of the GPU; V(null) without a KFD node.
              type: int
            gfx_target:
              description: The GPU's gfx target from KFD (V(gfx942), V(gfx1100)); V(null) without a KFD node.
              type: str
            render_minor:
              description: N of the render node /dev/dri/renderDN that KFD names for it (sysfs's without a KFD
                node); V(null) when neither names one.
              type: int
            render_node:
              description: The render node device, where sysfs (/sys/class/drm) shows it for this GPU; V(null)
                when it does not.
              type: str
              sample: /dev/dri/renderD128
            flops:
              description: The GPU's TFLOPS from the chip table; V(null) figures when unknown, never V(0).
              type: dict
              contains: *gpu_flops
            unusable_reason:
              description: Why an exo instance could not drive it through tinygrad's kernel interface (bound to
                vfio-pci or to no amdgpu, no KFD node, no render node); V(null) when it can.
              type: str
            name:
              description: The name amdsmi or pyamdgpuinfo gives; V(null) without them.
              type: str
            chip:
              description: The normalised chip name; V(null) when unknown.
              type: str
              sample: AMD Instinct MI300X
            memory_mib:
              description: VRAM in MiB.
              type: int
            driver:
              description: The kernel driver bound to it.
              type: str
            source:
              description: Where the figures come from, V(sysfs), V(amdsmi) or V(pyamdgpuinfo).
              type: str
        tinygrad:
          description: tinygrad's version, the backend its C(Device.DEFAULT) selects here or why none,
            and the environment that selects each backend for that version; with O(backends),
            C(backends) holds each checked backend's C(status), C(device), C(gpu), C(env), C(error)
            and C(reason).
          type: dict
          contains:
            installed:
              description: tinygrad is importable by the probed interpreter.
              type: bool
            version:
              description: tinygrad's version.
              type: str
              sample: 0.14.0
            python:
              description: The interpreter whose tinygrad was probed.
              type: str
            backend:
              description: What C(Device.DEFAULT) selects here (V(CUDA), V(NV), V(AMD), V(CPU), V(CLANG), ...);
                V(null) when none.
              type: str
            reason:
              description: Why C(backend) is V(null); with a CPU backend, what it lacks.
              type: str
            select_env:
              description: The environment that selects each backend (V(cuda), V(nv), V(amd), V(cpu)) for
                this version; C({index}) stands for the GPU's position for tinygrad (docs/tinygrad.md).
              type: dict
              sample: {cuda: {DEV: CUDA}, nv: {DEV: "NVK:{index}+NV"}, amd: {DEV: "KFD:{index}+AMD"}, cpu: {DEV: CPU}}
            visible_devices_env:
              description: The variable that holds the GPU list for each backend, where the version has one.
              type: dict
              contains:
                nv:
                  description: The NV backend's variable; V(null) when the version has none.
                  type: str
                amd:
                  description: The AMD backend's variable; V(null) when the version has none.
                  type: str
            guards:
              description: What kept the probe off tinygrad's PCI fallback (mount namespace, variables,
                blocked classes).
              type: list
              elements: str
            cached:
              description: This section (and C(backends)) is the answer of an earlier gathering, kept by
                O(tinygrad_cache) because nothing that decides it has changed since.
              type: bool
            cached_since:
              description: When that answer was found (UTC, ISO 8601); V(null) when C(cached) is false.
              type: str
              sample: "2026-11-24T22:10:10Z"
            backends:
              description: The checks O(backends) asked for, by backend; only the backends asked for are
                keys, and none without O(backends).
              type: dict
              returned: when O(backends) is set
              contains:
                cuda:
                  description: The CUDA backend's check.
                  type: dict
                  contains: &backend_check
                    status:
                      description: V(ok) (opened and ran a one-element kernel), V(failed) or V(skipped).
                      type: str
                    device:
                      description: The tinygrad device opened.
                      type: str
                      sample: CUDA
                    gpu:
                      description: The UUID of the idle GPU it was pinned to; V(null) for the CPU.
                      type: str
                    env:
                      description: The environment of the check, the one an exo instance forced onto the
                        backend gets.
                      type: dict
                      sample: {CUDA_VISIBLE_DEVICES: GPU-9b7c0000-1111-2222-3333-444455556666, CUDA_DEVICE_ORDER: PCI_BUS_ID, DEV: CUDA}
                    error:
                      description: tinygrad's error when the check failed; V(null) otherwise.
                      type: dict
                      contains:
                        type:
                          description: The exception's type.
                          type: str
                          sample: FileNotFoundError
                        message:
                          description: Its message.
                          type: str
                    reason:
                      description: Why the status is not V(ok); V(null) otherwise.
                      type: str
                nv:
                  description: The NV backend's check, as C(cuda).
                  type: dict
                  contains: *backend_check
                amd:
                  description: The AMD backend's check, as C(cuda).
                  type: dict
                  contains: *backend_check
                cpu:
                  description: The CPU backend's check, as C(cuda).
                  type: dict
                  contains: *backend_check
        host:
          description: The host's CPUs and memory.
          type: dict
          contains:
            cpu_model:
              description: CPU model.
              type: str
            cpus:
              description: Logical CPUs.
              type: int
            memory_mib:
              description: Memory in MiB.
              type: int
            numa_nodes:
              description: NUMA nodes with their CPUs.
              type: list
              elements: dict
              contains:
                node:
                  description: NUMA node number.
                  type: int
                cpu_list:
                  description: Its CPUs, in sysfs cpulist form.
                  type: str
        libraries:
          description: Versions of the libraries the probe uses on the host; V(null) where missing.
          type: dict
          contains:
            pynvml:
              description: nvidia-ml-py.
              type: str
            psutil:
              description: psutil.
              type: str
            tinygrad:
              description: tinygrad, as the module's own interpreter imports it.
              type: str
        health_watcher:
          description: The GPU health watcher's state file (C(/run/gpufleet-exo-health/state.json)), read-only.
          type: dict
          contains:
            status:
              description: V(read), V(absent) (no watcher on the host) or V(unreadable) (see C(message)).
              type: str
            message:
              description: Why the file could not be read, else V(null).
              type: str
            updated:
              description: When the watcher last wrote it, in seconds since the epoch.
              type: float
            drained:
              description: The UUIDs of the GPUs the watcher holds out of their rings now.
              type: list
              elements: str
        errors:
          description: What went wrong, stage by stage; a field it cost is V(null).
          type: list
          elements: dict
          contains:
            stage:
              description: The stage (V(pci), V(host), V(nvml), V(amd), V(cuda), V(tinygrad), ...).
              type: str
            kind:
              description: What went wrong (V(timeout), V(crash), V(function_not_found), V(decode_error), ...).
              type: str
            message:
              description: The details.
              type: str
        timings_ms:
          description: Milliseconds spent per stage, keyed by stage.
          type: dict
          sample: {pci: 1.1, host: 0.4, nvml: 38.0, tinygrad: 912.0}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import CACHE_DIRECTORY, gather
from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import facts as watcher


def main():
    module = AnsibleModule(
        argument_spec=dict(
            timeout=dict(type="float", default=10.0),
            tinygrad=dict(type="bool", default=True),
            tinygrad_cache=dict(type="bool", default=True),
            backends=dict(type="list", elements="str", choices=["cuda", "nv", "amd", "cpu"], default=[]),
            visible_per_gpu=dict(type="bool", default=False),
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
                   tinygrad_python=params["tinygrad_python"], backends=params["backends"],
                   tinygrad_cache=CACHE_DIRECTORY if params["tinygrad_cache"] else None,
                   visible_per_gpu=params["visible_per_gpu"])
    facts = watcher.annotate(facts, watcher.read(os.path.join(params["rootfs"], watcher.STATE_PATH.lstrip("/"))))
    module.exit_json(changed=False, ansible_facts={"device_capabilities": facts})


if __name__ == "__main__":
    main()
