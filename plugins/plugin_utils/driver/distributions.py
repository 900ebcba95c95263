# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the NVIDIA driver comes from on each distribution the driver role installs on, as data.

Package names carry placeholders filled per host: %(branch)s the driver branch, %(open)s "-open" for
NVIDIA's open kernel modules (Ubuntu), %(kernel)s the running kernel's release, %(major)s the
distribution's major version. docs/driver.md shows the tables per distribution.

install() reads them for one host that gets the driver: its repositories and packages, built per
family (Debian, Ubuntu, RedHat), and the arguments of the package check module.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.settings import DEFAULTS
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show

# The same path on every distribution the role installs on.
APT_SOURCES_FILE = "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources"

# How apt-based families hold packages (dpkg selections) and how a person moves a package to a version.
APT_HOLD = {
    "mechanism": "dpkg hold",
    "tool_packages": [],
    "pin": "%(package)s=%(version)s-*",
    "align": "apt-get install --allow-change-held-packages %(pins)s",
}

# Debian: the driver comes from Debian's own contrib/non-free archive. Each release packages one
# current branch under plain names (nvidia-driver, libnvidia-ml1, ...) and older datacenter branches
# under nvidia-tesla-<branch>-* names. kernel_open is None where Debian packages no open modules.
DEBIAN = {
    "family": "Debian",
    "distributions": ["Debian"],
    "package_manager": "apt",
    # Debian releases are named by their major version.
    "release_fact": "distribution_major_version",
    "releases": {
        "12": {"codename": "bookworm", "default_branch": "535", "branches": {"535": "current", "470": "tesla"}},
        "13": {"codename": "trixie", "default_branch": "550", "branches": {"550": "current", "535": "tesla"}},
    },
    # compute is what a headless GPU compute host needs (NVML, the CUDA driver library, nvidia-smi,
    # the persistence daemon); full adds nvidia-driver (X, GL, Vulkan).
    "packagings": {
        "current": {
            "kernel": "nvidia-kernel-dkms",
            "kernel_open": "nvidia-open-kernel-dkms",
            "compute": ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"],
            "full": ["nvidia-driver"],
            "library": "libnvidia-ml1",
        },
        "tesla": {
            "kernel": "nvidia-tesla-%(branch)s-kernel-dkms",
            "kernel_open": None,
            "compute": ["nvidia-tesla-%(branch)s-smi", "libnvidia-tesla-%(branch)s-ml1",
                        "libnvidia-tesla-%(branch)s-cuda1", "nvidia-persistenced"],
            "full": ["nvidia-tesla-%(branch)s-driver"],
            "library": "libnvidia-tesla-%(branch)s-ml1",
        },
    },
    "repository": {
        "keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
        "components": ["contrib", "non-free", "non-free-firmware"],
    },
    "mok_key": "/var/lib/dkms/mok.pub",
    "initramfs_command": ["update-initramfs", "-u"],
    "persistenced_service": "nvidia-persistenced",
    # Debian's archive packages no fabric manager (NVSwitch systems need NVIDIA's CUDA repository).
    "fabric_manager": None,
    # The driver's packages as dpkg names them (the role holds every one installed); those of own_version
    # come from other Debian sources (nvidia-persistenced, nvidia-modprobe, nvidia-support, ...) with their
    # own versions, so only the others must carry the driver's one version.
    "driver_packages": {
        "names": r"^(?!nvidia-(cuda|container|cudnn|vaapi)|libnvidia-container)(nvidia-.+|libnvidia-.+|libcuda1|"
                 r"firmware-nvidia-gsp|libnvcuvid1|libnvoptix1|libgl1-nvidia-.+|libglx-nvidia0|libegl-nvidia0|"
                 r"libgles-nvidia.+|xserver-xorg-video-nvidia)$",
        "own_version": r"^(nvidia-(persistenced|modprobe|settings|support|kernel-common|xconfig|installer-cleanup|"
                       r"detect|egl-.+)|libnvidia-egl-.+)$",
    },
    "hold": APT_HOLD,
    # The firmware amdgpu loads (amd.py says when it is missing; the role never installs it): Debian's
    # firmware-amd-graphics, in the non-free-firmware component since Debian 12.
    "amd_firmware": {
        "packages": ["firmware-amd-graphics"],
        "advice": "apt-get install firmware-amd-graphics (Debian's non-free-firmware component: add it to the "
                  "host's apt sources where they lack it), then reboot or reload amdgpu",
    },
}

