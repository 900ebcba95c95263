# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run of the driver role found, worded from what its tasks registered: file systems short of
space, Secure Boot, the driver's packages at one version and held, the module after modprobe, and NVML
after the change (findings(), the filter driver_outcome).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
from ansible_collections.gpufleet.exo.plugins.module_utils._driver_packages import module_streams

# Where packages and modules go: each must have exo_driver_min_free_mib free.
SPACE_PATHS = ("/usr", "/var", "/tmp")
MIB = 1024 * 1024
# Why the kernel module is not loaded after the role ran, by cause (see verify()).
UNLOADED_WHY = {
    "container": "the nvidia kernel module is not loaded because this host is a %(container)s container: it shares "
                 "the kernel (%(kernel)s) of the machine it runs on, so the module must be installed and loaded on "
                 "that machine and its /dev/nvidia* devices passed into the container. User space is installed here.",
    "userspace_only": "the nvidia kernel module is not loaded: exo_driver_kernel_module is false, so only user space "
                      "was installed. Install the module for kernel %(kernel)s by other means.",
    "reboot_pending": "the nvidia kernel module is not loaded yet: reboot pending (%(reboot_reason)s)",
    "module_missing": "the nvidia kernel module is not loaded and modprobe cannot find it for kernel %(kernel)s: DKMS "
                      "did not build it (see `dkms status` and /var/lib/dkms/nvidia*/*/build/make.log).",
}


def space_problems(mounts, min_free_mib, paths=SPACE_PATHS):
    """A problem per file system holding one of paths with less than min_free_mib free (ansible_facts.mounts)."""
    problems, seen = [], set()
    for path in paths:
        holding = [m for m in mounts or [] if path == m.get("mount") or path.startswith(m.get("mount", "").rstrip("/") + "/")]
        if not holding:
            continue
        mount = max(holding, key=lambda m: len(m["mount"]))
        free = int(mount.get("size_available") or 0) // MIB
        if mount["mount"] not in seen and free < min_free_mib:
            problems.append("%s has %d MiB free; the driver needs %d MiB (exo_driver_min_free_mib): free some space "
                            "first" % (mount["mount"], free, min_free_mib))
        seen.add(mount["mount"])
    return problems


def secure_boot_advice(install, distribution):
    """What to do when Secure Boot would refuse the DKMS-built module."""
    return ("Secure Boot is on and the key that signs DKMS modules (%s) is not enrolled, so the kernel would refuse "
            "the nvidia module. Either enroll it: after the install run `mokutil --import %s`, reboot and confirm the "
            "enrollment at the console; or turn Secure Boot off in the firmware%s. exo_driver_secure_boot: continue "
            "installs anyway." % (install["mok_key"], install["mok_key"],
                                  "; or use Canonical's signed modules (exo_driver_ubuntu_modules: prebuilt)"
                                  if distribution == "Ubuntu" else ""))


def secure_boot_on(sb_state, efivar):
    """Whether Secure Boot is on, from `mokutil --sb-state` and the EFI variable's byte (od's output)."""
    return "SecureBoot enabled" in (sb_state or "") or (efivar or "").strip() == "1"


# ---- the driver's packages: one version, held ---------------------------------------------------

def upstream_version(entry):
    """The driver's version of a package as ansible_facts.packages gives it: no epoch, no packaging revision.

    dpkg's version carries the revision ("535.261.03-1~deb12u1"), rpm's has it apart (release) and the epoch
    apart too.
    """
    version = str(entry.get("version") or "").split(":", 1)[-1]
    if entry.get("release") is None and "-" in version:
        version = version.rsplit("-", 1)[0]
    return version


def _version_key(version):
    return [int(part) if part.isdigit() else part for part in re.split(r"[.+~]", version)]


def driver_packages(packages, table):
    """The driver's packages installed, by name, with the version the facts give ({} without package facts)."""
    names = re.compile(table["driver_packages"]["names"])
    return dict((name, entries[0]) for name, entries in sorted((packages or {}).items())
                if names.match(name) and entries)


def driver_versions(packages, table):
    """Whether the driver's packages installed (ansible_facts.packages, from ansible.builtin.package_facts) carry one
    version, and what to do when they do not.

    The user-space libraries, the kernel module package, the persistence daemon and the fabric manager come from
    one upstream release; a host where they differ (an upgrade of some of them, a fabric manager from elsewhere)
    fails with "Driver/library version mismatch" or CUDA error 802 until they agree. None without package facts.
    """
    if packages is None:
        return None
    installed = driver_packages(packages, table)
    own = re.compile(table["driver_packages"]["own_version"] or "^$")
    by_version = {}
    for name, entry in installed.items():
        if not own.match(name):
            by_version.setdefault(upstream_version(entry), []).append(name)
    found = {"installed": dict((name, _shown(entry)) for name, entry in installed.items()),
             "versions": by_version, "mixed": len(by_version) > 1, "advice": None}
    if found["mixed"]:
        newest = max(by_version, key=_version_key)
        behind = sorted(name for version, names in by_version.items() if version != newest for name in names)
        hold = table["hold"]
        pins = " ".join(hold["pin"] % {"package": name, "version": newest} for name in behind)
        found["advice"] = (
            "the driver's packages carry %d versions: %s. NVML and CUDA fail (Driver/library version mismatch, CUDA "
            "error 802 with a fabric manager) until they agree. Move them to one version, the newest: `%s`, then "
            "reboot so that the kernel module loaded is that version too; or run this role with exo_driver_branch "
            "and exo_driver_allow_upgrade: true to move them to its branch." % (
                len(by_version), "; ".join("%s (%s)" % (version, ", ".join(
                    "%s %s" % (name, found["installed"][name]) for name in by_version[version]))
                    for version in sorted(by_version, key=_version_key)),
                hold["align"] % {"pins": pins, "names": " ".join(behind)}))
    return found


