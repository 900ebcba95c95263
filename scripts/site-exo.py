# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which exo `make site` installs on this machine: real exo where its sources can be reached, else the stand-in.

    .venv/bin/python scripts/site-exo.py [VARS_FILE]     (default .build/site-exo.yml)

Real exo needs three things here: the archives of exo and tinygrad at the commits the node role pins
(the copies in ../shared/vendor beside the repository, which a fleet without GitHub is given, else
GitHub's tarballs), the node role's default interpreter (exo_node_python) in exo's range, and the
package index to fetch exo's requirements into a wheelhouse for that interpreter
(scripts/exo-wheelhouse.py, a no-op when it is up to date). With all three, VARS_FILE gets the role
variables that install from that wheelhouse; without one of them, VARS_FILE is empty and the local
inventory's stand-in (tests/standin) stays. Either way the first line printed says which, and why.
"""

import importlib.util
import os
import socket
import subprocess
import sys
import urllib.request

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path.insert(0, REPO)
from tests.integration import exo_sources  # noqa: E402  (the one place that knows the archives)


def _node_python():
    """The node role's table of Pythons (plugins/plugin_utils/node/python.py), whose range check the role applies."""
    spec = importlib.util.spec_from_file_location(
        "node_python", os.path.join(REPO, "plugins", "plugin_utils", "node", "python.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NODE_PYTHON = _node_python()

WORK = os.path.join(REPO, ".build", "site")
ROLE_DEFAULTS = os.path.join(REPO, "roles", "node", "defaults", "main.yml")
WHEELHOUSE = os.path.join(REPO, "scripts", "exo-wheelhouse.py")
# How long GitHub may take to answer before this machine counts as one that cannot reach it.
REACH_TIMEOUT = 10


class StandIn(Exception):
    """Real exo cannot be installed here; the message says why."""


def release(python):
    """major.minor of an interpreter, or None where it does not run."""
    try:
        proc = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def interpreter(defaults):
    """The node role's default interpreter for exo's virtualenv and its release, when in exo's range."""
    python = defaults["exo_node_python"]
    low, high = defaults["exo_node_python_min_version"], defaults["exo_node_python_max_version"]
    found = release(python)
    if found is None:
        raise StandIn("%s (the node role's exo_node_python) does not run here" % python)
    if not NODE_PYTHON.in_range(found, low, high):
        raise StandIn("%s is Python %s, outside exo's %s to %s (set exo_node_python in the inventory to a CPython "
                      "in that range)" % (python, found, low, high))
    return python, found


def reachable(url):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=REACH_TIMEOUT):
            return True
    except (OSError, socket.timeout):
        return False


def archives():
    """The archives of exo and tinygrad: vendored, else downloaded from GitHub when it answers."""
    missing = [url for filename, url in exo_sources.ARCHIVES.values()
               if not os.path.isfile(os.path.join(exo_sources.VENDOR, filename))
               and not os.path.isfile(os.path.join(WORK, filename))]
    if missing and not reachable(missing[0]):
        raise StandIn("exo's sources are not in %s and GitHub does not answer (%s)" % (exo_sources.VENDOR, missing[0]))
    try:
        return exo_sources.archives(WORK)
    except OSError as exc:
        raise StandIn("exo's sources could not be fetched: %s" % exc)


def wheelhouse(found, sources):
    """Build (or find up to date) the wheelhouse for this interpreter's release; its role variables."""
    dest = os.path.join(WORK, "wheelhouse-" + found)
    proc = subprocess.run([sys.executable, WHEELHOUSE, "--python", found, "--exo", sources["exo"],
                           "--tinygrad", sources["tinygrad"], dest],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise StandIn("exo's wheelhouse could not be built (is the package index reachable?): %s"
                      % proc.stderr.strip().splitlines()[-1:])
    return yaml.safe_load(proc.stdout)


def choose():
    """(role variables, the line that says which exo and why)."""
    with open(ROLE_DEFAULTS) as handle:
        defaults = yaml.safe_load(handle)
    try:
        python, found = interpreter(defaults)
        variables = wheelhouse(found, archives())
    except StandIn as reason:
        return {}, "make site: exo's stand-in (tests/standin, serves no model), because %s" % reason
    return variables, ("make site: real exo %s from the wheelhouse %s, for %s (Python %s)"
                       % (defaults["exo_node_git_version"][:9], variables["exo_node_wheelhouse"], python, found))


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(REPO, ".build", "site-exo.yml")
    variables, line = choose()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("# Written by scripts/site-exo.py for make site. %s\n" % line)
        yaml.safe_dump(variables, handle, default_flow_style=False)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
