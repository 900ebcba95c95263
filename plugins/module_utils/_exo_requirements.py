# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of exo's declared requirements a node installs, and in what form.

exo's setup.py pins build and packaging tools next to what exo imports, and names tinygrad as a
git URL, which pip always tries to reach when it resolves exo's dependencies. The node role
therefore installs exo without its dependencies and then installs this list. Shared by the filter
gpufleet.exo.exo_requirements and scripts/exo-wheelhouse.py, so the wheelhouse holds exactly what
the role installs. Standard library only: the script loads this file by its path.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
from email.parser import Parser

NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
# A requirement that belongs to an extra exo declares (apple_silicon, windows, ...): never wanted.
EXTRA_MARKER = re.compile(r";.*\bextra\s*==")


def normalize(name):
    """The name as package indexes compare names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement):
    """The project name a requirement string starts with, or None."""
    match = NAME.match(requirement)
    return match.group(1) if match else None


def _name_errors(variable, names):
    return ["%s: %r is not a package name" % (variable, name) for name in names
            if not isinstance(name, str) or NAME.match(name) is None or NAME.match(name).group(1) != name.strip()]


def _add_errors(add):
    errors = []
    for requirement in add:
        name = requirement_name(requirement) if isinstance(requirement, str) else None
        if name is None or requirement.strip().startswith(("-", "/")) or "://" in requirement:
            errors.append("exo_node_add_requirements entry %r is not a requirement; give a package name with "
                          "its version, such as 'llvmlite==0.44.0'" % (requirement,))
        elif normalize(name) == "tinygrad":
            errors.append("exo_node_add_requirements must not name tinygrad, which exo declares; give "
                          "exo_node_tinygrad_requirement instead")
    return errors


def check_settings(skip, replace, tinygrad, add=()):
    """Problems with the role's settings, each naming the variable and the value."""
    errors = []
    if not isinstance(skip, (list, tuple)):
        return ["exo_node_skip_requirements must be a list of package names, got %r" % (skip,)]
    if not isinstance(replace, dict):
        return ["exo_node_replace_requirements must map package names to package names, got %r" % (replace,)]
    if not isinstance(tinygrad, str):
        return ["exo_node_tinygrad_requirement must be a string, got %r" % (tinygrad,)]
    if not isinstance(add, (list, tuple)):
        return ["exo_node_add_requirements must be a list of requirements, got %r" % (add,)]
    errors += _name_errors("exo_node_skip_requirements", skip)
    errors += _name_errors("exo_node_replace_requirements", list(replace) + list(replace.values()))
    errors += _add_errors(add)
    if errors:
        return errors
    if "tinygrad" in [normalize(name) for name in list(skip) + list(replace)]:
        errors.append("exo_node_skip_requirements and exo_node_replace_requirements must not name tinygrad, "
                      "which exo imports; give exo_node_tinygrad_requirement instead")
    skipped = set(normalize(name) for name in skip)
    for requirement in add:
        if normalize(requirement_name(requirement)) in skipped:
            errors.append("exo_node_add_requirements entry %r names a package exo_node_skip_requirements leaves "
                          "out; keep it in one of the two" % (requirement,))
    tinygrad = tinygrad.strip()
    # A path or URL is a wheel, sdist or directory pip installs as it is; anything else must be a
    # requirement for tinygrad itself.
    if tinygrad and not tinygrad.startswith("/") and "://" not in tinygrad \
            and normalize(requirement_name(tinygrad) or "") != "tinygrad":
        errors.append("exo_node_tinygrad_requirement %r names %s, not tinygrad; give a requirement such as "
                      "'tinygrad==0.10.0', or a path or URL of a tinygrad wheel, sdist or directory"
                      % (tinygrad, requirement_name(tinygrad) or "no package"))
    return errors


def requirements(metadata, skip=(), replace=None, tinygrad="", add=()):
    """What to install for the distribution whose METADATA text is given.

    Returns name, version, install (requirement strings for pip), skipped and replaced (exo's own
    requirement strings that were left out or swapped) and errors. With metadata None only the
    settings are checked. add: what exo needs but does not declare, installed after exo's own; an
    added package exo also declares replaces exo's requirement (the added pin wins).
    """
    replace = {} if replace is None else replace
    result = {"name": None, "version": None, "install": [], "skipped": [], "replaced": [], "errors": []}
    result["errors"] = check_settings(skip, replace, tinygrad, add)
    if result["errors"] or metadata is None:
        return result
    if not isinstance(metadata, str) or not metadata.strip():
        result["errors"].append("the METADATA of the installed exo is empty or not text: %r" % (metadata,))
        return result
    headers = Parser().parsestr(metadata, headersonly=True)
    result["name"], result["version"] = headers.get("Name"), headers.get("Version")
    if result["name"] is None:
        result["errors"].append("the METADATA of the installed exo has no Name: header; is it a METADATA file?")
        return result
    skip = set(normalize(name) for name in skip)
    replace = dict((normalize(old), new.strip()) for old, new in replace.items())
    added = set(normalize(requirement_name(requirement)) for requirement in add)
    tinygrad = tinygrad.strip()
    for requirement in headers.get_all("Requires-Dist") or []:
        requirement = requirement.strip()
        name = requirement_name(requirement)
        key = normalize(name or "")
        if EXTRA_MARKER.search(requirement):
            continue
        if key in skip:
            result["skipped"].append(requirement)
        elif (key == "tinygrad" and tinygrad) or key in added:
            result["replaced"].append(requirement)
        elif key in replace:
            result["replaced"].append(requirement)
            result["install"].append(replace[key] + requirement[len(name):])
        elif requirement not in result["install"]:
            result["install"].append(requirement)
    result["install"] += [requirement.strip() for requirement in add]
    if tinygrad:
        result["install"].append(tinygrad)
    return result
