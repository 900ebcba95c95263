# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role suites run ansible-playbook over the simulated hosts of the unit tests' fixtures."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path[:0] = [p for p in (REPO, os.path.join(REPO, ".build", "collections")) if p not in sys.path]

from tests.unit.conftest import legacy_nvml_lib, nvml_lib, simulated_host  # noqa: E402,F401 pylint: disable=unused-import
