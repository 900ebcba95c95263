# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Bad input stops the whole driver role before any change, in check mode and for real.

One class of bad input per host (wrong type, out of range, unknown name, partial facts), each a simulated
healthy GPU host on this machine, so that nothing would be installed even if the check missed. The role
must stop the host with the one message that names it, change nothing, and leave this machine's apt
sources as they were.
"""

import os
import re

import pytest

from tests.helpers import run_driver_role as run_plan
from tests.simulated import sysfs as simsysfs
from tests.simulated.hosts import DRIVER_H100 as H100, GPU0

SOURCES = "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources"
HEALTHY = ([simsysfs.nvidia_gpu(GPU0, driver="nvidia")], {"gpus": [H100]})
# Facts of schema 1 without the parts the role reads: what made the role fail with
# "object of type 'dict' has no attribute 'pci'".
PARTIAL = {"schema_version": 1, "gpus": [], "nvml": {"status": "ok", "message": None, "driver_version": "580.65.06"}}

# name: (role variables, the message)
REFUSED = {
    "wrong_type": ({"exo_driver_kernel_module": "sometimes"},
                   'host wrong_type: exo_driver_kernel_module is \\"sometimes\\"; give auto, true or false'),
    "not_a_mapping": ({"exo_driver_probe_options": "rootfs=/srv"},
                      'host not_a_mapping: exo_driver_probe_options is \\"rootfs=/srv\\"; give a mapping'),
    "out_of_range": ({"exo_driver_min_free_mib": "-5"},
                     'host out_of_range: exo_driver_min_free_mib is \\"-5\\"; it must be 0 or more'),
    "unknown_name": ({"exo_driver_brnach": "535"},
                     "host unknown_name: exo_driver_brnach is not a variable of this role (did you mean "
                     "exo_driver_branch?); docs/driver.md lists them"),
    "partial_facts": ({"exo_driver_probe": "auto", "fake_device_capabilities": PARTIAL},
                      "host partial_facts: ansible_facts.device_capabilities lacks pci, driver_needed, driver_reason, amd "
                      "(partial or foreign facts); gather them again with gpufleet.exo.device_facts"),
}


@pytest.mark.parametrize("check", [True, False], ids=["check_mode", "real_run"])
def test_simulated_bad_input_stops_the_role_before_any_change(tmp_path, nvml_lib, check):
    before = os.path.exists(SOURCES)
    cases = dict((name, HEALTHY + (dict(settings, exo_driver_plan_only=False), None, None))
                 for name, (settings, message) in REFUSED.items())
    proc, results = run_plan(str(tmp_path), cases, nvml_lib, check=check)
    assert os.path.exists(SOURCES) == before, "the role changed this machine's apt sources"
    assert results == {}, "hosts went past the role: %s" % sorted(results)
    for name, (settings, message) in REFUSED.items():
        failures = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [%s]" % name)]
        assert len(failures) == 1 and message in failures[0], proc.stdout[-6000:]
        # one message: the problem, not a list of every rule
        assert failures[0].count("host %s" % name) == 1, failures[0]
        recap = re.search(r"^%s +: ok=\d+ +changed=(\d+) +unreachable=0 +failed=(\d+)" % name, proc.stdout, re.M)
        assert recap and recap.groups() == ("0", "1"), proc.stdout[-3000:]
