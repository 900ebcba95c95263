#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_service
short_description: Set up or remove a systemd service of the node role's, with its files
version_added: 1.0.0
description:
  - The host side of the node role's own services (the GPU health watcher, the firewall's guard, the
    ring's tunnel, the instances that left); the role decides what they run and its templates render
    their units.
  - With O(state=present), makes O(directories) (mode C(0755); an existing one keeps its owner), writes
    O(files) and, where given, O(unit) as the unit file of the first of O(units) in O(unit_dir) (all
    C(0644), root's); with O(private), the directories and files are root's alone (see there). Then
    reloads systemd where a unit file changed or O(daemon_reload) asks, enables each unit and, with
    O(systemd_running), starts it, or restarts it where one of these files changed or O(restart) asks,
    or reloads it where O(reload) asks.
  - With O(state=absent), stops each unit where systemd runs and disables it (C(systemctl) does so on
    the files alone where systemd does not run; a host without C(systemctl) is left to the removal),
    removes O(remove), then reloads systemd where O(daemon_reload) asks and forgets the units' failed
    state. A unit systemd does not know is no error.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  units:
    description: The units, by their full names.
    type: list
    elements: str
    required: true
  state:
    description: Whether the units are set up or removed.
    type: str
    choices: [present, absent]
    default: present
  unit:
    description: The text of the unit file of the first of O(units), with O(state=present).
    type: str
  unit_dir:
    description: Where O(unit) goes.
    type: path
    default: /etc/systemd/system
  files:
    description: The files the units run, path to text, with O(state=present); a change restarts them.
    type: dict
    default: {}
  directories:
    description: The directories to make first, with O(state=present).
    type: list
    elements: path
    default: []
  remove:
    description: The paths to remove (a directory with all it holds), with O(state=absent).
    type: list
    elements: path
    default: []
  private:
    description:
      - Make O(directories) root's alone (C(0700)), an existing one included, and O(files) too (C(0600));
        the unit file stays C(0644).
    type: bool
    default: false
  restart:
    description: Restart the units where they run, as for a change of O(files) (their unit file was written elsewhere).
    type: bool
    default: false
  reload:
    description: Reload the units where they run and are neither started nor restarted now (what they load changed).
    type: bool
    default: false
  daemon_reload:
    description: Reload systemd, before the units are started (O(state=present)) or after the removal (O(state=absent)).
    type: bool
    default: false
  systemd_running:
    description: Whether systemd runs on the host; without it the units are only enabled or disabled.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Says what it would write, remove and ask of systemd; only asks systemd what it knows.
  diff_mode:
    support: full
    description: Shows the change of the unit file (O(unit), or the removed one).
"""

EXAMPLES = r"""
- name: Run a small service from a package of its own, with its unit
  gpufleet.exo.exo_service:
    units: [gpufleet-exo-example.service]
    unit: |
      [Unit]
      Description=A service set up as the node role sets up its own

      [Service]
      Environment=PYTHONPATH=/usr/local/lib/gpufleet-exo-example
      ExecStart=/usr/bin/python3 -m gpufleet_exo_example
      DynamicUser=yes

      [Install]
      WantedBy=multi-user.target
    directories: [/usr/local/lib/gpufleet-exo-example/gpufleet_exo_example]
    files:
      /usr/local/lib/gpufleet-exo-example/gpufleet_exo_example/__init__.py: ""
      /usr/local/lib/gpufleet-exo-example/gpufleet_exo_example/__main__.py: |
        import time
        while True:
            time.sleep(3600)
    systemd_running: "{{ ansible_facts['service_mgr'] == 'systemd' }}"
  register: example_service

- name: Remove it, its unit and its package
  gpufleet.exo.exo_service:
    state: absent
    units: [gpufleet-exo-example.service]
    remove: [/etc/systemd/system/gpufleet-exo-example.service, /usr/local/lib/gpufleet-exo-example]
    daemon_reload: true
  register: example_removal
"""

RETURN = r"""
files:
  description: The paths written or removed (in check mode, that would be).
  returned: always
  type: list
  elements: str
systemd:
  description: The systemctl commands run (in check mode, that would be), in order.
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, enable gpufleet-exo-health.service, start gpufleet-exo-health.service]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_service import ServiceFailed, absent, present
from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import run_steps


def main():
    module = AnsibleModule(
        argument_spec=dict(units=dict(type="list", elements="str", required=True),
                           state=dict(type="str", choices=["present", "absent"], default="present"),
                           unit=dict(type="str"), unit_dir=dict(type="path", default="/etc/systemd/system"),
                           files=dict(type="dict", default={}),
                           directories=dict(type="list", elements="path", default=[]),
                           remove=dict(type="list", elements="path", default=[]),
                           private=dict(type="bool", default=False),
                           restart=dict(type="bool", default=False), reload=dict(type="bool", default=False),
                           daemon_reload=dict(type="bool", default=False),
                           systemd_running=dict(type="bool", default=True)),
        supports_check_mode=True)
    systemctl = module.get_bin_path("systemctl")
    if not systemctl and (module.params["state"] == "present" or module.params["systemd_running"]):
        module.fail_json(msg="exo_service needs systemctl, which is not on this host's PATH")
    run_steps(module, present, absent, ServiceFailed, systemctl=systemctl)


if __name__ == "__main__":
    main()
