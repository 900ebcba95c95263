# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo.exo_files: the files given by src rendered here, on the controller, then the module writes every
file and directory on the host in one round trip (plugins/modules/exo_files.py documents it)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        # The template lookup finds and renders a file as the template action does (the role's templates/
        # first), gpufleet.exo.template's without a deep copy of the variables for each file; an entry's
        # instance is the template's item, as in a loop over the instances.
        template = self._shared_loader_obj.lookup_loader.get("gpufleet.exo.template", loader=self._loader,
                                                             templar=self._templar)
        files = []
        for entry in self._task.args.get("files") or []:
            if isinstance(entry, dict) and "src" in entry:
                entry = dict(entry)
                entry["content"] = template.run([entry.pop("src")], task_vars,
                                                template_vars={"item": entry.pop("instance", None)})[0]
            files.append(entry)
        result.update(self._execute_module(module_name="gpufleet.exo.exo_files",
                                           module_args=dict(self._task.args, files=files), task_vars=task_vars))
        return result
