# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What the unit and the integration tests share; no test module imports another.

- Paths: the repository, the built collection, the fixtures.
- Running things: device_facts in a fresh process (run_module), ansible and ansible-playbook
  (run_ansible, run_playbook, and run_example with its inventory and recap for the documented
  examples), the roles' test playbooks over simulated hosts (run_driver_role, NODE_TASKS); free
  ports on 127.0.0.1 for real exo instances (free_ports).
- The EXAMPLES of a module or a filter, read in one place (examples).
- Simulated tinygrad packages (simulated_tinygrad, device_module) and tinygrad's facts for a version.
- The facts device_facts reports on the simulated hosts of tests/simulated/hosts.py PROBED, as the
  planners' unit tests read them (recorded_facts, from tests/fixtures/simulated) and as the probe
  gives them now (probe_simulated, normalized, comparable).
- The node planner called as the role calls it (NODE_SETTINGS, plan_node and its ok and refused
  forms).

The fixtures built on these (nvml_lib, simulated_host, bare_python, exo_pin_python) are in
tests/conftest.py; the simulated hardware is in tests/simulated.
"""

import copy
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time

import ansible
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".build", "collections")
sys.path[:0] = [p for p in (REPO, COLLECTIONS) if p not in sys.path]

from ansible_collections.gpufleet.exo.plugins.module_utils.probe import _tinygrad as tinygrad_probe  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import plan as node_plan  # noqa: E402
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings  # noqa: E402
from tests.simulated import hosts as simhosts  # noqa: E402
from tests.simulated import nvml as simnvml  # noqa: E402
from tests.simulated import sysfs as simsysfs  # noqa: E402

FIXTURES = os.path.join(REPO, "tests", "fixtures")
REAL_H100 = os.path.join(FIXTURES, "real-h100")
MODULE = os.path.join(REPO, "plugins", "modules", "device_facts.py")
BIN = os.path.dirname(sys.executable)
# The playbooks through which the role tests run the roles' tasks on simulated hosts.
DRIVER_ROLE = os.path.join(REPO, "tests", "integration", "roles", "driver_role.yml")
NODE_TASKS = os.path.join(REPO, "tests", "integration", "roles", "node_tasks.yml")


# ---- device_facts in a process of its own -------------------------------------------------------

class Run:
    def __init__(self, result, elapsed):
        self.result = result
        self.elapsed = elapsed
        self.facts = result.get("ansible_facts", {}).get("device_capabilities")


def run_module(tmp_path, args=None, env=None, python=sys.executable):
    """Run device_facts in a fresh process: the simulated libnvidia-ml is found at process start.

    Without the cache of tinygrad's answers unless args turn it on: a test that changes a simulated
    tinygrad in place between two runs means the second run to ask it again."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict({"tinygrad_cache": False}, **(args or {}))}))
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, os.environ.get("PYTHONPATH", "")]))
    environ.pop("LD_LIBRARY_PATH", None)
    environ.update(env or {})
    started = time.monotonic()
    proc = subprocess.run([python, MODULE, str(args_file)], env=environ, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, check=False)
    elapsed = time.monotonic() - started
    try:
        result = json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: %r %r" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    return Run(result, elapsed)


# ---- ansible and ansible-playbook ---------------------------------------------------------------

def run_ansible(args, tmp_path, env=None, command="ansible"):
    """Run an Ansible command; for ad hoc runs, the module's result (one line each with -o)."""
    environ = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
                   ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    environ.update(env or {})
    extra = ["-o"] if command == "ansible" else []
    proc = subprocess.run([os.path.join(BIN, command)] + args + extra, cwd=REPO, env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, check=False)
    output = proc.stdout.decode()
    assert proc.returncode == 0, output[-3000:] + proc.stderr.decode()[-3000:]
    if command != "ansible":
        return output
    return json.loads(output.split(" => ", 1)[1])


# What runs site.yml on simulated hosts over the local connection without changing this machine: root already
# (the plays' become would ask for sudo), no tinygrad probed, no report written, the driver only planned, no
# packages, and exo's Python this one.
SITE_HERE = {
    "ansible_connection": "local",
    "ansible_become": False,
    "device_facts_tinygrad": False,
    "fleet_report_dir": "",
    "exo_driver_plan_only": True,
    "exo_node_refresh_facts": "never", "exo_node_manage_packages": False, "exo_node_python": sys.executable,
    "exo_node_python_max_version": "%d.%d" % sys.version_info[:2],
}


