# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node role's planners read of a host, as the module gpufleet.exo.exo_host_inspect looks at it
in one round trip: exo's Python's version, which paths exist, the service user's passwd entry, the
instances configured before this run and the driver's MIG minors. Plain functions, each answer in the
shape the planners take (node_preflight, node_plan)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import pwd


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
    answer = {"python_version": None, "found": found(params["paths"]), "account": None, "existing": None,
              "mig_minors_text": None, "mig_minors_error": None}
    if params["python"]:
        answer["python_version"] = python_version(params["python"], run)
    if params["user"]:
        answer["account"] = account(params["user"])
    if params["instances_dir"]:
        answer["existing"] = existing(params["instances_dir"])
    if params["mig_minors"]:
        answer["mig_minors_text"], answer["mig_minors_error"] = text(params["mig_minors"])
    return answer