def _shown(entry):
    # As the package manager shows it: dpkg's version whole, rpm's version-release.
    return entry["version"] if entry.get("release") is None else "%s-%s" % (entry["version"], entry["release"])


def to_hold(course, packages):
    """The packages to hold after an install: those the course's install named and every driver package found
    installed."""
    install = course.get("install") or {}
    if not install.get("hold_mechanism"):
        return []
    table = distributions.family(install["family"])
    named = install["hold"]
    return named + [name for name in driver_packages(packages, table) if name not in named]


def held_to_release(selections, course):
    """The held driver packages (dpkg-query lines "name want"): an upgrade releases them all, moves them together
    and holds them again."""
    names = re.compile(distributions.family(course["install"]["family"])["driver_packages"]["names"])
    return [line.split()[0] for line in selections or []
            if len(line.split()) == 2 and line.split()[1] == "hold" and names.match(line.split()[0])]


VERSIONLOCK_RE = re.compile(r"^(?P<name>.+?)-(?:[0-9]+:)?[^-:]+-[^-]+$")


def versionlocked(lines):
    """The package names of `dnf versionlock list` ("nvidia-driver-cuda-3:580.95.05-1.el9.*")."""
    return [match.group("name") for match in (VERSIONLOCK_RE.match(line.strip().rstrip("*").rstrip("."))
                                              for line in lines or []) if match]


def stream_enabled(module_list, stream):
    """Whether `dnf module list --enabled nvidia-driver` shows the install's stream (nvidia-driver:<stream>)."""
    return stream.split(":", 1)[1] in module_streams(module_list or "")


def after_modprobe(stderr, mok_key):
    """(reboot_required, reboot_reason, module_missing) when `modprobe nvidia` failed with stderr."""
    stderr = stderr or ""
    refused = "Key was rejected" in stderr
    absent = "not found" in stderr
    if refused:
        reason = ("Secure Boot refused the nvidia module: enroll %s with mokutil --import and confirm it at the console "
                  "during the reboot" % mok_key)
    else:
        reason = "modprobe nvidia failed (%s); it loads at the next boot" % stderr.strip()
    return {"reboot_required": refused or not absent, "reboot_reason": reason, "module_missing": absent}


def verify(course, before, caps, module_loaded, reboot_required, reboot_reason, module_missing, kernel):
    """exo_driver_result: NVML before and after the change, and why the driver is not up when it is not."""
    nvml = caps["nvml"]
    container = course["decision"]["container"]
    if nvml["status"] == "ok":
        cause = "ok"
    elif reboot_required:
        cause = "reboot_pending"
    elif module_loaded:
        cause = "unexplained"
    elif container and not course["kernel_module"]:
        cause = "container"
    elif not course["kernel_module"]:
        cause = "userspace_only"
    elif module_missing:
        cause = "module_missing"
    else:
        cause = "unexplained"
    if cause == "ok":
        explanation = "driver %s loaded; NVML sees %d GPU(s)" % (nvml.get("driver_version"), len(caps["gpus"]))
    else:
        explanation = "NVML answers %s (%s)" % (nvml["status"], nvml.get("message") or "no message")
        if cause in UNLOADED_WHY:
            explanation += ": " + UNLOADED_WHY[cause] % {"container": container, "kernel": kernel,
                                                         "reboot_reason": reboot_reason}
    return {"nvml_before": before["status"], "nvml_after": nvml["status"], "nvml_message": nvml.get("message"),
            "driver_version": nvml.get("driver_version"), "gpus": len(caps["gpus"]), "cause": cause,
            "explanation": explanation}


def findings(course, selections=None, module_list=None, sb_state=None, sb_efivar=None, modprobe=None, verified=None,
             packages=None, versionlock=None):
    """What the install steps found, from what their tasks registered; each part only when its input is given.

    course: the host's course as plan.course() (the filter driver_plan) returned it.

    packages (ansible_facts.packages after the install) gives hold (the packages to hold), versions (whether they
    carry one version) and, with versionlock (the lines of `dnf versionlock list`), lock (those dnf does not lock
    yet) and unlock (the driver packages it locks, released before an upgrade).

    verified: {"before", "caps", "module_loaded", "reboot_required", "reboot_reason", "module_missing", "kernel"}.
    """
    install = course.get("install") or {}
    found = {"release": None, "stream_enabled": None, "secure_boot": secure_boot_on(sb_state, sb_efivar),
             "modprobe": None, "result": None, "hold": None, "lock": None, "unlock": None, "versions": None}
    if selections is not None:
        found["release"] = held_to_release(selections, course)
    if packages is not None:
        hold = to_hold(course, packages)
        locked = versionlocked(versionlock) if versionlock is not None else []
        table = distributions.family(install["family"])
        found.update(hold=hold, lock=[name for name in hold if name not in locked],
                     unlock=[name for name in locked if re.match(table["driver_packages"]["names"], name)],
                     versions=driver_versions(packages, table))
    if module_list is not None:
        found["stream_enabled"] = stream_enabled(module_list, install["module_stream"])
    if modprobe is not None:
        found["modprobe"] = after_modprobe(modprobe, install.get("mok_key"))
    if verified is not None:
        found["result"] = verify(course, **verified)
    return found
