# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The driver role's planner, called directly on the facts the probe really reports.

The device facts are those gpufleet.exo.device_facts reports on simulated hosts (tests/simulated/hosts.py
DRIVER_HOSTS: a simulated /sys and the simulated libnvidia-ml under the real nvidia-ml-py, or no
libnvidia-ml at all), as recorded in tests/fixtures/simulated (the fixture probed;
tests/integration/modules/test_simulated_facts.py keeps the recordings true), and from the real H100 of
tests/fixtures/real-h100 (what the real host reported). The distribution facts are those
ansible.builtin.setup reports on each distribution (stand-ins: this machine is one Debian 12 host). The
settings are the role's variables as a user gives them, strings from -e included.
"""

import copy
import json
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.driver_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import distributions
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import cases, outcome
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import plan as driver_plan
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.settings import DEFAULTS, FINGERPRINT_RE, PROBE_OPTIONS
from ansible_collections.gpufleet.exo.plugins.modules import device_facts
from tests.helpers import REAL_H100 as FIXTURES, REPO
from tests.simulated.hosts import GPU0, GPU1

REAL_H100 = os.path.join(FIXTURES, "device_facts.json")
ROLE = os.path.join(REPO, "roles", "driver")

# What ansible.builtin.setup reports (gather_subset min, virtual) on each distribution.
METAL = {"virtualization_type": "", "virtualization_role": ""}
DEBIAN_12 = dict(METAL, distribution="Debian", distribution_version="12.7", distribution_major_version="12",
                 kernel="6.1.0-25-amd64", architecture="x86_64")
DEBIAN_12_DOCKER = dict(DEBIAN_12, virtualization_type="docker", virtualization_role="guest")
DEBIAN_13 = dict(DEBIAN_12, distribution_version="13.0", distribution_major_version="13", kernel="6.12.38+deb13-amd64")
DEBIAN_11 = dict(DEBIAN_12, distribution_version="11.11", distribution_major_version="11", kernel="5.10.0-30-amd64")
UBUNTU_2204 = dict(METAL, distribution="Ubuntu", distribution_version="22.04", distribution_major_version="22",
                   kernel="5.15.0-119-generic", architecture="x86_64")
UBUNTU_2404_ARM = dict(UBUNTU_2204, distribution_version="24.04", distribution_major_version="24",
                       kernel="6.8.0-45-generic", architecture="aarch64")
ROCKY_9 = dict(METAL, distribution="Rocky", distribution_version="9.4", distribution_major_version="9",
               kernel="5.14.0-427.13.1.el9_4.x86_64", architecture="x86_64")
RHEL_9_ARM = dict(METAL, distribution="RedHat", distribution_version="9.6", distribution_major_version="9",
                  kernel="5.14.0-570.12.1.el9_6.aarch64", architecture="aarch64")
RHEL_8 = dict(RHEL_9_ARM, distribution_version="8.10", distribution_major_version="8", kernel="4.18.0-553.el8_10.x86_64",
              architecture="x86_64")
ARCH = dict(METAL, distribution="Archlinux", distribution_version="rolling", distribution_major_version="rolling",
            kernel="6.10.1-arch1-1", architecture="x86_64")

with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
    ROLE_DEFAULTS = yaml.safe_load(handle)


def host_facts(caps, distribution=None):
    return dict(distribution or DEBIAN_12, device_capabilities=caps)


def plan(caps, distribution=None, host="h", connection="ssh", **settings):
    """The host's course over the role's defaults as Ansible hands them over, with settings as given; a
    distribution's packages (test_amd's tables) go to the planner as the role's package_versions reads them."""
    facts = host_facts(caps, distribution)
    return driver_plan.course(facts, dict(ROLE_DEFAULTS, **settings), host, connection, packages=facts.pop("packages", None))


def ok(caps, distribution=None, **settings):
    result = plan(caps, distribution, **settings)
    assert result["errors"] == [], result["errors"]
    return result


def refused(caps, *parts, **settings):
    """The one message the planner refuses with; it names the host and holds every part given."""
    distribution = settings.pop("distribution", None)
    result = plan(caps, distribution, **settings)
    assert len(result["errors"]) == 1, result["errors"]
    for part in ("host h",) + parts:
        assert part in result["errors"][0], result["errors"][0]
    return result["errors"][0]


def real_h100():
    with open(REAL_H100) as handle:
        return json.load(handle)


# ---- the decision table -------------------------------------------------------------------------

@pytest.mark.parametrize("name, case, action, nvml_status", [
    ("no_gpu", "no_hardware", "none", "library_not_found"),
    ("amd_only", "no_hardware", "none", "library_not_found"),
    ("no_driver", "library_not_found", "install", "library_not_found"),
    ("not_loaded", "driver_not_loaded", "install", "driver_not_loaded"),
    ("nouveau", "nouveau", "install", "library_not_found"),
    ("mismatch", "version_mismatch", "reboot", "version_mismatch"),
    ("healthy", "ok", "none", "ok"),
    ("passthrough", "passthrough", "leave", "library_not_found"),
    ("half_passthrough", "library_not_found", "install", "library_not_found"),
    ("gpu_lost", "unhealthy", "report", "gpu_lost"),
    ("bound_no_pynvml", "bound_unchecked", "none", "not_installed"),
    ("unbound_no_pynvml", "unbound", "install", "not_installed"),
])
def test_decision_table_over_probed_hosts(probed, name, case, action, nvml_status):
    assert probed[name]["nvml"]["status"] == nvml_status  # what the probe really said
    result = ok(probed[name])
    assert (result["decision"]["case"], result["decision"]["action"]) == (case, action)
    assert result["decision"]["reason"] == cases.CASES[case][1]
    # only hosts that need a driver get a plan
    assert (result["install"] is not None) == (action in ("install", "upgrade"))


