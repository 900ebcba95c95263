# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""device_facts' health of each GPU over the simulated libnvidia-ml under the real nvidia-ml-py:
a sick GPU beside healthy ones, calls a part or an old driver does not answer, and calls that fail."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from tests.simulated import nvml as sim


def h100(i, **health):
    values = dict(sim.HEALTHY_H100, **health)
    return sim.gpu("NVIDIA H100 80GB HBM3", 81559, uuid="GPU-%08x-0000-0000-0000-000000000000" % i,
                   pci_bus_id="0000:%02x:00.0" % (0x18 + 0x10 * i), health=values)


def test_simulated_sick_gpu_beside_healthy_ones(simulated_host):
    facts = simulated_host([h100(0), h100(1, ecc=(1, 1, 3, 3), remapped_rows=(0, 2, 1, 0)),
                            h100(2, pcie=(4, 5, 8, 16), clock_event_reasons=0x40)]).facts
    verdicts = [(g["health"]["verdict"], len(g["health"]["reasons"])) for g in facts["gpus"]]
    assert verdicts == [("ok", 0), ("unusable", 2), ("degraded", 2)]
    sick = facts["gpus"][1]["health"]
    assert sick["ecc"] == {"enabled": True, "enabled_after_reboot": True, "uncorrected_volatile": 3,
                           "uncorrected_aggregate": 3}
    assert sick["remapped_rows"] == {"correctable": 0, "uncorrectable": 2, "pending": True, "failed": False}
    slow = facts["gpus"][2]["health"]
    assert slow["pcie"] == {"generation": 4, "max_generation": 5, "width": 8, "max_width": 16}
    assert slow["clock_event_reasons"] == ["hw_thermal_slowdown"]
    assert facts["gpus"][0]["health"]["persistence_mode"] is True
    assert facts["gpus"][0]["health"]["temperature_c"] == 35
    assert facts["errors"] == []


def test_simulated_nvswitch_fabric_state(simulated_host):
    facts = simulated_host([h100(0, fabric=(3, 0, 5)), h100(1, fabric=(1, 0, 0))]).facts
    up, down = (g["health"] for g in facts["gpus"])
    assert up["fabric"] == {"state": "completed", "status": "success", "clique_id": 5} and up["verdict"] == "ok"
    assert down["fabric"]["state"] == "not_started" and down["verdict"] == "unusable"
    assert "nvidia-fabricmanager" in down["reasons"][0]


def test_simulated_consumer_part_answers_no_health_but_its_own(simulated_host):
    # A GeForce has no ECC, no row remapping, no fabric: NOT_SUPPORTED, which is no error and no verdict.
    gpu = sim.gpu("NVIDIA GeForce RTX 3090", 24576, cc=(8, 6),
                  health=dict(persistence_mode=1, compute_mode=0, pcie=(4, 4, 16, 16), temperature_c=40))
    facts = simulated_host([gpu]).facts
    entry = facts["gpus"][0]["health"]
    assert entry["ecc"]["enabled"] is None and entry["remapped_rows"]["pending"] is None
    assert entry["fabric"] is None and entry["pcie"]["width"] == 16 and entry["verdict"] == "ok"
    assert facts["errors"] == []


def test_simulated_old_driver_lacks_the_newer_calls(simulated_host, legacy_nvml_lib):
    # R418 has ECC, retired pages, PCIe and temperature, but no row remapping, clock event reasons or fabric.
    gpu = sim.gpu("Tesla V100-SXM2-32GB", 32510, cc=(7, 0),
                  health=dict(sim.HEALTHY_H100, retired_pages_pending=1))
    facts = simulated_host([gpu], lib=legacy_nvml_lib).facts
    entry = facts["gpus"][0]["health"]
    assert entry["remapped_rows"]["pending"] is None and entry["clock_event_reasons"] is None
    assert entry["retired_pages_pending"] is True and entry["ecc"]["enabled"] is True
    assert (entry["verdict"], entry["reasons"]) == ("degraded", [entry["reasons"][0]])
    missing = set(e["message"].split()[2].rstrip(":") for e in facts["errors"])
    assert {"nvmlDeviceGetRemappedRows", "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetGpuFabricInfoV"} <= missing
    assert set(e["kind"] for e in facts["errors"]) == {"function_not_found"}


def test_simulated_lost_gpu_in_a_health_call_is_unusable_and_costs_only_that_gpu(simulated_host):
    facts = simulated_host([h100(0), h100(1)], errors={("nvmlDeviceGetTemperature", 1): "GPU_IS_LOST"}).facts
    assert [g["health"]["verdict"] for g in facts["gpus"]] == ["ok", "unusable"]
    assert facts["gpus"][1]["health"]["temperature_c"] is None and facts["gpus"][1]["health"]["lost"] is True
    assert [e["kind"] for e in facts["errors"]] == ["gpu_lost"]


def test_simulated_failing_health_call_costs_only_its_field(simulated_host):
    facts = simulated_host([h100(0)], errors={("nvmlDeviceGetEccMode", 0): "UNKNOWN"}).facts
    entry = facts["gpus"][0]["health"]
    # ECC mode is gone, and with it the counters asked only where ECC exists; the rest is there.
    assert entry["ecc"]["enabled"] is None and entry["ecc"]["uncorrected_volatile"] is None
    assert entry["pcie"]["width"] == 16 and entry["verdict"] == "ok"
    assert [e["kind"] for e in facts["errors"]] == ["error"]