# The datacenter production branches whose server packages Canonical and NVIDIA's CUDA repository
# carry for the releases below: the branches this role installs there. Other branches are refused
# before any change; the package check then confirms that the archive really carries the one chosen.
PRODUCTION_BRANCHES = ["535", "550", "570", "580"]

# Ubuntu: Canonical's server branches from the restricted component, with the kernel module built by
# DKMS (the default) or Canonical's prebuilt modules for the running kernel, which Canonical signs, so
# they load under Secure Boot without enrolling a key. nvidia-headless-<branch>-server is
# nvidia-headless-no-dkms-<branch>-server plus the DKMS module.
UBUNTU = {
    "family": "Ubuntu",
    "distributions": ["Ubuntu"],
    "package_manager": "apt",
    # Ubuntu releases are named by their full version.
    "release_fact": "distribution_version",
    "releases": {
        "22.04": {"codename": "jammy", "default_branch": "580", "branches": PRODUCTION_BRANCHES},
        "24.04": {"codename": "noble", "default_branch": "580", "branches": PRODUCTION_BRANCHES},
    },
    # Package names per kernel module mode; none is user space only.
    "modes": {
        "dkms": {
            "kernel": ["nvidia-headless-%(branch)s-server%(open)s", "linux-headers-%(kernel)s"],
            "userspace": ["nvidia-utils-%(branch)s-server"],
            "versioned_kernel": "nvidia-dkms-%(branch)s-server%(open)s",
        },
        "prebuilt": {
            "kernel": ["linux-modules-nvidia-%(branch)s-server%(open)s-%(kernel)s"],
            "userspace": ["nvidia-headless-no-dkms-%(branch)s-server%(open)s", "nvidia-utils-%(branch)s-server"],
            "versioned_kernel": "linux-modules-nvidia-%(branch)s-server%(open)s-%(kernel)s",
        },
        "none": {
            "kernel": [],
            "userspace": ["nvidia-headless-no-dkms-%(branch)s-server%(open)s", "nvidia-utils-%(branch)s-server"],
            "versioned_kernel": None,
        },
    },
    "full": ["nvidia-driver-%(branch)s-server%(open)s"],
    "library": "libnvidia-compute-%(branch)s-server",
    "repository": {
        "keyring": "/usr/share/keyrings/ubuntu-archive-keyring.gpg",
        "components": ["restricted", "multiverse"],
    },
    # Canonical serves x86_64 from the archive and every other architecture from the ports mirror.
    "mirrors": {
        "x86_64": {"archive": "http://archive.ubuntu.com/ubuntu", "security": "http://security.ubuntu.com/ubuntu"},
        "other": {"archive": "http://ports.ubuntu.com/ubuntu-ports", "security": "http://ports.ubuntu.com/ubuntu-ports"},
    },
    "mok_key": "/var/lib/shim-signed/mok/MOK.der",
    "initramfs_command": ["update-initramfs", "-u"],
    "persistenced_service": "nvidia-persistenced",
    # Canonical's restricted component, one package per branch; apt takes the version with a wildcard
    # for the Debian revision.
    "fabric_manager": {"package": "nvidia-fabricmanager-%(branch)s", "install": "%(package)s=%(version)s-*"},
    # Canonical's prebuilt modules are versioned by the kernel they are built for.
    "driver_packages": {
        "names": r"^(?!nvidia-(cuda|container|cudnn|prime|settings)|libnvidia-container)(nvidia-.+|libnvidia-.+|"
                 r"linux-(modules|objects|signatures)-nvidia-.+|xserver-xorg-video-nvidia-.+)$",
        "own_version": r"^(linux-(modules|objects|signatures)-nvidia-.+|nvidia-modprobe)$",
    },
    "hold": APT_HOLD,
    # Ubuntu ships amdgpu's firmware in linux-firmware (main).
    "amd_firmware": {
        "packages": ["linux-firmware"],
        "advice": "apt-get install linux-firmware, then reboot or reload amdgpu",
    },
}

