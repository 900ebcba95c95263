# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' one settings engine: each role variable read as given, checked for what ansible-core cannot.

A role's meta/argument_specs.yml says what each variable is (type, elements, choices, default), and
ansible-core checks exactly that whenever the role is called (roles:, import_role, include_role):
its validate_argument_spec runs before the role's first task and refuses a value of the wrong type
or outside the choices, with its own message. The engine adds what that check cannot do:

- coerce: core's check converts a value to test it but hands the tasks the value as given, so
  -e exo_node_api_port=8000 reaches them as the string "8000"; check() returns every variable as
  its type means it (numbers, booleans, lists, mappings), with the spec's default where it is unset;
- name the variables with the role's prefix that the spec does not have, with the nearest one
  ("did you mean ..."): core checks the arguments given to the role, never its variables;
- apply the role's RULES, what the spec cannot say: number ranges, patterns, custom readers;
- refuse what core converts without a word: a boolean for a number (core reads true as 1), a
  number or a boolean for a string (core turns an unquoted 3.10 into "3.1"), a relative path, a
  list given as one string where an entry may hold a comma (core splits it at commas);
- and the role's own Python adds the checks across variables.

It checks no type or choice a second time with a message of its own. Where a value is nothing of
its type ("abc" for a number, "maybe" for a boolean, a list for a mapping), coercion has nothing to
hand on; where it is not one of the spec's choices, the planners, which pick by choice, have nothing
to pick. Reading and refusing are one step there, so the engine refuses (CoreRefused), but it reads
with ansible-core's own converters (ansible.module_utils.common.validation) and compares choices as
core does, so it refuses such a value only where core's check has refused it before the role's
first task: called as a role, that refusal is unreachable and core's message is the one the user
sees. It speaks only where core's check did not run: the filters called on their own, a role's
tasks run with tasks_from. The unit tests hold the engine to this, value by value, against core's
check of the real specs. Each message names the variable, the value as given and what to do.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import difflib
import functools
import json
import os

import yaml

from ansible.module_utils.common.validation import check_type_bool, check_type_dict, check_type_float, check_type_int

# This file is plugins/plugin_utils/role_settings.py: the roles are two levels up, beside plugins.
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


class SettingError(Exception):
    """A value the role cannot use; the message says what it is and what to do."""


class CoreRefused(SettingError):
    """A wrong type or choice: ansible-core's check of the spec refuses it first as the role is called (see above)."""


def show(value):
    """A value as the user would write it in YAML or JSON."""
    return json.dumps(value, sort_keys=True, default=str)


# ---- the spec -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def options(role):
    """The options of a role's entry point main, from its meta/argument_specs.yml, read once.

    Shared between callers: read them, never change them (defaults() gives copies).
    """
    # libyaml's loader where PyYAML has it (ansible-core's own choice): each task's worker that checks the
    # settings reads the spec again, and the pure-Python loader took ten times as long.
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as handle:
        spec = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return spec["argument_specs"]["main"]["options"]


def defaults(role):
    """The role's defaults, as the spec has them (templates such as "{{ inventory_hostname }}" as written)."""
    return dict((name, copy.deepcopy(option.get("default"))) for name, option in options(role).items())


def is_template(value):
    return isinstance(value, str) and "{{" in value


# ---- reading one value --------------------------------------------------------------------------

def as_bool(name, value):
    try:
        return check_type_bool(value)
    except TypeError:
        raise CoreRefused("%s is %s; give true or false" % (name, show(value)))


def _within(number, low, high):
    return (low is None or number >= low) and (high is None or number <= high)


def as_number(name, value, bounds=(None, None), whole=True, example=None):
    """value as an int (whole) or a float within bounds (low, high); None: no bound on that side."""
    problem = "%s is %s, not %s%s" % (name, show(value), "a whole number" if whole else "a number",
                                      "" if example is None else "; give one such as %s" % example)
    # A boolean is a number to Python and to ansible-core's check (true is 1), never to the user.
    if isinstance(value, bool):
        raise SettingError(problem)
    try:
        number = (check_type_int if whole else check_type_float)(value)
    except (TypeError, ValueError, ArithmeticError):
        raise CoreRefused(problem)
    low, high = bounds
    if not _within(number, low, high):
        limit = ("%s or more" % low if high is None else "%s or less" % high if low is None
                 else "from %s to %s" % (low, high))
        raise SettingError("%s is %s; it must be %s" % (name, show(value), limit))
    return number


def as_list(name, value, split=","):
    """A list, from a list or from the string -e gives: a JSON list, or else entries split at `split`.

    split None: an entry may hold any character, so the string must be a JSON list.
    """
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                raise SettingError("%s is %s, which is not a JSON list; give a list, for example -e '{\"%s\": [0, 2]}'"
                                   % (name, show(value), name))
            if isinstance(parsed, list):
                return parsed
        if split:
            return [entry.strip() for entry in text.split(split)] if text else []
        raise SettingError("%s is the string %s; give a list, for example -e '{\"%s\": [\"...\"]}'"
                           % (name, show(value), name))
    # A single number (or boolean) is a list of one, as for ansible-core; the spec's elements judge it.
    if isinstance(value, (int, float)):
        return [value]
    raise CoreRefused("%s is %s; give a list" % (name, show(value)))


