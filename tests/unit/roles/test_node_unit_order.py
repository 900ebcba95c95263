# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exo unit starts after the driver's services: nvidia-persistenced pulled in and ordered, the fabric
manager ordered only (the driver role enables it where NVSwitch is), and the unit still verifies on a host
that has neither."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import subprocess

import pytest
import yaml

from tests.helpers import node_templates

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, "roles", "node")


def rendered(tunnel=False, **settings):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    defaults.update(settings, __exo_node_firewall_unit="exo-firewall.service", __exo_node_firewall={"table": "gpufleet_exo"},
                    __exo_node_tunnel={"enabled": tunnel, "unit": "gpufleet-exo-ring.service"})
    return node_templates().get_template("exo@.service.j2").render(ansible_managed="Ansible managed", **defaults)


def unit_list(text, section, key):
    """Every unit named by key in section, as systemd adds up repeated lines."""
    names, current = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line
        elif current == section and line.startswith(key + "="):
            names += line.split("=", 1)[1].split()
    return names


def test_exo_starts_after_the_drivers_services():
    text = rendered()
    after, wants = unit_list(text, "[Unit]", "After"), unit_list(text, "[Unit]", "Wants")
    assert {"nvidia-persistenced.service", "nvidia-fabricmanager.service", "network-online.target"} <= set(after)
    assert "nvidia-persistenced.service" in wants
    # Pulling the fabric manager in would start it on hosts without NVSwitch, where it fails.
    assert "nvidia-fabricmanager.service" not in wants


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_the_unit_verifies_where_neither_service_exists(tmp_path):
    unit = tmp_path / "exo@cpu.service"
    unit.write_text(rendered().replace("ExecStart=", "ExecStart=/bin/true #", 1))
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False,
                          env=dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % tmp_path))
    assert "nvidia" not in proc.stdout, proc.stdout


# The planner reads the setting as a boolean ("no" is false); so must the unit, or an instance would require
# a table the role never loads.
@pytest.mark.parametrize("firewall, required", [(True, True), ("yes", True), (False, False), ("no", False), ("false", False)])
def test_the_unit_wants_the_firewall_as_the_planner_reads_the_setting(firewall, required):
    lines = rendered(exo_node_firewall=firewall).splitlines()
    assert ("Wants=exo-firewall.service" in lines) == required
    assert ("ExecStartPre=+/usr/sbin/nft -t list table inet gpufleet_exo" in lines) == required


def test_the_instances_want_the_firewall_and_never_depend_on_it():
    """Requires= (or BindsTo=, PartOf=) would stop or restart every instance with the firewall's unit; the
    table is checked at each start instead."""
    text = rendered()
    assert "exo-firewall.service" in unit_list(text, "[Unit]", "Wants")
    assert "exo-firewall.service" in unit_list(text, "[Unit]", "After")
    for key in ("Requires", "Requisite", "BindsTo", "PartOf"):
        assert "exo-firewall.service" not in unit_list(text, "[Unit]", key)


@pytest.mark.parametrize("tunnel", [True, False])
def test_the_instances_start_after_the_rings_tunnel_and_never_depend_on_it(tunnel):
    """exo binds gRPC to the tunnel's address, which exists once the tunnel's unit is up; a restart of the
    tunnel must restart no instance."""
    text = rendered(tunnel=tunnel)
    assert ("gpufleet-exo-ring.service" in unit_list(text, "[Unit]", "Wants")) == tunnel
    assert ("gpufleet-exo-ring.service" in unit_list(text, "[Unit]", "After")) == tunnel
    for key in ("Requires", "Requisite", "BindsTo", "PartOf"):
        assert "gpufleet-exo-ring.service" not in unit_list(text, "[Unit]", key)
