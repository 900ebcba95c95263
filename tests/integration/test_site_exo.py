# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/site-exo.py: which exo make site installs. Real exo is installed by tests/run.sh site (make site
twice); here, each way it falls back to the stand-in, for real: an interpreter that does not run or is out
of exo's range, sources that are neither vendored nor reachable (a closed port), and the vars file it then
writes, which leaves the inventory's stand-in in place."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import socket
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("site_exo", os.path.join(REPO, "scripts", "site-exo.py"))
site_exo = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(site_exo)
RUNNING = "%d.%d" % sys.version_info[:2]


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def defaults(python=sys.executable, low="3.0", high="3.99"):
    return {"exo_node_python": python, "exo_node_python_min_version": low, "exo_node_python_max_version": high}


@pytest.mark.parametrize("given, reason", [
    (defaults(python="/nonexistent/python3"), "/nonexistent/python3 (the node role's exo_node_python) does not run here"),
    (defaults(low="3.99", high="3.99"), "%s is Python %s, outside exo's 3.99 to 3.99" % (sys.executable, RUNNING)),
])
def test_an_interpreter_exo_cannot_use_means_the_stand_in(given, reason):
    with pytest.raises(site_exo.StandIn, match="^" + reason.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        site_exo.interpreter(given)


def test_an_interpreter_in_range_is_the_one_used():
    assert site_exo.interpreter(defaults()) == (sys.executable, RUNNING)


@pytest.fixture
def unreachable(tmp_path, monkeypatch):
    """No vendored archives and a GitHub that refuses connections."""
    url = "http://127.0.0.1:%d/exo.tar.gz" % closed_port()
    monkeypatch.setattr(site_exo.exo_sources, "VENDOR", str(tmp_path / "vendor"))
    monkeypatch.setattr(site_exo.exo_sources, "ARCHIVES", {"exo": ("exo.tar.gz", url), "tinygrad": ("tg.tar.gz", url)})
    monkeypatch.setattr(site_exo, "WORK", str(tmp_path / "work"))
    return url


def test_sources_out_of_reach_mean_the_stand_in(unreachable):
    with pytest.raises(site_exo.StandIn, match="exo's sources are not in .*/vendor and GitHub does not answer"):
        site_exo.archives()


def test_the_stand_in_leaves_the_inventory_alone_and_says_why(unreachable, tmp_path, capsys, monkeypatch):
    role_defaults = tmp_path / "defaults.yml"
    role_defaults.write_text(yaml.safe_dump(dict(defaults(), exo_node_git_version="e4238f9ef")))
    monkeypatch.setattr(site_exo, "ROLE_DEFAULTS", str(role_defaults))
    path = tmp_path / "site-exo.yml"
    assert site_exo.main(["site-exo.py", str(path)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("make site: exo's stand-in (tests/standin, serves no model), because exo's sources are not in ")
    assert line.endswith("GitHub does not answer (%s)" % unreachable)
    assert yaml.safe_load(path.read_text()) == {}
