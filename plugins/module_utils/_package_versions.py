# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The packages installed whose names match, in ansible.builtin.package_facts' shape, from dpkg's or rpm's
database (module package_versions). One listing, filtered here, so that only what was asked for travels
back to the controller and stays in its memory for the rest of the play."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Tab-separated fields, one package a line. dpkg-query lists the packages dpkg knows, removed ones too.
DPKG_QUERY = ["-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\n"]
RPM_QUERY = ["-qa", "--qf", "%{NAME}\t%{EPOCH}\t%{VERSION}\t%{RELEASE}\t%{ARCH}\n"]
# dpkg's status letter (the second of db:Status-Abbrev) of a package whose files are installed: configured,
# or configured but for triggers pending (W, t).
DPKG_INSTALLED = ("i", "W", "t")


def from_dpkg(text, names):
    """{name: [{name, version, arch, source}]} of the installed packages of dpkg-query's answer whose names match."""
    packages = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 4 and len(fields[0]) > 1 and fields[0][1] in DPKG_INSTALLED and names.match(fields[1]):
            packages.setdefault(fields[1], []).append(
                {"name": fields[1], "version": fields[2], "arch": fields[3], "source": "apt"})
    return packages


def from_rpm(text, names):
    """{name: [{name, version, release, epoch, arch, source}]} of rpm's answer whose names match."""
    packages = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 5 and names.match(fields[0]):
            epoch = int(fields[1]) if fields[1].isdigit() else None  # rpm says (none) where a package has none
            packages.setdefault(fields[0], []).append({"name": fields[0], "version": fields[2], "release": fields[3],
                                                       "epoch": epoch, "arch": fields[4], "source": "rpm"})
    return packages


# The package managers, in the order they are looked for: (tool, its query, the reader of its answer).
MANAGERS = (("dpkg-query", DPKG_QUERY, from_dpkg), ("rpm", RPM_QUERY, from_rpm))


def package_versions(names, bin_path, run):
    """{"packages", "manager": the tool or None, "msg" where they are unknown or the tool failed}.

    names: the compiled pattern of the names to keep; bin_path(tool) is its path or None; run(argv) is
    (rc, stdout, stderr). Without either tool the packages are unknown (None), which the planners say."""
    for tool, query, read in MANAGERS:
        path = bin_path(tool)
        if path:
            rc, out, err = run([path] + query)
            if rc != 0:
                return {"failed": True, "manager": tool, "packages": None,
                        "msg": "%s failed (rc %d): %s" % (tool, rc, (err or out).strip())}
            return {"packages": read(out, names), "manager": tool}
    return {"packages": None, "manager": None,
            "msg": "neither dpkg-query nor rpm is on this host: the packages installed are unknown"}
