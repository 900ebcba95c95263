#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_unit_check
short_description: Ask systemd about each exo instance's unit
version_added: 1.0.0
description:
  - For each of O(instances), runs the checks of O(checks) on its unit C(exo@NAME.service), in order.
  - C(verify) runs C(systemd-analyze verify) and fails on what it says of this unit or of exo's
    virtualenv (O(install_dir)); problems of other units of the host do not count.
  - C(security) rates the unit with C(systemd-analyze security --offline=yes) and fails where the
    figure is above O(max_exposure); a unit it cannot rate at all is not refused.
  - C(started) asks when the instance last started (C(systemctl show --timestamp=unix)) and the
    newest modification time of the files it was started from (the template unit, O(marker), its
    env file and drop-in), so that an instance running on older settings can be restarted.
  - Changes nothing.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  instances:
    description: The instances' names (C(exo_node_instances[].name)).
    type: list
    elements: str
    required: true
  checks:
    description: What to ask of each unit.
    type: list
    elements: str
    choices: [verify, security, started]
    required: true
  install_dir:
    description: exo's virtualenv, whose problems systemd-analyze verify reports count.
    type: path
    default: /opt/exo
  max_exposure:
    description: The highest exposure C(security) accepts (C(exo_node_max_exposure)).
    type: float
    default: 2.0
  unit_dir:
    description: Where the template unit and the drop-ins are.
    type: path
    default: /etc/systemd/system
  instances_dir:
    description: Where the instances' env files are.
    type: path
    default: /etc/exo/instances
  marker:
    description: The marker of the source exo was installed from, in its virtualenv.
    type: path
    default: /opt/exo/.gpufleet-exo-source
attributes:
  check_mode:
    support: full
    description: It only asks, in check mode as otherwise.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
"""

EXAMPLES = r"""
- name: Verify and rate each instance's unit
  gpufleet.exo.exo_unit_check:
    instances: "{{ ansible_facts['exo_node_instances'] | map(attribute='name') | list }}"
    checks: [verify, security]
    max_exposure: 2.0
  register: units

- name: Say each one's exposure
  ansible.builtin.debug:
    msg: "{{ units.units | items2dict(key_name='unit', value_name='exposure') }}"
"""

RETURN = r"""
units:
  description: What was found of each instance's unit, in the order of O(instances).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The instance's name.
      type: str
    unit:
      description: Its unit, C(exo@NAME.service).
      type: str
    exposure:
      description: With C(security), the overall exposure as systemd-analyze printed it; null where it could not rate the unit.
      type: str
    started:
      description: With C(started), when the instance last started (seconds since the epoch); null where it never did.
      type: int
    modified:
      description: With C(started), the newest modification time of its files (seconds); null where none exists.
      type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_units import UnitRefused, check


def main():
    module = AnsibleModule(
        argument_spec=dict(instances=dict(type="list", elements="str", required=True),
                           checks=dict(type="list", elements="str", required=True, choices=["verify", "security", "started"]),
                           install_dir=dict(type="path", default="/opt/exo"),
                           max_exposure=dict(type="float", default=2.0),
                           unit_dir=dict(type="path", default="/etc/systemd/system"),
                           instances_dir=dict(type="path", default="/etc/exo/instances"),
                           marker=dict(type="path", default="/opt/exo/.gpufleet-exo-source")),
        supports_check_mode=True)
    try:
        units = check(module.params, module.run_command)
    except UnitRefused as refusal:
        module.fail_json(msg=str(refusal))
    module.exit_json(changed=False, units=units)


if __name__ == "__main__":
    main()
