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


def _module_options():
    from ansible_collections.gpufleet.exo.plugins.modules import device_facts
    return sorted(yaml.safe_load(device_facts.DOCUMENTATION)["options"])


@pytest.mark.parametrize("role", ROLES)
def test_the_probe_options_description_names_every_option_of_device_facts(role):
    # Each option either may be given in *_probe_options or is named as the role's own.
    text = " ".join(options(role)["exo_%s_probe_options" % role]["description"])
    assert [name for name in _module_options() if "C(%s)" % name not in text] == []


def test_the_node_role_passes_every_probe_option_it_documents_on():
    with open(os.path.join(REPO, "roles", "node", "tasks", "facts.yml")) as handle:
        task = next(t for t in yaml.safe_load(handle) if "gpufleet.exo.device_facts" in t)["gpufleet.exo.device_facts"]
    given = first = options("node")["exo_node_probe_options"]["description"][0]
    passed = sorted(name for name in task if "exo_node_probe_options['%s']" % name in str(task[name]))
    assert passed == sorted(name for name in _module_options() if "C(%s)" % name in given), first
    assert sorted(task) == _module_options()