def as_dict(name, value):
    """A mapping, from a mapping or from the text -e gives: JSON ('{...}') or NAME=value pairs, as core reads it."""
    try:
        return dict(check_type_dict(value))
    except (TypeError, ValueError):
        raise CoreRefused("%s is %s; give a mapping of names to values, for example "
                          "-e '{\"%s\": {\"NAME\": \"value\"}}'" % (name, show(value), name))


# What YAML makes of an unquoted word that was meant as a string.
UNQUOTED = {bool: "true or false", int: "a number", float: "a number"}


def as_str(name, value):
    if not isinstance(value, str):
        unquoted = UNQUOTED.get(type(value))
        raise SettingError("%s is %s; give a string%s" % (
            name, show(value), ", in quotes: unquoted, YAML reads it as %s" % unquoted if unquoted else ""))
    return value


def as_path(name, value):
    # The paths of the specs are paths on the host, where a relative one would depend on the
    # directory the module happens to run in.
    if not as_str(name, value).startswith("/"):
        raise SettingError("%s is %s; give an absolute path" % (name, show(value)))
    return value


# How a value of each type of the spec is read, numbers aside (they have bounds): (name, value) -> the value.
SCALARS = {"str": as_str, "path": as_path, "bool": as_bool, "dict": as_dict, "raw": lambda name, value: value}


def _scalar(kind, name, value, bounds=(None, None), example=None):
    if kind in ("int", "float"):
        return as_number(name, value, bounds, kind == "int", example)
    return SCALARS[kind](name, value)


def _choose(name, value, choices):
    if value not in choices:
        raise CoreRefused("%s is %s; choose one of %s" % (name, show(value), ", ".join(show(c) for c in choices)))
    return value


def read(name, value, option, rule):
    """One variable as given, read by its spec option and its rule (see check()); raises SettingError."""
    # As ansible-core's check: null for a variable whose default is null is no value to read.
    if value is None and option.get("default") is None:
        return None
    if "read" in rule:
        return rule["read"](name, value)
    kind, bounds, choices = option.get("type", "str"), rule.get("range", (None, None)), option.get("choices")
    if kind == "list":
        # Ansible's own rule splits a string at commas; the spec's elements and choices apply to each entry.
        value = [_scalar(option.get("elements", "raw"), name + " entry", entry, bounds)
                 for entry in as_list(name, value, rule.get("split", ","))]
        for entry in value if choices else ():
            _choose(name + " entry", entry, choices)
    else:
        value = _scalar(kind, name, value, bounds, option.get("default"))
        if choices:
            _choose(name, value, choices)
    if "match" in rule and not rule["match"][0].search(value):
        raise SettingError("%s is %s%s" % (name, show(value), rule["match"][1]))
    return value


# ---- reading them all ---------------------------------------------------------------------------

def unknown(role, raw, published=()):
    """A message per variable of the role's prefix that is neither an option of its spec nor a fact it publishes."""
    prefix = "exo_%s_" % role
    # Compared without the prefix they all share, which would make any two names look alike.
    known = dict((name[len(prefix):], name) for name in options(role))
    errors = []
    for name in sorted(raw):
        if name.startswith(prefix) and name[len(prefix):] not in known and name not in published:
            close = difflib.get_close_matches(name[len(prefix):], list(known), n=1)
            errors.append("%s is not a variable of this role%s; docs/%s.md lists them" % (
                name, " (did you mean %s?)" % known[close[0]] if close else "", role))
    return errors


def check(role, raw, rules, published=()):
    """(values, errors): every variable of the role, from raw as the user gave it, coerced and checked.

    A wrong type or choice is refused as CoreRefused: ansible-core's check of the spec refuses it
    first where the role is called as a role (see the module docstring).
    role: the role's directory name under roles/; its variables start with exo_<role>_.
    rules: what the spec cannot say, per variable; each key is optional:
      "range"  (low, high) for an int or float, None for no bound on that side;
      "match"  (compiled pattern, advice): a string the pattern does not find is refused with
               "<name> is <value><advice>";
      "split"  how a list given as one string (-e name=a,b) is split; None: it must be a JSON list;
      "read"   fn(name, value) -> value, raising SettingError: the role's own reader, instead of the
               spec's type (a kind the spec cannot describe).
    published: facts the role sets under the same prefix; they are found beside the settings.
    A variable missing from raw takes the spec's default, but a default that is a template of the
    host's variables only Ansible can fill in. One error per bad variable, in the spec's order,
    then the names the role does not know.
    """
    values, errors = {}, []
    for name, option in options(role).items():
        if name not in raw:
            if is_template(option.get("default")):
                errors.append("%s is not set, and its default is a template of the host's variables that only the "
                              "role fills in (%s); give it, or include the role" % (name, show(option["default"])))
            else:
                values[name] = copy.deepcopy(option.get("default"))
            continue
        try:
            values[name] = read(name, raw[name], option, rules.get(name, {}))
        except SettingError as problem:
            errors.append(str(problem))
    return values, errors + unknown(role, raw, published)