def site_dirs(paths):
    """The node role's directories below paths (a host's own, or a template of inventory_hostname)."""
    return {"exo_node_install_dir": paths + "/install", "exo_node_config_dir": paths + "/config",
            "exo_node_data_dir": paths + "/data"}


def run_playbook(tmp, inventory, playbook, hosts, check=False, timeout=600):
    """Run a playbook over a JSON inventory; each host writes <result_dir>/<host>.json.

    Returns the finished process and the results of the hosts that wrote one.
    """
    result_dir = os.path.join(tmp, "results")
    os.makedirs(result_dir)
    inventory["all"]["vars"]["result_dir"] = result_dir
    with open(os.path.join(tmp, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_FORKS="4", ANSIBLE_NOCOLOR="1")
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook")]
                          + (["--check"] if check else []) + ["-i", os.path.join(tmp, "inventory.json"), playbook],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    results = {}
    for name in hosts:
        path = os.path.join(result_dir, name + ".json")
        if os.path.exists(path):
            with open(path) as handle:
                results[name] = json.load(handle)
    return proc, results


# ---- the examples of the docs -------------------------------------------------------------------

def free_ports(count):
    """count TCP ports free on 127.0.0.1 now, all different (held together while they are chosen)."""
    sockets = [socket.socket() for dummy in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


# The folder of each kind of plugin whose EXAMPLES are a string in its Python file.
PYTHON_EXAMPLES = {"module": "modules", "lookup": "lookup"}


def examples(kind, name):
    """The EXAMPLES of a plugin as written: kind "module" or "lookup" (the EXAMPLES string of
    plugins/modules/<name>.py or plugins/lookup/<name>.py) or "filter" (EXAMPLES of plugins/filter/<name>.yml, its
    documentation file)."""
    if kind in PYTHON_EXAMPLES:
        with open(os.path.join(REPO, "plugins", PYTHON_EXAMPLES[kind], name + ".py")) as handle:
            return re.search(r'^EXAMPLES = r"""\n(.*?)^"""', handle.read(), re.M | re.S).group(1)
    if kind == "filter":
        with open(os.path.join(REPO, "plugins", "filter", name + ".yml")) as handle:
            return yaml.safe_load(handle)["EXAMPLES"]
    raise ValueError("kind is %r; give module, lookup or filter" % kind)


def indent(text, spaces=4):
    """Lines of YAML moved right, blank lines left blank: examples placed inside a play's tasks."""
    return "".join(" " * spaces + line + "\n" if line else "\n" for line in text.strip("\n").splitlines())


def tasks_play(tasks):
    """Tasks as written (a module's EXAMPLES): a play that runs them on this machine."""
    return "- name: Run the examples\n  hosts: all\n  gather_facts: false\n  tasks:\n" + indent(tasks)


def local_inventory(**host_vars):
    """This machine alone, over the local connection, with this interpreter."""
    host = dict(ansible_connection="local", ansible_python_interpreter=sys.executable, **host_vars)
    return {"all": {"hosts": {"localhost": host}}}


def run_example(tmp, text, inventory, check=False, diff=False):
    """ansible-playbook -v over a playbook's text and a JSON inventory, results shown as JSON."""
    path = os.path.join(tmp, "example.yml")
    with open(path, "w") as handle:
        handle.write(text)
    with open(os.path.join(tmp, "inventory.json"), "w") as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-v"]
                          + (["--check"] if check else []) + (["--diff"] if diff else [])
                          + ["-i", os.path.join(tmp, "inventory.json"), path],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600, check=False)


def recap(proc, host):
    """A host's line of the play recap: ok, changed and failed."""
    match = re.search(r"^%s +: ok=(\d+) +changed=(\d+) +unreachable=0 +failed=(\d+)" % re.escape(host), proc.stdout, re.M)
    assert match, proc.stdout[-4000:]
    return dict(zip(("ok", "changed", "failed"), (int(n) for n in match.groups())))


# ---- the driver role over simulated hosts -------------------------------------------------------

def _driver_host(tmp, name, pci, nvml_config, role_vars, fake_facts, python, nvml_lib):
    root = os.path.join(tmp, name)
    simsysfs.write_tree(root, pci=pci)
    host = {"exo_driver_probe_options": {"rootfs": root, "tinygrad": False, "timeout": 20},
            "ansible_python_interpreter": python or sys.executable}
    if nvml_config is not None:
        config = simnvml.write_config(os.path.join(tmp, name + ".nvml.conf"), nvml_config["gpus"],
                                      init_error=nvml_config.get("init_error"))
        host["case_env"] = simnvml.environment(nvml_lib, config)
    if fake_facts:
        host["fake_facts"] = fake_facts
    host.update(role_vars)
    return host


def run_driver_role(tmp, cases, nvml_lib, check=True):
    """The driver role (driver_role.yml) in plan-only mode over simulated hosts, one a case:
    name -> (PCI devices, NVML config or None, role variables, fake facts, python, ...)."""
    inventory = {"all": {"vars": {"ansible_connection": "local", "exo_driver_plan_only": True,
                                  "exo_driver_probe": "always"},
                         "hosts": dict((name, _driver_host(tmp, name, *spec[:5], nvml_lib=nvml_lib))
                                       for name, spec in cases.items())}}
    return run_playbook(tmp, inventory, DRIVER_ROLE, cases, check=check)


# ---- the facts of the simulated hosts, recorded and live ---------------------------------------

SIMULATED_FACTS = os.path.join(FIXTURES, "simulated")
# What the facts hold of the environment that runs the probe rather than of the host: the versions of the
# libraries installed for its interpreter, that interpreter's path, how long each stage took.
ENVIRONMENT = "<environment>"


def probe_simulated(tmp_path, name, nvml_lib):
    """device_facts on the simulated host `name` of tests/simulated/hosts.py PROBED, as the facts it reports."""
    gpus, config, tree, python = simhosts.PROBED[name]
    if tree is None:
        env, root = simhosts.write(str(tmp_path), name, nvml_lib, gpus, config)
    else:
        root = str(tmp_path / name)
        simsysfs.write_tree(root, **tree)
        env = {} if gpus is None else simnvml.environment(
            nvml_lib, simnvml.write_config(str(tmp_path / (name + ".nvml.conf")), gpus, **config))
    if python:
        # Ansible's module_utils alone, as Ansible ships them with a module, and not nvidia-ml-py
        os.symlink(os.path.dirname(ansible.__file__), str(tmp_path / "ansible"))
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), COLLECTIONS])
    run = run_module(tmp_path, {"tinygrad": False, "rootfs": root, "timeout": 30}, env, python=python or sys.executable)
    assert run.facts is not None, run.result
    return run.facts


