# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What apt or dnf would do with the driver role's plan, found without changing the host, and what
stands in the way of it, in words (modules driver_apt_check and driver_dnf_check).

`run(argv)` is the caller's way to run a command; it returns (rc, stdout, stderr). apt reads the
package lists into a private directory that is removed afterwards, dnf reads the planned repositories
through --repofrompath: the host's package state, sources and repositories are only read.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import pwd
import re
import shutil
import tempfile

SOURCE_PARTS = "/etc/apt/sources.list.d"
APT_TOOLS = ("apt-get", "apt-cache", "dpkg-query")
DNF_TOOLS = ("dnf", "rpm")


def without_tools(missing, manager):
    """The answer on a host that lacks the package manager's tools: one problem, nothing asked."""
    answer = apt_answer() if manager == "apt" else dnf_answer()
    answer.update(install=[], notes=[], problems=[
        "%s not found on this host, so %s cannot check the plan: the host's package manager is not %s, or its "
        "facts are not this host's; gather them again (ansible.builtin.setup)" % (", ".join(missing), manager, manager)])
    return answer


def apt_answer():
    return {"checked": False, "update_errors": [], "candidates": {}, "upstream": {},
            "simulate": {"rc": None, "errors": [], "install": {}}, "skipped_headers": [],
            "sources": "", "missing_components": {}, "installed": []}


def dnf_answer():
    return {"checked": False, "streams": [], "stream_found": None, "stream_artifacts": [], "available": {},
            "errors": [], "installed": []}


# ---- apt ----------------------------------------------------------------------------------------

def sources_text(repositories, configured):
    """(the sources file the role manages, {suite: components it adds}): only the components the host's
    own sources lack; the text is "" when they lack none."""
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


def upstream(version):
    """535.309.01 from 535.309.01-0+deb12u1 or 1:535.309.01-1."""
    version = re.sub(r"^[0-9]+:", "", version or "")
    return re.sub(r"-[^-]*$", "", version) if "-" in version else version


def _link_parts(directory, ours):
    """The host's own source files, ours left out, so that what the host lacks can be computed."""
    if os.path.isdir(SOURCE_PARTS):
        for name in sorted(os.listdir(SOURCE_PARTS)):
            if name != ours and (name.endswith(".list") or name.endswith(".sources")):
                os.symlink(os.path.join(SOURCE_PARTS, name), os.path.join(directory, name))


def _configured_components(run, options):
    """(suite, component) pairs the host's sources already give."""
    rc, out, dummy = run(["apt-get"] + options + ["indextargets", "--no-release-info",
                                                  "--format", "$(RELEASE) $(COMPONENT)", "Identifier: Packages"])
    return set(tuple(line.split()) for line in out.splitlines() if rc == 0 and len(line.split()) == 2)


def _installed(run, names):
    dummy, out, dummy_err = run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n"] + list(names))
    return sorted(set(line.split()[0] for line in out.splitlines() if line.endswith(" installed")))


