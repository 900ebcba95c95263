# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files of the node role's configure step: the directories it creates, the templates it writes
and the paths it removes, as plain lists that one task each hands to a module (gpufleet.exo.exo_files
writes the directories and templates, each list in one call).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath


def _entry(what, src, dest, group="root", mode="0644", instances=(), instance=None, validate=None):
    entry = {"what": what, "src": src, "dest": dest, "owner": "root", "group": group, "mode": mode,
             "instances": list(instances)}
    if instance is not None:
        entry["instance"] = instance
    if validate:
        entry["validate"] = validate
    return entry


def _dir(path, owner, group, mode="0750"):
    return {"path": path, "owner": owner, "group": group, "mode": mode}


def layout(instances, removed, user, group, data_dir, config_dir, paths, firewall, discovery):
    """{"dirs", "data_dirs", "templates", "absent"} for the instances.

    dirs are root's places, made with gpufleet.exo.exo_files; data_dirs are exo_node_data_dir and what
    exo writes below it (each instance's EXO_HOME and TMPDIR), made by gpufleet.exo.exo_data without
    following a link. The data directory itself is root's: exo writes only in its EXO_HOME
    (ReadWritePaths=), so no entry of the data directory, such as the models' copy that root writes
    (models.py), can be swapped for a link by exo.

    paths: the role's fixed paths (vars/main.yml): units, instances, topology, firewall, firewall_unit.
    firewall and discovery: exo_node_firewall and exo_node_discovery. Each template names the instances
    its change restarts (the unit: every one) and what it is ("what"), for node_outcome.
    """
    names = [i["name"] for i in instances]
    units, conf = paths["units"], paths["instances"]
    dropin = dict((name, posixpath.join(units, "exo@%s.service.d" % name)) for name in names)
    firewall_unit = posixpath.join(units, paths["firewall_unit"])
    # Model caches are large and slow to download: created here, never removed by the role.
    data = [i["home"] for i in instances] + [i["env"]["TMPDIR"] for i in instances]
    dirs = ([_dir(config_dir, "root", group), _dir(conf, "root", group)]
            + [_dir(dropin[name], "root", "root", "0755") for name in names])
    data_dirs = [_dir(data_dir, "root", group)] + [_dir(path, user, group) for path in sorted(set(data), key=data.index)]
    templates = ([_entry("unit", "exo@.service.j2", posixpath.join(units, "exo@.service"), instances=names)]
                 + [_entry("env", "instance.env.j2", posixpath.join(conf, "%s.env" % i["name"]), mode="0640",
                           instances=[i["name"]], instance=i) for i in instances]
                 + [_entry("dropin", "instance.conf.j2", posixpath.join(dropin[i["name"]], "10-gpufleet.conf"),
                           instances=[i["name"]], instance=i) for i in instances]
                 # Read at a daemon reload by the running instance: a new peer restarts nothing.
                 + [_entry("limits", "instance-limits.conf.j2", posixpath.join(dropin[i["name"]], "20-limits.conf"),
                           instance=i) for i in instances])
    absent = []
    # exo re-reads the topology when it changes: a new peer needs no restart. UDP discovery has none.
    if discovery == "manual":
        templates.append(_entry("topology", "topology.json.j2", paths["topology"], group=group, mode="0640"))
    else:
        absent.append(paths["topology"])
    if firewall:
        # Checked by nft before it is written; mode 0600: it says who may reach what.
        templates += [_entry("firewall", "firewall.nft.j2", paths["firewall"], mode="0600", validate="nft -c -f %s"),
                      _entry("firewall_unit", "exo-firewall.service.j2", firewall_unit)]
    else:
        absent += [paths["firewall"], firewall_unit]
    # The instances the plan removed: their drop-ins and env files (their EXO_HOME stays).
    absent += [posixpath.join(units, "exo@%s.service.d" % name) for name in removed]
    absent += [posixpath.join(conf, "%s.env" % name) for name in removed]
    return {"dirs": dirs, "data_dirs": data_dirs, "templates": templates, "absent": absent}
