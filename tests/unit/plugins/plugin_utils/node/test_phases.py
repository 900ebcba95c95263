# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What the node role's phases read from the planners instead of deciding in YAML: whether the facts
at hand count or only preview the plan (plugins/plugin_utils/node/facts.py, plan.py, through the filter
node_plan), whether pip installs exo (install.py, filter node_install), and whether a changed template
unit restarts every instance (outcome.py, filter node_outcome). Each table is one decision, case by case."""

import copy
import json
import os

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import facts as node_facts
from tests.helpers import REPO, checked

FILTERS = FilterModule().filters()
EXO = "/opt/exo/bin/python"
with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as handle:
    DEFAULTS = yaml.safe_load(handle)
SETTINGS = dict(DEFAULTS)
# The defaults that are templates, as a host outside a play would have them.
SETTINGS.update(exo_node_id_prefix="h", exo_node_address="10.0.0.1", exo_node_cluster_hosts=["h"])
# As the role's preflight hands them to the planners.
CHECKED = checked(SETTINGS)
with open(os.path.join(REPO, "tests", "fixtures", "real-h100", "device_facts.json")) as handle:
    REAL_H100 = json.load(handle)


def h100(nvml="ok", python=EXO):
    """The real H100's facts as gathered by python, with NVML's status nvml (its GPUs only where it answered)."""
    facts = copy.deepcopy(REAL_H100)
    facts["tinygrad"]["python"] = python
    if nvml != "ok":
        facts["nvml"] = dict(facts["nvml"], status=nvml)
        facts["gpus"] = []
    return facts


SYSTEM = "/usr/bin/python3"
NO_PYNVML = h100("not_installed", SYSTEM)
LEFT_OUT = object()


def settings(changes):
    """The role's settings with changes; a setting changed to LEFT_OUT is not given at all."""
    changed = dict(SETTINGS, **changes)
    return dict((name, value) for name, value in changed.items() if value is not LEFT_OUT)


# name: (facts at hand, settings changed, regathered, whether the plan reads them (else none), preview)
TO_PLAN = {
    "exo's interpreter gathered them": (h100(), {}, False, True, False),
    "another interpreter with nvidia-ml-py": (h100(python=SYSTEM), {}, False, True, True),
    "another interpreter without nvidia-ml-py": (NO_PYNVML, {}, False, False, True),
    "exo's interpreter without nvidia-ml-py": (h100("not_installed"), {}, False, False, True),
    "exo installed elsewhere": (h100(), {"exo_node_install_dir": "/srv/exo"}, False, True, True),
    "no facts": (None, {}, False, False, True),
    "not the probe's facts": ("gathered elsewhere", {}, False, False, True),
    "never: taken as they are": (NO_PYNVML, {"exo_node_refresh_facts": "never"}, False, True, False),
    "never, but no facts": (None, {"exo_node_refresh_facts": "never"}, False, False, True),
    "always, even exo's": (h100(), {"exo_node_refresh_facts": "always"}, False, True, True),
    "always, without nvidia-ml-py": (NO_PYNVML, {"exo_node_refresh_facts": "always"}, False, False, True),
    "gathered again with exo's interpreter": (h100(), {"exo_node_refresh_facts": "always"}, True, True, False),
    "check mode before exo is installed": (NO_PYNVML, {}, True, True, False),
    "left out (outside the role)": (NO_PYNVML, {"exo_node_refresh_facts": LEFT_OUT}, False, True, False),
}


@pytest.mark.parametrize("name", sorted(TO_PLAN))
def test_the_facts_at_hand_count_or_preview_the_plan(name):
    facts, changes, regathered, read, preview = TO_PLAN[name]
    assert node_facts.to_plan(facts, settings(changes), regathered) == (facts if read else None, preview)


LOOKED = {"stat": {"exists": True}}
NOT_THERE = {"stat": {"exists": False}}

