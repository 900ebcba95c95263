# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role before and after a change, side by side: the files it renders, and what it costs.

    .venv/bin/python benchmarks/node_role.py --before /work/wt-1a65b5a [--after .] [--rounds 3] [--suites]

--before and --after are checkouts of the collection (`git worktree add DIR REV` makes one). Both run
with this checkout's simulated hosts (tests/simulated) and this virtualenv.

files: for the molecule default scenario's hosts (no GPU, one GPU, four GPUs, simulated), the
instances each version plans and the files it renders from them - the template unit, each
instance's env file and drop-in, the topology - are compared byte for byte, twice: each version
with its own templates, and both plans through the --after templates (the planner alone).
The roles' argument specs are compared too.

time: the whole node role in check mode on the simulated 4-GPU host, medians of --rounds runs,
interleaved; with --suites also the unit suite and the node selection tests of each version (the
files named in SELECTION that exist there). Prints the ratios after/before.
"""
from __future__ import absolute_import, division, print_function

import argparse
import difflib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from tests.simulated import hosts as simhosts  # noqa: E402
from tests.simulated import nvml as simnvml  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe  # noqa: E402

BIN = os.path.dirname(sys.executable)
# The molecule default scenario's hosts (roles/node/molecule/default/molecule.yml) on simulated hardware.
HOSTS = {"gf-node-cpu": ("cpu_only", {"exo_node_extra_env": {"EXO_STANDIN_TINYGRAD": "1"}}),
         "gf-node-gpu1": ("one", {}),
         "gf-node-gpu4": ("four", {})}
# The node role's GPU selection tests, wherever each version keeps them.
SELECTION = ["tests/unit/roles/test_node_select.py", "tests/unit/plugins/module_utils/test_node_plan.py",
             "tests/unit/plugins/plugin_utils/node/test_gpu_choice.py", "tests/unit/plugins/plugin_utils/node/test_plan.py",
             "tests/integration/roles/test_node_role.py"]
SPECS = ["roles/node/meta/argument_specs.yml", "roles/driver/meta/argument_specs.yml"]

# A play over the simulated hosts that starts by probing each.
PROBED = """
- name: %s
  hosts: all
  gather_facts: false
  environment: "{{ case_env }}"
  tasks:
    - name: Probe the simulated host
      gpufleet.exo.device_facts:
        rootfs: "{{ case_rootfs }}"
        tinygrad: false
        timeout: 30
"""

# The variables as preflight.yml reads and checks them (play vars, evaluated inside the role, where its
# defaults are, until tunnel_plan.yml sets them once).
PLAY_VARS = """
  vars:
    __exo_node_settings: >-
      {{ (dict(__names | zip(query('ansible.builtin.vars', *__names))) | gpufleet.exo.node_settings(inventory_hostname)).settings }}
    __names: >-
      {{ query('ansible.builtin.varnames', '^exo_node_') | reject('in', ['exo_node_instances', 'exo_node_cpu_reason', 'exo_node_ring_peer']) }}