# RHEL, Rocky Linux, AlmaLinux and CentOS Stream 9: NVIDIA's CUDA repository, with the branch
# chosen and locked by a module stream of nvidia-driver (<branch>-dkms or <branch>-open), the kernel
# module built by DKMS from EPEL.
REDHAT = {
    "family": "RedHat",
    "distributions": ["RedHat", "Rocky", "AlmaLinux", "CentOS"],
    "package_manager": "dnf",
    "release_fact": "distribution_major_version",
    "releases": {
        "9": {"repo": "rhel9", "default_branch": "580", "branches": PRODUCTION_BRANCHES},
    },
    # Releases the role no longer installs on, and why.
    "dropped": {
        "8": "EL 8's dnf Python bindings exist only for its platform Python 3.6, and the ansible-core releases "
             "this collection supports (2.19 and later) run no module on Python 3.6, so ansible.builtin.dnf cannot "
             "work there with any interpreter",
    },
    # CUDA repository directory per machine architecture.
    "cuda_arches": {"x86_64": "x86_64", "aarch64": "sbsa"},
    # How each distribution gets EPEL (for dkms).
    "epel": {
        "RedHat": "https://dl.fedoraproject.org/pub/epel/epel-release-latest-%(major)s.noarch.rpm",
        "Rocky": "epel-release",
        "AlmaLinux": "epel-release",
        "CentOS": "epel-release",
    },
    "epel_baseurl": "https://dl.fedoraproject.org/pub/epel/%(major)s/Everything/%(architecture)s/",
    "epel_key": "https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-%(major)s",
    # The OpenPGP fingerprints the repository keys are imported with (ansible.builtin.rpm_key refuses a key
    # file that does not hold the key of that fingerprint, before rpm trusts it): fetched over HTTPS, a key is
    # only as good as the server and its certificate, and rpm trusts it for every package it signs.
    # exo_driver_rpm_key_fingerprints overrides them (a key rotated after this table was written).
    "key_fingerprints": {
        # NVIDIA's CUDA repository key, by its file name (exo_driver_cuda_repo_key): NVIDIA lists D42D0685 as
        # the active key of its rhel8 and rhel9 repositories (github.com/NVIDIA/cuda-repo-management README,
        # "GPG keys"). Its fingerprint as NVIDIA's own SIGNATURES.md in that repository shows it, in gpg's and
        # in dnf's output (commit ee8303dff360b1523307eb18c45a6a5b987512ce), and as independent public scripts
        # that check the key before use pin it; rpm reports the same long key id 9CD0A493D42D0685.
        "cuda": {"D42D0685.pub": "610C7B14E068A878070DA4E99CD0A493D42D0685"},
        # EPEL's key per release (RPM-GPG-KEY-EPEL-9): as dnf prints it on import from
        # dl.fedoraproject.org in many public install logs, and as published on Fedora's key page
        # (fedoraproject.org/security, with its key id 8A3872BF3228467C). EL 8 is refused (above).
        "epel": {"9": "FF8AD1344597106ECE813B918A3872BF3228467C"},
    },
    # Package names in the CUDA repository: the DKMS kernel module and the full driver's metapackage
    # per kernel module flavour, and the compute-only user space (CUDA and NVML libraries, nvidia-smi).
    "packagings": {
        "proprietary": {"stream": "%(branch)s-dkms", "kernel": ["kmod-nvidia-latest-dkms"], "full": ["cuda-drivers"]},
        "open": {"stream": "%(branch)s-open", "kernel": ["kmod-nvidia-open-dkms"], "full": ["nvidia-open"]},
    },
    "compute": ["nvidia-driver-cuda", "nvidia-persistenced"],
    "mok_key": "/var/lib/dkms/mok.pub",
    "initramfs_command": ["dracut", "--force"],
    "persistenced_service": "nvidia-persistenced",
    # The CUDA repository's package, one name for every branch; dnf takes name-version.
    "fabric_manager": {"package": "nvidia-fabric-manager", "install": "%(package)s-%(version)s"},
    # Every driver package of NVIDIA's CUDA repository carries the driver's version.
    "driver_packages": {
        "names": r"^(?!nvidia-container|libnvidia-container)(nvidia-.+|kmod-nvidia-.+|libnvidia-.+)$",
        "own_version": None,
    },
    # The module stream locks the branch; the versionlock plugin of dnf (python3-dnf-plugin-versionlock,
    # in BaseOS) locks the version inside it.
    "hold": {
        "mechanism": "dnf versionlock",
        "tool_packages": ["python3-dnf-plugin-versionlock"],
        "pin": "%(package)s-%(version)s",
        "align": "dnf versionlock delete %(names)s && dnf install %(pins)s && dnf versionlock add %(names)s",
    },
    # amdgpu's firmware: linux-firmware, or its amd-gpu-firmware subpackage where the release splits it
    # (Fedora does); either installed counts, since which of them holds it depends on the point release.
    "amd_firmware": {
        "packages": ["amd-gpu-firmware", "linux-firmware"],
        "advice": "dnf install amd-gpu-firmware (linux-firmware on a release without that package), then "
                  "reboot or reload amdgpu",
    },
}