def normalized(facts):
    """The facts with what belongs to the environment that ran the probe written as ENVIRONMENT (the libraries'
    versions, the interpreter of the tests) or 0.0 (timings_ms), as recorded."""
    facts = copy.deepcopy(facts)
    facts["timings_ms"] = dict((stage, 0.0) for stage in facts.get("timings_ms") or {})
    facts["libraries"] = dict((name, None if version is None else ENVIRONMENT)
                              for name, version in (facts.get("libraries") or {}).items())
    if facts.get("nvml", {}).get("library_version") is not None:
        facts["nvml"]["library_version"] = ENVIRONMENT
    if facts.get("tinygrad", {}).get("python") == sys.executable:
        facts["tinygrad"]["python"] = ENVIRONMENT
    return facts


def comparable(facts):
    """The facts without what normalized() writes as ENVIRONMENT, which another machine may find otherwise."""
    facts = copy.deepcopy(facts)
    for section, key in (("timings_ms", None), ("libraries", None), ("nvml", "library_version"), ("tinygrad", "python")):
        if key is None:
            facts.pop(section, None)
        else:
            facts.get(section, {}).pop(key, None)
    return facts


def recorded_facts(name):
    """What device_facts reported on the simulated host `name`, normalized, from tests/fixtures/simulated/<name>.json."""
    with open(os.path.join(SIMULATED_FACTS, name + ".json")) as handle:
        return json.load(handle)


