#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_wheelhouse
short_description: Build, or check and pack, the wheelhouses exo's hosts install from, on the controller
version_added: 1.0.0
description:
  - Runs on the controller (an action plugin); the node role calls it once per play with what each host's install
    plan asks for (the filter P(gpufleet.exo.node_install#filter)'s C(wheels)), one build per C(key).
  - For a request without C(wheelhouse), builds a wheelhouse under O(cache) as C(scripts/exo-wheelhouse.py) does -
    exo's and tinygrad's wheels built from their sources, the rest downloaded as wheels for the host's CPython and
    machine, and C(requirements.txt) with the sha256 of every wheel. A second run with the same request finds it
    up to date and builds nothing. A wheel changed since the build is refused, named.
  - Packs each wheelhouse's wheels and C(requirements.txt) into one archive under O(cache), named by the sha256 of
    the record, for one transfer to each host.
  - In check mode, builds and packs nothing.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  requests:
    description:
      - The wheelhouses wanted - each C(key) and either C(wheelhouse), a directory of wheels with its
        C(requirements.txt), or what to build (C(exo), C(tinygrad), C(python), C(arch), C(glibc), C(skip), C(replace),
        C(add), C(extra), C(index_url)), as P(gpufleet.exo.node_install#filter) writes them. Null entries are ignored.
    type: list
    elements: dict
    required: true
  cache:
    description: The controller's directory of built wheelhouses and archives.
    type: path
    default: ~/.cache/gpufleet.exo/wheelhouses
attributes:
  check_mode:
    support: full
    description: Builds and packs nothing; a wheelhouse given is still read and checked against its record.
  diff_mode:
    support: none
    description: Says nothing of the wheels.
  action:
    support: full
    description: Runs on the controller, whatever host the task is for.
notes:
  - Building needs what C(scripts/exo-wheelhouse.py) needs on the controller - a CPython of each host's release with
    pip, exo's source (git for a git source) and the package index. Where they cannot be had, give the role
    C(exo_node_wheelhouse), built elsewhere.
"""

EXAMPLES = r"""
- name: Build a wheelhouse of exo and tinygrad from their archives, for CPython 3.12 hosts on x86_64
  gpufleet.exo.exo_wheelhouse:
    requests:
      - key: exo-e4238f9ef-cp312-x86_64
        exo: /srv/exo-sources/exo-e4238f9ef.tar.gz
        tinygrad: /srv/exo-sources/tinygrad-ec120ce6b9ce.tar.gz
        python: "3.12"
        arch: x86_64
        glibc: "2.28"
        skip: [nuitka, grpcio-tools, uuid, prometheus-client]
        replace: {opencv-python: opencv-python-headless}
        add: [llvmlite==0.44.0]
        extra: [nvidia-ml-py, psutil]
        index_url: ""
    cache: /srv/exo-wheelhouses
  register: exo_built

- name: Say where it is and what tinygrad the hosts then install
  ansible.builtin.debug:
    msg: >-
      {{ exo_built.wheelhouses['exo-e4238f9ef-cp312-x86_64'].wheelhouse }}:
      {{ exo_built.wheelhouses['exo-e4238f9ef-cp312-x86_64'].tinygrad_requirement }}
      {{ exo_built.wheelhouses['exo-e4238f9ef-cp312-x86_64'].errors }}
"""

RETURN = r"""
wheelhouses:
  description: By request C(key), what was prepared.
  returned: always
  type: dict
  contains:
    wheelhouse:
      description: The wheelhouse's directory on the controller.
      type: str
    archive:
      description: The archive of its wheels and C(requirements.txt); null in check mode or where it failed.
      type: str
    tinygrad_requirement:
      description: For a build, C(tinygrad==<version>) of the tinygrad built, or empty where exo's tinygrad came with
        the rest; null otherwise.
      type: str
    errors:
      description: Why it could not be built or used, with what to do - among them each wheel changed since the build.
      type: list
      elements: str
    log:
      description: What the build said.
      type: list
      elements: str
    changed:
      description: Whether it was built or packed now.
      type: bool
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"requests": {"type": "list", "elements": "dict", "required": True},
                                          "cache": {"type": "path", "default": "~/.cache/gpufleet.exo/wheelhouses"}},
                           supports_check_mode=True)
    module.fail_json(msg="gpufleet.exo.exo_wheelhouse runs on the controller, through its action plugin")


if __name__ == "__main__":
    main()
