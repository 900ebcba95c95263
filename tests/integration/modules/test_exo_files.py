# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module gpufleet.exo.exo_files through ansible-playbook on this machine: its EXAMPLES as written, then
files given by src rendered on the controller with each entry's instance as item, a file its validate
command refuses left as it was, and check mode with --diff. The node role writes its units with it
(roles/node/tasks/units.yml), which the molecule scenarios run on hosts with systemd."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil
import stat

from tests.helpers import examples, local_inventory as local, recap, run_example as playbook, tasks_play

EXAMPLE_DIR = "/etc/gpufleet-exo-example"


def written(proc, task):
    """The module's written list, from the -v output of the task."""
    shown = proc.stdout.split("TASK [%s]" % task)[1].split("TASK [")[0]
    return json.loads(shown[shown.index("{"):shown.rindex("}") + 1])["written"]


def test_the_examples_write_the_directory_and_files_once_then_change_nothing(tmp_path):
    assert not os.path.exists(EXAMPLE_DIR), "%s is there before the test; remove it" % EXAMPLE_DIR
    task = "Write a configuration directory and its files in one call, the topology checked before it is written"
    try:
        first = playbook(str(tmp_path), tasks_play(examples("module", "exo_files")), local())
        assert recap(first, "localhost") == {"ok": 2, "changed": 1, "failed": 0}, first.stdout[-3000:]
        assert written(first, task) == [EXAMPLE_DIR, EXAMPLE_DIR + "/topology.json", EXAMPLE_DIR + "/README"]
        modes = dict((name, stat.S_IMODE(os.stat(os.path.join(EXAMPLE_DIR, name)).st_mode))
                     for name in ("", "topology.json", "README"))
        assert modes == {"": 0o750, "topology.json": 0o640, "README": 0o644}
        assert json.load(open(EXAMPLE_DIR + "/topology.json"))["peers"]["gpu-a-cpu"]["port"] == 50051
        again = playbook(str(tmp_path), tasks_play(examples("module", "exo_files")), local())
        assert recap(again, "localhost") == {"ok": 2, "changed": 0, "failed": 0}, again.stdout[-3000:]
        assert written(again, task) == []
    finally:
        shutil.rmtree(EXAMPLE_DIR, ignore_errors=True)


RENDERED = """
- name: Write the instances' files
  gpufleet.exo.exo_files:
    directories:
      - {path: "%(dir)s/conf", mode: "0700"}
    files:
      - {src: instance.j2, dest: "%(dir)s/conf/a.conf", instance: {name: a}, what: dropin, instances: [a]}
      - {src: instance.j2, dest: "%(dir)s/conf/b.conf", instance: {name: b}, mode: "0600"}
      - {dest: "%(dir)s/conf/topology.json", content: "%(topology)s", validate: "python3 -m json.tool %%s"}
"""


def test_templates_are_rendered_with_their_instance_and_a_refused_file_stays_as_it_was(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "instance.j2").write_text("name={{ item.name }} port={{ port }}\n")
    conf = tmp_path / "conf"

    def run(topology, **options):
        play = tasks_play(RENDERED % {"dir": tmp_path, "topology": topology}).replace(
            "  tasks:\n", "  vars:\n    port: 50051\n  tasks:\n")
        return playbook(str(tmp_path), play, local(), **options)
    first = run('{\\"peers\\": {}}')
    assert recap(first, "localhost")["failed"] == 0, first.stdout[-3000:]
    assert (conf / "a.conf").read_text() == "name=a port=50051\n" and (conf / "b.conf").read_text() == "name=b port=50051\n"
    assert stat.S_IMODE(os.stat(str(conf / "b.conf")).st_mode) == 0o600
    assert written(first, "Write the instances' files") == [str(conf)] + [str(conf / n) for n in ("a.conf", "b.conf", "topology.json")]
    # Text python3 -m json.tool refuses: the task fails naming the file, and the file is as it was.
    refused = run('{\\"peers\\": ')
    assert recap(refused, "localhost")["failed"] == 1
    assert "%s: python3 -m json.tool %s/" % (conf / "topology.json", conf) in refused.stdout, refused.stdout[-3000:]
    assert "refused it (rc 1)" in refused.stdout and (conf / "topology.json").read_text() == '{"peers": {}}'
    assert sorted(os.listdir(str(conf))) == ["a.conf", "b.conf", "topology.json"]
    # Check mode with --diff: the change shown, nothing written.
    (tmp_path / "templates" / "instance.j2").write_text("name={{ item.name }} port={{ port + 1 }}\n")
    checked = run('{\\"peers\\": {}}', check=True, diff=True)
    assert recap(checked, "localhost") == {"ok": 1, "changed": 1, "failed": 0}, checked.stdout[-3000:]
    assert "-name=a port=50051\n+name=a port=50052" in checked.stdout, checked.stdout[-3000:]
    assert (conf / "a.conf").read_text() == "name=a port=50051\n"


AS_THE_LOOKUP = """
- name: Write a file from its template
  gpufleet.exo.exo_files:
    files:
      - {src: unit.j2, dest: "%(dir)s/module.conf", instance: {name: a, ports: [1, 2]}}
      - {src: unit.j2, dest: "%(dir)s/module-b.conf", instance: {name: b, ports: [3]}}
- name: Write the same template through the template lookup
  ansible.builtin.copy:
    content: "{{ lookup('ansible.builtin.template', 'unit.j2', template_vars={'item': {'name': 'a', 'ports': [1, 2]}}) }}"
    dest: "%(dir)s/lookup.conf"
    mode: "0644"
# What the lookup adds for the template (template_path) is the template's alone, after it as before.
- name: Write it through the collection's template lookup
  ansible.builtin.copy:
    content: >-
      {{ lookup('gpufleet.exo.template', 'unit.j2', template_vars={'item': {'name': 'a', 'ports': [1, 2]}})
         ~ (template_path | default('-')) }}
    dest: "%(dir)s/collection.conf"
    mode: "0644"
"""


def test_a_template_renders_to_the_same_bytes_as_through_the_template_lookup(tmp_path):
    # The action, through gpufleet.exo.template, hands the lookup the task's variables without the lookup's deep
    # copy of them: the file must be what ansible.builtin.template's lookup renders, ansible_managed, the play's
    # and the host's variables and the item in it.
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "unit.j2").write_text(
        "{{ ansible_managed | comment }}\n[Unit]\nName={{ item.name }}\nPorts={{ item.ports | join(' ') }}\n"
        "Host={{ hostvars[inventory_hostname].inventory_hostname }} {{ port }} {{ groups['all'] | length }}\n")
    play = tasks_play(AS_THE_LOOKUP % {"dir": tmp_path}).replace("  tasks:\n", "  vars:\n    port: 50051\n  tasks:\n")
    ran = playbook(str(tmp_path), play, local())
    assert recap(ran, "localhost") == {"ok": 3, "changed": 3, "failed": 0}, ran.stdout[-3000:]
    module, lookup = (tmp_path / "module.conf").read_bytes(), (tmp_path / "lookup.conf").read_bytes()
    assert module == lookup and b"Name=a\nPorts=1 2\nHost=localhost 50051 1\n" in module, (module, lookup)
    assert (tmp_path / "collection.conf").read_bytes() == lookup + b"-"
    assert b"# Ansible managed" in module and b"Name=b\nPorts=3\n" in (tmp_path / "module-b.conf").read_bytes()
