# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the node role puts exo into its virtualenv: the settings' problems, the packages the host
needs first, what pip is given, and the identity of the source that the virtualenv's marker records.

The role's install tasks (roles/node/tasks/install.yml) only run what steps() says; the marker is
compared with source_id, so a change of any setting that shapes what pip installs installs again,
and nothing else does.

Every source installs from a wheelhouse: exo_node_wheelhouse where it is given, else one the controller
builds for the source (steps()' "wheels", the request the action gpufleet.exo.exo_wheelhouse builds).
pip on the host is given that wheelhouse alone, binary-only, with the sha256 of every wheel: it never
asks an index and never builds a source package as root.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os
import re

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_requirements as exo_requirements
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheel_build
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import wheelhouse as wheel_record
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.python import in_range
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked

# Packages by ansible_facts.os_family. "{version}" is the major.minor of exo's Python. Debian's own
# Pythons make a virtualenv only with python3.X-venv, which carries ensurepip; the other families'
# builds have ensurepip built in. No git: the controller fetches a git source (wheel_build).
OS_PACKAGES = {
    "Debian": {"venv": ["python{version}-venv"], "firewall": ["nftables"], "proxy": ["nginx"]},
}
OTHER_OS = {"venv": [], "firewall": ["nftables"], "proxy": ["nginx"]}

# exo on PyPI is an unrelated project: an index requirement naming exo needs the operator's own index.
PYPI_EXO = re.compile(r"^\s*exo\s*($|[\[<>=!~;@ ])", re.I)
RELEASE = re.compile(r"Python ([0-9]+[.][0-9]+)")


def _text(value):
    return "" if value is None else str(value)


def python_release(version_result):
    """major.minor from a registered `python --version` ("Python 3.12.1"; Python 2 says it on stderr), or ""."""
    version_result = version_result or {}
    match = RELEASE.search(_text(version_result.get("stdout")) + " " + _text(version_result.get("stderr")))
    return match.group(1) if match else ""


def source_errors(settings):
    """What is wrong with the exo source settings together, or on the controller, each naming the variable and
    its value; settings are the values check_settings() read (each one alone is checked there)."""
    source = settings["exo_node_source"]
    errors = []
    if source == "git" and not (settings["exo_node_git_url"] and settings["exo_node_git_version"]):
        errors.append("exo_node_source is git but exo_node_git_url (%s) or exo_node_git_version (%s) is empty"
                      % (json.dumps(settings["exo_node_git_url"]), json.dumps(settings["exo_node_git_version"])))
    if source == "path" and not (settings["exo_node_source_path"] and os.path.exists(settings["exo_node_source_path"])):
        errors.append("exo_node_source is path but exo_node_source_path (%s) is not a wheel, sdist or directory "
                      "on the controller" % json.dumps(settings["exo_node_source_path"]))
    if source == "index":
        requirement = settings["exo_node_index_requirement"]
        if not requirement:
            errors.append("exo_node_source is index but exo_node_index_requirement is empty")
        elif PYPI_EXO.match(requirement) and not settings["exo_node_pip_index_url"]:
            errors.append("exo_node_index_requirement %s would come from PyPI, where the name exo is an unrelated "
                          "project; set exo_node_pip_index_url to the index that carries your exo build, or use "
                          "exo_node_source git or path" % json.dumps(requirement))
    wheelhouse = settings["exo_node_wheelhouse"]
    if wheelhouse and not os.path.isdir(wheelhouse):
        errors.append("exo_node_wheelhouse is %s, which is not a directory on the controller; give the directory of "
                      "the wheels, or \"\" to install from an index" % json.dumps(wheelhouse))
    elif wheelhouse:
        errors += wheelhouse_errors(settings)
    return errors


def wheelhouse_errors(settings, verify=False):
    """What keeps pip from installing from exo_node_wheelhouse with every file checked: its wheels are not the ones
    its requirements.txt records (with verify, by content: a read of every wheel), or exo would not come from it.

    pip cannot check a git checkout, a source directory or an index's answer against the wheelhouse's hashes,
    so with a wheelhouse exo is one of its wheels, as scripts/exo-wheelhouse.py writes the variables.
    """
    wheelhouse = settings["exo_node_wheelhouse"]
    errors = ["exo_node_wheelhouse %s %s" % (json.dumps(wheelhouse), problem)
              for problem in wheel_record.problems(wheelhouse, verify)]
    source, path = settings["exo_node_source"], settings["exo_node_source_path"]
    in_wheelhouse = (source == "path" and os.path.isfile(path) and path.endswith(".whl")
                     and os.path.dirname(os.path.realpath(path)) == os.path.realpath(wheelhouse))
    if not in_wheelhouse:
        given = "exo_node_source is %s" % source + (", exo_node_source_path %s" % json.dumps(path) if source == "path" else "")
        errors.append("%s, but with exo_node_wheelhouse pip installs only the wheelhouse's wheels, each checked against "
                      "the sha256 its requirements.txt records: give exo_node_source path and, as "
                      "exo_node_source_path, exo's wheel in the wheelhouse (scripts/exo-wheelhouse.py writes both into "
                      "exo-wheelhouse.yml)" % given)
    # pip would stop on them only after exo is in, with a message about hashes.
    held = set(key[0] for key in map(wheel_record.wheel_key, wheel_record.wheels(wheelhouse)) if key)
    lacking = [r for r in settings["exo_node_add_requirements"]
               if wheel_record.normalize(exo_requirements.requirement_name(r) or "") not in held]
    if lacking:
        errors.append("exo_node_add_requirements names %s, which exo_node_wheelhouse %s lacks: build the wheelhouse "
                      "again with scripts/exo-wheelhouse.py (it adds them), or set exo_node_add_requirements to what "
                      "the hosts need (an exo that never runs tinygrad's CPU backend on BF16 weights needs none: [])"
                      % (", ".join(lacking), json.dumps(wheelhouse)))
    return errors


def python_errors(settings, choice, version_result, release):
    """Why exo's Python cannot make its virtualenv: it does not run, or its release is out of range.

    choice is the filter node_python's answer; release is python_release(version_result). A distribution's Python the role installs itself
    (choice packages, with exo_node_manage_packages) is in range by node_python's table.
    """
    if choice.get("packages") and settings["exo_node_manage_packages"]:
        return []
    low, high = settings["exo_node_python_min_version"], settings["exo_node_python_max_version"]
    if version_result.get("rc", 1) == 0 and release and in_range(release, low, high):
        return []
    if release:
        found = "is Python " + release
    else:
        found = "does not run as a Python interpreter (%s)" % (
            version_result.get("msg") or version_result.get("stderr") or "no output")
    return ["exo's Python %s %s; exo runs on Python %s to %s (exo_node_python_min_version, "
            "exo_node_python_max_version: exo pins numpy 2.0.0, which has no wheel for newer Pythons, and "
            "tinygrad needs 3.10). On this host: %s." % (choice["python"], found, low, high, choice["advice"])]


def cpu_instance_possible(plan):
    """Whether the planner's answer so far has a CPU instance, or may have one once it sees facts.

    With no facts to plan from (the first facts came from an interpreter without nvidia-ml-py) the
    plan has no instance, and its backends to check say whether a CPU instance may be forced.
    """
    plan = plan or {}
    if plan.get("instances"):
        return any(instance.get("kind") == "cpu" for instance in plan["instances"])
    return "cpu" in (plan.get("backends") or ())


def packages(settings, os_family, release, venv_exists, ensurepip_rc, plan=None):
    """The distribution's packages to install before exo's virtualenv is made and exo is fetched.

    The venv package only where the virtualenv is still to be made and the interpreter cannot make
    it as it is (ensurepip_rc other than 0); exo_node_cpu_packages (clang, which tinygrad's CPU
    backend compiles with) where the planner's answer so far has or may have a CPU instance, so
    that the backend check of the facts gathered next finds them; nft for exo_node_firewall; nginx for
    exo_node_api_proxy. Never git: a git source is fetched by the controller.
    """
    table = OS_PACKAGES.get(os_family, OTHER_OS)
    wanted = []
    if not venv_exists and ensurepip_rc not in (None, 0):
        wanted += [package.replace("{version}", release) for package in table["venv"]]
    if settings["exo_node_firewall"]:
        wanted += table["firewall"]
    if settings["exo_node_api_proxy"]:
        wanted += table["proxy"]
    if cpu_instance_possible(plan):
        wanted += [name for name in settings["exo_node_cpu_packages"] if name not in wanted]
    return wanted


def staged_source(settings):
    """The name the marker gives a path source: where releases before the controller built the wheelhouse copied
    it to, so that a host installed from exo_node_wheelhouse then keeps its marker."""
    return "%s/src/%s" % (settings["exo_node_install_dir"], os.path.basename(settings["exo_node_source_path"].rstrip("/")))


def pip_source(settings):
    """exo's source as pip on the controller is given it."""
    return {"git": lambda: "git+%s@%s" % (settings["exo_node_git_url"], settings["exo_node_git_version"]),
            "path": lambda: os.path.abspath(settings["exo_node_source_path"]),
            "index": lambda: settings["exo_node_index_requirement"]}[settings["exo_node_source"]]()


def wheels_request(settings, release, arch):
    """What gpufleet.exo.exo_wheelhouse builds on the controller for a host without exo_node_wheelhouse: exo's
    source, tinygrad's (exo_node_tinygrad_requirement, else the URL exo pins), the host's CPython release and
    machine, and exo's requirements as the role shapes them, with the device probe's packages. Its key names
    the build: a path source by its content, the others by their text."""
    request = {"exo": pip_source(settings), "tinygrad": settings["exo_node_tinygrad_requirement"],
               "python": release, "arch": arch or "x86_64", "glibc": wheel_build.GLIBC,
               "skip": sorted(settings["exo_node_skip_requirements"]),
               "replace": settings["exo_node_replace_requirements"], "add": settings["exo_node_add_requirements"],
               "extra": settings["exo_node_probe_packages"], "index_url": settings["exo_node_pip_index_url"]}
    identity = dict(request, exo=wheel_build.source_identity(request["exo"]))
    request["key"] = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return request


def source_id(settings, wheels=None):
    """What the marker in exo's virtualenv records: the source, and the settings that shape its requirements;
    a wheelhouse by the sha256 of its requirements.txt, so that a wheel rebuilt under the same name installs again,
    and one the controller builds by its request's key (wheels_request()), so that a host installed before the
    role built wheelhouses, from an index unhashed, installs again from one."""
    source = settings["exo_node_source"]
    where = {"git": lambda: "git %s %s" % (settings["exo_node_git_url"], settings["exo_node_git_version"]),
             "path": lambda: "path " + staged_source(settings),
             "index": lambda: "index %s %s" % (settings["exo_node_index_requirement"],
                                               settings["exo_node_pip_index_url"])}[source]()
    shaping = {"tinygrad": settings["exo_node_tinygrad_requirement"],
               "skip": sorted(settings["exo_node_skip_requirements"]),
               "replace": settings["exo_node_replace_requirements"],
               "wheelhouse": wheel_record.record_id(settings["exo_node_wheelhouse"]) if settings["exo_node_wheelhouse"] else ""}
    # Only when set, so that a host installed before the setting existed, and not adding, keeps its marker.
    if settings["exo_node_add_requirements"]:
        shaping["add"] = settings["exo_node_add_requirements"]
    if wheels:
        shaping["wheels"] = wheels["key"]
    return where + "\nrequirements " + json.dumps(shaping, sort_keys=True)


def pip_command(settings):
    """pip install in exo's virtualenv, from the host's copy of the wheelhouse alone, with the extra arguments of
    the settings. pip takes nothing without the hash its requirements.txt records for it, asks no index, and
    takes wheels only (--only-binary): a requirement that has no wheel fails rather than being built as root."""
    install_dir = settings["exo_node_install_dir"]
    argv = [install_dir + "/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
            "--require-hashes", "--no-index", "--only-binary", ":all:", "--find-links", install_dir + "/wheelhouse"]
    return argv + settings["exo_node_pip_extra_args"].split()


def install_spec(settings):
    """What pip is given for exo itself: the wheelhouse's requirements.txt, every wheel with its hash, exo's among
    them, all checked before pip installs any (pip reads no hash given on its command line)."""
    return "--requirement=%s/wheelhouse/%s" % (settings["exo_node_install_dir"], wheel_record.RECORD)


def same_source(recorded, source):
    """Whether the marker's text names source (source_id()): the same text, or the same but for a short
    commit id where source has the full id it begins with (what releases before full ids recorded)."""
    if recorded == source:
        return True
    old_where, old_rest = (recorded.split("\n", 1) + [""])[:2]
    new_where, new_rest = (source.split("\n", 1) + [""])[:2]
    old, new = old_where.split(" "), new_where.split(" ")
    if old_rest != new_rest or len(old) != 3 or old[:2] != new[:2] or old[0] != "git":
        return False
    recorded_id, full_id = old[2].lower(), new[2].lower()
    return len(recorded_id) >= 7 and len(full_id) == 40 and full_id.startswith(recorded_id)


def needed(source, venv):
    """Whether pip installs exo: exo is missing, or the marker names another source than source (same_source());
    venv is what gpufleet.exo.exo_host_inspect found of the virtualenv."""
    venv = venv or {}
    return not venv.get("exe") or not same_source(venv.get("marker") or "", source or "")


def steps(settings, os_family=None, python_choice=None, python_version=None, venv=None, node_plan=None, verify=False,
          arch=None):
    """{"errors", "python_release", "python_errors", "packages", "spec", "source_id", "pip", "wheels", "needed"}:
    what the install tasks do.

    settings: check_settings()' values, as the role's preflight checked them. The host's state comes as the tasks registered it,
    each optional until it is known: python_choice (filter node_python), python_version (`python
    --version`), venv (what gpufleet.exo.exo_host_inspect found: the virtualenv's python, ensurepip,
    exo's executable and the marker), node_plan (the filter node_plan's answer so far) and arch (the
    host's ansible_facts.architecture). verify adds the wheels of exo_node_wheelhouse whose content is
    not the recorded one to the errors where pip is to install from it (needed): a read of the whole
    wheelhouse, which costs as much as the install. wheels is what gpufleet.exo.exo_wheelhouse prepares on
    the controller where pip runs: exo_node_wheelhouse ({"key", "wheelhouse"}), else the build of
    wheels_request(); None where exo is in already, and for a build while the host's Python is not known.
    """
    settings = checked("node_install", settings)
    errors = source_errors(settings)
    version_result = python_version or {}
    release = python_release(version_result)
    target = (python_choice or {}).get("release") or release
    wheels = None
    if settings["exo_node_wheelhouse"] and not errors:
        wheels = {"key": "given-" + wheel_record.record_id(settings["exo_node_wheelhouse"])[:16],
                  "wheelhouse": settings["exo_node_wheelhouse"]}
    elif not errors and target:
        wheels = wheels_request(settings, target, arch)
    source = source_id(settings, wheels if not settings["exo_node_wheelhouse"] else None) if not errors else None
    pip_runs = needed(source, venv)
    if verify and settings["exo_node_wheelhouse"] and not errors and pip_runs:
        errors = wheelhouse_errors(settings, verify=True)
        source = source if not errors else None
    return {
        "errors": errors,
        "python_release": release,
        "python_errors": python_errors(settings, python_choice, version_result, release) if python_choice and python_version
        else [],
        "packages": (python_choice or {}).get("packages", []) + packages(
            settings, os_family, release, (venv or {}).get("python", True), (venv or {}).get("ensurepip"), node_plan),
        "spec": install_spec(settings) if not errors else None,
        "source_id": source,
        "pip": pip_command(settings),
        "wheels": wheels if pip_runs else None,
        "needed": pip_runs,
    }
