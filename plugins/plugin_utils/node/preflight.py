# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's preflight (roles/node/tasks/preflight.yml): every refusal that needs only the
settings and a look at the host, before the role changes anything.

Two steps, each run once per host: preflight() checks the settings (the only check of them in a run:
the role hands its "settings" on to every planner) with the host's facts alone, and says which Python
is exo's and which paths to look for on the host; host_check() takes that answer and what the host
showed (exo's Python's --version and those paths), and adds how exo goes in (install.py) and the
refusals of the host. A refusal of the first answer stands in the second, and the host's are not
looked at then.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import tunnel
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.cluster import ring_errors
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.install import steps
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.models import repositories
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.python import choose
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.checked import checked
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node.settings import check_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

# The exo instances are systemd units: an image or a chroot may have systemd installed without running
# it (ansible_facts.service_mgr says whether it runs), and the units are written there all the same.
SYSTEMCTL = ("/usr/bin/systemctl", "/bin/systemctl")
# What the filter node_python takes, in its order.
PYTHON_SETTINGS = ("exo_node_python", "exo_node_distribution_python", "exo_node_python_min_version",
                   "exo_node_python_max_version")
NO_SYSTEMCTL = ("systemctl is missing; the exo instances are systemd units, so this role needs a host (or image) "
                "with systemd installed")
NO_FACTS = ("exo_node_refresh_facts is never but ansible_facts.device_capabilities is missing; run "
            "gpufleet.exo.device_facts before this role or let the role gather them (auto)")


# The files nginx must read when it loads the proxy's site: missing, nginx would refuse the site only
# after the instances had changed.
TLS_FILES = (("exo_node_api_proxy_tls_certificate", "the certificate (chain)"),
             ("exo_node_api_proxy_tls_key", "its private key"))


def tls_files(settings):
    """(setting, path, what) of each TLS file the proxy reads; none where it is off or speaks plain HTTP."""
    if not settings["exo_node_api_proxy"] or not all(settings[name] for name, dummy in TLS_FILES):
        return []
    return [(name, settings[name], what) for name, what in TLS_FILES]


def host_paths(settings):
    """The paths whose existence the second answer reads: systemctl's, and the proxy's TLS files."""
    return list(SYSTEMCTL) + [path for dummy, path, dummy in tls_files(settings)]


def host_errors(settings, facts, install, found):
    """What the host refuses, in the order the role checks it: exo's install and Python, systemd, the facts,
    the proxy's TLS files."""
    errors = []
    if install["errors"] or install["python_errors"]:
        errors.append("; ".join(install["errors"] or install["python_errors"]))
    if not any(found.get(path) for path in SYSTEMCTL):
        errors.append(NO_SYSTEMCTL)
    if settings["exo_node_refresh_facts"] == "never" and "device_capabilities" not in facts:
        errors.append(NO_FACTS)
    errors.extend("%s is %s, which is not a file on the host; put %s there first, or leave "
                  "exo_node_api_proxy_tls_certificate and exo_node_api_proxy_tls_key empty for plain HTTP"
                  % (name, show(path), what) for name, path, what in tls_files(settings) if not found.get(path))
    return errors


def preflight(raw, host, facts):
    """{"errors", "settings", "tunnel", "python_choice", "install", "paths", "model_repos"}, each error a line naming
    the host.

    raw: the role's variables as given (preflight.yml reads every exo_node_ one); facts: the host's
    ansible_facts. "settings": the checked values (settings.check_settings()), None where one is refused; with
    the ring's tunnel on, its address is their exo_node_address, which the instances are planned on.
    "tunnel": the ring's tunnel (tunnel.plan()), decided from the settings alone; the role checks it against
    the ring's other hosts once each has published its own. "install" is host_check()'s.
    """
    settings, errors = check_settings(raw)
    errors = errors or ring_errors(settings, host)
    answer = {"errors": ["host %s: %s" % (host, e) for e in errors], "settings": None, "tunnel": None,
              "python_choice": None, "install": None, "paths": [], "model_repos": []}
    if errors:
        return answer
    planned = tunnel.plan(settings, host)
    # As given: node_python judges exo_node_distribution_python itself.
    choice = choose(facts, *[raw.get(name, settings[name]) for name in PYTHON_SETTINGS])
    answer.update(settings=dict(settings, **planned["settings"]), tunnel=planned, python_choice=choice,
                  paths=host_paths(settings), model_repos=repositories(settings))
    refused = ["host %s: %s" % (host, "; ".join(choice["errors"]))] if choice["errors"] else []
    answer["errors"] = refused + planned["errors"]
    return answer


def host_check(first, host, facts, python_version=None, found=None):
    """preflight()'s answer first with "install" and the host's refusals, and without "settings", which the
    role holds apart from here on (one copy: the ring's tunnel changes its address); not checked again.

    python_version: the registered result of `<exo's Python> --version` (skipped where the first answer
    refused); found: {path: whether it exists} for "paths" (gpufleet.exo.exo_host_inspect's).
    """
    answer = dict((key, value) for key, value in first.items() if key != "settings")
    if answer["errors"] or not python_version or python_version.get("skipped"):
        return answer
    settings = checked("node_preflight_host", first["settings"])
    answer["install"] = steps(settings, python_choice=answer["python_choice"], python_version=python_version)
    answer["errors"] = ["host %s: %s" % (host, e) for e in host_errors(settings, facts, answer["install"], found or {})]
    return answer
