#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_host_inspect
short_description: Look at what the node role's planners read of a host, in one round trip
version_added: 1.0.0
description:
  - What the filters P(gpufleet.exo.node_preflight#filter), P(gpufleet.exo.node_plan#filter) and
    P(gpufleet.exo.node_install#filter) read of a host, each part looked at only where its option is given,
    and answered in the shape they take.
  - Changes nothing.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  python:
    description: An interpreter to ask for its version (C(python --version)); exo's Python.
    type: path
  venv:
    description: exo's virtualenv (C(exo_node_install_dir)), to say what the install needs; requires O(python).
    type: path
  marker:
    description: The file in O(venv) that names the source exo was installed from.
    type: path
  paths:
    description: Paths to look for (a link by what it points to).
    type: list
    elements: path
    default: []
  modules:
    description: Kernel modules to look for (the kernel's WireGuard, C(wireguard)); none is loaded.
    type: list
    elements: str
    default: []
  user:
    description: An account to look up in the passwd database (through NSS, as C(getent) does).
    type: str
  instances_dir:
    description: Where the node role writes the instances' env files; its C(*.env) files are the instances configured before.
    type: path
  mig_minors:
    description: The NVIDIA driver's MIG minors file to read (C(/proc/driver/nvidia-caps/mig-minors)).
    type: path
attributes:
  check_mode:
    support: full
    description: It only looks, in check mode as otherwise.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
"""

EXAMPLES = r"""
- name: Look at the host as the node role's planners read it
  gpufleet.exo.exo_host_inspect:
    python: /usr/bin/python3
    venv: /opt/exo
    marker: /opt/exo/.gpufleet-exo-source
    paths: [/usr/bin/systemctl, /bin/systemctl]
    modules: [wireguard]
    user: root
    instances_dir: /etc/exo/instances
  register: host

- name: Say what was found
  ansible.builtin.debug:
    msg: >-
      {{ host.python_version.stdout or host.python_version.stderr }};
      exo's virtualenv {{ 'in place' if host.venv.python else 'to make' }};
      WireGuard {{ 'in the kernel' if host.modules.wireguard else 'in userspace' }};
      systemctl {{ 'found' if true in host.found.values() else 'missing' }};
      root's uid {{ host.account[1] }}; {{ host.existing | length }} instances configured
"""

RETURN = r"""
python_version:
  description: With O(python), its answer as M(ansible.builtin.command) registers it; null without.
  returned: always
  type: dict
  contains:
    rc:
      description: The exit status (the error's number where it could not run).
      type: int
    stdout:
      description: What it printed.
      type: str
    stderr:
      description: What it printed as errors.
      type: str
    msg:
      description: Why it could not run at all; only then.
      type: str
venv:
  description: With O(venv), what the filter P(gpufleet.exo.node_install#filter) takes as its C(venv); null without.
  returned: always
  type: dict
  contains:
    python:
      description: Whether the virtualenv's interpreter exists.
      type: bool
    ensurepip:
      description:
        - Where the virtualenv is still to be made, the exit status of C(PYTHON -m ensurepip --version) (2 where
          O(python) is not installed yet); else null. Debian's own Pythons make a virtualenv only with
          C(python3.X-venv).
      type: int
    exe:
      description: Whether exo's executable is in the virtualenv.
      type: bool
    marker:
      description: The source O(marker) names, C("") where there is none.
      type: str
found:
  description: Each of O(paths), whether it exists.
  returned: always
  type: dict
  sample: {/usr/bin/systemctl: true, /bin/systemctl: true}
modules:
  description:
    - Each of O(modules), whether the kernel has it, loaded, built in or loadable (C(modprobe --dry-run) finds
      it).
  returned: always
  type: dict
  sample: {wireguard: true}
account:
  description:
    - With O(user), its passwd entry after the name, as M(ansible.builtin.getent) gives it (password, uid, gid,
      comment, home, shell), or null where there is none.
  returned: always
  type: list
  elements: str
existing:
  description: With O(instances_dir), the paths of its C(*.env) regular files (no link, none hidden), sorted; null without.
  returned: always
  type: list
  elements: str
mig_minors_text:
  description: With O(mig_minors), the file's text; null where it could not be read.
  returned: always
  type: str
mig_minors_error:
  description: With O(mig_minors), why it could not be read; else null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_host import inspect


def main():
    module = AnsibleModule(
        argument_spec=dict(python=dict(type="path"), venv=dict(type="path"), marker=dict(type="path"),
                           paths=dict(type="list", elements="path", default=[]),
                           modules=dict(type="list", elements="str", default=[]), user=dict(type="str"),
                           instances_dir=dict(type="path"), mig_minors=dict(type="path")),
        required_by={"venv": "python"}, supports_check_mode=True)
    module.exit_json(changed=False, **inspect(module.params, module.run_command))


if __name__ == "__main__":
    main()