def test_install_follows_the_probes_own_verdict(probed):
    """Where NVML neither works nor waits for a reboot, the probe's driver_needed decides."""
    for name in ("no_driver", "not_loaded", "nouveau", "half_passthrough", "gpu_lost", "bound_no_pynvml",
                 "unbound_no_pynvml"):
        facts = probed[name]
        assert (ok(facts)["decision"]["action"] == "install") == facts["driver_needed"], name
    turned = dict(probed["unbound_no_pynvml"], driver_needed=False)
    assert ok(turned)["decision"]["case"] == "bound_unchecked"


def test_real_h100_is_left_alone_or_upgraded_when_asked():
    caps = real_h100()
    assert ok(caps)["decision"]["case"] == "ok"
    assert ok(caps, exo_driver_branch=580)["decision"]["case"] == "ok"
    other = ok(caps, exo_driver_branch="535")
    assert (other["decision"]["case"], other["install"]) == ("branch_differs", None)
    upgrade = ok(caps, UBUNTU_2204, exo_driver_branch="570", exo_driver_allow_upgrade="yes")
    assert upgrade["decision"]["action"] == "upgrade"
    assert upgrade["decision"]["gpus"] == ["0000:00:06.0"] and upgrade["decision"]["driver_version"] == "580.159.04"
    assert upgrade["install"]["kernel_packages"] == ["nvidia-headless-570-server", "linux-headers-5.15.0-119-generic"]


def test_passed_through_gpus_are_listed_and_left_alone(probed):
    assert ok(probed["passthrough"])["decision"]["passthrough"] == [GPU0, GPU1]
    half = ok(probed["half_passthrough"])["decision"]
    assert (half["passthrough"], half["gpus"], half["drivers"]) == ([GPU0], [GPU1], ["none"])


def test_pending_reboot_is_listed_not_reinstalled(probed):
    result = ok(probed["mismatch"])
    assert result["reboot_required"] is True and "version mismatch" in result["reboot_reason"]
    assert result["install"] is None
    assert ok(probed["no_driver"])["reboot_required"] is False


def test_nouveau_is_blacklisted_unless_told_not_to(probed):
    result = ok(probed["nouveau"])
    assert result["decision"]["nouveau"] == [GPU0]
    assert result["install"]["nouveau_blacklist"] is True and result["notes"] == []
    kept = ok(probed["nouveau"], exo_driver_blacklist_nouveau="no")
    assert kept["install"]["nouveau_blacklist"] is False
    assert kept["notes"] == ["nouveau holds %s and exo_driver_blacklist_nouveau is false: the nvidia module cannot "
                             "take it" % GPU0]
    assert ok(probed["no_driver"])["install"]["nouveau_blacklist"] is False


# ---- plans per distribution ---------------------------------------------------------------------

def test_debian12_container_gets_user_space_only(probed):
    result = ok(probed["no_driver"], DEBIAN_12_DOCKER)
    install = result["install"]
    assert result["kernel_module"] is False and result["decision"]["container"] == "docker"
    assert install["distribution"] == "Debian 12 (bookworm)" and install["branch"] == "535"
    assert install["package_manager"] == "apt"
    assert install["repositories"] == [{
        "kind": "apt", "file": "/etc/apt/sources.list.d/gpufleet-exo-nvidia.sources",
        "keyring": "/usr/share/keyrings/debian-archive-keyring.gpg",
        "components": ["contrib", "non-free", "non-free-firmware"],
        "sources": [{"uri": "http://deb.debian.org/debian", "suite": "bookworm"},
                    {"uri": "http://deb.debian.org/debian", "suite": "bookworm-updates"},
                    {"uri": "http://deb.debian.org/debian-security", "suite": "bookworm-security"}]}]
    assert (install["kernel_module"], install["kernel_packages"]) == ("none", [])
    assert install["kernel_module_why"] == "the host is a docker container that shares the kernel of the machine it runs on"
    assert install["packages"] == ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced"]
    assert install["hold"] == install["packages"] and install["version_match"] == ["libnvidia-ml1"]
    assert install["optional_packages"] == ["python3-pynvml"]
    assert result["package_check"] == {
        "repositories": install["repositories"], "packages": install["packages"], "optional_packages": ["python3-pynvml"],
        "version_match": ["libnvidia-ml1"], "kernel": "6.1.0-25-amd64", "distribution": "Debian 12 (bookworm)",
        "branch": "535"}


def test_debian12_metal_builds_the_module_with_dkms(probed):
    install = ok(probed["no_driver"], DEBIAN_12, exo_driver_flavor="full")["install"]
    assert install["kernel_packages"] == ["nvidia-kernel-dkms", "dkms", "linux-headers-6.1.0-25-amd64"]
    assert install["packages"][-1] == "nvidia-driver"
    assert install["hold"] == ["nvidia-kernel-dkms"] + install["packages"]
    assert install["version_match"] == ["nvidia-kernel-dkms", "libnvidia-ml1"]


def test_debian13_and_the_tesla_branch_of_debian12(probed):
    install = ok(probed["no_driver"], DEBIAN_13)["install"]
    assert (install["distribution"], install["branch"]) == ("Debian 13 (trixie)", "550")
    assert install["kernel_packages"] == ["nvidia-kernel-dkms", "dkms", "linux-headers-6.12.38+deb13-amd64"]
    tesla = ok(probed["no_driver"], DEBIAN_12, exo_driver_branch=470)["install"]
    assert tesla["kernel_packages"] == ["nvidia-tesla-470-kernel-dkms", "dkms", "linux-headers-6.1.0-25-amd64"]
    assert tesla["packages"] == ["nvidia-tesla-470-smi", "libnvidia-tesla-470-ml1", "libnvidia-tesla-470-cuda1",
                                 "nvidia-persistenced"]
    assert tesla["version_match"] == ["nvidia-tesla-470-kernel-dkms", "libnvidia-tesla-470-ml1"]


