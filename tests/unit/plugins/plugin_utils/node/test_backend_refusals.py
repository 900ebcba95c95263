# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tinygrad backends the node planner may force: the list the role hands device_facts to check, and
facts without that check. Facts in which the check failed, as device_facts really reports them with exo's
tinygrad: tests/integration/modules/test_node_plan_backends.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import backend_refusals as backend_check
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS as SETTINGS, checked


def test_the_planner_lists_what_the_role_may_force():
    assert node_plan.instances(None, checked(SETTINGS), "h")["backends"] == ["cpu"]
    assert node_plan.instances(None, checked(dict(SETTINGS, exo_node_tinygrad_backend="nv", exo_node_cpu_fallback=False)),
                               "h")["backends"] == ["nv"]
    # Settings the role refuses give no list: its preflight's check says why, and the planner never sees them.
    given = dict(SETTINGS, exo_node_tinygrad_backend="vulkan")
    dummy, errors = check_settings(given)
    assert errors == ['exo_node_tinygrad_backend is "vulkan"; choose one of "auto", "cuda", "nv"']
    with pytest.raises(AnsibleFilterError, match="^node_plan takes the node role's settings as its preflight checked"):
        node_plan.instances(None, given, "h")


def test_facts_without_the_check_warn():
    facts = {"tinygrad": {"version": "0.10.0", "python": "/opt/exo/bin/python"}}
    errors, warnings = backend_check.refusals("h", facts, dict(SETTINGS, exo_node_tinygrad_backend="auto"),
                                              [{"kind": "cpu", "name": "cpu"}])
    assert errors == [] and "tinygrad's cpu backend, forced on instance cpu, was not checked" in warnings[0]
