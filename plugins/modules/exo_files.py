#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_files
short_description: Write the node role's configuration files and their directories, in one call
version_added: 1.0.0
description:
  - The host side of the node role's configure step, the files of the filter P(gpufleet.exo.node_files#filter)
    (the template unit, each instance's env file and drop-ins, the topology, the firewall's table and unit).
    One call writes them all, where a template task looped over them made a round trip to the host each.
  - Makes O(directories) first, then writes each of O(files) whose text differs, each replaced whole (a new
    file beside it, moved over it), then sets its owner, group and mode.
  - The controller renders a file given by C(src) (as M(ansible.builtin.template) finds and renders it, with
    the entry's C(instance) as the variable C(item)), so the host gets the text alone.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  directories:
    description:
      - The directories to make, each a dict of C(path) and, optionally, C(owner) and C(group) (C(root)) and
        C(mode) (C(0755)); an existing one gets them too. Other keys are not read.
    type: list
    elements: dict
    default: []
  files:
    description:
      - The files to write, each a dict of C(dest) and its text, given as C(content) or as C(src), a template
        the controller renders, with C(instance) as C(item); and optionally C(owner) and C(group) (C(root)),
        C(mode) (C(0644)) and C(validate), a command with C(%s) for a path that must accept the new text
        before it replaces the file (as M(ansible.builtin.template)'s). Other keys are not read (the
        C(what) and C(instances) of RV(gpufleet.exo.node_files#filter:_value.templates)).
      - A file whose text is a secret (an env file with C(HF_TOKEN)) belongs in a task of its own with
        C(no_log) and C(diff) off.
    type: list
    elements: dict
    default: []
attributes:
  action:
    support: full
    description: The controller renders each file given by C(src) before the module runs.
  check_mode:
    support: full
    description: Says which directories and files it would make or change; runs no C(validate).
  diff_mode:
    support: full
    description: Shows the change of each file whose text changed.
"""

EXAMPLES = r"""
- name: Write a configuration directory and its files in one call, the topology checked before it is written
  gpufleet.exo.exo_files:
    directories:
      - path: /etc/gpufleet-exo-example
        mode: "0750"
    files:
      - dest: /etc/gpufleet-exo-example/topology.json
        content: |
          {"peers": {"gpu-a-cpu": {"address": "10.0.0.11", "port": 50051}}}
        mode: "0640"
        validate: python3 -m json.tool %s
      - dest: /etc/gpufleet-exo-example/README
        content: "Written by gpufleet.exo.exo_files.\n"
  register: example_files

- name: Say what it wrote
  ansible.builtin.debug:
    msg: "{{ example_files.written }}"
"""

RETURN = r"""
written:
  description: The directories made or changed and the files written or changed, in that order (in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/exo/instances, /etc/systemd/system/exo@.service]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import Invalid, write_all, writers


def missing(entries, option, keys):
    """What each entry lacks of keys, as a message naming it ("files[2] has no dest"); empty when nothing is missing.
    A file's content may be empty text, not absent."""
    return ["%s[%d] has no %s" % (option, number, "content (nor src)" if key == "content" else key)
            for number, entry in enumerate(entries) for key in keys
            if not isinstance(entry.get(key), str) or (key != "content" and not entry[key])]


def main():
    module = AnsibleModule(
        argument_spec=dict(directories=dict(type="list", elements="dict", default=[]),
                           files=dict(type="list", elements="dict", default=[])),
        supports_check_mode=True)
    problems = (missing(module.params["directories"], "directories", ("path",))
                + missing(module.params["files"], "files", ("dest", "content")))
    if problems:
        module.fail_json(msg="exo_files: %s" % "; ".join(problems))
    try:
        result = write_all(module.params["directories"], module.params["files"], writers(module), module._diff)
    except Invalid as refusal:
        module.fail_json(msg=str(refusal))
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