def test_ubuntu_plans_and_mirrors(probed):
    install = ok(probed["no_driver"], UBUNTU_2204)["install"]
    assert (install["distribution"], install["branch"], install["kernel_module"]) == ("Ubuntu 22.04 (jammy)", "580", "dkms")
    assert install["kernel_packages"] == ["nvidia-headless-580-server", "linux-headers-5.15.0-119-generic"]
    assert install["packages"] == ["nvidia-utils-580-server"]
    assert install["hold"] == ["nvidia-headless-580-server", "nvidia-utils-580-server"]
    assert install["version_match"] == ["nvidia-dkms-580-server", "libnvidia-compute-580-server"]
    assert [(s["uri"], s["suite"]) for s in install["repositories"][0]["sources"]] == [
        ("http://archive.ubuntu.com/ubuntu", "jammy"), ("http://archive.ubuntu.com/ubuntu", "jammy-updates"),
        ("http://security.ubuntu.com/ubuntu", "jammy-security")]
    prebuilt = ok(probed["nouveau"], UBUNTU_2404_ARM, exo_driver_open_kernel_modules=True,
                  exo_driver_ubuntu_modules="prebuilt", exo_driver_branch="570")["install"]
    assert prebuilt["kernel_packages"] == ["linux-modules-nvidia-570-server-open-6.8.0-45-generic"]
    assert prebuilt["packages"] == ["nvidia-headless-no-dkms-570-server-open", "nvidia-utils-570-server"]
    assert set(s["uri"] for s in prebuilt["repositories"][0]["sources"]) == {"http://ports.ubuntu.com/ubuntu-ports"}
    mirrored = ok(probed["no_driver"], UBUNTU_2204, exo_driver_ubuntu_mirror="http://mirror.example/ubuntu")["install"]
    assert [s["uri"] for s in mirrored["repositories"][0]["sources"]] == [
        "http://mirror.example/ubuntu", "http://mirror.example/ubuntu", "http://security.ubuntu.com/ubuntu"]


