# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the NVIDIA driver comes from on each distribution the driver role installs on, as data.

Package names carry placeholders filled per host: %(branch)s the driver branch, %(open)s "-open" for
NVIDIA's open kernel modules (Ubuntu), %(kernel)s the running kernel's release, %(major)s the
distribution's major version. plugins/plugin_utils/driver/plan.py reads these tables; docs/driver.md
shows them per distribution.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

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
             "this collection supports (2.18 and later) run no module on Python 3.6, so ansible.builtin.dnf cannot "
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
}

FAMILIES = (DEBIAN, UBUNTU, REDHAT)
FABRIC_MANAGER_DISTRIBUTIONS = "Ubuntu 22.04 and 24.04, RHEL, Rocky Linux, AlmaLinux and CentOS Stream 9"
SUPPORTED = ("Debian 12 and 13, Ubuntu 22.04 and 24.04, RHEL, Rocky Linux, AlmaLinux and CentOS Stream 9")


def family(distribution):
    """The table for a distribution (ansible_facts.distribution), or None where the role does not install."""
    return next((table for table in FAMILIES if distribution in table["distributions"]), None)
