# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether ansible_facts.device_capabilities can be planned from: the one check of the facts for every
role's planner.

Each planner says as data what it reads of the facts (FACTS_READ in node/facts.py and driver/cases.py);
check_facts() names the first part of that which the facts lack or hold in another shape, or facts of
another schema, and what to do.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

# The schema of gpufleet.exo.device_facts that the planners read (docs/facts.md).
SCHEMA_VERSION = 1
WHERE = "ansible_facts.device_capabilities"


def _lacking(given, shapes):
    """The keys of shapes that given lacks or holds as another type (object: any value); all of them when
    given is not a mapping."""
    if not isinstance(given, dict):
        return list(shapes)
    return [key for key, shape in shapes.items() if key not in given or not isinstance(given[key], shape)]


def check_facts(caps, reads):
    """Problems that make device_capabilities unusable to a planner that reads what reads says; empty when
    the facts follow schema 1 and hold all of it. One problem at most: the first found.

    reads: {"hint": what to do, worded for the role;
            "keys": {key: type} of the facts, schema_version aside (object: any value);
            "sections": {key: {key: type}}, inside mappings among those keys;
            "entries": {key: {key: type}}, of every entry of lists among those keys}.
    """
    hint = reads["hint"]
    if not isinstance(caps, dict):
        return ["%s is %s, not the facts of gpufleet.exo.device_facts; %s" % (WHERE, show(caps)[:80], hint)]
    if "schema_version" in caps and caps["schema_version"] != SCHEMA_VERSION:
        return ["%s has schema_version %s; this role reads schema %d (docs/facts.md); %s"
                % (WHERE, show(caps["schema_version"]), SCHEMA_VERSION, hint)]
    lacking = _lacking(caps, dict({"schema_version": object}, **reads["keys"]))
    if lacking:
        return ["%s lacks %s (partial or foreign facts); %s" % (WHERE, ", ".join(lacking), hint)]
    for key, shapes in reads.get("sections", {}).items():
        lacking = _lacking(caps[key], shapes)
        if lacking:
            return ["%s.%s lacks %s (partial or foreign facts); %s" % (WHERE, key, ", ".join(lacking), hint)]
    for key, shapes in reads.get("entries", {}).items():
        for entry in caps[key]:
            lacking = _lacking(entry, shapes)
            if lacking:
                return ["%s.%s entry %s lacks %s (partial or foreign facts); %s"
                        % (WHERE, key, show(entry)[:80], ", ".join(lacking), hint)]
    return []
