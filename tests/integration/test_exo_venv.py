# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo.exo_venv on this machine, its EXAMPLES as written but for their paths: a wheelhouse of
a small exo of the tests' own (its command, its declared requirements, one left out), installed with
no index; what gpufleet.exo.exo_host_inspect finds of the virtualenv before and after, check mode before
there is a virtualenv, a second run, and a refusal before pip runs."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import glob
import hashlib
import json
import os
import sys
import zipfile

import yaml

from tests.helpers import examples, local_inventory, recap, run_example, tasks_play


def wheel(directory, name, version, files, requires=(), entry_points=""):
    """A pure-Python wheel, as pip installs one: the files, METADATA, WHEEL, entry points and RECORD."""
    info = "%s-%s.dist-info" % (name, version)
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    metadata += "".join("Requires-Dist: %s\n" % requirement for requirement in requires)
    files = dict(files, **{info + "/METADATA": metadata,
                           info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"})
    if entry_points:
        files[info + "/entry_points.txt"] = entry_points
    record = ["%s,sha256=%s,%d" % (path, base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode(),
                                   len(text.encode())) for path, text in sorted(files.items())]
    path = os.path.join(directory, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in sorted(files.items()):
            archive.writestr(member, text)
        archive.writestr(info + "/RECORD", "\n".join(record + [info + "/RECORD,,"]) + "\n")
    return path


def example_play(tmp_path, **changes):
    """The EXAMPLES with /opt/exo, /srv/wheelhouse and /usr/bin/python3 moved under tmp_path, and the
    module's options changed as given."""
    text = examples("module", "exo_venv").replace("/opt/exo", str(tmp_path / "exo")) \
        .replace("/srv/wheelhouse", str(tmp_path / "wheelhouse")).replace("/usr/bin/python3", sys.executable)
    tasks = yaml.safe_load(text)
    tasks[0]["gpufleet.exo.exo_venv"].update(changes)
    tasks.append({"name": "Show the result", "ansible.builtin.debug": {"var": "exo_venv"}})
    return tasks_play(yaml.safe_dump(tasks))


def inspect_play(tmp_path):
    """What the node role's preflight asks of the virtualenv, registered as the examples register exo_venv."""
    venv = str(tmp_path / "exo")
    return tasks_play(yaml.safe_dump([
        {"name": "Look at exo's virtualenv", "register": "exo_venv", "gpufleet.exo.exo_host_inspect": {
            "python": sys.executable, "venv": venv, "marker": venv + "/.gpufleet-exo-source"}},
        {"name": "Show the result", "ansible.builtin.debug": {"var": "exo_venv"}}]))


def run(tmp_path, check=False, inspect=False, **changes):
    play = inspect_play(tmp_path) if inspect else example_play(tmp_path, **changes)
    proc = run_example(str(tmp_path / "run"), play, local_inventory(), check=check)
    result = json.loads(proc.stdout.split('"exo_venv": ', 1)[1].split("\n}\n", 1)[0]) if proc.returncode == 0 else None
    return proc, result


def test_exo_venv_installs_exo_and_what_it_declares_then_changes_nothing(tmp_path):
    os.makedirs(str(tmp_path / "wheelhouse"))
    os.makedirs(str(tmp_path / "run"))
    wheel(str(tmp_path / "wheelhouse"), "exo", "0.0.1", {"exo_main.py": "def main():\n    print('exo')\n"},
          requires=["helper==1.0", "nuitka==2.4"], entry_points="[console_scripts]\nexo = exo_main:main\n")
    wheel(str(tmp_path / "wheelhouse"), "helper", "1.0", {"helper.py": "VALUE = 1\n"})
    venv = tmp_path / "exo"

    proc, result = run(tmp_path, inspect=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert result["venv"] == {"python": False, "ensurepip": 0, "exe": False, "marker": ""}

    proc, result = run(tmp_path, check=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert result["changed"] and result["created"] and result["requirements"] is None and result["commands"] == []
    assert not venv.exists()

    proc, result = run(tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert result["created"] and result["exo_changed"]
    assert (result["requirements"]["name"], result["requirements"]["install"]) == ("exo", ["helper==1.0"])
    assert result["requirements"]["skipped"] == ["nuitka==2.4"]
    assert [command[-1] for command in result["commands"]] == [
        str(venv), str(tmp_path / "wheelhouse" / "exo-0.0.1-py3-none-any.whl"), "helper==1.0"]
    assert os.access(str(venv / "bin" / "exo"), os.X_OK)
    assert (venv / ".gpufleet-exo-source").read_text() == "path %s\n" % (tmp_path / "wheelhouse" / "exo-0.0.1-py3-none-any.whl")
    note = glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "site_note.pth"))
    assert len(note) == 1 and open(note[0]).read() == "import sys\n" and os.stat(note[0]).st_mode & 0o777 == 0o644
    assert not glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "nuitka*"))

    # What the role's later runs find, and then give: exo as the marker names it, nothing to install.
    proc, result = run(tmp_path, inspect=True)
    assert result["venv"] == {"python": True, "ensurepip": None, "exe": True,
                              "marker": "path %s" % (tmp_path / "wheelhouse" / "exo-0.0.1-py3-none-any.whl")}
    proc, result = run(tmp_path, install=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert not result["changed"] and not result["exo_changed"] and result["commands"] == []
    assert recap(proc, "localhost")["changed"] == 0


def test_exo_venv_refuses_a_wrong_requirement_before_pip_runs(tmp_path):
    os.makedirs(str(tmp_path / "wheelhouse"))
    os.makedirs(str(tmp_path / "run"))
    wheel(str(tmp_path / "wheelhouse"), "exo", "0.0.1", {"exo_main.py": "def main():\n    pass\n"},
          requires=["helper==1.0"], entry_points="[console_scripts]\nexo = exo_main:main\n")
    proc, result = run(tmp_path, add_requirements=["tinygrad==0.10.0"])
    assert proc.returncode != 0
    assert "exo_node_add_requirements must not name tinygrad" in proc.stdout, proc.stdout[-4000:]
    assert not glob.glob(str(tmp_path / "exo" / "lib" / "*" / "site-packages" / "helper*"))