def apt_check(run, repositories, packages, optional_packages, version_match, kernel):
    """apt's answer for the plan, as a dict (see the RETURN of driver_apt_check)."""
    result = apt_answer()
    ours = os.path.basename(repositories[0]["file"]) if repositories else None
    tmp = tempfile.mkdtemp(prefix="gpufleet-exo-apt.")
    try:
        os.chmod(tmp, 0o755)
        parts = os.path.join(tmp, "parts")
        lists = os.path.join(tmp, "lists")
        for directory in (parts, os.path.join(lists, "partial"), os.path.join(tmp, "cache", "archives", "partial")):
            os.makedirs(directory)
        _link_parts(parts, ours)
        options = ["-o", "Dir::Etc::SourceParts=" + parts, "-o", "Dir::State::Lists=" + lists,
                   "-o", "Dir::Cache=" + os.path.join(tmp, "cache"), "-o", "Debug::NoLocking=1"]
        text, missing = sources_text(repositories, _configured_components(run, options))
        result["sources"] = text
        result["missing_components"] = missing

        required = list(packages)
        headers = "linux-headers-" + kernel
        result["installed"] = _installed(run, required + list(optional_packages))
        if headers in required and headers not in result["installed"] and os.path.isdir("/lib/modules/%s/build" % kernel):
            required.remove(headers)
            result["skipped_headers"] = [headers]
        if all(name in result["installed"] for name in required):
            return result

        result["checked"] = True
        if text:
            with open(os.path.join(parts, ours), "w") as handle:
                handle.write(text)
        # apt downloads as the unprivileged _apt user where it exists
        try:
            apt_uid = pwd.getpwnam("_apt").pw_uid
        except KeyError:
            apt_uid = None
        if apt_uid is not None and os.geteuid() == 0:
            for directory in (lists, os.path.join(lists, "partial")):
                os.chown(directory, apt_uid, -1)
        dummy, out, err = run(["apt-get"] + options + ["-q", "update"])
        result["update_errors"] = [line for line in (out + err).splitlines() if re.match(r"^(E:|Err:|W: Failed)", line)]
        for name in required + list(optional_packages):
            dummy, out, dummy_err = run(["apt-cache"] + options + ["policy", name])
            match = re.search(r"^\s*Candidate:\s*(\S+)", out, re.M)
            result["candidates"][name] = match.group(1) if match and match.group(1) != "(none)" else None
        for name in version_match:
            if result["candidates"].get(name):
                result["upstream"][name] = upstream(result["candidates"][name])
        wanted = [n for n in required + list(optional_packages) if result["candidates"].get(n)]
        if wanted and all(result["candidates"].get(n) for n in required):
            rc, out, err = run(["apt-get"] + options + ["-s", "-q", "--no-install-recommends", "install"] + wanted)
            result["simulate"]["rc"] = rc
            if rc != 0:
                # apt's own explanation: the E: lines and the unmet dependencies under them
                result["simulate"]["errors"] = [line.strip() for line in (out + "\n" + err).splitlines()
                                                if line.startswith("E:") or line.startswith(" ")]
            for line in out.splitlines():
                match = re.match(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", line)
                if match:
                    result["simulate"]["install"][match.group(1)] = match.group(2)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def apt_verdict(answer, repositories, packages, optional_packages, kernel, distribution, branch):
    """What apt's answer means for the plan: {install, problems, notes}.

    install is what the role asks apt for: the required packages (headers already on the host left
    out) and the optional ones apt can give.
    """
    available = set(answer["installed"]) | set(name for name, version in answer["candidates"].items() if version)
    missing = [name for name in packages if name not in available and name not in answer["skipped_headers"]
               ] if answer["checked"] else []
    headers = [name for name in missing if name.startswith("linux-headers-")]
    others = [name for name in missing if not name.startswith("linux-headers-")]
    components = ", ".join(c for repo in repositories for c in repo["components"])
    problems = []
    if answer["update_errors"]:
        problems.append("apt could not read the package sources: " + "; ".join(answer["update_errors"]))
    for name in headers:
        problems.append(
            "%s has no installation candidate: the running kernel %s is not one %s carries headers for (a custom, "
            "a vendor kernel or an outdated kernel), so DKMS cannot build the nvidia module. Boot a current "
            "distribution kernel (full-upgrade, reboot), put the headers of this kernel at /lib/modules/%s/build, "
            "or set exo_driver_kernel_module: false to install user space only" % (name, kernel, distribution, kernel))
    if others:
        problems.append("no installation candidate for %s in %s with the components %s: branch %s is not available "
                        "there; set exo_driver_branch to a branch this release carries"
                        % (", ".join(others), distribution, components, branch))
    if len(set(answer["upstream"].values())) > 1:
        problems.append("the kernel module and the NVML library would differ in version (%s): the library would "
                        "refuse the module (Driver/library version mismatch). Use the other kernel module flavour "
                        "(exo_driver_open_kernel_modules) or another branch"
                        % ", ".join("%s %s" % item for item in answer["upstream"].items()))
    if answer["simulate"]["rc"] not in (None, 0):
        problems.append("apt cannot install the plan: " + " ".join(answer["simulate"]["errors"]))
    notes = ["kernel headers found at /lib/modules/%s/build, not installing %s" % (kernel, name)
             for name in answer["skipped_headers"]]
    if answer["checked"]:
        notes += ["%s is not available here: skipped" % name for name in optional_packages if name not in available]
    return {"install": [name for name in packages if name not in answer["skipped_headers"]]
            + [name for name in optional_packages if name in available],
            "problems": problems, "notes": notes}


# ---- dnf ----------------------------------------------------------------------------------------

def module_streams(text):
    """The streams of nvidia-driver in the output of `dnf module list nvidia-driver`."""
    return sorted(set(line.split()[1] for line in text.splitlines()
                      if line.startswith("nvidia-driver ") and len(line.split()) > 1))


def stream_artifacts(text):
    """Package names in the artifacts of `dnf module info` (name-epoch:version-release.arch)."""
    return sorted(set(re.sub(r"-[0-9]+:.*$", "", token) for token in re.findall(r"\S+-[0-9]+:\S+", text)))


def dnf_check(run, repositories, stream, stream_packages, other_packages):
    """dnf's answer for the plan, as a dict (see the RETURN of driver_dnf_check)."""
    names = list(stream_packages) + list(other_packages)
    result = dnf_answer()
    dummy, out, dummy_err = run(["rpm", "-q", "--qf", "%{NAME}\n"] + names)
    installed = set(line.strip() for line in out.splitlines() if "is not installed" not in line)
    # kernel-devel-<release> is asked by name and release: rpm prints only the name.
    result["installed"] = sorted(n for n in names if n in installed or
                                 (n.startswith("kernel-devel-") and "kernel-devel" in installed and
                                  run(["rpm", "-q", n])[0] == 0))
    dummy, out, dummy_err = run(["dnf", "-q", "module", "list", "--enabled", "nvidia-driver"])
    if stream.split(":")[1] in module_streams(out) and set(result["installed"]) >= set(names):
        return result

    result["checked"] = True
    options = ["-q"]
    for repo in repositories:
        options += ["--repofrompath=%s,%s" % (repo["id"], repo["baseurl"]), "--setopt=%s.gpgcheck=0" % repo["id"]]
    rc, out, err = run(["dnf"] + options + ["module", "list", "nvidia-driver"])
    if rc != 0:
        result["errors"].append((out + err).strip())
    result["streams"] = module_streams(out)
    result["stream_found"] = stream.split(":")[1] in result["streams"]
    if result["stream_found"]:
        dummy, out, dummy_err = run(["dnf"] + options + ["module", "info", stream])
        result["stream_artifacts"] = stream_artifacts(out)
    for name in other_packages:
        result["available"][name] = (name in result["installed"]
                                     or run(["dnf"] + options + ["list", "--available", name])[0] == 0)
    for name in stream_packages:
        result["available"][name] = name in result["installed"] or name in result["stream_artifacts"]
    return result


def dnf_verdict(answer, stream, kernel, distribution):
    """What dnf's answer means for the plan: {problems}."""
    unavailable = [name for name, found in answer["available"].items() if not found]
    devel = [name for name in unavailable if name.startswith("kernel-devel-")]
    others = [name for name in unavailable if not name.startswith("kernel-devel-")]
    problems = []
    if answer["checked"] and not answer["stream_found"]:
        problems.append("the CUDA repository has no module stream %s for %s: its nvidia-driver streams are %s; set "
                        "exo_driver_branch to one of them" % (stream, distribution, ", ".join(answer["streams"])))
    for name in devel:
        problems.append("%s is not available: the running kernel %s is not the current one of the distribution, so "
                        "DKMS cannot build the nvidia module. Update the kernel and reboot, or set "
                        "exo_driver_kernel_module: false" % (name, kernel))
    if answer["checked"] and answer["stream_found"] and others:
        problems.append("not available: " + ", ".join(others))
    return {"problems": problems + answer["errors"]}
