# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the roles' planners (node_plan.py, driver_plan.py) share to read a variable as the user gave it.

Values come as YAML wrote them or as strings (-e name=value); each message names the variable and
the value as given, so that the user finds both.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible.module_utils.common.validation import check_type_bool


class SettingError(Exception):
    """A value the role cannot use; the message says what it is and what to do."""


def show(value):
    """A value as the user would write it in YAML or JSON."""
    return json.dumps(value, sort_keys=True, default=str)


def as_bool(name, value):
    try:
        return check_type_bool(value)
    except TypeError:
        raise SettingError("%s is %s; give true or false" % (name, show(value)))


def as_number(name, value, bounds, whole=True, example=None):
    """value as an int (whole) or a float within bounds (low, high); high None: no upper bound."""
    try:
        # A boolean is a number to Python, never to the user.
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(value)
        number = (int if whole else float)(str(value).strip())
    except ValueError:
        raise SettingError("%s is %s, not %s%s" % (name, show(value), "a whole number" if whole else "a number",
                                                   "" if example is None else "; give one such as %s" % example))
    low, high = bounds
    if number < low or (high is not None and number > high):
        raise SettingError("%s is %s; it must be %s" % (
            name, show(value), "%s or more" % low if high is None else "from %s to %s" % (low, high)))
    return number