FAMILIES = (DEBIAN, UBUNTU, REDHAT)
FABRIC_MANAGER_DISTRIBUTIONS = "Ubuntu 22.04 and 24.04, RHEL, Rocky Linux, AlmaLinux and CentOS Stream 9"
SUPPORTED = ("Debian 12 and 13, Ubuntu 22.04 and 24.04, RHEL, Rocky Linux, AlmaLinux and CentOS Stream 9")


def family(distribution):
    """The table for a distribution (ansible_facts.distribution), or None where the role does not install."""
    return next((table for table in FAMILIES if distribution in table["distributions"]), None)


def package_names(distribution):
    """The packages of a host the planners read, as one regular expression: the driver's (whose fabric manager
    is one of them) and the firmware amdgpu loads; None where the role knows no family, and reads none."""
    table = family(distribution)
    if table is None:
        return None
    return "|".join(["(?:%s)" % table["driver_packages"]["names"]]
                    + ["^%s$" % re.escape(name) for name in table["amd_firmware"]["packages"]])


# ---- a host's install, from the tables -----------------------------------------------------------

def _format(names, templates):
    return [template % names for template in templates]


def _apt_repository(table, codename, mirror, security_mirror):
    repository = {"kind": "apt", "file": APT_SOURCES_FILE}
    repository.update(table["repository"])
    repository["sources"] = [{"uri": mirror, "suite": codename}, {"uri": mirror, "suite": codename + "-updates"},
                             {"uri": security_mirror, "suite": codename + "-security"}]
    return repository


def _debian(table, release, branch, settings, kernel_module, facts, problem):
    major = str(facts["distribution_major_version"])
    packaging = table["packagings"].get(release["branches"].get(branch))
    names = {"branch": branch}
    if packaging is None:
        problem("exo_driver_branch", "branch %s is not packaged for Debian %s: its branches are %s; set "
                "exo_driver_branch to one of them" % (branch, major, ", ".join(release["branches"])))
        packaging = {"kernel": None, "kernel_open": None, "compute": [], "full": [], "library": None}
    kernel_name = packaging["kernel_open" if settings["exo_driver_open_kernel_modules"] else "kernel"]
    if packaging["library"] and kernel_module and not kernel_name:
        problem("exo_driver_open_kernel_modules", "Debian %s packages no open kernel modules for branch %s; set "
                "exo_driver_open_kernel_modules: false" % (major, branch))
    userspace = _format(names, packaging["compute"] + (packaging["full"] if settings["exo_driver_flavor"] == "full" else []))
    kernel_packages = (([kernel_name % names] if kernel_name else []) + ["dkms", "linux-headers-" + facts["kernel"]]
                       if kernel_module else [])
    # The kernel module and the NVML library must come in the same upstream version.
    version_match = (_format(names, ([kernel_name] if kernel_module and kernel_name else []) + [packaging["library"]])
                     if packaging["library"] else [])
    return {
        "distribution": "Debian %s (%s)" % (major, release["codename"]),
        "repositories": [_apt_repository(table, release["codename"], settings["exo_driver_debian_mirror"],
                                         settings["exo_driver_debian_security_mirror"])],
        "kernel_module": "dkms" if kernel_module else "none",
        "kernel_packages": kernel_packages,
        "userspace": userspace,
        "optional_packages": ["python3-pynvml"] if settings["exo_driver_install_nvml_python"] else [],
        "version_match": version_match,
        "hold": ([name for name in kernel_packages if not name.startswith("linux-headers-") and name != "dkms"]
                 + userspace) if settings["exo_driver_hold"] else [],
        "module_stream": None,
    }


