#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: exo_venv
short_description: Install exo, what it needs and the collection's patches into exo's virtualenv
version_added: 1.0.0
description:
  - With O(patches), first runs that file of O(files) (the collection's patches of exo,
    C(gpufleet_exo_patches.py)) with C(--check) on exo's sources - the wheels O(spec) names where
    O(install), else the exo installed in the virtualenv - and refuses, before the virtualenv is
    made, pip runs or any file is written, sources that are not the ones its table knows, naming
    each module, its sha256 and the known ones; with O(unpatched) it goes on and warns instead.
  - Makes exo's virtualenv at O(path) with O(python) where it is missing.
  - With O(install), installs exo into it without its dependencies (C(--force-reinstall --no-deps O(spec))),
    then the requirements exo declares, as the filter P(gpufleet.exo.exo_requirements#filter) shapes them
    from the C(METADATA) of the distribution that provides the C(exo) command (the newest where a
    source replaced another). Refuses, before pip runs, requirements settings that are wrong or a
    C(METADATA) it cannot read.
  - Writes O(files) into the virtualenv's C(purelib), and O(source_id) into the marker O(marker).
  - Installs O(probe_packages) on every run; pip leaves what is installed alone, and only
    C(Successfully installed) counts as a change.
  - Fails where C(bin/exo) is not an executable afterwards.
  - pip runs as a command with O(pip), not through M(ansible.builtin.pip), which needs the packaging
    library on the host and decides a change by names, which a forced reinstall defeats.
author:
  - gpufleet.exo contributors (@gpufleet)
options:
  path:
    description: exo's virtualenv (C(exo_node_install_dir)).
    type: path
    required: true
  python:
    description: The interpreter that makes the virtualenv where it is missing.
    type: path
    required: true
  pip:
    description: pip's command line in the virtualenv, up to what it installs (the filter P(gpufleet.exo.node_install#filter)'s C(pip)).
    type: list
    elements: str
    required: true
  install:
    description: Whether exo itself is installed (the filter P(gpufleet.exo.node_install#filter)'s C(needed)).
    type: bool
    default: false
  spec:
    description: What pip is given for exo with O(install) (C(node_install)'s C(spec)).
    type: str
  skip_requirements:
    description: C(exo_node_skip_requirements).
    type: list
    elements: str
    default: []
  replace_requirements:
    description: C(exo_node_replace_requirements).
    type: dict
    default: {}
  tinygrad_requirement:
    description: C(exo_node_tinygrad_requirement).
    type: str
    default: ""
  add_requirements:
    description: C(exo_node_add_requirements).
    type: list
    elements: str
    default: []
  files:
    description: File names and their content, written into the virtualenv's C(purelib) with mode C(0644).
    type: dict
    default: {}
  patches:
    description:
      - The name among O(files) of the collection's patches of exo, whose C(--check) says whether exo's sources
        are the ones its table knows (RV(patches)). Not given, nothing is checked.
      - With O(install), exo's sources are read from O(spec)'s wheel, or from the wheels beside the requirements
        file it names (C(--requirement=FILE)); outside check mode, before pip runs. Without, from the installed exo,
        where the virtualenv exists.
    type: str
  unpatched:
    description:
      - With O(patches), go on where exo's sources are not the ones the patches know, and warn on every run, instead
        of failing. exo then runs without the patches of those modules; transformers' refusal of a model's code
        does not depend on them. The node role's C(exo_node_exo_unpatched).
    type: bool
    default: false
  marker:
    description: The file that records the source exo was installed from.
    type: path
    required: true
  source_id:
    description: What O(marker) records (C(node_install)'s C(source_id)), followed by a newline.
    type: str
    required: true
  probe_packages:
    description: Packages installed for gpufleet.exo.device_facts run with the virtualenv's interpreter.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: >-
      Runs no pip and makes no virtualenv; says whether they would be, and whether the files and
      the marker would change. The requirements are shaped where exo is installed already.
  diff_mode:
    support: none
    description: The files it writes are the collection's own.
"""

EXAMPLES = r"""
# exo's wheel and what it declares from a wheelhouse on the host, as a host without an index
# installs them; the role passes gpufleet.exo.node_install's answer instead.
- name: Install exo into /opt/exo from the wheelhouse in /srv/wheelhouse
  gpufleet.exo.exo_venv:
    path: /opt/exo
    python: /usr/bin/python3
    pip: [/opt/exo/bin/python, -m, pip, install, --disable-pip-version-check, --no-index, --find-links, /srv/wheelhouse]
    install: true
    spec: /srv/wheelhouse/exo-0.0.1-py3-none-any.whl
    skip_requirements: [nuitka]
    files:
      site_note.pth: "import sys\n"
    marker: /opt/exo/.gpufleet-exo-source
    source_id: path /srv/wheelhouse/exo-0.0.1-py3-none-any.whl
  register: exo_venv

- name: Say which exo it is
  ansible.builtin.debug:
    msg: "{{ exo_venv.requirements.name }} {{ exo_venv.requirements.version }}, changed: {{ exo_venv.exo_changed }}"
  # None in check mode before exo is first installed.
  when: exo_venv.requirements is not none
"""

RETURN = r"""
exo_changed:
  description: Whether exo, its requirements or the patches changed, so that its instances restart.
  returned: always
  type: bool
created:
  description: Whether the virtualenv was missing (and, outside check mode, was made).
  returned: always
  type: bool
requirements:
  description:
    - What the filter P(gpufleet.exo.exo_requirements#filter) answers for the installed exo
      (C(name), C(version), C(install), C(skipped), C(replaced), C(errors)); null where no
      installed distribution provides the C(exo) command (check mode before the first install).
  returned: always
  type: dict
commands:
  description: The commands run to make the virtualenv and install into it, in order.
  returned: always
  type: list
  elements: list
patches:
  description:
    - What the check of O(patches) found. C(checked) is C(wheelhouse) (the exo pip installed), C(virtualenv) (the
      one installed) or null where nothing was checked (no O(patches), or in check mode an install still to come).
    - C(modules), each patched only where its source is known - C(module), C(origin), C(sha256), C(known) (each known
      sha256 and the exo release it comes from), C(matches); C(unknown), a line for each source not known; C(warning),
      what is said with O(unpatched) where some are not known, else null.
  returned: always
  type: dict
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.gpufleet.exo.plugins.module_utils._exo_venv import StepFailed, install


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type="path", required=True), python=dict(type="path", required=True),
                           pip=dict(type="list", elements="str", required=True),
                           install=dict(type="bool", default=False),
                           spec=dict(type="str"),
                           skip_requirements=dict(type="list", elements="str", default=[]),
                           replace_requirements=dict(type="dict", default={}),
                           tinygrad_requirement=dict(type="str", default=""),
                           add_requirements=dict(type="list", elements="str", default=[]),
                           files=dict(type="dict", default={}), marker=dict(type="path", required=True),
                           source_id=dict(type="str", required=True),
                           probe_packages=dict(type="list", elements="str", default=[]),
                           patches=dict(type="str"), unpatched=dict(type="bool", default=False)),
        required_if=[("install", True, ["spec"])],
        supports_check_mode=True)

    def put(path, content):
        data = to_bytes(content)
        same = False
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                same = handle.read() == data
        changed = not same
        if changed and not module.check_mode:
            fd, temp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            module.atomic_move(temp, path)
        if os.path.exists(path):
            changed = module.set_mode_if_different(path, "0644", changed)
        return changed

    try:
        result = install(module.params, module.run_command, put, module.check_mode, scratch=module.tmpdir)
    except StepFailed as failure:
        module.fail_json(msg=str(failure))
    if result["patches"]["warning"]:
        module.warn(result["patches"]["warning"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
