# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A driver change rolled across the fleet in batches (playbooks/driver_rollout.yml): the batches as
Ansible's `serial` makes them, what the fleet still serves while each batch is out, and whether a
host may have its exo instances back after the change (the gate).

The gate judges the device facts gathered after the change against those gathered before it: NVML
must answer on a host with NVIDIA hardware, every GPU seen before must still be there, and each GPU's
health verdict (plugins/module_utils/probe/health.py) must be one the operator accepts. A reboot the
driver role could not do fails the gate too: until it happens the new driver is not the one loaded.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

VARIABLE = "exo_rollout_batch"
VERDICTS = ("ok", "degraded", "unusable")


def batch_size(serial, count):
    """The batch size Ansible's `serial` gives for count hosts: a number of hosts or a percentage of them."""
    text = str(serial).strip()
    match = re.match(r"^([0-9]+)(%?)$", text)
    if not match or int(match.group(1)) == 0 or (match.group(2) and int(match.group(1)) > 100):
        raise ValueError("%s is %r; give a number of hosts (1 or more) or a percentage of them (1%% to 100%%), "
                         "such as 2 or 25%%" % (VARIABLE, serial))
    number = int(match.group(1))
    if match.group(2):
        # Ansible rounds a percentage down and takes at least one host.
        return max(int(count * number / 100.0), 1)
    return number


# The play's `order` (exo_rollout_order) as the hosts go; shuffle cannot be known before the play runs.
ORDERS = {
    "inventory": list,
    "reverse_inventory": lambda hosts: list(reversed(hosts)),
    "sorted": sorted,
    "reverse_sorted": lambda hosts: sorted(hosts, reverse=True),
}


def batches(hosts, serial, order="inventory"):
    """The hosts (in inventory order), put in the play's order and cut into the batches of `serial`."""
    if order not in ORDERS:
        raise ValueError("exo_rollout_order is %r; give one of %s (the play's order keyword; shuffle would make "
                         "batches the preview cannot know)" % (order, ", ".join(sorted(ORDERS))))
    hosts = ORDERS[order](list(hosts))
    size = batch_size(serial, len(hosts))
    return [hosts[start:start + size] for start in range(0, len(hosts), size)]


def served(report):
    """The models a fleet_capacity report says the fleet serves, in the report's order."""
    return [m["model"] for m in report["models"] if m["serves"]]


def preview(batch_list, whole, without):
    """Per batch: the hosts out, the models still served, and those the fleet stops serving meanwhile.

    whole: fleet_capacity's report for every host; without: one report per batch, with its hosts left out."""
    everything = served(whole)
    rows = []
    for number, (hosts, report) in enumerate(zip(batch_list, without), 1):
        still = served(report)
        lost = [m for m in everything if m not in still]
        rows.append({
            "batch": number, "hosts": list(hosts), "serves": still, "stops_serving": lost,
            "line": "batch %d of %d (%s out): the fleet serves %s%s" % (
                number, len(batch_list), ", ".join(hosts), ", ".join(still) or "no model",
                "; it stops serving %s until the batch is back" % ", ".join(lost) if lost else "; nothing is lost"),
        })
    return {"serves": everything, "batches": rows}


def _has_nvidia(caps):
    return bool(caps.get("gpus")) or any(d.get("vendor") == "nvidia" for d in caps.get("pci") or [])


def _nvml(after, before):
    nvml = after.get("nvml") or {}
    if not _has_nvidia(after) and not _has_nvidia(before):
        return []
    if nvml.get("status") != "ok":
        return ["NVML answers %s (%s)" % (nvml.get("status"), nvml.get("message") or "no message")]
    return []


def _missing(after, before):
    now = set(g.get("uuid") for g in after.get("gpus") or [])
    gone = [g for g in before.get("gpus") or [] if g.get("uuid") not in now]
    return ["GPU %s (%s, PCI %s) was there before the change and is not now"
            % (g.get("index"), g.get("uuid"), g.get("pci_bus_id")) for g in gone]


def _health(after, accept):
    reasons = []
    for gpu in after.get("gpus") or []:
        health = gpu.get("health") or {}
        verdict = health.get("verdict", "ok")
        if verdict not in accept:
            reasons.append("GPU %s (%s) is %s: %s" % (gpu.get("index"), gpu.get("uuid"), verdict,
                                                      "; ".join(health.get("reasons") or []) or "no reason given"))
    return reasons


# The gate's rules, in order; each gives the reasons it finds (none: the rule passes).
RULES = (
    ("reboot", lambda after, before, pending, accept: ["the new driver loads only after a reboot, which did not happen: "
                                                       "%s" % pending] if pending else []),
    ("nvml", lambda after, before, pending, accept: _nvml(after, before)),
    ("gpus", lambda after, before, pending, accept: _missing(after, before)),
    ("health", lambda after, before, pending, accept: _health(after, accept)),
)


def gate(host, after, before, reboot_pending=None, accept=("ok",)):
    """Whether host may have its instances back: {"ok", "failed" (the rules that failed), "reasons", "message"}.

    after, before: device_capabilities gathered after and before the change; reboot_pending: the reason of
    a reboot the driver role needed and did not do (empty or None when none); accept: the GPU health
    verdicts that pass."""
    accept = list(accept)
    unknown = [v for v in accept if v not in VERDICTS]
    if unknown or not accept:
        raise ValueError("exo_rollout_accept_health is %r; give a list of %s (ok alone by default)"
                         % (accept, ", ".join(VERDICTS)))
    if not after or "nvml" not in after:
        return {"ok": False, "failed": ["facts"], "reasons": ["no device facts after the change"],
                "message": "%s: no device facts after the change; the rollout stops here" % host}
    failed, reasons = [], []
    for name, rule in RULES:
        found = rule(after, before or {}, reboot_pending, accept)
        if found:
            failed.append(name)
            reasons.extend(found)
    nvml = after.get("nvml") or {}
    if reasons:
        message = "%s: not healthy after the driver change, its instances stay stopped and the rollout stops here: %s" % (
            host, "; ".join(reasons))
    else:
        message = "%s: healthy after the change: NVML %s%s, %d GPU(s) %s" % (
            host, nvml.get("status"), " driver %s" % nvml["driver_version"] if nvml.get("driver_version") else "",
            len(after.get("gpus") or []), "/".join(accept))
    return {"ok": not reasons, "failed": failed, "reasons": reasons, "message": message}