def _ubuntu(table, release, branch, settings, kernel_module, facts, problem):
    mode = settings["exo_driver_ubuntu_modules"] if kernel_module else "none"
    packages = table["modes"][mode]
    names = {"branch": branch, "open": "-open" if settings["exo_driver_open_kernel_modules"] else "",
             "kernel": facts["kernel"]}
    kernel_packages = _format(names, packages["kernel"])
    userspace = _format(names, packages["userspace"] + (table["full"] if settings["exo_driver_flavor"] == "full" else []))
    mirrors = table["mirrors"]["x86_64" if facts.get("architecture", "x86_64") == "x86_64" else "other"]
    return {
        "distribution": "Ubuntu %s (%s)" % (facts["distribution_version"], release["codename"]),
        "repositories": [_apt_repository(table, release["codename"], settings["exo_driver_ubuntu_mirror"] or mirrors["archive"],
                                         settings["exo_driver_ubuntu_security_mirror"] or mirrors["security"])],
        "kernel_module": mode,
        "kernel_packages": kernel_packages,
        "userspace": userspace,
        "optional_packages": ["python3-pynvml"] if settings["exo_driver_install_nvml_python"] else [],
        "version_match": _format(names, ([packages["versioned_kernel"]] if kernel_module else []) + [table["library"]]),
        "hold": ([name for name in kernel_packages if not name.startswith("linux-headers-")] + userspace
                 if settings["exo_driver_hold"] else []),
        "module_stream": None,
    }


def _redhat(table, release, branch, settings, kernel_module, facts, problem):
    architecture = facts.get("architecture", "x86_64")
    if architecture not in table["cuda_arches"]:
        problem(None, "NVIDIA publishes no CUDA repository for architecture %s (only for %s); install the driver "
                "yourself" % (architecture, ", ".join(sorted(table["cuda_arches"]))))
    packaging = table["packagings"]["open" if settings["exo_driver_open_kernel_modules"] else "proprietary"]
    names = {"branch": branch, "major": str(facts["distribution_major_version"])}
    cuda_url = "%s/%s/%s" % (settings["exo_driver_cuda_repo_base"], release["repo"],
                             table["cuda_arches"].get(architecture, architecture))
    kernel_packages = packaging["kernel"] + ["kernel-devel-" + facts["kernel"]] if kernel_module else []
    fingerprints = _key_fingerprints(table, settings, names["major"], problem)
    return {
        "distribution": "%s %s" % (facts["distribution"], names["major"]),
        "repositories": [
            {"kind": "epel", "package": table["epel"].get(facts["distribution"], "epel-release") % names,
             "needed": kernel_module, "key": table["epel_key"] % names, "fingerprint": fingerprints["epel"]},
            {"kind": "yum", "name": "cuda-%s-%s" % (release["repo"], architecture), "baseurl": cuda_url,
             "gpgkey": "%s/%s" % (cuda_url, settings["exo_driver_cuda_repo_key"]), "fingerprint": fingerprints["cuda"]},
        ],
        "kernel_module": "dkms" if kernel_module else "none",
        "kernel_packages": kernel_packages,
        "userspace": table["compute"] + (packaging["full"] if settings["exo_driver_flavor"] == "full" else []),
        "optional_packages": [],
        "version_match": [],
        # The enabled module stream is the lock: dnf never leaves it for another branch.
        "hold": [],
        "module_stream": "nvidia-driver:" + packaging["stream"] % names,
    }


def _key_fingerprints(table, settings, major, problem):
    """The fingerprint each repository key is imported with: exo_driver_rpm_key_fingerprints, else the table's
    (REDHAT["key_fingerprints"]); a key the table does not know needs the variable."""
    known = table["key_fingerprints"]
    given = settings["exo_driver_rpm_key_fingerprints"]
    found = {"cuda": given.get("cuda") or known["cuda"].get(settings["exo_driver_cuda_repo_key"]),
             "epel": given.get("epel") or known["epel"][major]}
    if not found["cuda"]:
        problem("exo_driver_cuda_repo_key", "the role knows the fingerprint of %s only, and imports no key it cannot "
                "check; set exo_driver_rpm_key_fingerprints.cuda to the fingerprint NVIDIA publishes for this key"
                % ", ".join(sorted(known["cuda"])))
    return found


BUILDERS = {"Debian": _debian, "Ubuntu": _ubuntu, "RedHat": _redhat}


def _package_check(table, planned, settings, facts):
    """The arguments of the package check module (driver_apt_check, driver_dnf_check) for this install."""
    required = planned["kernel_packages"] + planned["packages"]
    if table["package_manager"] == "apt":
        return {"repositories": planned["repositories"], "packages": required,
                "optional_packages": planned["optional_packages"], "version_match": planned["version_match"],
                "kernel": facts["kernel"], "distribution": planned["distribution"], "branch": planned["branch"]}
    epel, cuda = planned["repositories"]
    repositories = [{"id": cuda["name"], "baseurl": cuda["baseurl"]}]
    if epel["needed"]:
        names = {"major": facts["distribution_major_version"], "architecture": facts.get("architecture", "x86_64")}
        repositories.append({"id": "gpufleet-exo-epel", "baseurl": table["epel_baseurl"] % names})
    extra = settings["exo_driver_extra_packages"] + table["hold"]["tool_packages"]
    devel = [name for name in planned["kernel_packages"] if name.startswith("kernel-devel-")]
    return {"repositories": repositories, "stream": planned["module_stream"],
            "stream_packages": [name for name in planned["packages"] if name not in extra]
            + [name for name in planned["kernel_packages"] if name not in devel],
            "other_packages": devel + extra + (["dkms"] if planned["kernel_module"] == "dkms" else []),
            "kernel": facts["kernel"], "distribution": planned["distribution"]}


