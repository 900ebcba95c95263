#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: package_versions
short_description: The versions installed of the packages whose names match, and of no other
version_added: 1.0.0
description:
  - Lists the packages installed from dpkg's database (C(dpkg-query)), or where there is none from rpm's, and
    returns those whose names match O(names), in the shape of M(ansible.builtin.package_facts)' C(packages).
  - Returns them, not as facts. M(ansible.builtin.package_facts) keeps every package of the host in its facts
    for the rest of the play (about 440 KB a host for 800 packages), which every later task of the host reads
    and copies again; the driver role P(gpufleet.exo.driver#role) needs a few dozen.
  - Only reads the host.
author:
  - gpufleet.exo contributors (@gpufleet)
requirements:
  - C(dpkg-query) or C(rpm) on the host; with neither, RV(packages) is V(null).
options:
  names:
    description: A Python regular expression that a package's whole name must match from its start (C(re.match)).
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reads the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
"""

EXAMPLES = r"""
- name: Read the versions of the NVIDIA packages installed
  gpufleet.exo.package_versions:
    names: '^(nvidia-.+|libnvidia-.+|libcuda1)$'
  register: nvidia_packages

- name: Say them
  ansible.builtin.debug:
    msg: "{{ nvidia_packages.packages | dict2items | map(attribute='key') | list }}"
"""

RETURN = r"""
packages:
  description:
    - The packages installed whose names match, each with its installed versions (several where dpkg holds one
      package for several architectures), as M(ansible.builtin.package_facts) returns them.
    - V(null) where the host has neither C(dpkg-query) nor C(rpm).
  returned: always
  type: dict
  sample: {"libcuda1": [{"name": "libcuda1", "version": "535.247.01-1~deb12u1", "arch": "amd64", "source": "apt"}]}
manager:
  description: The tool that listed them, V(dpkg-query) or V(rpm); V(null) with neither.
  returned: always
  type: str
  sample: dpkg-query
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.exo.plugins.module_utils._package_versions import package_versions


def main():
    module = AnsibleModule(argument_spec=dict(names=dict(type="str", required=True)), supports_check_mode=True)
    try:
        names = re.compile(module.params["names"])
    except re.error as error:
        module.fail_json(msg="names is not a regular expression (%s): %s" % (error, module.params["names"]))
    result = package_versions(names, module.get_bin_path,
                              lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}))
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
