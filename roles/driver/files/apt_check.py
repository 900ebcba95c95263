# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What apt would do with the driver plan, found without changing the host.

Reads the plan as JSON from the environment variable EXO_APT_CHECK:
  {"repositories": [{"file": ..., "components": [...], "keyring": ..., "sources": [{"uri": ..., "suite": ...}]}],
   "required": [...], "optional": [...], "version_match": [...], "kernel": "6.1.0-18-amd64"}
Prints one JSON object:
  sources        the content of the sources file the role manages: only the components the host's own
                 sources lack, "" when it lacks none
  missing_components, installed, skipped_headers (headers already at /lib/modules/KERNEL/build)
  checked        false when every required package is installed already (nothing asked of the network)
  update_errors, candidates {package: version or null}, upstream {package: upstream version},
  simulate {"rc": ..., "errors": [...], "install": {package: version}}
The package lists are read into a private directory that is removed afterwards: the host's apt state,
sources and dpkg database are only read.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile

OURS = "gpufleet-exo-nvidia.sources"
SOURCE_PARTS = "/etc/apt/sources.list.d"


def run(cmd):
    env = dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
    env.pop("EXO_APT_CHECK", None)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    out = proc.communicate()[0]
    return proc.returncode, out


def link_parts(directory):
    """The host's own source files, ours left out, so that what the host lacks can be computed."""
    if os.path.isdir(SOURCE_PARTS):
        for name in sorted(os.listdir(SOURCE_PARTS)):
            if name != OURS and (name.endswith(".list") or name.endswith(".sources")):
                os.symlink(os.path.join(SOURCE_PARTS, name), os.path.join(directory, name))


def configured_components(options):
    """(suite, component) pairs the host's sources already give."""
    rc, out = run(["apt-get"] + options + ["indextargets", "--no-release-info",
                                           "--format", "$(RELEASE) $(COMPONENT)", "Identifier: Packages"])
    pairs = set()
    for line in out.splitlines():
        fields = line.split()
        if rc == 0 and len(fields) == 2:
            pairs.add((fields[0], fields[1]))
    return pairs


def sources_text(repositories, configured):
    stanzas = []
    missing = {}
    for repo in repositories:
        by_uri = {}
        for source in repo["sources"]:
            lacking = [c for c in repo["components"] if (source["suite"], c) not in configured]
            if lacking:
                missing[source["suite"]] = lacking
                by_uri.setdefault((source["uri"], tuple(lacking)), []).append(source["suite"])
        for (uri, components), suites in sorted(by_uri.items()):
            stanza = ["Types: deb", "URIs: %s" % uri, "Suites: %s" % " ".join(suites),
                      "Components: %s" % " ".join(components)]
            if repo.get("keyring"):
                stanza.append("Signed-By: %s" % repo["keyring"])
            stanzas.append("\n".join(stanza) + "\n")
    text = "\n".join(stanzas)
    if text:
        text = "# Managed by gpufleet.exo.driver: the components the NVIDIA driver needs that the\n" \
               "# host's own sources lack.\n" + text
    return text, missing


def installed_packages(names):
    dummy, out = run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n"] + list(names))
    return sorted(set(line.split()[0] for line in out.splitlines() if line.endswith(" installed")))


def upstream(version):
    """535.309.01 from 535.309.01-0+deb12u1 or 1:535.309.01-1."""
    version = re.sub(r"^[0-9]+:", "", version or "")
    return re.sub(r"-[^-]*$", "", version) if "-" in version else version


def main():
    plan = json.loads(os.environ["EXO_APT_CHECK"])
    result = {"checked": False, "update_errors": [], "candidates": {}, "upstream": {},
              "simulate": {"rc": None, "errors": [], "install": {}}, "skipped_headers": []}
    tmp = tempfile.mkdtemp(prefix="gpufleet-exo-apt.")
    try:
        os.chmod(tmp, 0o755)
        parts = os.path.join(tmp, "parts")
        lists = os.path.join(tmp, "lists")
        for directory in (parts, os.path.join(lists, "partial"), os.path.join(tmp, "cache", "archives", "partial")):
            os.makedirs(directory)
        link_parts(parts)
        options = ["-o", "Dir::Etc::SourceParts=" + parts, "-o", "Dir::State::Lists=" + lists,
                   "-o", "Dir::Cache=" + os.path.join(tmp, "cache"), "-o", "Debug::NoLocking=1"]
        text, missing = sources_text(plan["repositories"], configured_components(options))
        result["sources"] = text
        result["missing_components"] = missing

        required = list(plan["required"])
        headers = "linux-headers-" + plan["kernel"]
        installed = installed_packages(required + plan["optional"])
        result["installed"] = installed
        if headers in required and headers not in installed and os.path.isdir("/lib/modules/%s/build" % plan["kernel"]):
            required.remove(headers)
            result["skipped_headers"] = [headers]
        if all(name in installed for name in required):
            return result

        result["checked"] = True
        if text:
            with open(os.path.join(parts, OURS), "w") as handle:
                handle.write(text)
        # apt downloads as the unprivileged _apt user where it exists
        try:
            apt_uid = pwd.getpwnam("_apt").pw_uid
        except KeyError:
            apt_uid = None
        if apt_uid is not None and os.geteuid() == 0:
            for directory in (lists, os.path.join(lists, "partial")):
                os.chown(directory, apt_uid, -1)
        dummy, out = run(["apt-get"] + options + ["-q", "update"])
        result["update_errors"] = [line for line in out.splitlines() if re.match(r"^(E:|Err:|W: Failed)", line)]
        for name in required + plan["optional"]:
            dummy, out = run(["apt-cache"] + options + ["policy", name])
            match = re.search(r"^\s*Candidate:\s*(\S+)", out, re.M)
            candidate = match.group(1) if match and match.group(1) != "(none)" else None
            result["candidates"][name] = candidate
        for name in plan["version_match"]:
            if result["candidates"].get(name):
                result["upstream"][name] = upstream(result["candidates"][name])
        wanted = [n for n in required if result["candidates"].get(n)] + \
                 [n for n in plan["optional"] if result["candidates"].get(n)]
        if wanted and all(result["candidates"].get(n) for n in required):
            rc, out = run(["apt-get"] + options + ["-s", "-q", "--no-install-recommends", "install"] + wanted)
            result["simulate"]["rc"] = rc
            if rc != 0:
                # apt's own explanation: the E: lines and the unmet dependencies under them
                result["simulate"]["errors"] = [line.strip() for line in out.splitlines()
                                                if line.startswith("E:") or line.startswith(" ")]
            for line in out.splitlines():
                match = re.match(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", line)
                if match:
                    result["simulate"]["install"][match.group(1)] = match.group(2)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(main()))