"""

PLAY = (PROBED % "Plan and render the node role's files").replace("  tasks:\n", PLAY_VARS.lstrip("\n") + "  tasks:\n", 1) + """
    - name: Hand the facts to the role, under the name each version reads
      ansible.builtin.set_fact:
        __exo_node_facts: "{{ ansible_facts['device_capabilities'] | combine({'tinygrad': case_tinygrad}) }}"
        __exo_node_plan_facts: "{{ ansible_facts['device_capabilities'] | combine({'tinygrad': case_tinygrad}) }}"
        device_capabilities: "{{ ansible_facts['device_capabilities'] | combine({'tinygrad': case_tinygrad}) }}"
        cacheable: true

    # The ring's tunnel first, as the role decides it before the plan (its templates read it).
    - name: Decide the ring's tunnel with the role's own tasks
      ansible.builtin.include_role:
        name: gpufleet.exo.node
        tasks_from: tunnel_plan.yml
        public: true

    # What preflight.yml looks at for the plan: no instance configured before, no MIG, and no service
    # user (its entry is only checked, and renders nothing). A version whose select.yml looks, looks itself.
    - name: Hand the role what preflight.yml looks at
      ansible.builtin.set_fact:
        __exo_node_host: {existing: [], account: null, mig_minors_text: null, mig_minors_error: null}

    - name: Plan with the role's own tasks
      ansible.builtin.include_role:
        name: gpufleet.exo.node
        tasks_from: select.yml
        public: true

    - name: Keep the plan, or use the plan given
      ansible.builtin.set_fact:
        exo_node_instances: "{{ case_instances[inventory_hostname] if case_instances else exo_node_instances }}"

    # As tunnel.yml and units.yml read them, on the plan rendered: the tunnel's peers (no host has a
    # key here), the whole cluster and the firewall's table.
    - name: Find the tunnel's peers
      ansible.builtin.set_fact:
        __exo_node_tunnel: >-
          {{ __exo_node_tunnel | combine(__exo_node_tunnel | gpufleet.exo.node_tunnel_ring(
               inventory_hostname, hostvars, check_mode=true)) }}

    - name: Read the whole cluster with the role's own tasks
      ansible.builtin.include_role:
        name: gpufleet.exo.node
        tasks_from: cluster.yml
        public: true

    - name: Decide the firewall's table
      ansible.builtin.set_fact:
        __exo_node_firewall: >-
          {{ exo_node_instances | gpufleet.exo.node_firewall(__exo_node_cluster, __exo_node_settings,
                                                              os_family='Debian', tunnel=__exo_node_tunnel) }}

    - name: Make the output directory
      ansible.builtin.file:
        path: "{{ case_out }}/{{ inventory_hostname }}"
        state: directory
        mode: "0755"

    - name: Write the plan
      ansible.builtin.copy:
        content: "{{ exo_node_instances | to_nice_json(sort_keys=true) }}\\n"
        dest: "{{ case_out }}/{{ inventory_hostname }}/instances.json"
        mode: "0644"

    - name: Render the template unit
      ansible.builtin.template:
        src: "{{ case_templates }}/exo@.service.j2"
        dest: "{{ case_out }}/{{ inventory_hostname }}/exo@.service"
        mode: "0644"

    - name: Render each instance's env file
      ansible.builtin.template:
        src: "{{ case_templates }}/instance.env.j2"
        dest: "{{ case_out }}/{{ inventory_hostname }}/{{ item.name }}.env"
        mode: "0644"
      loop: "{{ exo_node_instances }}"

    - name: Render each instance's drop-in
      ansible.builtin.template:
        src: "{{ case_templates }}/instance.conf.j2"
        dest: "{{ case_out }}/{{ inventory_hostname }}/{{ item.name }}.conf"
        mode: "0644"
      loop: "{{ exo_node_instances }}"

    # Every host of the play is planned by now (the linear strategy runs each task on all of them).
    - name: Render the topology
      ansible.builtin.template:
        src: "{{ case_templates }}/topology.json.j2"
        dest: "{{ case_out }}/{{ inventory_hostname }}/topology.json"
        mode: "0644"
"""

CHECK_PLAY = PROBED % "The whole node role in check mode" + """
    - name: Run the role
      ansible.builtin.include_role:
        name: gpufleet.exo.node
