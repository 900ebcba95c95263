# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mark of the node role's settings as its preflight checked them, and the planners' test for it.

Apart from settings.py, whose checks import half the planners: each planner runs in a task's worker of its
own, which imports what the planner needs and no more.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

# The key check_settings() adds to values without an error: the planners read the values as coerced (a
# list given as a string is a list by now), so they refuse a dict without it (checked()). Not an
# exo_node_ name: the role's variables as read can never hold it.
CHECKED = "__exo_node_checked"


def checked(name, settings):
    """settings, where check_settings() answered them without an error; else the planner name stops the run."""
    if not isinstance(settings, dict) or settings.get(CHECKED) is not True:
        raise AnsibleFilterError("%s takes the node role's settings as its preflight checked them (the filter "
                                 "node_preflight's \"settings\", or node_settings'), not the variables as given"
                                 % name)
    return settings
