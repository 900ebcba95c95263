# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recorded facts of the simulated hosts are what device_facts reports on them now.

The planners' unit tests read the facts of the simulated hosts of tests/simulated/hosts.py PROBED from
tests/fixtures/simulated instead of running the probe. Here the probe runs on each of those hosts (the
simulated libnvidia-ml under the real nvidia-ml-py, a simulated /sys), and its facts must equal the
recording but for what belongs to the environment that runs it (helpers.normalized: the versions of the
libraries installed for its interpreter, that interpreter, how long each stage took).

After a change to what the probe reports, or to a host, record them again:
    GPUFLEET_RECORD_FACTS=1 python -m pytest tests/integration/modules/test_simulated_facts.py
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from tests.helpers import comparable, normalized, probe_simulated, record_facts, recorded_facts
from tests.simulated import hosts as simhosts

RECORD = bool(os.environ.get("GPUFLEET_RECORD_FACTS"))


@pytest.mark.parametrize("name", sorted(simhosts.PROBED))
def test_the_recorded_facts_are_what_the_probe_reports(tmp_path, nvml_lib, name):
    facts = probe_simulated(tmp_path, name, nvml_lib)
    if RECORD:
        record_facts(name, facts)
    assert comparable(normalized(facts)) == comparable(recorded_facts(name)), (
        "device_facts reports other facts on the simulated host %s than tests/fixtures/simulated/%s.json holds; "
        "if that is meant, record them again (GPUFLEET_RECORD_FACTS=1, see this file's docstring)" % (name, name))
