# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpufleet.exo.exo_unit_check makes of systemd's answers (plugins/module_utils/_exo_units.py): the
answers systemd-analyze and systemctl give, as recorded on the molecule scenarios' hosts, and the
instances' files with their modification times in a directory of the test's own."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_units as units

SECURITY_OK = ("NAME  DESCRIPTION  EXPOSURE\n✓ PrivateNetwork=  Service has no access to the host's network\n"
               "→ Overall exposure level for exo@cpu.service: 1.6 OK :-)\n")
SECURITY_HIGH = "→ Overall exposure level for exo@cpu.service: 9.2 UNSAFE 😨\n"


def params(tmp_path, *checks):
    return {"instances": ["cpu"], "checks": list(checks), "install_dir": "/opt/exo", "max_exposure": 2.0,
            "unit_dir": str(tmp_path / "units"), "instances_dir": str(tmp_path / "instances"),
            "marker": str(tmp_path / "marker")}


def answers(**by_command):
    """A runner that gives systemd's recorded answer by the command's second word."""
    return lambda argv: by_command[argv[1]]


@pytest.mark.parametrize("stderr", ["", "/etc/systemd/system/other.service:3: Unknown key name 'Foo'"])
def test_verify_counts_only_what_it_says_of_this_unit(tmp_path, stderr):
    found = units.check(params(tmp_path, "verify"), answers(verify=(1 if stderr else 0, "", stderr)))
    assert found == [{"name": "cpu", "unit": "exo@cpu.service"}]


@pytest.mark.parametrize("stderr", ["exo@cpu.service: Command /opt/exo/bin/exo is not executable: No such file",
                                    "/opt/exo/bin/exo: Permission denied"])
def test_verify_refuses_this_unit_and_exos_own_problems(tmp_path, stderr):
    with pytest.raises(units.UnitRefused, match="systemd-analyze verify exo@cpu.service: .*"):
        units.check(params(tmp_path, "verify"), answers(verify=(1, "", stderr)))


def test_security_gives_the_figure_and_refuses_one_above_the_threshold(tmp_path):
    calls = []

    def run(argv):
        calls.append(argv)
        return (0, SECURITY_OK, "")
    assert units.check(params(tmp_path, "security"), run)[0]["exposure"] == "1.6"
    assert calls == [["systemd-analyze", "security", "--offline=yes", "--threshold=20", "exo@cpu.service"]]
    with pytest.raises(units.UnitRefused, match="rates exo@cpu.service 9.2, above exo_node_max_exposure 2.0"):
        units.check(params(tmp_path, "security"), answers(security=(1, SECURITY_HIGH, "")))
    # It could not rate the unit at all: not the unit's fault.
    assert units.check(params(tmp_path, "security"), answers(security=(1, "", "Failed to open")))[0]["exposure"] is None


def test_started_and_the_newest_of_the_instances_files(tmp_path):
    given = params(tmp_path, "started")
    paths = units.files("cpu", given)
    for number, path in enumerate(paths[:3]):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()
        os.utime(path, (1700000000 + number, 1700000000 + number))
    found = units.check(given, answers(show=(0, "@1700000001\n", "")))
    assert (found[0]["started"], found[0]["modified"]) == (1700000001, 1700000002)
    # Never started: systemd says nothing, or n/a; no files yet.
    assert units.check(given, answers(show=(0, "n/a\n", "")))[0]["started"] is None
    assert units.check(params(tmp_path / "none", "started"), answers(show=(0, "\n", "")))[0] == {
        "name": "cpu", "unit": "exo@cpu.service", "started": None, "modified": None}
