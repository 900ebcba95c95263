# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """site.yml stops a host with a bad or misspelt variable in one line that says what to do, never the spec.

site.yml includes the roles with rolespec_validate: false, so that each role's own check of its
variables (plugins/plugin_utils/role_settings.py) speaks instead of ansible-core's, whose failure
carries the whole of meta/argument_specs.yml (argument_spec_data, about 14 KB per host for the node
role). One simulated host per case, on a local connection, in check mode.
"""

import json
import os
import re
import sys

from tests.simulated import hosts as simhosts
from tests.helpers import REPO, run_playbook

# name: (simulated host, its variables, the one message). A GPU host goes through the driver role
# first (planning only), a CPU host only through the node role; bad_port passes the driver role, as
# ansible-playbook stops at a play that no host passes.
CASES = {
    "bad_port": ("one", {"exo_node_api_port": "abc"},
                 'host bad_port: exo_node_api_port is "abc", not a whole number; give one such as 52415'),
    "misspelt": ("cpu_only", {"exo_node_gpu": [0]},
                 "host misspelt: exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?); "
                 "docs/node.md lists them"),
    "bad_choice": ("cpu_only", {"exo_node_discovery": "mdns"},
                   'host bad_choice: exo_node_discovery is "mdns"; choose one of "manual", "udp"'),
    "driver_bad": ("one", {"exo_driver_min_free_mib": "lots"},
                   'host driver_bad: exo_driver_min_free_mib is "lots", not a whole number; give one such as 1536'),
    "driver_misspelt": ("one", {"exo_driver_rebot": True},
                        "host driver_misspelt: exo_driver_rebot is not a variable of this role (did you mean "
                        "exo_driver_reboot?); docs/driver.md lists them"),
}


def test_site_refuses_in_one_line_without_the_spec(tmp_path, nvml_lib):
    tmp = str(tmp_path)
    hosts = {}
    for name, (host, variables, dummy) in CASES.items():
        dummy_env, root = simhosts.write(tmp, name, nvml_lib, *simhosts.HOSTS[host])
        hosts[name] = dict(variables, device_facts_rootfs=root)
    paths = os.path.join(tmp, "paths", "{{ inventory_hostname }}")
    inventory = {"all": {"children": {"exo_nodes": {"hosts": hosts}}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        # Root here already; the plays' become would need sudo, which this machine lacks.
        "ansible_become": False,
        "device_facts_tinygrad": False,
        "fleet_report_dir": "",
        # Should a check let a host through, it stays on this machine and changes nothing.
        "exo_driver_plan_only": True,
        "exo_node_refresh_facts": "never", "exo_node_manage_packages": False, "exo_node_python": sys.executable,
        "exo_node_python_max_version": "%d.%d" % sys.version_info[:2],
        "exo_node_install_dir": paths + "/install", "exo_node_config_dir": paths + "/config",
        "exo_node_data_dir": paths + "/data"}}}
    proc, dummy = run_playbook(tmp, inventory, os.path.join(REPO, "site.yml"), [], check=True, timeout=900)
    assert "argument_spec_data" not in proc.stdout and "Validating arguments" not in proc.stdout, proc.stdout[-6000:]
    for name, (dummy_host, dummy_variables, message) in CASES.items():
        failures = [line for line in proc.stdout.splitlines() if line.startswith("fatal: [%s]" % name)]
        assert len(failures) == 1, proc.stdout[-6000:]
        # The message as JSON writes it, alone in the result, on one line.
        assert '"msg": [%s]' % json.dumps(message) in failures[0], failures[0]
        # All that the failure prints for the host: ansible-core's error with the task's place, and the result.
        printed = re.search(r"^\[ERROR\]: Task failed: Action failed: \['host %s: .*?^fatal: \[%s\].*?$" % (name, name),
                            proc.stdout, re.M | re.S).group(0)
        assert len(printed) < 1024, printed
        recap = re.search(r"^%s +: ok=\d+ +changed=(\d+) +unreachable=0 +failed=(\d+)" % name, proc.stdout, re.M)
        assert recap and recap.groups() == ("0", "1"), proc.stdout[-3000:]
