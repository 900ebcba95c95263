# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What the driver role's tasks read from its planner instead of deciding in YAML: whether its steps
that change the host run (plugins/plugin_utils/driver/plan.py, through the filter driver_plan), case by case."""

import json
import os

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.driver_plan import FilterModule
from tests.helpers import REPO

DRIVER_PLAN = FilterModule().filters()["driver_plan"]
with open(os.path.join(REPO, "roles", "driver", "defaults", "main.yml")) as handle:
    DEFAULTS = yaml.safe_load(handle)
with open(os.path.join(REPO, "tests", "fixtures", "real-h100", "device_facts.json")) as handle:
    REAL_H100 = json.load(handle)
# What ansible.builtin.setup reports (gather_subset min, virtual) on Debian 12.
DEBIAN_12 = {"virtualization_type": "", "virtualization_role": "", "distribution": "Debian",
             "distribution_version": "12.7", "distribution_major_version": "12", "kernel": "6.1.0-25-amd64",
             "architecture": "x86_64", "device_capabilities": REAL_H100}

# name: (settings as given, changes_host, refused). A refused host stops before any step.
CHANGES_HOST = {
    "the defaults": ({}, True, False),
    "plan only": ({"exo_driver_plan_only": True}, False, False),
    "plan only, as -e gives it": ({"exo_driver_plan_only": "true"}, False, False),
    "plan only off, as -e gives it": ({"exo_driver_plan_only": "no"}, True, False),
    "an upgrade, planned only": ({"exo_driver_branch": "535", "exo_driver_allow_upgrade": True,
                                  "exo_driver_plan_only": True}, False, False),
    "an upgrade": ({"exo_driver_branch": "535", "exo_driver_allow_upgrade": True}, True, False),
    "a setting the role refuses": ({"exo_driver_plan_only": "maybe"}, False, True),
}


@pytest.mark.parametrize("name", sorted(CHANGES_HOST))
def test_the_steps_that_change_the_host_run_unless_the_plan_is_all_that_is_asked(name):
    settings, changes_host, refused = CHANGES_HOST[name]
    result = DRIVER_PLAN(DEBIAN_12, dict(DEFAULTS, **settings), "h", "ssh")
    assert (result["changes_host"], bool(result["errors"])) == (changes_host, refused), result["errors"]


def tasks_of(module, directory=os.path.join(REPO, "roles", "driver", "tasks")):
    """Every task of the driver role's task files (blocks opened) that calls module."""
    found = []

    def walk(tasks):
        for task in tasks or []:
            walk(task.get("block"))
            if module in task:
                found.append(task)
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name)) as handle:
            walk(yaml.safe_load(handle))
    return found


def test_every_rpm_key_is_imported_with_the_fingerprint_the_plan_holds():
    imports = tasks_of("ansible.builtin.rpm_key")
    assert len(imports) == 2
    for task in imports:
        assert task["ansible.builtin.rpm_key"]["fingerprint"].endswith(".fingerprint }}"), task["name"]
    # dnf would import any key the repository's gpgkey URL serves; the repository names none.
    for task in tasks_of("ansible.builtin.yum_repository"):
        assert "gpgkey" not in task["ansible.builtin.yum_repository"] and task["ansible.builtin.yum_repository"]["gpgcheck"]