# name: (facts at hand, settings changed, exo_python (what facts.yml found), preview, GPU instances)
PLANS = {
    "exo's facts: the plan that counts": (h100(), {}, None, False, 1),
    "another interpreter's facts preview the GPUs": (h100(python=SYSTEM), {}, None, True, 1),
    "no NVML in them: the settings alone": (NO_PYNVML, {}, None, True, 0),
    "no facts: the settings alone": (None, {}, None, True, 0),
    "gathered again with exo's interpreter": (h100(), {"exo_node_refresh_facts": "always"}, LOOKED, False, 1),
    "check mode before exo is installed": (h100(python=SYSTEM), {}, NOT_THERE, False, 1),
    "never: the facts at hand count": (h100(python=SYSTEM), {"exo_node_refresh_facts": "never"}, None, False, 1),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_plan_says_whether_it_previews_the_one_that_counts(name):
    facts, changes, exo_python, preview, gpus = PLANS[name]
    result = FILTERS["node_plan"](facts, checked(settings(changes)), "h", exo_python=exo_python)
    assert result["errors"] == []
    assert result["preview"] is preview
    assert [i["kind"] for i in result["instances"]] == ["gpu"] * gpus


def test_check_mode_before_exo_is_installed_says_so_or_stops_without_facts():
    noted = FILTERS["node_plan"](h100(python=SYSTEM), CHECKED, "h", exo_python=NOT_THERE)
    assert noted["warnings"][0] == ("/opt/exo/bin/python does not exist yet (check mode), so this plan comes from the facts "
                                    "at hand (NVML: ok); a real run gathers them again after installing exo")
    stopped = FILTERS["node_plan"](None, CHECKED, "h", exo_python=NOT_THERE)
    assert stopped["errors"] == ["host h: no device facts; run gpufleet.exo.device_facts before this role"]
    assert not [w for w in FILTERS["node_plan"](h100(), CHECKED, "h", exo_python=LOOKED)["warnings"] if "exist yet" in w]


def test_a_preview_asked_for_stays_one():
    assert FILTERS["node_plan"](h100(), CHECKED, "h", preview=True, exo_python=LOOKED)["preview"] is True


def install_steps(**state):
    return FILTERS["node_install"](CHECKED, **state)


SOURCE = install_steps()["source_id"]


def venv(exe, marker):
    """What gpufleet.exo.exo_venv inspects on a host with its virtualenv: bin/exo there or not, the marker's text."""
    return {"python": True, "ensurepip": None, "exe": exe, "marker": marker}


# name: (venv: what exo_venv inspected, pip runs)
NEEDED = {
    "a new host": ({"python": False, "ensurepip": 0, "exe": False, "marker": ""}, True),
    "installed from this source": (venv(True, SOURCE), False),
    "the marker names another source": (venv(True, "git https://example.org/exo.git abc"), True),
    "installed before markers": (venv(True, ""), True),
    "exo removed, the marker left": (venv(False, SOURCE), True),
    "nothing known yet": (None, True),
}


@pytest.mark.parametrize("name", sorted(NEEDED))
def test_pip_installs_exo_only_where_the_host_lacks_this_source(name):
    inspected, needed = NEEDED[name]
    assert install_steps(venv=inspected)["needed"] is needed


INSTANCES = [{"name": "GPU-1", "kind": "gpu"}, {"name": "GPU-2", "kind": "gpu"}, {"name": "GPU-3", "kind": "gpu"}]
EXISTING = ["GPU-1", "GPU-2"]
UNCHANGED = [{"results": [{"item": i, "changed": False} for i in INSTANCES]}]

# name: (unit: its result in the registered template loop over node_files' templates, all_changed: exo
# itself changed, instances restarted)
RESTARTS = {
    "the unit changed": ({"changed": True}, False, EXISTING),
    "the unit as it was": ({"changed": False}, False, []),
    "not written yet": (None, False, []),
    "exo changed": ({"changed": False}, True, EXISTING),
    "both changed": ({"changed": True}, True, EXISTING),
}


@pytest.mark.parametrize("name", sorted(RESTARTS))
def test_a_changed_unit_restarts_every_instance_that_ran(name):
    unit, all_changed, restart = RESTARTS[name]
    # The unit's entry names every instance, as node_files gives it.
    written = {"results": [dict(unit, item={"what": "unit", "instances": [i["name"] for i in INSTANCES]})]
               if unit else []}
    found = FILTERS["node_outcome"](INSTANCES, "h", existing=EXISTING, changed=UNCHANGED + [written],
                                    all_changed=all_changed)
    assert found["restart"] == restart
