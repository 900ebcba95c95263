# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """site.yml stops a host with a bad or misspelt variable before any change, with one check's message.

site.yml calls the roles as a user would (import_role, no rolespec_validate), so ansible-core's check
of meta/argument_specs.yml runs first and refuses a wrong type or choice with its own message (and
the whole spec, argument_spec_data, which core prints with it). What that check cannot see, the
roles' own check (plugins/plugin_utils/role_settings.py) refuses in one line that says what to do:
a misspelt name with the nearest one, a number out of range. Never both for one value. One simulated
host per case, on a local connection, in check mode.
"""

import json
import os
import re
import sys

from tests.simulated import hosts as simhosts
from tests.helpers import REPO, SITE_HERE, run_playbook, site_dirs

# name: (simulated host, its variables, the role, the one message). A GPU host goes through the driver
# role first (planning only), a CPU host only through the node role; bad_port and node_range pass the
# driver role, as ansible-playbook stops at a play that no host passes.
# ansible-core's check of the spec: a wrong type or choice, refused by the role's validation task.
CORE = {
    "bad_port": ("one", {"exo_node_api_port": "abc"}, "node",
                 "argument 'exo_node_api_port' is of type str and we were unable to convert to int: \"'abc'\" cannot "
                 "be converted to an int"),
    "bad_choice": ("cpu_only", {"exo_node_discovery": "mdns"}, "node",
                   "value of exo_node_discovery must be one of: manual, udp, got: mdns"),
    "driver_bad": ("one", {"exo_driver_min_free_mib": "lots"}, "driver",
                   "argument 'exo_driver_min_free_mib' is of type str and we were unable to convert to int: \"'lots'\" "
                   "cannot be converted to an int"),
}
# The roles' own check: what the spec cannot say.
ROLE = {
    "misspelt": ("cpu_only", {"exo_node_gpu": [0]}, "node",
                 "host misspelt: exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?); "
                 "docs/node.md lists them"),
    "node_range": ("one", {"exo_node_api_port": "70000"}, "node",
                   'host node_range: exo_node_api_port is "70000"; it must be from 1 to 65535'),
    "driver_misspelt": ("one", {"exo_driver_rebot": True}, "driver",
                        "host driver_misspelt: exo_driver_rebot is not a variable of this role (did you mean "
                        "exo_driver_reboot?); docs/driver.md lists them"),
    "driver_range": ("one", {"exo_driver_reboot_timeout": 5}, "driver",
                     "host driver_range: exo_driver_reboot_timeout is 5; it must be from 60 to 86400"),
    # The ring the role's default of exo_node_cluster_hosts makes: a group the inventory lacks, and the play's
    # hosts (one per case) over the bound.
    "ring_no_group": ("cpu_only", {"exo_node_ring": "ring_z"}, "node",
                      'host ring_no_group: exo_node_ring is "ring_z", which names no inventory group with hosts; give '
                      "the group that holds this ring's hosts"),
    "ring_too_large": ("cpu_only", {"exo_node_ring_max_hosts": 2}, "node",
                       "host ring_too_large: its ring (every host of the play, as exo_node_ring is not set) holds 9 "
                       "hosts, more than exo_node_ring_max_hosts (2): every request crosses every host of a ring. Put "
                       "each ring's hosts in an inventory group and set exo_node_ring to the group's name in its "
                       "variables, or raise exo_node_ring_max_hosts"),
}


def test_site_refuses_each_bad_value_once_before_any_change(tmp_path, nvml_lib):
    tmp = str(tmp_path)
    hosts = {}
    for name, (host, variables, dummy_role, dummy) in dict(CORE, **ROLE).items():
        dummy_env, root = simhosts.write(tmp, name, nvml_lib, *simhosts.HOSTS[host])
        hosts[name] = dict(variables, device_facts_rootfs=root)
    paths = os.path.join(tmp, "paths", "{{ inventory_hostname }}")
    # Should a check let a host through, it stays on this machine and changes nothing.
    inventory = {"all": {"children": {"exo_nodes": {"hosts": hosts}}, "vars": dict(
        SITE_HERE, ansible_python_interpreter=sys.executable, **site_dirs(paths))}}
    proc, dummy = run_playbook(tmp, inventory, os.path.join(REPO, "site.yml"), [], check=True, timeout=900)
    for name, (dummy_host, variables, role, message) in dict(CORE, **ROLE).items():
        failures = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [%s]" % name)]
        assert len(failures) == 1, proc.stdout[-6000:]
        # Before any change: the host failed once and changed nothing.
        recap = re.search(r"^%s +: ok=\d+ +changed=(\d+) +unreachable=0 +failed=(\d+)" % name, proc.stdout, re.M)
        assert recap and recap.groups() == ("0", "1"), proc.stdout[-3000:]
        result = json.loads(failures[0].split(" => ", 1)[1])
        if name in CORE:
            # ansible-core's check of the role's spec, with the one error naming the variable...
            assert result["validate_args_context"]["name"] == role, failures[0][:2000]
            assert result["argument_errors"] == [message], failures[0][:2000]
            # ...and never the role's own line about the same value after it.
            assert "host %s: %s" % (name, next(iter(variables))) not in proc.stdout
        else:
            # The role's check, the only problem found, alone in the result on one line, without the spec.
            assert result["msg"] == [message], failures[0]
            printed = re.search(r"^\[ERROR\]: Task failed: Action failed: \[['\"]host %s: .*?^fatal: \[%s\].*?$"
                                % (name, name), proc.stdout, re.M | re.S).group(0)
            assert "argument_spec_data" not in printed and len(printed) < 1024, printed
