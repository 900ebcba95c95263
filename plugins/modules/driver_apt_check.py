#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: driver_apt_check
short_description: Ask apt whether the NVIDIA driver packages of a plan can be installed, changing nothing
version_added: 0.2.0
description:
  - Reads the host's apt sources plus the planned ones into a private directory, asks for each package's
    candidate and simulates the install (C(apt-get -s)); the directory is removed afterwards, so the host's
    package lists, sources and dpkg database are only read.
  - Says what stands in the way, in words, in RV(problems) - a branch the release does not carry, a package
    without a candidate, kernel headers the distribution has none of for the running kernel, a kernel module
    and an NVML library of different versions, apt's own refusal - and in RV(notes) what it leaves out.
  - Returns the sources file the role P(gpufleet.exo.driver#role) manages - only the components the host's own
    sources lack - and the packages to ask apt for.
  - Used by the role's preflight with the plan of P(gpufleet.exo.driver_plan#filter); it never fails
    because of what it finds.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  repositories:
    description: The apt repositories of the plan.
    type: list
    elements: dict
    required: true
    suboptions:
      kind:
        description: Always V(apt).
        type: str
        choices: [apt]
        default: apt
      file:
        description: The sources file the role manages; the host's own file of that name is not read.
        type: path
        required: true
      keyring:
        description: The keyring that signs the repository (C(Signed-By)).
        type: path
      components:
        description: The components the driver needs, for example V(contrib) and V(non-free).
        type: list
        elements: str
        required: true
      sources:
        description: The mirror and suite of each source.
        type: list
        elements: dict
        required: true
        suboptions:
          uri:
            description: The mirror.
            type: str
            required: true
          suite:
            description: The suite, for example V(bookworm-updates).
            type: str
            required: true
  packages:
    description: The packages the plan needs, kernel module first.
    type: list
    elements: str
    required: true
  optional_packages:
    description: Packages installed when apt has them, left out with a note otherwise.
    type: list
    elements: str
    default: []
  version_match:
    description: Packages whose upstream versions must be equal (the kernel module and the NVML library).
    type: list
    elements: str
    default: []
  kernel:
    description:
      - The running kernel's release; C(linux-headers-<kernel>) is left out when headers are already at
        C(/lib/modules/<kernel>/build).
      - Defaults to the release of the kernel the module runs under.
    type: str
  distribution:
    description: The distribution and release, for the messages.
    type: str
    default: this distribution
  branch:
    description: The driver branch, for the messages.
    type: str
    default: the chosen branch
requirements:
  - apt-get, apt-cache and dpkg-query on the host
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - It runs the same in check mode; it only reads.
  - C(docs/driver.md) in the collection explains the driver role's decision, plan per distribution and preflight.
"""

EXAMPLES = r"""
- name: Ask apt whether Debian 12's user-space driver can be installed
  gpufleet.exo.driver_apt_check:
    repositories:
      - file: /etc/apt/sources.list.d/gpufleet-exo-nvidia.sources
        keyring: /usr/share/keyrings/debian-archive-keyring.gpg
        components: [contrib, non-free, non-free-firmware]
        sources:
          - {uri: http://deb.debian.org/debian, suite: bookworm}
          - {uri: http://deb.debian.org/debian, suite: bookworm-updates}
          - {uri: http://deb.debian.org/debian-security, suite: bookworm-security}
    packages: [nvidia-smi, libnvidia-ml1, libcuda1, nvidia-persistenced]
    optional_packages: [python3-pynvml]
    version_match: [libnvidia-ml1]
    distribution: Debian 12 (bookworm)
    branch: "535"
  register: apt_answer

- name: Stop when apt says the plan cannot work
  ansible.builtin.fail:
    msg: "{{ apt_answer.problems | join(' | ') }}"
  when: apt_answer.problems | length > 0
"""

RETURN = r"""
problems:
  description: What stands in the way of the plan, one message per problem; empty when apt can install it.
  returned: always
  type: list
  elements: str
  sample: ["no installation candidate for nvidia-tesla-999-smi in Debian 12 (bookworm) with the components contrib,
           non-free, non-free-firmware: branch 999 is not available there; set exo_driver_branch to a branch this
           release carries"]
notes:
  description: What the plan leaves out and why (headers already on the host, optional packages apt lacks).
  returned: always
  type: list
  elements: str
install:
  description: The packages to ask apt for - the required ones less headers already on the host, and the
    optional ones apt has.
  returned: always
  type: list
  elements: str
sources:
  description: The content of the sources file the role manages - the components the host's own sources
    lack - or an empty string when they lack none.
  returned: always
  type: str
missing_components:
  description: Per suite, the components the host's own sources lack.
  returned: always
  type: dict
  sample: {bookworm: [contrib, non-free]}
installed:
  description: The packages of the plan installed already.
  returned: always
  type: list
  elements: str
skipped_headers:
  description: The headers package left out because the headers are at C(/lib/modules/<kernel>/build).
  returned: always
  type: list
  elements: str
checked:
  description: Whether apt was asked at all; V(false) when every required package is installed already.
  returned: always
  type: bool
update_errors:
  description: The errors of C(apt-get update) over the private package lists.
  returned: always
  type: list
  elements: str
candidates:
  description: The candidate version of each package, V(null) for none.
  returned: always
  type: dict
  sample: {libnvidia-ml1: 535.309.01-0+deb12u1, python3-pynvml: null}
upstream:
  description: The upstream version of each package of O(version_match) that has a candidate.
  returned: always
  type: dict
  sample: {nvidia-open-kernel-dkms: 535.261.03, libnvidia-ml1: 535.309.01}
simulate:
  description: The result of C(apt-get -s install), with C(rc) (V(null) when not run), C(errors) and C(install)
    (package to version).
  returned: always
  type: dict
"""

import platform

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.exo.plugins.module_utils._driver_packages import (
    APT_TOOLS, apt_check, apt_verdict, without_tools)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            repositories=dict(type="list", elements="dict", required=True, options=dict(
                kind=dict(type="str", choices=["apt"], default="apt"),
                file=dict(type="path", required=True),
                keyring=dict(type="path"),
                components=dict(type="list", elements="str", required=True),
                sources=dict(type="list", elements="dict", required=True, options=dict(
                    uri=dict(type="str", required=True),
                    suite=dict(type="str", required=True),
                )),
            )),
            packages=dict(type="list", elements="str", required=True),
            optional_packages=dict(type="list", elements="str", default=[]),
            version_match=dict(type="list", elements="str", default=[]),
            kernel=dict(type="str"),
            distribution=dict(type="str", default="this distribution"),
            branch=dict(type="str", default="the chosen branch"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    kernel = params["kernel"] or platform.release()
    missing = [tool for tool in APT_TOOLS if not module.get_bin_path(tool)]
    if missing:
        module.exit_json(changed=False, **without_tools(missing, "apt"))

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"})

    answer = apt_check(run, params["repositories"], params["packages"], params["optional_packages"],
                       params["version_match"], kernel)
    answer.update(apt_verdict(answer, params["repositories"], params["packages"], params["optional_packages"],
                              kernel, params["distribution"], params["branch"]))
    module.exit_json(changed=False, **answer)


if __name__ == "__main__":
    main()
