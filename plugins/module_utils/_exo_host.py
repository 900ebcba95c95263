# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node role's planners read of a host, as the module gpufleet.exo.exo_host_inspect looks at it
in one round trip: exo's Python's version, exo's virtualenv, which paths exist, which kernel modules the
kernel has, the service user's passwd entry, the instances configured before this run and the driver's
MIG minors. Plain functions, each answer in the shape the planners take (node_preflight, node_plan,
node_install)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import pwd

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_venv


def python_version(python, run):
    """`python --version` as ansible.builtin.command registers it: {"rc", "stdout", "stderr"}, and "msg"
    where it could not run at all. run: AnsibleModule.run_command."""
    try:
        rc, out, err = run([python, "--version"], handle_exceptions=False)
    except OSError as error:
        return {"rc": error.errno or 2, "stdout": "", "stderr": "", "msg": str(error)}
    return {"rc": rc, "stdout": out.strip(), "stderr": err.strip()}


def found(paths):
    """{path: whether it exists}, a link by what it points to."""
    return dict((path, os.path.exists(path)) for path in paths)


def kernel_modules(names, run):
    """{name: whether the kernel has the module}: loaded or built in (/sys/module/NAME), or loadable
    (`modprobe --dry-run` finds it). Nothing is loaded: whatever needs the module loads it on first use."""
    def loadable(name):
        try:
            return run(["modprobe", "--dry-run", name], handle_exceptions=False)[0] == 0
        except OSError:
            return False
    return dict((name, os.path.exists(os.path.join("/sys/module", name)) or loadable(name)) for name in names)


def account(user):
    """The passwd entry of user as ansible.builtin.getent gives it (the fields after the name), or None."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return [entry.pw_passwd, str(entry.pw_uid), str(entry.pw_gid), entry.pw_gecos, entry.pw_dir, entry.pw_shell]


def existing(directory):
    """The paths of the instances' env files in directory, sorted: regular files named *.env, not hidden,
    no link (as ansible.builtin.find finds them)."""
    if not os.path.isdir(directory):
        return []
    paths = [os.path.join(directory, name) for name in os.listdir(directory)
             if fnmatch.fnmatch(name, "*.env") and not name.startswith(".")]
    return sorted(path for path in paths if os.path.isfile(path) and not os.path.islink(path))


def text(path):
    """(the file's text, None), or (None, why it could not be read)."""
    try:
        with open(path) as handle:
            return handle.read(), None
    except (IOError, OSError) as error:
        return None, str(error)


def inspect(params, run):
    """The module's answer, each part only where its parameter is given (null otherwise)."""
    answer = {"python_version": None, "venv": None, "found": found(params["paths"]),
              "modules": kernel_modules(params["modules"], run), "account": None, "existing": None,
              "mig_minors_text": None, "mig_minors_error": None}
    if params["python"]:
        answer["python_version"] = python_version(params["python"], run)
    if params["venv"]:
        answer["venv"] = _exo_venv.inspect(
            {"path": params["venv"], "python": params["python"], "marker": params["marker"]}, run)
    if params["user"]:
        answer["account"] = account(params["user"])
    if params["instances_dir"]:
        answer["existing"] = existing(params["instances_dir"])
    if params["mig_minors"]:
        answer["mig_minors_text"], answer["mig_minors_error"] = text(params["mig_minors"])
    return answer