"""


def tinygrad(version="0.10.0"):
    facts = tinygrad_probe.version_facts(version)
    return {"installed": True, "version": version, "python": "/opt/exo/bin/python", "backend": None,
            "reason": "simulated", "select_env": facts["select_env"],
            "visible_devices_env": facts["visible_devices_env"], "guards": []}


def collections(tree, tmp):
    """A collections path whose gpufleet.exo is tree."""
    path = os.path.join(tmp, "collections-%d" % abs(hash(tree)))
    os.makedirs(os.path.join(path, "ansible_collections", "gpufleet"), exist_ok=True)
    link = os.path.join(path, "ansible_collections", "gpufleet", "exo")
    if not os.path.islink(link):
        os.symlink(os.path.abspath(tree), link)
    return path


def playbook(tree, tmp, play, inventory, check=False):
    with open(os.path.join(tmp, "play.yml"), "w") as handle:
        handle.write(play)
    with open(os.path.join(tmp, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections(tree, tmp), ANSIBLE_ROLES_PATH=os.path.join(tree, "roles"),
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="4")
    env.pop("ANSIBLE_CONFIG", None)
    env.pop("LD_LIBRARY_PATH", None)
    started = time.perf_counter()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook")] + (["--check"] if check else [])
                          + ["-i", os.path.join(tmp, "inventory.json"), os.path.join(tmp, "play.yml")],
                          cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit("ansible-playbook failed in %s:\n%s" % (tree, proc.stdout[-5000:]))
    return elapsed


def inventory(tmp, lib, hosts, **common):
    inv = {"all": {"vars": dict(ansible_connection="local", ansible_python_interpreter=sys.executable, **common),
                   "hosts": {}}}
    for number, (name, (simulated, host_vars)) in enumerate(sorted(hosts.items())):
        env, root = simhosts.write(tmp, name, lib, *simhosts.HOSTS[simulated])
        inv["all"]["hosts"][name] = dict(host_vars, case_env=env, case_rootfs=root, case_tinygrad=tinygrad(),
                                         exo_node_address="10.89.0.%d" % (11 + number))
    return inv


def render(tree, templates, tmp, lib, instances=None):
    """{path: bytes} of what tree plans and renders with templates (instances: a plan to render instead)."""
    # The same configuration directory for every render: its path is in the files.
    config_dir = os.path.join(tmp, "etc")
    tmp = tempfile.mkdtemp(dir=tmp)
    out = os.path.join(tmp, "out")
    inv = inventory(tmp, lib, HOSTS, case_out=out, case_templates=templates, case_instances=instances or {},
                    exo_node_config_dir=config_dir)
    playbook(tree, tmp, PLAY, inv)
    files = {}
    for root, dummy, names in os.walk(out):
        for name in names:
            with open(os.path.join(root, name), "rb") as handle:
                files[os.path.relpath(os.path.join(root, name), out)] = handle.read()
    return files


def compare(label, before, after):
    same = sorted(p for p in before if after.get(p) == before[p])
    print("%s: %d files, %d byte for byte the same" % (label, len(set(before) | set(after)), len(same)))
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path):
            continue
        print("  differs: %s" % path)
        diff = difflib.unified_diff(before.get(path, b"").decode().splitlines(), after.get(path, b"").decode().splitlines(),
                                    "before/" + path, "after/" + path, lineterm="", n=0)
        for line in list(diff)[2:40]:
            print("    " + line)
    return len(same) == len(set(before) | set(after))


def specs(before, after):
    for path in SPECS:
        old, new = [yaml.safe_load(open(os.path.join(tree, path))) for tree in (before, after)]
        old_options = old["argument_specs"]["main"]["options"]
        new_options = new["argument_specs"]["main"]["options"]
        changed = sorted(n for n in set(old_options) & set(new_options) if old_options[n] != new_options[n])
        print("%s: %s; added %s; removed %s; changed %s" % (
            path, "byte for byte the same" if open(os.path.join(before, path), "rb").read()
            == open(os.path.join(after, path), "rb").read() else "differs",
            sorted(set(new_options) - set(old_options)) or "none", sorted(set(old_options) - set(new_options)) or "none",
            changed or "none"))


def check_mode_time(tree, tmp, lib, rounds):
    """Seconds of each run of the whole role in check mode on the simulated 4-GPU host."""
    tmp = tempfile.mkdtemp(dir=tmp)
    paths = dict((key, os.path.join(tmp, key))
                 for key in ("exo_node_install_dir", "exo_node_config_dir", "exo_node_data_dir"))
    inv = inventory(tmp, lib, {"four": ("four", {})}, exo_node_refresh_facts="never", exo_node_manage_packages=False,
                    exo_node_python=sys.executable, exo_node_python_max_version="%d.%d" % sys.version_info[:2],
                    exo_node_source="path", exo_node_source_path=os.path.join(REPO, "tests", "standin"), **paths)
    return [playbook(tree, tmp, CHECK_PLAY, inv, check=True) for dummy in range(rounds)]


def suite_time(tree, paths):
    paths = [p for p in paths if os.path.exists(os.path.join(tree, p))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([collections(tree, tempfile.mkdtemp()), tree]),
               ANSIBLE_CONFIG=os.path.join(tree, "ansible.cfg"))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + paths, cwd=tree, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    elapsed = time.perf_counter() - started
    return elapsed, " ".join(paths), proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "no output"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", default=REPO)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--suites", action="store_true")
    parser.add_argument("--no-files", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    args = parser.parse_args()
    lib = simnvml.build("current")
    before_tree, after_tree = os.path.abspath(args.before), os.path.abspath(args.after)
    tmp = tempfile.mkdtemp(prefix="gpufleet-node-role-")
    try:
        if not args.no_files:
            before = render(before_tree, os.path.join(before_tree, "roles/node/templates"), tmp, lib)
            after = render(after_tree, os.path.join(after_tree, "roles/node/templates"), tmp, lib)
            compare("each version with its own templates", before, after)
            plans = dict((host, json.loads(before[host + "/instances.json"])) for host in HOSTS)
            through = render(after_tree, os.path.join(after_tree, "roles/node/templates"), tmp, lib, instances=plans)
            compare("the plans of --before through the templates of --after", through, after)
            specs(before_tree, after_tree)
        if not args.no_time:
            samples = {"before": [], "after": []}
            for dummy in range(args.rounds):
                for label, tree in (("before", before_tree), ("after", after_tree)):
                    samples[label] += check_mode_time(tree, tmp, lib, 1)
            old, new = statistics.median(samples["before"]), statistics.median(samples["after"])
            print("node role, check mode, simulated 4-GPU host (median of %d): before %.2f s, after %.2f s, "
                  "ratio %.2f" % (args.rounds, old, new, new / old))
        if args.suites:
            for label, paths in (("unit suite", ["tests/unit"]), ("node selection tests", SELECTION)):
                (old, old_paths, old_said), (new, new_paths, new_said) = [suite_time(tree, paths)
                                                                          for tree in (before_tree, after_tree)]
                print("%s: before %.1f s (%s: %s), after %.1f s (%s: %s), ratio %.2f"
                      % (label, old, old_paths, old_said, new, new_paths, new_said, new / old))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
