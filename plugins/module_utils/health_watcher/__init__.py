# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health watcher (docs/health.md): takes a faulty GPU's exo instance out of its ring and
brings it back when the GPU is healthy again. A host-side program beside the probe, whose NVML
handling it reuses: `xids` (the table), `kernel` (the kernel's XID lines), `decide` (every
decision), `report` (the state and metrics files), `watch` (the loop), `facts` (the state file read into
device_facts)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type
