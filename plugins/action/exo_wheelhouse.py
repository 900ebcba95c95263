# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo.exo_wheelhouse: the node role's wheelhouses, built or checked and packed on the controller
(plugins/modules/exo_wheelhouse.py documents it; plugins/plugin_utils/node/wheel_build.py does it)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheel_build

ARGUMENTS = {
    "requests": {"type": "list", "elements": "dict", "required": True},
    "cache": {"type": "path", "default": "~/.cache/gpufleet.exo/wheelhouses"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENTS)[1]
        cache = os.path.expanduser(args["cache"])
        wheelhouses = {}
        # One build per key, however many hosts asked for it.
        for request in args["requests"]:
            if request and request["key"] not in wheelhouses:
                wheelhouses[request["key"]] = wheel_build.prepare(request, cache, self._task.check_mode)
        result.update(changed=any(entry["changed"] for entry in wheelhouses.values()), wheelhouses=wheelhouses)
        return result
