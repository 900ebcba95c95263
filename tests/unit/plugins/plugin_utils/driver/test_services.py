# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver role's services over simulated hosts: the probe's facts (simulated sysfs with NVSwitch
devices, the simulated libnvidia-ml with each GPU's fabric state: the hosts hgx* and two_h100 of
tests/simulated/hosts.py, as recorded in tests/fixtures/simulated) under each distribution, with and
without a fabric manager of the driver's version installed."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver.settings import DEFAULTS
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import services as driver_services
from tests.simulated.hosts import NVSWITCHES as SWITCHES

DRIVER = "550.54.15"  # what the simulated NVML reports
UNITS = ("nvidia-persistenced.service",)


def services(caps, distribution="Ubuntu", installed=None, units=UNITS, check_fabric=False, **settings):
    facts = {"distribution": distribution, "device_capabilities": caps}
    return driver_services.needs(facts, dict(DEFAULTS, **settings), units, installed or {},
                                 check_fabric=check_fabric)


@pytest.fixture(scope="module")
def hgx(probed):
    """An HGX H100 host whose fabric is up, as the probe reports it."""
    return probed["hgx"]


def test_the_probe_lists_nvswitch_devices_and_not_as_gpus(hgx):
    assert hgx["nvswitches"] == [{"bus_id": bus_id, "device_id": "0x22a3", "driver": "nvidia-nvswitch"}
                                 for bus_id in SWITCHES]
    assert [d["bus_id"] for d in hgx["pci"]] == ["0000:18:00.0", "0000:28:00.0"]


@pytest.mark.parametrize("distribution, package, install", [
    ("Ubuntu", "nvidia-fabricmanager-550", "nvidia-fabricmanager-550=550.54.15-*"),
    ("Rocky", "nvidia-fabric-manager", "nvidia-fabric-manager-550.54.15"),
])
def test_nvswitch_host_without_a_fabric_manager_gets_one_of_the_drivers_version(hgx, distribution, package, install):
    result = services(hgx, distribution)
    assert result["errors"] == []
    assert result["install"] == install
    assert result["fabric_manager"] == {"package": package, "version": DRIVER, "installed": None,
                                        "service": "nvidia-fabricmanager"}
    assert result["services"] == [{"name": "nvidia-persistenced", "start": True},
                                  {"name": "nvidia-fabricmanager", "start": True}]
    assert "2 NVSwitch device(s)" in result["notes"][0] and "installs" in result["notes"][0]


@pytest.mark.parametrize("installed", [
    {"nvidia-fabricmanager-550": "550.54.15-0ubuntu0.24.04.1"},
    {"nvidia-fabricmanager-550": [{"version": "550.54.15-0ubuntu0.24.04.1", "source": "apt"}]},   # package_facts
])
def test_a_matching_fabric_manager_is_kept_and_started(hgx, installed):
    result = services(hgx, installed=installed)
    assert result["install"] is None and result["notes"] == [] and result["errors"] == []
    assert result["fabric_manager"]["installed"] == DRIVER
    assert {"name": "nvidia-fabricmanager", "start": True} in result["services"]


def test_a_fabric_manager_of_another_version_is_replaced(hgx):
    result = services(hgx, installed={"nvidia-fabricmanager-550": "550.40.07-0ubuntu1"})
    assert result["install"] == "nvidia-fabricmanager-550=550.54.15-*"
    assert "replaces nvidia-fabricmanager-550 550.40.07" in result["notes"][0]


def test_debian_has_no_fabric_manager_and_says_what_to_do(hgx):
    result = services(hgx, "Debian")
    assert result["install"] is None and len(result["errors"]) == 1
    for part in ("NVSwitch", "nvidia-fabricmanager-550", DRIVER, "exo_driver_fabric_manager: false"):
        assert part in result["errors"][0]
    assert services(hgx, "Debian", exo_driver_fabric_manager=False)["errors"] == []


def test_fabric_manager_left_to_the_user(hgx):
    result = services(hgx, exo_driver_fabric_manager=False)
    assert result["install"] is None and result["fabric_manager"] is None
    assert "exo_driver_fabric_manager is false" in result["notes"][0]
    assert [s["name"] for s in result["services"]] == ["nvidia-persistenced"]


def test_without_nvswitch_no_fabric_manager(probed):
    caps = probed["two_h100"]
    result = services(caps)
    assert caps["nvswitches"] == [] and result["fabric_manager"] is None and result["install"] is None
    assert result["services"] == [{"name": "nvidia-persistenced", "start": True}] and result["notes"] == []


def test_driver_not_loaded_waits_for_the_next_run(probed):
    caps = probed["hgx_driver_not_loaded"]
    result = services(caps)
    assert result["install"] is None and result["errors"] == []
    assert "once the NVIDIA driver is loaded" in result["notes"][0]
    # enabled for the next boot, not started
    assert result["services"] == [{"name": "nvidia-persistenced", "start": False}]


@pytest.mark.parametrize("units, persistenced, expected", [
    ([], True, []),                               # no driver packages here: nothing to enable
    (UNITS, False, []),
    (UNITS, True, ["nvidia-persistenced"]),
])
def test_persistenced_wherever_its_unit_is(probed, units, persistenced, expected):
    caps = probed["two_h100"]
    result = services(caps, units=units, exo_driver_persistenced=persistenced)
    assert [s["name"] for s in result["services"]] == expected


def test_a_fabric_that_did_not_come_up_is_a_clear_error(probed):
    caps = probed["hgx_fabric_down"]
    installed = {"nvidia-fabricmanager-550": DRIVER}
    assert services(caps, installed=installed)["errors"] == []   # not checked before the fabric manager runs
    errors = services(caps, installed=installed, check_fabric=True)["errors"]
    assert len(errors) == 1
    for part in ("NVLink fabric is not up", "GPU 0", "GPU 1", "in_progress", "journalctl -u nvidia-fabricmanager"):
        assert part in errors[0]


def test_a_fabric_that_is_up_passes_the_check(hgx):
    assert services(hgx, installed={"nvidia-fabricmanager-550": DRIVER}, check_fabric=True)["errors"] == []
