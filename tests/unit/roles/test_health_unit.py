# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health watcher's unit as the role renders it: the breaker's and the resets' settings reach the
watcher's command line, which the watcher reads back as given, and the unit gains CAP_SYS_ADMIN only
where the operator allows resets."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shlex

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import watch
from tests.helpers import REPO, node_templates


def rendered(**settings):
    with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as handle:
        values = yaml.safe_load(handle)
    values.update(settings, __exo_node_venv_python="/opt/exo/bin/python", __exo_node_watcher_lib="/usr/local/lib/w",
                  __exo_node_watcher_metrics="/var/lib/prometheus/node-exporter/gpufleet_exo_health.prom",
                  __exo_node_watcher_gpus=["GPU-a", "GPU-b"])
    return node_templates().get_template("gpufleet-exo-health.service.j2").render(
        ansible_managed="Ansible managed", **values)


def line(text, key):
    return [l.split("=", 1)[1] for l in text.splitlines() if l.startswith(key + "=")]


CASES = [
    # (settings, what the watcher reads, the unit's capabilities)
    ({}, {"reset": False, "max_out_share": 0.5, "gpus": ["GPU-a", "GPU-b"]}, "CAP_SYSLOG CAP_DAC_OVERRIDE"),
    ({"exo_node_health_max_out_share": 0.25}, {"reset": False, "max_out_share": 0.25}, "CAP_SYSLOG CAP_DAC_OVERRIDE"),
    ({"exo_node_health_reset": True, "exo_node_health_reset_per_gpu_per_hour": 3,
      "exo_node_health_reset_per_host_per_hour": 5},
     {"reset": True, "reset_per_gpu_per_hour": 3, "reset_per_host_per_hour": 5},
     "CAP_SYSLOG CAP_DAC_OVERRIDE CAP_SYS_ADMIN"),
]


@pytest.mark.parametrize("settings, reads, capabilities", CASES)
def test_the_units_command_line_says_what_the_settings_say(settings, reads, capabilities):
    text = rendered(**settings)
    argv = shlex.split(line(text, "ExecStart")[0])
    opts = watch.options(argv[3:])  # after python -m package
    assert dict((k, getattr(opts, k)) for k in reads) == reads
    assert line(text, "CapabilityBoundingSet") == [capabilities]


@pytest.mark.parametrize("argv, message", [
    (["--max-out-share", "0"], "--max-out-share 0.0: give a share of the host's GPUs above 0 and at most 1"),
    (["--max-out-share", "2"], "--max-out-share 2.0: give a share"),
    (["--reset-per-gpu-per-hour", "-1"], "--reset-per-gpu-per-hour -1: give 0 or more"),
])
def test_the_watcher_refuses_bad_settings(argv, message, capsys):
    with pytest.raises(SystemExit):
        watch.options(argv)
    assert message in capsys.readouterr().err
