#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: driver_dnf_check
short_description: Ask dnf whether the NVIDIA driver's module stream and packages of a plan exist, changing nothing
version_added: 0.2.0
description:
  - Reads the planned repositories (NVIDIA's CUDA repository, EPEL) through C(--repofrompath), so nothing under
    C(/etc/yum.repos.d) changes, and checks that the C(nvidia-driver) module stream of the branch exists and
    carries the driver's packages, and that the other packages (C(kernel-devel) of the running kernel, C(dkms))
    are available.
  - Says what stands in the way, in words, in RV(problems); it never fails because of what it finds.
  - Used by the preflight of the role P(gpufleet.exo.driver#role) with the plan of P(gpufleet.exo.driver_plan#filter).
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  repositories:
    description: The repositories to read, each with an C(id) and a C(baseurl).
    type: list
    elements: dict
    required: true
    suboptions:
      id:
        description: The repository id.
        type: str
        required: true
      baseurl:
        description: The repository URL.
        type: str
        required: true
  stream:
    description: The module stream of the branch, for example V(nvidia-driver:580-dkms).
    type: str
    required: true
  stream_packages:
    description: Packages the module stream must carry.
    type: list
    elements: str
    required: true
  other_packages:
    description: Packages from outside the stream (C(kernel-devel-<kernel>), C(dkms), extra packages).
    type: list
    elements: str
    default: []
  kernel:
    description:
      - The running kernel's release, for the messages.
      - Defaults to the release of the kernel the module runs under.
    type: str
  distribution:
    description: The distribution and release, for the messages.
    type: str
    default: this distribution
requirements:
  - dnf and rpm on the host
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - It runs the same in check mode; it only reads.
  - Nothing is asked of the repositories when the stream is enabled and every package is installed already.
  - C(docs/driver.md) in the collection explains the driver role's decision, plan per distribution and preflight.
"""

EXAMPLES = r"""
- name: Ask dnf whether branch 580 of NVIDIA's CUDA repository can be installed on Rocky Linux 9
  gpufleet.exo.driver_dnf_check:
    repositories:
      - {id: cuda-rhel9-x86_64, baseurl: "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"}
      - {id: gpufleet-exo-epel, baseurl: "https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/"}
    stream: nvidia-driver:580-dkms
    stream_packages: [nvidia-driver-cuda, nvidia-persistenced, kmod-nvidia-latest-dkms]
    other_packages: [dkms]
    distribution: Rocky 9
  register: dnf_answer

- name: Stop when dnf says the plan cannot work
  ansible.builtin.fail:
    msg: "{{ dnf_answer.problems | join(' | ') }}"
  when: dnf_answer.problems | length > 0
"""

RETURN = r"""
problems:
  description: What stands in the way of the plan, one message per problem; empty when dnf has everything.
  returned: always
  type: list
  elements: str
  sample: ["the CUDA repository has no module stream nvidia-driver:999-dkms for Rocky 9: its nvidia-driver streams
           are 570-dkms, 580-dkms, latest-dkms; set exo_driver_branch to one of them"]
installed:
  description: The packages of the plan installed already.
  returned: always
  type: list
  elements: str
checked:
  description: Whether the repositories were read; V(false) when the stream is enabled and everything is installed.
  returned: always
  type: bool
streams:
  description: The streams of C(nvidia-driver) the repositories carry.
  returned: always
  type: list
  elements: str
stream_found:
  description: Whether O(stream) is among them; V(null) when not checked.
  returned: always
  type: bool
stream_artifacts:
  description: The package names the stream carries.
  returned: always
  type: list
  elements: str
available:
  description: Per package of the plan, whether dnf can install it.
  returned: always
  type: dict
errors:
  description: What dnf itself reported when it could not read the repositories.
  returned: always
  type: list
  elements: str
"""

import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.exo.plugins.module_utils._driver_packages import (
    DNF_TOOLS, dnf_check, dnf_verdict, without_tools)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repositories=dict(type="list", elements="dict", required=True, options=dict(
                id=dict(type="str", required=True),
                baseurl=dict(type="str", required=True),
            )),
            stream=dict(type="str", required=True),
            stream_packages=dict(type="list", elements="str", required=True),
            other_packages=dict(type="list", elements="str", default=[]),
            kernel=dict(type="str"),
            distribution=dict(type="str", default="this distribution"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if ":" not in params["stream"]:
        module.fail_json(msg="stream is %r; give a module stream such as nvidia-driver:580-dkms" % params["stream"])
    missing = [tool for tool in DNF_TOOLS if not module.get_bin_path(tool)]
    if missing:
        module.exit_json(changed=False, **without_tools(missing, "dnf"))

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C"})

    answer = dnf_check(run, params["repositories"], params["stream"], params["stream_packages"],
                       params["other_packages"])
    answer.update(dnf_verdict(answer, params["stream"], params["kernel"] or platform.release(),
                              params["distribution"]))
    module.exit_json(changed=False, **answer)


if __name__ == "__main__":
    main()
