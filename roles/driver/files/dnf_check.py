# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What dnf would find for the driver plan, without changing the host.

Reads the plan as JSON from the environment variable EXO_DNF_CHECK:
  {"repos": [{"id": ..., "baseurl": ...}], "stream": "nvidia-driver:580-dkms",
   "stream_packages": [...], "other_packages": [...], "kernel": ...}
The planned repositories are read through --repofrompath, so nothing under /etc/yum.repos.d changes.
Prints one JSON object: installed, checked, streams (of nvidia-driver), stream_found,
stream_artifacts (package names the stream carries), available {package: bool}, errors.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import subprocess


def run(cmd):
    env = dict(os.environ, LC_ALL="C")
    env.pop("EXO_DNF_CHECK", None)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    out = proc.communicate()[0]
    return proc.returncode, out


def main():
    plan = json.loads(os.environ["EXO_DNF_CHECK"])
    names = plan["stream_packages"] + plan["other_packages"]
    result = {"checked": False, "streams": [], "stream_found": None, "stream_artifacts": [], "available": {},
              "errors": []}
    dummy, out = run(["rpm", "-q", "--qf", "%{NAME}\n"] + names)
    installed = set(line.strip() for line in out.splitlines() if "is not installed" not in line)
    # kernel-devel-<release> is asked by name and release: rpm prints only the name.
    result["installed"] = sorted(n for n in names if n in installed or
                                 (n.startswith("kernel-devel-") and "kernel-devel" in installed and
                                  run(["rpm", "-q", n])[0] == 0))
    dummy, out = run(["dnf", "-q", "module", "list", "--enabled", "nvidia-driver"])
    enabled_streams = [line.split()[1] for line in out.splitlines()
                       if line.startswith("nvidia-driver ") and len(line.split()) > 1]
    enabled = plan["stream"].split(":")[1] in enabled_streams
    if enabled and set(result["installed"]) >= set(names):
        return result

    result["checked"] = True
    options = ["-q"]
    for repo in plan["repos"]:
        options += ["--repofrompath=%s,%s" % (repo["id"], repo["baseurl"]), "--setopt=%s.gpgcheck=0" % repo["id"]]
    rc, out = run(["dnf"] + options + ["module", "list", "nvidia-driver"])
    if rc != 0:
        result["errors"].append(out.strip())
    result["streams"] = sorted(set(line.split()[1] for line in out.splitlines()
                                   if line.startswith("nvidia-driver ") and len(line.split()) > 1))
    result["stream_found"] = plan["stream"].split(":")[1] in result["streams"]
    if result["stream_found"]:
        dummy, out = run(["dnf"] + options + ["module", "info", plan["stream"]])
        result["stream_artifacts"] = sorted(set(
            re.sub(r"-[0-9]+:.*$", "", token) for token in re.findall(r"\S+-[0-9]+:\S+", out)))
    for name in plan["other_packages"]:
        if name in result["installed"]:
            result["available"][name] = True
            continue
        result["available"][name] = run(["dnf"] + options + ["list", "--available", name])[0] == 0
    for name in plan["stream_packages"]:
        result["available"][name] = name in result["installed"] or name in result["stream_artifacts"]
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
