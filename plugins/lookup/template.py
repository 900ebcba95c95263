# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: template
author: gpufleet.exo contributors (@gpufleet)
version_added: 1.0.0
short_description: A template rendered as ansible.builtin.template's lookup renders it, without copying every variable
description:
  - Each template of O(_terms), found and rendered by P(ansible.builtin.template#lookup) itself, with the same options
    (O(template_vars) and the others, given as that lookup takes them), to the same text.
  - That lookup deep-copies all of the task's variables for each template, so that the variables it adds for the
    template (C(template_path), C(ansible_managed)) change no one else's. With a host's facts among them the copy
    costs more than the rendering. This one hands it the variables in a mapping of its own whose values are shared,
    which keeps those additions apart as well; a template only reads the values.
  - The roles of this collection render their templates through it, as M(gpufleet.exo.exo_files) does.
options:
  _terms:
    description: The templates, each found as P(ansible.builtin.template#lookup) finds it (a role's C(templates/) first).
    type: list
    elements: str
    required: true
  template_vars:
    description: Variables for the templates alone, as P(ansible.builtin.template#lookup) takes them.
    type: dict
    default: {}
notes:
  - The other options of P(ansible.builtin.template#lookup) are passed on to it as they are.
seealso:
  - plugin: ansible.builtin.template
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Show a template of the play's templates/, rendered
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.exo.template', 'motd.j2') }}"

- name: Show a template with variables of its own
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.exo.template', 'unit.j2', template_vars={'item': {'name': 'gpu-a-0'}}) }}"
"""

RETURN = r"""
_raw:
  description: Each template's text, rendered.
  type: list
  elements: str
"""

from ansible.plugins.loader import lookup_loader
from ansible.plugins.lookup import LookupBase


class SharedVariables(dict):
    """Variables whose deep copy is a copy of the mapping alone: the copy's values are the originals."""

    def __deepcopy__(self, memo):
        return dict(self)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        template = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        return template.run(terms, SharedVariables(variables or {}), **kwargs)
