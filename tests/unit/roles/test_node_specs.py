# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The node role's defaults, argument specs, unit template and documentation agree."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import confinement
from tests.helpers import node_templates

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, "roles", "node")


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


DEFAULTS = load("defaults", "main.yml")
OPTIONS = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def test_every_default_has_a_spec_and_every_spec_a_default():
    assert sorted(DEFAULTS) == sorted(OPTIONS)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_spec_describes_and_matches_the_default(name):
    spec = OPTIONS[name]
    assert spec.get("description"), name
    assert spec.get("type"), name
    assert spec.get("default") == DEFAULTS[name], name
    if "choices" in spec:
        assert DEFAULTS[name] in spec["choices"], name


def test_every_variable_the_role_reads_is_declared():
    used = set()
    for directory in ("tasks", "templates", "handlers", "vars"):
        for base, dummy, files in os.walk(os.path.join(ROLE, directory)):
            for name in files:
                with open(os.path.join(base, name)) as handle:
                    used.update(re.findall(r"\bexo_node_[a-z0-9_]+", handle.read()))
    # Facts the role publishes, not inputs.
    published = {"exo_node_instances", "exo_node_cpu_reason", "exo_node_ring_peer"}
    assert sorted(used - set(OPTIONS) - published) == []


def test_every_variable_is_documented():
    with open(os.path.join(REPO, "docs", "node.md")) as handle:
        text = handle.read()
    assert sorted(name for name in OPTIONS if name not in text) == []


# (models placed, exo_node_egress, the rating at most): the unit stays at 1.6 where exo downloads
# models itself (any address), and a refused address list rates it lower.
RATINGS = [([], [], 1.6), (["llama-3.2-1b"], [], 1.5), ([], ["192.0.2.53"], 1.5)]


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
@pytest.mark.parametrize("models, egress, rating", RATINGS)
def test_template_unit_rates_1_6_or_lower_offline(tmp_path, models, egress, rating):
    """The unit as rendered with the defaults, plus a GPU instance's drop-ins, rated offline."""
    env = node_templates()
    variables = dict(DEFAULTS, ansible_managed="Ansible managed", __exo_node_firewall={"table": "gpufleet_exo"},
                     __exo_node_cluster={"addresses": ["192.0.2.10"]},
                     __exo_node_tunnel={"enabled": True, "unit": "gpufleet-exo-ring.service", "allow": ["192.0.2.20"]})
    unit_dir = tmp_path / "etc" / "systemd" / "system"
    dropin = unit_dir / "exo@GPU-0.service.d"
    dropin.mkdir(parents=True)
    (unit_dir / "exo@.service").write_text(env.get_template("exo@.service.j2").render(**variables))
    instance = {"name": "GPU-0", "kind": "gpu", "home": "/var/lib/exo/GPU-0", "cpu_list": "0-7", "numa_node": 0,
                "ports": {"grpc": 50051, "api": 52415, "udp": 5678, "broadcast": 5678},
                "devices": ["/dev/nvidia0 rw", "/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]}
    settings = dict(DEFAULTS, exo_node_address="192.0.2.10", exo_node_models=models, exo_node_egress=egress)
    confinement.limits("h", {"memory_mib": 128887, "cpus": 16}, settings, [instance])
    (dropin / "10-gpufleet.conf").write_text(env.get_template("instance.conf.j2").render(item=instance, **variables))
    (dropin / "20-limits.conf").write_text(env.get_template("instance-limits.conf.j2").render(item=instance, **variables))
    proc = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--root=%s" % tmp_path,
                           "exo@GPU-0.service"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    figure = re.search(r"Overall exposure level for \S+: ([0-9.]+)", proc.stdout)
    assert figure, proc.stdout[-3000:]
    assert float(figure.group(1)) <= rating, proc.stdout
    # Both drop-ins were read: the device ACL names the instance's GPU, the address list is rated.
    assert "/dev/nvidia0:rw" in proc.stdout
    assert ("Service defines IP address allow list with only localhost entries" in proc.stdout
            or "Service defines IP address allow list with non-localhost entries" in proc.stdout) == bool(egress or models)
