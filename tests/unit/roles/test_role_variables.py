# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role's variables agree across defaults/main.yml, meta/argument_specs.yml and docs/<role>.md:
each default is in the spec with the same value, each optional variable of the spec has its default,
and the role's page names each one. A new role is covered as soon as it exists."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = sorted(r for r in os.listdir(os.path.join(REPO, "roles")) if os.path.isdir(os.path.join(REPO, "roles", r)))


def load(role, *parts):
    with open(os.path.join(REPO, "roles", role, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def options(role):
    return load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_in_the_spec_with_its_value(role):
    spec, defaults = options(role), load(role, "defaults", "main.yml")
    assert sorted(set(defaults) - set(spec)) == [], "defaults missing from meta/argument_specs.yml"
    assert [(name, spec[name].get("default"), value) for name, value in sorted(defaults.items())
            if spec[name].get("default") != value] == []


@pytest.mark.parametrize("role", ROLES)
def test_every_optional_variable_of_the_spec_has_a_default(role):
    spec, defaults = options(role), load(role, "defaults", "main.yml")
    assert sorted(name for name, option in spec.items() if not option.get("required") and name not in defaults) == []


@pytest.mark.parametrize("role", ROLES)
def test_the_roles_page_names_every_variable(role):
    with open(os.path.join(REPO, "docs", role + ".md")) as handle:
        text = handle.read()
    assert sorted(name for name in options(role) if "`%s`" % name not in text) == []
