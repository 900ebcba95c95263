# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check of the device facts, with what each role's planner reads of them (node/facts.py and
driver/cases.py FACTS_READ), on the facts the probe really reports (the real H100, a simulated host) changed
the way partial or foreign facts differ."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.device_facts_check import check_facts
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import cases
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import facts as node_facts
from tests.helpers import REAL_H100, recorded_facts

READS = {"node": node_facts.FACTS_READ, "driver": cases.FACTS_READ}
HINTS = {"node": "; gather them with gpufleet.exo.device_facts from this collection before the role",
         "driver": "; gather them again with gpufleet.exo.device_facts from this collection (exo_driver_probe: always "
                   "makes the role run it)"}

with open(os.path.join(REAL_H100, "device_facts.json")) as handle:
    REAL = json.load(handle)


def without(*keys):
    return lambda caps: dict((key, value) for key, value in caps.items() if key not in keys)


def setting(path, value=None, remove=False):
    """The facts with the value at path (keys and list indexes) set, or removed."""
    def change(caps):
        caps = copy.deepcopy(caps)
        place = caps
        for step in path[:-1]:
            place = place[step]
        if remove:
            del place[path[-1]]
        else:
            place[path[-1]] = value
        return caps
    return change


# (role, change of the real H100's facts, the one problem expected; None: none)
CASES = [
    ("node", lambda caps: caps, None),
    ("driver", lambda caps: caps, None),
    # each role reads its own keys: the other role's are not asked for
    ("node", without("pci", "driver_needed", "driver_reason"), None),
    ("driver", without("host", "tinygrad", "backend"), None),
    # object: any value, null included
    ("node", setting(["tinygrad"], None), None),
    ("node", lambda caps: None,
     "ansible_facts.device_capabilities is null, not the facts of gpufleet.exo.device_facts"),
    ("driver", lambda caps: "gpus: none",
     "ansible_facts.device_capabilities is \"gpus: none\", not the facts of gpufleet.exo.device_facts"),
    ("node", setting(["schema_version"], 2),
     "ansible_facts.device_capabilities has schema_version 2; this role reads schema 1 (docs/facts.md)"),
    ("driver", setting(["schema_version"], "1"),
     "ansible_facts.device_capabilities has schema_version \"1\"; this role reads schema 1 (docs/facts.md)"),
    # schema_version is read first, so that facts of another schema are not called partial
    ("driver", lambda caps: {"schema_version": 2},
     "ansible_facts.device_capabilities has schema_version 2; this role reads schema 1 (docs/facts.md)"),
    ("node", lambda caps: {"pci": []},
     "ansible_facts.device_capabilities lacks schema_version, nvml, gpus, host, tinygrad, backend "
     "(partial or foreign facts)"),
    ("driver", lambda caps: {"gpus": []},
     "ansible_facts.device_capabilities lacks schema_version, pci, nvml, driver_needed, driver_reason, amd "
     "(partial or foreign facts)"),
    # a key of the wrong type is lacking too
    ("node", setting(["gpus"], {}), "ansible_facts.device_capabilities lacks gpus (partial or foreign facts)"),
    ("driver", setting(["driver_needed"], "yes"),
     "ansible_facts.device_capabilities lacks driver_needed (partial or foreign facts)"),
    ("node", setting(["nvml"], {"message": None}),
     "ansible_facts.device_capabilities.nvml lacks status (partial or foreign facts)"),
    ("driver", setting(["nvml"], {"message": None}),
     "ansible_facts.device_capabilities.nvml lacks status, driver_version (partial or foreign facts)"),
    ("driver", setting(["nvml", "status"], 0),
     "ansible_facts.device_capabilities.nvml lacks status (partial or foreign facts)"),
    ("node", setting(["gpus", 0, "minor"], remove=True), "ansible_facts.device_capabilities.gpus entry {"),
    ("node", setting(["gpus", 0], "GPU-0"),
     "ansible_facts.device_capabilities.gpus entry \"GPU-0\" lacks index, uuid, name, minor, memory_mib, "
     "pci_bus_id, mig (partial or foreign facts)"),
    ("driver", setting(["pci"], [{"bus_id": "0000:3b:00.0", "vendor": "nvidia"}]),
     "ansible_facts.device_capabilities.pci entry {\"bus_id\": \"0000:3b:00.0\", \"vendor\": \"nvidia\"} lacks "
     "driver (partial or foreign facts)"),
    ("driver", setting(["pci"], [{"bus_id": "0000:3b:00.0", "vendor": "nvidia", "driver": None}]),
     "lacks driver (partial or foreign facts)"),
]


@pytest.mark.parametrize("role, change, problem", CASES)
def test_each_role_reads_its_own_keys_and_the_first_problem_is_named(role, change, problem):
    found = check_facts(change(REAL), READS[role])
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0] and found[0].endswith(HINTS[role]), found


def test_an_entry_names_what_it_lacks():
    found = check_facts(setting(["gpus", 0, "minor"], remove=True)(REAL), READS["node"])
    assert found[0].split(" lacks ")[1].startswith("minor (partial or foreign facts)")


@pytest.mark.parametrize("name", ["no_driver", "healthy", "passthrough", "gpu_lost", "one", "four"])
def test_the_facts_the_probe_reports_on_simulated_hosts_pass_both(name):
    facts = recorded_facts(name)
    assert check_facts(facts, READS["node"]) == [] and check_facts(facts, READS["driver"]) == []