def record_facts(name, facts):
    with open(os.path.join(SIMULATED_FACTS, name + ".json"), "w") as handle:
        json.dump(normalized(facts), handle, indent=1, sort_keys=True)
        handle.write("\n")


# ---- tinygrad, simulated or as the probe's table describes it -----------------------------------

def tinygrad_facts(version):
    """The tinygrad section of the facts for exo's interpreter with tinygrad `version`, from the probe's table."""
    table = tinygrad_probe.version_facts(version)
    return {"installed": True, "version": version, "python": "/opt/exo/bin/python", "backend": None,
            "reason": "simulated", "select_env": table["select_env"],
            "visible_devices_env": table["visible_devices_env"], "guards": []}


def simulated_tinygrad(root, version, files):
    """Write a simulated tinygrad package with `files` (path -> source) and its dist-info."""
    files = dict(files)
    files.setdefault("tinygrad/__init__.py", "")
    files.setdefault("tinygrad/runtime/__init__.py", "")
    for path, source in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source))
    if version is not None:
        info = root / ("tinygrad-%s.dist-info" % version)
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinygrad\nVersion: %s\n" % version)
    return str(root)


def device_module(default_body):
    """A tinygrad/device.py whose Device.DEFAULT runs `default_body` (indented function body)."""
    return ("import json, os\n\n\nclass _Device:\n    @property\n    def DEFAULT(self):\n"
            + textwrap.indent(textwrap.dedent(default_body), "        ") + "\n\nDevice = _Device()\n")


# ---- the node planner, as the role calls it -----------------------------------------------------

with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as _handle:
    NODE_DEFAULTS = yaml.safe_load(_handle)
# The role's defaults for the planner's settings, on a host "h" at 10.0.0.1 that is a cluster of its own.
NODE_SETTINGS = dict(NODE_DEFAULTS)
# The defaults that are templates, as a host outside a play would have them; the facts given are
# the ones to plan from (refresh never), whatever interpreter gathered them.
NODE_SETTINGS.update(exo_node_id_prefix="h", exo_node_address="10.0.0.1", exo_node_cluster_hosts=["h"],
                     exo_node_refresh_facts="never")


def with_tinygrad(facts, version="0.10.0"):
    """The facts as gathered with exo's interpreter, which has tinygrad `version`."""
    facts = copy.deepcopy(facts)
    facts["tinygrad"] = tinygrad_facts(version)
    return facts


def checked(settings):
    """settings as the node role's preflight hands them to the planners: checked, once; a refused one fails the test."""
    values, errors = check_settings(settings)
    assert errors == [], errors
    return values


def plan_node(facts, version="0.10.0", existing=(), account=None, **settings):
    """The node planner for host "h" over NODE_SETTINGS changed by settings; version None: the facts' own tinygrad.

    As the role asks: the settings checked first, a refused one the only answer (the preflight stops there)."""
    values, errors = check_settings(dict(NODE_SETTINGS, **settings))
    if errors:
        return {"instances": [], "errors": ["host h: %s" % e for e in errors]}
    return node_plan.instances(with_tinygrad(facts, version) if version else facts, values, "h",
                               existing=existing, account=account, mig_minors_text=simhosts.MIG_MINORS)


def plan_node_ok(facts, **kwargs):
    """plan_node, which must give no error."""
    result = plan_node(facts, **kwargs)
    assert result["errors"] == [], result["errors"]
    return result


def plan_node_refused(facts, *parts, **kwargs):
    """The one error plan_node gives; it names host h and holds every part given."""
    result = plan_node(facts, **kwargs)
    assert result["instances"] == [] or result["errors"], result
    assert len(result["errors"]) == 1, result["errors"]
    for part in ("host h",) + parts:
        assert part in result["errors"][0], result["errors"][0]
    return result["errors"][0]


def node_templates():
    """The node role's templates as Ansible renders them: its comment and bool filters, blocks trimmed."""
    import jinja2
    from ansible.module_utils.parsing.convert_bool import boolean
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(REPO, "roles", "node", "templates")),
                             keep_trailing_newline=True, trim_blocks=True)
    env.filters.update(comment=lambda text: "#\n# %s\n#" % text, bool=boolean)
    return env