def install(host, facts, settings, raw, decided, kernel_module, problems):
    """(install, package check arguments) for a host that gets the driver, or (None, None) after a problem."""
    why = "%s needs the NVIDIA driver (%s)" % (host, decided["reason"])
    table = family(facts.get("distribution"))
    if table is None:
        problems.append("host %s but runs %s %s, which this role does not install on. Supported: %s. Install the "
                        "driver yourself; the host will then read as healthy."
                        % (why, facts.get("distribution"), facts.get("distribution_version"), SUPPORTED))
        return None, None
    release = table["releases"].get(str(facts.get(table["release_fact"])))
    dropped = table.get("dropped", {}).get(str(facts.get(table["release_fact"])))
    if dropped:
        problems.append("host %s but runs %s %s, which this role no longer installs on: %s. Install the driver "
                        "yourself; the host will then read as healthy." % (
                            why, facts["distribution"], facts.get(table["release_fact"]), dropped))
        return None, None
    if release is None:
        problems.append("host %s but runs %s %s; the releases this role knows for %s are %s. Install the driver "
                        "yourself; the host will then read as healthy." % (
                            why, facts["distribution"], facts.get(table["release_fact"]), facts["distribution"],
                            ", ".join(table["releases"])))
        return None, None

    def problem(name, text):
        given = ("%s is %s: " % (name, show(raw.get(name, DEFAULTS.get(name))))) if name else ""
        problems.append("host %s: %s%s" % (host, given, text))

    branch = settings["exo_driver_branch"] or release["default_branch"]
    if table["family"] != "Debian" and branch not in release["branches"]:
        problem("exo_driver_branch", "branch %s is not one this role installs on %s %s: its branches are %s; set "
                "exo_driver_branch to one of them" % (branch, facts["distribution"],
                                                      facts.get(table["release_fact"]), ", ".join(release["branches"])))
    built = BUILDERS[table["family"]](table, release, branch, settings, kernel_module, facts, problem)
    if settings["exo_driver_flavor"] == "full" and not kernel_module:
        problem("exo_driver_flavor", "exo_driver_flavor full needs the kernel module (the full driver depends on it), "
                "which this host does not get (%s); use flavor compute for user space only"
                % _no_kernel_module_why(settings, decided))
    planned = {
        "distribution": built["distribution"],
        "branch": branch,
        "package_manager": table["package_manager"],
        "repositories": built["repositories"],
        "kernel_module": built["kernel_module"],
        "kernel_packages": built["kernel_packages"],
        "packages": built["userspace"] + settings["exo_driver_extra_packages"]
        + (table["hold"]["tool_packages"] if settings["exo_driver_hold"] else []),
        "optional_packages": built["optional_packages"],
        "version_match": built["version_match"],
        "hold": built["hold"],
        # How the role holds them after the install (None: exo_driver_hold is false), and how apt or dnf installs
        # them: an upgrade moves the packages already there too.
        "hold_mechanism": table["hold"]["mechanism"] if settings["exo_driver_hold"] else None,
        "install_state": "latest" if decided["action"] == "upgrade" else "present",
        "family": table["distributions"][0],
        "module_stream": built["module_stream"],
        "persistenced_service": table["persistenced_service"],
        "mok_key": table["mok_key"],
        "initramfs_command": table["initramfs_command"],
        "nouveau_blacklist": bool(settings["exo_driver_blacklist_nouveau"] and kernel_module and decided["nouveau"]),
        "kernel_module_why": None if kernel_module else _no_kernel_module_why(settings, decided),
    }
    return planned, _package_check(table, planned, settings, facts)


def _no_kernel_module_why(settings, decided):
    if settings["exo_driver_kernel_module"] == "auto":
        return "the host is a %s container that shares the kernel of the machine it runs on" % decided["container"]
    return "exo_driver_kernel_module is false"
