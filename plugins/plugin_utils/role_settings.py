# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' one settings engine: every variable of a role read and checked as the user gave it.

A role's meta/argument_specs.yml says what each variable is (type, elements, choices, default); the
role's own Python adds a small table of what the spec cannot say (RULES: number ranges, patterns,
custom readers) and its cross-field checks. check() reads a dict of the role's variables, as YAML
wrote them or as strings (-e name=value), and returns them coerced with one message per problem:
each names the variable, the value as given and what to do. The roles call it from their planners,
so their own messages speak instead of ansible-core's validation (which prints the whole spec).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import difflib
import functools
import json
import os

import yaml

from ansible.module_utils.common.validation import check_type_bool

# This file is plugins/plugin_utils/role_settings.py: the roles are two levels up, beside plugins.
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


class SettingError(Exception):
    """A value the role cannot use; the message says what it is and what to do."""


def show(value):
    """A value as the user would write it in YAML or JSON."""
    return json.dumps(value, sort_keys=True, default=str)


# ---- the spec -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def options(role):
    """The options of a role's entry point main, from its meta/argument_specs.yml, read once.

    Shared between callers: read them, never change them (defaults() gives copies).
    """
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


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
        raise SettingError("%s is %s; give true or false" % (name, show(value)))


def _within(number, low, high):
    return (low is None or number >= low) and (high is None or number <= high)


def as_number(name, value, bounds=(None, None), whole=True, example=None):
    """value as an int (whole) or a float within bounds (low, high); None: no bound on that side."""
    try:
        # A boolean is a number to Python, never to the user.
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(value)
        number = (int if whole else float)(str(value).strip())
    except ValueError:
        raise SettingError("%s is %s, not %s%s" % (name, show(value), "a whole number" if whole else "a number",
                                                   "" if example is None else "; give one such as %s" % example))
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
    raise SettingError("%s is %s; give a list" % (name, show(value)))


def as_dict(name, value):
    """A mapping, from a mapping or from the JSON text -e name='{...}' gives."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if not isinstance(value, dict):
        raise SettingError("%s is %s; give a mapping of names to values, for example "
                           "-e '{\"%s\": {\"NAME\": \"value\"}}'" % (name, show(value), name))
    return dict(value)


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
        raise SettingError("%s is %s; choose one of %s" % (name, show(value), ", ".join(show(c) for c in choices)))
    return value


def read(name, value, option, rule):
    """One variable as given, read by its spec option and its rule (see check()); raises SettingError."""
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
