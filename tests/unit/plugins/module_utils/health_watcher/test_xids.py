# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The XID table: every row classed and sourced; the device plugin's application errors never drain."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils.health_watcher import xids

CASES = [
    # (xid, class)
    (13, "application"), (31, "application"), (43, "application"), (45, "application"),
    (68, "application"), (109, "application"), (94, "application"), (63, "application"), (92, "application"),
    (46, "reset"), (48, "reset"), (64, "reset"), (74, "reset"), (95, "reset"), (119, "reset"), (120, "reset"),
    (79, "reboot"),
    (12345, "drain"),  # unlisted: drains until the gate lets it back
]


@pytest.mark.parametrize("xid, expected", CASES)
def test_classify(xid, expected):
    assert xids.classify(xid)["class"] == expected


def test_every_row_has_a_known_class_and_a_source():
    assert [row for row in xids.TABLE if row[2] not in xids.CLASSES or len(row[3]) < 20] == []
    assert len(xids.BY_XID) == len(xids.TABLE), "an XID is listed twice"


def test_the_device_plugins_application_errors_never_drain():
    assert [x for x in (13, 31, 43, 45, 68, 109) if xids.classify(x)["class"] in xids.DRAINING] == []


@pytest.mark.parametrize("classes, expected", [
    ([], None), (["application"], "application"), (["reset", "drain"], "reset"),
    (["drain", "reboot", "reset"], "reboot"),
])
def test_severest(classes, expected):
    assert xids.severest(classes) == expected
