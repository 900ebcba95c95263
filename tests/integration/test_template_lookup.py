# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lookup gpufleet.exo.template through ansible-playbook on this machine: its EXAMPLES as written. That it
renders the bytes ansible.builtin.template's lookup renders, and keeps the variables it adds to the template, is
tests/integration/modules/test_exo_files.py's (exo_files renders through it)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from tests.helpers import examples, local_inventory as local, recap, run_example as playbook, tasks_play


def test_the_examples_render_the_plays_templates(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "motd.j2").write_text("{{ ansible_managed }}: {{ inventory_hostname }}\n")
    (tmp_path / "templates" / "unit.j2").write_text("[Unit]\nDescription=exo {{ item.name }}\n")
    ran = playbook(str(tmp_path), tasks_play(examples("lookup", "template")), local())
    assert recap(ran, "localhost") == {"ok": 2, "changed": 0, "failed": 0}, ran.stdout[-3000:]
    assert "Ansible managed: localhost" in ran.stdout and "Description=exo gpu-a-0" in ran.stdout, ran.stdout[-3000:]
