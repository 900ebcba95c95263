# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The directories, templates and removals of the node role's configure step
(plugins/plugin_utils/node/files.py), over the instances the planner gives the simulated host two."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import node_files
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import files
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from tests.helpers import NODE_SETTINGS, checked, plan_node_ok as ok

PATHS = {"units": "/etc/systemd/system", "instances": "/etc/exo/instances", "topology": "/etc/exo/topology.json",
         "firewall": "/etc/exo/firewall.nft", "firewall_unit": "exo-firewall.service"}


def layout(instances, removed=(), firewall=True, discovery="manual"):
    return files.layout(instances, list(removed), "exo", "exo-grp", "/var/lib/exo", "/etc/exo", PATHS, firewall,
                        discovery)


def test_the_directories_each_once_with_their_owners(probed):
    instances = ok(probed["two"])["instances"]
    dirs, data_dirs = layout(instances)["dirs"], layout(instances)["data_dirs"]
    paths = [d["path"] for d in dirs + data_dirs]
    assert len(paths) == len(set(paths))
    assert dirs[:2] == [{"path": "/etc/exo", "owner": "root", "group": "exo-grp", "mode": "0750"},
                        {"path": "/etc/exo/instances", "owner": "root", "group": "exo-grp", "mode": "0750"}]
    # the data directory is root's: exo cannot swap an entry of it for a link; below it, each EXO_HOME is exo's
    assert data_dirs[0] == {"path": "/var/lib/exo", "owner": "root", "group": "exo-grp", "mode": "0750"}
    for i in instances:
        assert {"path": i["home"], "owner": "exo", "group": "exo-grp", "mode": "0750"} in data_dirs
        assert {"path": i["env"]["TMPDIR"], "owner": "exo", "group": "exo-grp", "mode": "0750"} in data_dirs
        assert {"path": "/etc/systemd/system/exo@%s.service.d" % i["name"], "owner": "root", "group": "root",
                "mode": "0755"} in dirs


def test_the_templates_in_the_order_they_are_written(probed):
    instances = ok(probed["two"])["instances"]
    names = [i["name"] for i in instances]
    templates = layout(instances)["templates"]
    assert [t["what"] for t in templates] == ["unit", "env", "env", "dropin", "dropin", "limits", "limits", "topology",
                                              "firewall", "firewall_unit"]
    assert templates[0]["instances"] == names and templates[1]["instance"] == instances[0]
    assert templates[1]["dest"] == "/etc/exo/instances/%s.env" % names[0] and templates[1]["mode"] == "0640"
    # The limits are read at a daemon reload: their change restarts no instance.
    assert templates[5]["dest"] == "/etc/systemd/system/exo@%s.service.d/20-limits.conf" % names[0]
    assert templates[5]["instance"] == instances[0] and templates[5]["instances"] == []
    assert templates[8]["validate"] == "nft -c -f %s" and templates[8]["mode"] == "0600"
    assert [t for t in templates if "validate" in t] == [templates[8]]
    assert templates[7]["group"] == "exo-grp" and templates[7]["instances"] == []


def test_what_the_settings_turned_off_and_the_removed_instances_are_removed(probed):
    instances = ok(probed["two"])["instances"]
    assert layout(instances)["absent"] == []
    off = layout(instances, removed=["GPU-x"], firewall=False, discovery="udp")
    assert [t["what"] for t in off["templates"]] == ["unit", "env", "env", "dropin", "dropin", "limits", "limits"]
    assert off["absent"] == ["/etc/exo/topology.json", "/etc/exo/firewall.nft",
                             "/etc/systemd/system/exo-firewall.service", "/etc/systemd/system/exo@GPU-x.service.d",
                             "/etc/exo/instances/GPU-x.env"]


def test_the_filter_reads_the_checked_settings(probed):
    instances = ok(probed["two"])["instances"]
    # As -e gives them: strings, which the filter reads as the role's preflight checked them.
    settings = checked(dict(NODE_SETTINGS, exo_node_group="exo-grp", exo_node_firewall="false", exo_node_discovery="udp"))
    assert node_files(instances, ["GPU-x"], settings, PATHS) == layout(instances, ["GPU-x"], False, "udp")


def test_the_settings_the_role_refuses_never_reach_the_filter(probed):
    given = dict(NODE_SETTINGS, exo_node_user=0)
    dummy, errors = check_settings(given)
    assert len(errors) == 1 and errors[0].startswith("exo_node_user"), errors
    with pytest.raises(AnsibleFilterError, match="^node_files takes the node role's settings as its preflight checked"):
        node_files(ok(probed["two"])["instances"], [], given, PATHS)