def test_el_plans_and_their_dnf_check(probed):
    result = ok(probed["no_driver"], ROCKY_9)
    install = result["install"]
    assert (install["distribution"], install["module_stream"], install["package_manager"]) == (
        "Rocky 9", "nvidia-driver:580-dkms", "dnf")
    assert install["kernel_packages"] == ["kmod-nvidia-latest-dkms", "kernel-devel-5.14.0-427.13.1.el9_4.x86_64"]
    epel, cuda = install["repositories"]
    assert epel == {"kind": "epel", "package": "epel-release", "needed": True,
                    "key": "https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9",
                    "fingerprint": "FF8AD1344597106ECE813B918A3872BF3228467C"}
    assert cuda["baseurl"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"
    assert cuda["gpgkey"] == cuda["baseurl"] + "/D42D0685.pub"
    assert cuda["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert result["package_check"] == {
        "repositories": [{"id": "cuda-rhel9-x86_64", "baseurl": cuda["baseurl"]},
                         {"id": "gpufleet-exo-epel", "baseurl": "https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/"}],
        "stream": "nvidia-driver:580-dkms",
        "stream_packages": ["nvidia-driver-cuda", "nvidia-persistenced", "kmod-nvidia-latest-dkms"],
        "other_packages": ["kernel-devel-5.14.0-427.13.1.el9_4.x86_64", "python3-dnf-plugin-versionlock", "dkms"],
        "kernel": "5.14.0-427.13.1.el9_4.x86_64", "distribution": "Rocky 9"}
    arm = ok(probed["no_driver"], RHEL_9_ARM, exo_driver_open_kernel_modules=True, exo_driver_flavor="full",
             exo_driver_extra_packages="nvidia-settings")
    assert arm["install"]["module_stream"] == "nvidia-driver:580-open"
    assert arm["install"]["packages"] == ["nvidia-driver-cuda", "nvidia-persistenced", "nvidia-open", "nvidia-settings",
                                          "python3-dnf-plugin-versionlock"]
    assert arm["install"]["repositories"][0]["package"] == \
        "https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"
    assert arm["install"]["repositories"][0]["key"] == "https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9"
    assert arm["install"]["repositories"][0]["fingerprint"] == "FF8AD1344597106ECE813B918A3872BF3228467C"
    # NVIDIA's one key serves both architectures.
    assert arm["install"]["repositories"][1]["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert arm["install"]["repositories"][1]["baseurl"].endswith("/rhel9/sbsa")
    assert arm["package_check"]["other_packages"] == ["kernel-devel-5.14.0-570.12.1.el9_6.aarch64", "nvidia-settings",
                                                      "python3-dnf-plugin-versionlock", "dkms"]


def test_el8_is_refused_with_the_reason(probed):
    refused(probed["no_driver"], "runs RedHat 8, which this role no longer installs on: EL 8's dnf Python bindings "
            "exist only for its platform Python 3.6", "Install the driver yourself", distribution=RHEL_8)


# ---- settings as users write them ---------------------------------------------------------------

def test_extra_vars_strings_are_read_as_ansible_reads_them(probed):
    result = ok(probed["no_driver"], exo_driver_kernel_module="false", exo_driver_hold="no",
                exo_driver_min_free_mib="2048", exo_driver_extra_packages="nvidia-settings, nvtop",
                exo_driver_reboot="True", exo_driver_probe_options={"timeout": "5", "tinygrad": "false"})
    settings = result["settings"]
    assert settings["exo_driver_kernel_module"] is False and result["kernel_module"] is False
    assert result["install"]["kernel_module_why"] == "exo_driver_kernel_module is false"
    assert settings["exo_driver_min_free_mib"] == 2048
    assert settings["exo_driver_reboot"] is True and settings["exo_driver_hold"] is False
    assert settings["exo_driver_probe_options"] == {"timeout": 5.0, "tinygrad": False}
    assert result["install"]["hold"] == []
    assert result["install"]["packages"][-2:] == ["nvidia-settings", "nvtop"]
    assert ok(probed["no_driver"], exo_driver_kernel_module="yes")["kernel_module"] is True
    assert ok(probed["no_driver"], DEBIAN_12_DOCKER, exo_driver_kernel_module="auto")["kernel_module"] is False


def test_a_setting_left_out_takes_the_roles_default(probed):
    result = driver_plan.course(host_facts(probed["no_driver"]), {}, "h")
    assert result["errors"] == []
    assert result["settings"] == DEFAULTS


@pytest.mark.parametrize("settings, parts", [
    # wrong type
    ({"exo_driver_kernel_module": "sometimes"}, ['exo_driver_kernel_module is "sometimes"', "give auto, true or false"]),
    ({"exo_driver_allow_upgrade": "maybe"}, ['exo_driver_allow_upgrade is "maybe"', "give true or false"]),
    ({"exo_driver_min_free_mib": "lots"}, ['exo_driver_min_free_mib is "lots", not a whole number', "such as 1536"]),
    ({"exo_driver_min_free_mib": True}, ["exo_driver_min_free_mib is true, not a whole number"]),
    ({"exo_driver_extra_packages": {"a": 1}}, ['exo_driver_extra_packages is {"a": 1}', "list of package names"]),
    ({"exo_driver_extra_packages": ["nvtop", "-y"]}, ['exo_driver_extra_packages has "-y", which is not a package']),
    ({"exo_driver_probe_options": "rootfs=/srv"}, ['exo_driver_probe_options is "rootfs=/srv"', "give a mapping"]),
    ({"exo_driver_probe_options": {"tinygrad": "maybe"}}, ['exo_driver_probe_options.tinygrad is "maybe"']),
    ({"exo_driver_probe_options": {"rootfs": "srv"}}, ['exo_driver_probe_options.rootfs is "srv"', "absolute path"]),
    ({"exo_driver_flavor": "Full"}, ['exo_driver_flavor is "Full"; choose one of "compute", "full"']),
    ({"exo_driver_branch": "r535"}, ['exo_driver_branch is "r535", which is not a branch number such as 580']),
    ({"exo_driver_branch": "535.129.03"}, ['exo_driver_branch is "535.129.03", a driver version', "first number: 535"]),
    ({"exo_driver_debian_mirror": "deb.debian.org"}, ['exo_driver_debian_mirror is "deb.debian.org", which is not a URL']),
    ({"exo_driver_cuda_repo_key": "keys/D42D0685.pub"}, ['exo_driver_cuda_repo_key is "keys/D42D0685.pub"']),
    ({"exo_driver_rpm_key_fingerprints": "610C7B14"}, ['exo_driver_rpm_key_fingerprints is "610C7B14"', "give a mapping"]),
    ({"exo_driver_rpm_key_fingerprints": {"cuda": "D42D0685"}},
     ['exo_driver_rpm_key_fingerprints.cuda is "D42D0685"', "the key's full OpenPGP fingerprint, 40 hex digits"]),
    ({"exo_driver_rpm_key_fingerprints": {"nvidia": "610C7B14E068A878070DA4E99CD0A493D42D0685"}},
     ['exo_driver_rpm_key_fingerprints sets "nvidia", which is not a key this role imports; its keys are cuda, epel']),
    # out of range
    ({"exo_driver_min_free_mib": "-5"}, ['exo_driver_min_free_mib is "-5"; it must be 0 or more']),
    ({"exo_driver_reboot_timeout": 5}, ["exo_driver_reboot_timeout is 5; it must be from 60 to 86400"]),
    ({"exo_driver_probe_options": {"timeout": 0}}, ["exo_driver_probe_options.timeout is 0", "above 0"]),
    # unknown name
    ({"exo_driver_brnach": "535"}, ["exo_driver_brnach is not a variable of this role (did you mean exo_driver_branch?)"]),
    ({"exo_driver_probe_options": {"timout": 5}}, ['exo_driver_probe_options sets "timout", which is not an option']),
])
def test_bad_values_are_refused_with_host_variable_and_value(probed, settings, parts):
    refused(probed["healthy"], *parts, **settings)


def test_one_message_per_problem(probed):
    result = plan(probed["no_driver"], exo_driver_reboot="often", exo_driver_min_free_mib="-1",
                  exo_driver_flavor="all")
    assert [error.split(" is ")[0] for error in result["errors"]] == [
        "host h: exo_driver_flavor", "host h: exo_driver_min_free_mib", "host h: exo_driver_reboot"]
    assert result["decision"] is None and result["install"] is None


@pytest.mark.parametrize("distribution, branch, parts", [
    (DEBIAN_12, "999", ['exo_driver_branch is "999": branch 999 is not packaged for Debian 12: its branches are '
                        '535, 470; set exo_driver_branch to one of them']),
    (UBUNTU_2204, "999", ['exo_driver_branch is "999": branch 999 is not one this role installs on Ubuntu 22.04: '
                          'its branches are 535, 550, 570, 580']),
    (ROCKY_9, 999, ["exo_driver_branch is 999: branch 999 is not one this role installs on Rocky 9"]),
])
def test_a_branch_the_release_lacks_is_refused_in_plan_only_mode_too(probed, distribution, branch, parts):
    refused(probed["no_driver"], *parts, distribution=distribution, exo_driver_branch=branch,
            exo_driver_plan_only="true")


def test_every_el_release_has_the_fingerprint_of_each_key_it_imports():
    table = distributions.REDHAT
    assert sorted(table["key_fingerprints"]["epel"]) == sorted(table["releases"])
    assert table["key_fingerprints"]["cuda"][DEFAULTS["exo_driver_cuda_repo_key"]]
    for fingerprint in list(table["key_fingerprints"]["epel"].values()) + list(table["key_fingerprints"]["cuda"].values()):
        assert FINGERPRINT_RE.match(fingerprint), fingerprint


def test_the_rpm_keys_are_imported_with_the_fingerprints_given(probed):
    nvidia = "AAAA BBBB CCCC DDDD EEEE FFFF 0000 1111 2222 3333"
    epel, cuda = ok(probed["no_driver"], ROCKY_9, exo_driver_cuda_repo_key="NEWKEY.pub",
                    exo_driver_rpm_key_fingerprints={"cuda": nvidia})["install"]["repositories"]
    assert cuda["gpgkey"].endswith("/NEWKEY.pub") and cuda["fingerprint"] == nvidia.replace(" ", "")
    assert epel["fingerprint"] == "FF8AD1344597106ECE813B918A3872BF3228467C"
    own = "0123456789abcdef0123456789abcdef01234567"
    assert ok(probed["no_driver"], ROCKY_9, exo_driver_rpm_key_fingerprints={"epel": own})["install"]["repositories"][0][
        "fingerprint"] == own.upper()


def test_a_cuda_key_of_unknown_fingerprint_is_refused_before_any_change(probed):
    refused(probed["no_driver"], 'exo_driver_cuda_repo_key is "NEWKEY.pub": the role knows the fingerprint of '
            "D42D0685.pub only, and imports no key it cannot check; set exo_driver_rpm_key_fingerprints.cuda",
            distribution=ROCKY_9, exo_driver_cuda_repo_key="NEWKEY.pub")


def test_impossible_plans_name_what_to_change(probed):
    refused(probed["no_driver"], "exo_driver_open_kernel_modules is true: Debian 12 packages no open kernel modules "
            "for branch 470; set exo_driver_open_kernel_modules: false", exo_driver_branch="470",
            exo_driver_open_kernel_modules=True)
    refused(probed["no_driver"], 'exo_driver_flavor is "full": exo_driver_flavor full needs the kernel module',
            "exo_driver_kernel_module is false", exo_driver_flavor="full", exo_driver_kernel_module=False)
    refused(probed["no_driver"], "the releases this role knows for Debian are 12, 13", distribution=DEBIAN_11)
    refused(probed["no_driver"], "runs Archlinux rolling, which this role does not install on", distribution=ARCH)
    refused(probed["no_driver"], "NVIDIA publishes no CUDA repository for architecture ppc64le",
            distribution=dict(ROCKY_9, architecture="ppc64le"))


def test_hosts_that_need_nothing_pass_on_any_distribution(probed):
    """Only a host that gets the driver needs a distribution the role installs on."""
    assert ok(probed["healthy"], ARCH)["install"] is None
    assert ok(probed["passthrough"], DEBIAN_11)["decision"]["action"] == "leave"


# ---- partial or foreign facts -------------------------------------------------------------------

@pytest.mark.parametrize("change, parts", [
    (lambda caps: None, ["ansible_facts.device_capabilities is null, not the facts of gpufleet.exo.device_facts"]),
    (lambda caps: {"gpus": []}, ["ansible_facts.device_capabilities lacks schema_version, pci, nvml, driver_needed, "
                                 "driver_reason, amd (partial or foreign facts)"]),
    (lambda caps: dict(caps, schema_version=2), ["ansible_facts.device_capabilities has schema_version 2",
                                                 "this role reads schema 1"]),
    (lambda caps: dict((k, v) for k, v in caps.items() if k not in ("pci", "driver_needed")),
     ["ansible_facts.device_capabilities lacks pci, driver_needed (partial or foreign facts)",
      "gather them again with gpufleet.exo.device_facts"]),
    (lambda caps: dict(caps, nvml={"message": None}),
     ["ansible_facts.device_capabilities.nvml lacks status, driver_version"]),
    (lambda caps: dict(caps, pci=[{"bus_id": GPU0, "vendor": "nvidia"}]),
     ['ansible_facts.device_capabilities.pci entry {"bus_id": "0000:3b:00.0", "vendor": "nvidia"} lacks driver']),
])
def test_partial_or_foreign_facts_are_refused_by_name(probed, change, parts):
    refused(change(copy.deepcopy(probed["no_driver"])), *parts)


# ---- rebooting ----------------------------------------------------------------------------------

def test_why_a_needed_reboot_would_not_happen(probed):
    caps = probed["mismatch"]
    assert plan(caps, connection="local")["reboot_blocker"] == "the connection is local (the controller would reboot itself)"
    assert plan(caps, host="localhost")["reboot_blocker"].startswith("the connection is local")
    assert plan(caps)["reboot_blocker"] == "exo_driver_reboot is false"
    assert plan(caps, DEBIAN_12_DOCKER, exo_driver_reboot=True)["reboot_blocker"] == \
        "the host is a docker container: reboot the machine it runs on"
    assert plan(caps, exo_driver_reboot="yes")["reboot_blocker"] is None


def test_the_module_is_looked_for_under_the_probes_root(probed):
    assert ok(probed["no_driver"])["nvidia_module"] == "/sys/module/nvidia"
    options = {"rootfs": "/srv/sim/"}
    assert ok(probed["no_driver"], exo_driver_probe_options=options)["nvidia_module"] == "/srv/sim/sys/module/nvidia"


# ---- the role and the module keep step with the planner ------------------------------------------

def test_defaults_and_argument_specs_keep_step_with_the_planner():
    # The planner reads meta/argument_specs.yml itself (plugin_utils/role_settings.py); defaults/main.yml
    # holds the same variables in the same order, the order of the messages.
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert list(ROLE_DEFAULTS) == list(options)
    assert DEFAULTS == ROLE_DEFAULTS


def test_probe_options_are_the_options_of_device_facts():
    documented = yaml.safe_load(device_facts.DOCUMENTATION)["options"]
    assert sorted(PROBE_OPTIONS) == sorted(documented)
    for name, kind in PROBE_OPTIONS.items():
        assert documented[name]["type"] == kind, name


def test_the_filter_is_the_planner(probed):
    facts = host_facts(probed["no_driver"])
    assert FilterModule().filters()["driver_plan"](facts, {"exo_driver_branch": "470"}, "h", "ssh") == \
        driver_plan.course(facts, {"exo_driver_branch": "470"}, "h", "ssh")


# ---- what the install steps found ---------------------------------------------------------------

MIB = 1024 * 1024


def mount(path, free_mib):
    return {"mount": path, "device": "/dev/x", "fstype": "ext4", "size_available": free_mib * MIB + 12345}


def test_file_systems_short_of_space_are_named_once(probed):
    mounts = [mount("/", 900), mount("/var", 40000), mount("/var/lib/docker", 1), mount("/boot", 10)]
    result = ok(probed["no_driver"], dict(DEBIAN_12, mounts=mounts))
    # /usr and /tmp are on /, /var has its own file system; /boot and /var/lib/docker hold none of them
    assert result["messages"]["space_problems"] == [
        "/ has 900 MiB free; the driver needs 1536 MiB (exo_driver_min_free_mib): free some space first"]
    roomy = ok(probed["no_driver"], dict(DEBIAN_12, mounts=mounts), exo_driver_min_free_mib="800")
    assert roomy["messages"]["space_problems"] == []


def test_messages_worded_from_the_plan(probed):
    result = ok(probed["nouveau"], DEBIAN_12)
    messages = result["messages"]
    assert messages["nouveau_reboot_reason"] == ("nouveau holds %s until a reboot (blacklisted in "
                                                 "/etc/modprobe.d/gpufleet-exo-nouveau.conf)" % GPU0)
    assert messages["would_install"] == "would install " + " ".join(
        result["install"]["kernel_packages"] + result["install"]["packages"])
    assert "(/var/lib/dkms/mok.pub) is not enrolled" in messages["secure_boot_advice"]
    assert "Canonical" not in messages["secure_boot_advice"]
    ubuntu = ok(probed["no_driver"], UBUNTU_2204)["messages"]["secure_boot_advice"]
    assert "; or use Canonical's signed modules (exo_driver_ubuntu_modules: prebuilt). exo_driver_secure_boot: " \
           "continue installs anyway." in ubuntu
    assert ok(probed["healthy"])["messages"] == {}


def test_the_summary_shows_the_decision_and_the_plan(probed):
    result = ok(probed["no_driver"])
    assert result["summary"]["action"] == "install" and result["summary"]["plan"] == result["install"]
    healthy = ok(probed["healthy"])["summary"]
    assert healthy["why"] == "the driver is loaded and NVML answers" and "plan" not in healthy


def test_an_upgrade_releases_every_held_driver_package(probed):
    course = ok(probed["no_driver"], DEBIAN_12_DOCKER)
    lines = ["nvidia-smi hold", "libnvidia-ml1 hold", "nvidia-driver-bin-530 hold", "libcuda1 install",
             "nvidia-persistenced hold", "vim hold", "nvidia-cuda-toolkit hold", "firmware-nvidia-gsp hold"]
    assert outcome.findings(course, selections=lines)["release"] == [
        "nvidia-smi", "libnvidia-ml1", "nvidia-driver-bin-530", "nvidia-persistenced", "firmware-nvidia-gsp"]


def dpkg(**versions):
    """The packages as package_versions (and package_facts) read them with dpkg."""
    return dict((name.replace("_", "-"), [{"name": name.replace("_", "-"), "version": version, "arch": "amd64",
                                          "source": "apt"}]) for name, version in versions.items())


def rpm(**versions):
    """The packages as package_versions (and package_facts) read them with rpm: epoch and release apart."""
    return dict((name.replace("_", "-"), [{"name": name.replace("_", "-"), "version": version, "release": "1.el9",
                                          "epoch": 3, "arch": "x86_64", "source": "rpm"}])
                for name, version in versions.items())


# Debian 12 as the archive has it: the security update moved the driver's packages to 535.309.01, and
# nvidia-persistenced, nvidia-support and nvidia-kernel-common come from their own sources.
BOOKWORM = dict(libnvidia_ml1="535.309.01-0+deb12u1", libcuda1="535.309.01-0+deb12u1",
                nvidia_smi="535.309.01-0+deb12u1", nvidia_kernel_dkms="535.309.01-0+deb12u1",
                firmware_nvidia_gsp="535.309.01-0+deb12u1", nvidia_persistenced="535.171.04-1~deb12u1",
                nvidia_support="20220217+3~deb12u1", nvidia_kernel_common="20220217+3~deb12u1", vim="2:9.0.1378-2",
                nvidia_cuda_toolkit="12.4.131~12.4.1-1")
# The same host where the kernel module's package stayed at the point release before.
BOOKWORM_BEHIND = dict(BOOKWORM)
BOOKWORM_BEHIND["nvidia_kernel_dkms"] = "535.261.03-1"
VERSION_CASES = [
    # (case, distribution, packages, versions found, advice contains)
    ("one version", DEBIAN_12, dpkg(**BOOKWORM), {"535.309.01": ["firmware-nvidia-gsp", "libcuda1", "libnvidia-ml1",
                                                                 "nvidia-kernel-dkms", "nvidia-smi"]}, None),
    ("library upgraded, kernel module not", DEBIAN_12, dpkg(**BOOKWORM_BEHIND),
     {"535.309.01": ["firmware-nvidia-gsp", "libcuda1", "libnvidia-ml1", "nvidia-smi"],
      "535.261.03": ["nvidia-kernel-dkms"]},
     "the driver's packages carry 2 versions: 535.261.03 (nvidia-kernel-dkms 535.261.03-1); 535.309.01 ("
     "firmware-nvidia-gsp 535.309.01-0+deb12u1, libcuda1 535.309.01-0+deb12u1, libnvidia-ml1 535.309.01-0+deb12u1, "
     "nvidia-smi 535.309.01-0+deb12u1). NVML and CUDA fail (Driver/library version mismatch, CUDA error 802 with a "
     "fabric manager) until they agree. Move them to one version, the newest: `apt-get install "
     "--allow-change-held-packages nvidia-kernel-dkms=535.309.01-*`, then reboot"),
    ("fabric manager of another release", UBUNTU_2204,
     dpkg(libnvidia_compute_580_server="580.95.05-0ubuntu0.22.04.2", nvidia_utils_580_server="580.95.05-0ubuntu0.22.04.2",
          nvidia_fabricmanager_580="580.105.08-1", linux_modules_nvidia_580_server_5_15_0_119_generic="5.15.0-119.129"),
     {"580.95.05": ["libnvidia-compute-580-server", "nvidia-utils-580-server"], "580.105.08": ["nvidia-fabricmanager-580"]},
     "newest: `apt-get install --allow-change-held-packages libnvidia-compute-580-server=580.105.08-* "
     "nvidia-utils-580-server=580.105.08-*`"),
    ("EL, the daemon behind", ROCKY_9, rpm(nvidia_driver_cuda="580.95.05", kmod_nvidia_latest_dkms="580.95.05",
                                           nvidia_persistenced="575.57.08", dkms="3.2.1"),
     {"580.95.05": ["kmod-nvidia-latest-dkms", "nvidia-driver-cuda"], "575.57.08": ["nvidia-persistenced"]},
     "`dnf versionlock delete nvidia-persistenced && dnf install nvidia-persistenced-580.95.05 && "
     "dnf versionlock add nvidia-persistenced`"),
    ("no driver package", DEBIAN_13, dpkg(vim="2:9.1.1230-2"), {}, None),
]


@pytest.mark.parametrize("case, distribution, packages, versions, advice", VERSION_CASES,
                         ids=[case[0] for case in VERSION_CASES])
def test_the_driver_packages_carry_one_version_or_the_role_says_what_to_do(
        probed, case, distribution, packages, versions, advice):
    result = driver_plan.course(host_facts(probed["healthy"], distribution), dict(ROLE_DEFAULTS), "gpu7", "ssh",
                                packages=packages)
    found = result["versions"]
    assert dict((version, sorted(names)) for version, names in found["versions"].items()) == versions
    assert found["mixed"] is (advice is not None)
    if advice:
        assert advice in found["advice"] and "host gpu7: " + found["advice"] in result["notes"]
        assert result["summary"]["driver packages"] == found
    else:
        assert found["advice"] is None and result["notes"] == []
    assert "vim" not in found["installed"] and "nvidia-cuda-toolkit" not in found["installed"]


def test_without_the_packages_nothing_is_said_about_versions(probed):
    result = ok(probed["healthy"])
    assert result["versions"] is None and "driver packages" not in result["summary"]


HOLD_CASES = [
    # (case, distribution, settings, packages after the install, versionlock list, hold, lock)
    ("Debian: the named packages and their dependencies", DEBIAN_12_DOCKER, {}, dpkg(**BOOKWORM), None,
     ["nvidia-smi", "libnvidia-ml1", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp", "nvidia-kernel-common",
      "nvidia-kernel-dkms", "nvidia-support"], None),
    ("exo_driver_hold false", DEBIAN_12_DOCKER, {"exo_driver_hold": False}, dpkg(**BOOKWORM), None, [], None),
    ("EL: what dnf does not lock yet", ROCKY_9, {},
     rpm(nvidia_driver_cuda="580.95.05", kmod_nvidia_latest_dkms="580.95.05", nvidia_persistenced="580.95.05"),
     ["nvidia-driver-cuda-3:580.95.05-1.el9.*", "bash-0:5.1.8-9.el9.*"],
     ["kmod-nvidia-latest-dkms", "nvidia-driver-cuda", "nvidia-persistenced"],
     ["kmod-nvidia-latest-dkms", "nvidia-persistenced"]),
]


@pytest.mark.parametrize("case, distribution, settings, packages, versionlock, hold, lock", HOLD_CASES,
                         ids=[case[0] for case in HOLD_CASES])
def test_every_driver_package_installed_is_held(
        probed, case, distribution, settings, packages, versionlock, hold, lock):
    course = ok(probed["no_driver"], distribution, **settings)
    found = outcome.findings(course, packages=packages, versionlock=versionlock)
    assert found["hold"] == hold
    if lock is not None:
        assert found["lock"] == lock and found["unlock"] == ["nvidia-driver-cuda"]
    assert found["versions"]["mixed"] is False


def test_an_upgrade_installs_the_latest_and_an_install_what_is_there(probed):
    assert ok(probed["no_driver"])["install"]["install_state"] == "present"
    upgrade = ok(probed["healthy"], exo_driver_branch="470", exo_driver_allow_upgrade=True)["install"]
    assert upgrade["install_state"] == "latest" and upgrade["hold_mechanism"] == "dpkg hold"


def test_the_enabled_module_stream(probed):
    course = ok(probed["no_driver"], ROCKY_9)
    enabled = "nvidia-driver  580-dkms [e]  default [d], fm, ks  Nvidia driver for 580-dkms branch\n"
    assert outcome.findings(course, module_list=enabled)["stream_enabled"] is True
    assert outcome.findings(course, module_list=enabled.replace("580", "570"))["stream_enabled"] is False
    assert outcome.findings(course, module_list="")["stream_enabled"] is False


def test_secure_boot_state_from_mokutil_or_the_efi_variable(probed):
    course = ok(probed["no_driver"])
    assert outcome.findings(course, sb_state="SecureBoot enabled\n")["secure_boot"] is True
    assert outcome.findings(course, sb_state="", sb_efivar="   1\n")["secure_boot"] is True
    assert outcome.findings(course, sb_state="SecureBoot disabled\n", sb_efivar="   0\n")["secure_boot"] is False


def test_a_failed_modprobe_says_whether_a_reboot_helps(probed):
    course = ok(probed["no_driver"], DEBIAN_12)
    refused_key = outcome.findings(course, modprobe="modprobe: ERROR: could not insert 'nvidia': Key was rejected "
                                   "by service\n")["modprobe"]
    assert refused_key == {"reboot_required": True, "module_missing": False, "reboot_reason":
                           "Secure Boot refused the nvidia module: enroll /var/lib/dkms/mok.pub with mokutil --import "
                           "and confirm it at the console during the reboot"}
    absent = outcome.findings(course, modprobe="modprobe: FATAL: Module nvidia not found in directory /lib/x\n")
    assert absent["modprobe"]["module_missing"] is True and absent["modprobe"]["reboot_required"] is False
    other = outcome.findings(course, modprobe="modprobe: ERROR: could not insert 'nvidia': No such device")
    assert other["modprobe"]["reboot_reason"] == ("modprobe nvidia failed (modprobe: ERROR: could not insert 'nvidia': "
                                                  "No such device); it loads at the next boot")


def verified(probed, course, after, **found):
    facts = dict(before=probed["no_driver"]["nvml"], caps=probed[after], module_loaded=False, reboot_required=False,
                 reboot_reason=None, module_missing=False, kernel="6.1.0-25-amd64")
    facts.update(found)
    return outcome.findings(course, verified=facts)["result"]


def test_the_new_nvml_status_is_explained(probed):
    metal = ok(probed["no_driver"], DEBIAN_12)
    up = verified(probed, metal, "healthy")
    assert (up["nvml_before"], up["nvml_after"], up["cause"], up["gpus"]) == ("library_not_found", "ok", "ok", 1)
    assert up["explanation"] == "driver %s loaded; NVML sees 1 GPU(s)" % probed["healthy"]["nvml"]["driver_version"]
    causes = {
        "reboot_pending": dict(reboot_required=True, reboot_reason="r"),
        "unexplained": dict(module_loaded=True),
        "module_missing": dict(module_missing=True),
    }
    for cause, found in causes.items():
        assert verified(probed, metal, "not_loaded", **found)["cause"] == cause
    assert verified(probed, metal, "not_loaded")["cause"] == "unexplained"
    pending = verified(probed, metal, "not_loaded", reboot_required=True, reboot_reason="nouveau holds it")
    assert pending["explanation"].endswith(": the nvidia kernel module is not loaded yet: reboot pending "
                                           "(nouveau holds it)")
    container = verified(probed, ok(probed["no_driver"], DEBIAN_12_DOCKER), "not_loaded")
    assert container["cause"] == "container"
    assert "because this host is a docker container: it shares the kernel (6.1.0-25-amd64)" in container["explanation"]
    userspace = verified(probed, ok(probed["no_driver"], DEBIAN_12, exo_driver_kernel_module=False), "not_loaded")
    assert userspace["cause"] == "userspace_only" and "Install the module for kernel 6.1.0-25-amd64" in \
        userspace["explanation"]


@pytest.mark.parametrize("distribution, read, left", [
    ("Debian", ["nvidia-smi", "libcuda1", "nvidia-kernel-dkms", "firmware-nvidia-gsp", "firmware-amd-graphics"],
     ["nvidia-container-toolkit", "libnvidia-container1", "linux-firmware", "bash"]),
    ("Ubuntu", ["nvidia-driver-580-server", "linux-modules-nvidia-580-server-generic", "nvidia-fabricmanager-580",
                "linux-firmware"], ["nvidia-settings", "nvidia-container-toolkit", "firmware-amd-graphics"]),
    ("Rocky", ["nvidia-driver", "kmod-nvidia-open-dkms", "nvidia-fabric-manager", "amd-gpu-firmware",
               "linux-firmware"], ["nvidia-container-toolkit", "kernel"]),
])
def test_the_packages_read_are_the_drivers_its_fabric_managers_and_amdgpus_firmware(distribution, read, left):
    names = re.compile(distributions.package_names(distribution))
    assert [name for name in read + left if names.match(name)] == read


def test_no_package_is_read_where_the_role_knows_no_family():
    assert distributions.package_names("Archlinux") is None
