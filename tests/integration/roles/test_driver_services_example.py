# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter driver_services' example, run as it is written on this machine (no NVIDIA driver, no NVSwitch)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from tests.helpers import examples, local_inventory as local, recap, run_example as playbook, tasks_play


def test_services_filter_example_on_this_machine(tmp_path):
    example = examples("filter", "driver_services")
    proc = playbook(str(tmp_path), tasks_play(example), local())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    shown = proc.stdout.split("TASK [Say which NVIDIA services this host needs]")[1]
    # The unit given is this host's persistence daemon; NVML does not answer here, so it is not started,
    # and without NVSwitch there is no fabric manager.
    assert '"name": "nvidia-persistenced"' in shown and '"start": false' in shown, shown[:3000]
    assert '"fabric_manager": null' in shown and '"errors": []' in shown, shown[:3000]
