# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPUs a CUDA process would see: the CUDA driver's own answer where it can be asked, else its rules.

The authority is the driver. Where libcuda.so.1 loads, the probe asks it (the ``cuda`` mode of
_tinygrad_child.py) and the facts follow its answer (``source: driver``); the rules below still
read the same environment, and ``rules_agree`` says whether they reached the same devices, so that
hosts without the driver can trust them as far as the driver confirms them. The rules below were read off a real one (580.159.04, CUDA 13.0, one
H100; tests/fixtures/real-h100/cuda_visible_devices.json: 26 values, each with and without
CUDA_DEVICE_ORDER=PCI_BUS_ID, and what cuInit, cuDeviceGetCount and cuDeviceGetUuid answered) and,
where one GPU cannot tell, from NVIDIA's CUDA programming guide ("CUDA Environment Variables"). Each
rule says which; "extrapolated" marks what neither shows on a host with several GPUs.

- Unset: every GPU. Set but empty (or only blanks): none.
- Entries are separated by commas; an entry is an index, a GPU or MIG UUID (or a unique prefix of
  one), or the legacy MIG form MIG-GPU-<uuid>/<gpu instance>/<compute instance>.
- The first entry that names no device ends the list; the devices before it are visible, numbered
  from 0 in the order given.
- A device named twice makes cuInit fail with CUDA_ERROR_INVALID_DEVICE (101): no GPU at all.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

ORDERS = ("FASTEST_FIRST", "PCI_BUS_ID")

# cuInit's answers when the list leaves a CUDA program without a GPU.
NO_DEVICE = (100, "CUDA_ERROR_NO_DEVICE")
INVALID_DEVICE = (101, "CUDA_ERROR_INVALID_DEVICE")

# Blanks around an entry do not count: " 0" and "0 " both named GPU 0 on the real driver.
# Extrapolated: the same for blanks around a UUID.
BLANKS = " \t\n\r\v\f"


def _by_index(match, order):
    position = int(match.group(1))
    return [(order[position], None)] if position < len(order) else []


def _by_instance_ids(match, order):
    ids = [int(match.group(2)), int(match.group(3))]
    return [(gpu, mig) for gpu, mig in _devices(order) if mig is not None and gpu.get("uuid") == match.group(1)
            and [mig.get("gpu_instance_id"), mig.get("compute_instance_id")] == ids]


def _by_uuid_prefix(match, order):
    return [(gpu, mig) for gpu, mig in _devices(order)
            if (_digits((mig or gpu).get("uuid")) or "").startswith(match.group(1))]


# The forms an entry may take, tried in order: (kind, pattern, the devices it names). An entry
# that matches none ("abc", "G", "af19d7dd" without "GPU-", "gpu-..." in lower case: each named
# nothing on the real driver) names nothing and ends the list; so does one naming no device or,
# for a UUID prefix, more than one.
FORMS = (
    # A decimal number, optionally with "+": "+0" named GPU 0 on the real driver (it reads numbers
    # the way strtol does); "-1" named nothing, the documented way to end a list on purpose; "1"
    # and "2" (beyond the one GPU) named nothing. Extrapolated: characters after the digits ("0x1",
    # "0abc") make the entry name nothing.
    ("index", re.compile(r"\+?([0-9]+)$"), _by_index),
    # The legacy MIG form, from the programming guide: a MIG device by its GPU's UUID and its GPU
    # and compute instance ids. With MIG off (the real H100) it named nothing.
    ("uuid", re.compile(r"MIG-(GPU-[^/]+)/([0-9]+)/([0-9]+)$"), _by_instance_ids),
    # A UUID or a prefix of one after "GPU-" or "MIG-", case-sensitive ("gpu-..." named nothing).
    # The driver compares the part after the tag with every device's UUID whatever its tag:
    # "MIG-<the GPU's UUID digits>" named the (non-MIG) GPU on the real driver. The prefix must be
    # non-empty ("GPU-" alone named nothing) and, per the guide, name one device on the host
    # (extrapolated: a prefix two devices share names nothing).
    ("uuid", re.compile(r"(?:GPU|MIG)-(.+)$"), _by_uuid_prefix),
)


def cuda_order(gpus, device_order):
    """The GPUs in CUDA's enumeration order.

    Extrapolated (the real table has one GPU): the guide says indices follow nvidia-smi with
    PCI_BUS_ID; the default FASTEST_FIRST puts faster parts first, bus order among equals.
    """
    by_bus = sorted(gpus, key=lambda gpu: gpu.get("pci_bus_id") or "")
    if device_order == "PCI_BUS_ID":
        return by_bus
    # CUDA's "fastest" heuristic is undocumented; peak FP32 is the closest published proxy.
    return sorted(by_bus, key=lambda gpu: -((gpu.get("flops") or {}).get("fp32") or 0.0))


def _digits(uuid):
    """A UUID without its GPU-/MIG- tag: what an entry's part after its own tag is compared with."""
    tag, sep, rest = (uuid or "").partition("-")
    return rest if sep and tag in ("GPU", "MIG") else None


def _devices(order):
    """Every (gpu, mig_device) an entry could name, GPUs first."""
    found = [(gpu, None) for gpu in order]
    for gpu in order:
        found += [(gpu, mig) for mig in (gpu.get("mig") or {}).get("devices") or []]
    return found


def _read(entry, order):
    """(kind, (gpu, mig_device)) for one entry, or (None, None) when it names nothing."""
    entry = entry.strip(BLANKS)
    for kind, pattern, named in FORMS:
        match = pattern.match(entry)
        if match:
            found = named(match, order)
            return (kind, found[0]) if len(found) == 1 else (None, None)
    return None, None


def _label(gpu, mig):
    return "%s %d (%s)" % ("MIG device of GPU" if mig else "GPU", gpu["index"], (mig or gpu).get("uuid"))


def _init_error(error, reason):
    return {"code": error[0], "name": error[1], "reason": reason}


def by_rules(gpus, cuda_visible_devices=None, device_order=None):
    """The visible section of the facts for these GPUs (shaped GPU entries) and this environment, by the rules."""
    device_order = device_order if device_order in ORDERS else "FASTEST_FIRST"
    order = cuda_order(gpus, device_order)
    invalid = None
    init_error = None
    if cuda_visible_devices is None:
        chosen = [(gpu, None) for gpu in order]
    else:
        chosen, kinds = [], []
        for entry in (cuda_visible_devices.split(",") if cuda_visible_devices.strip(BLANKS) else []):
            kind, found = _read(entry, order)
            if found is not None and found in chosen:
                # "0,0" made cuInit fail with 101 on the real driver, while "GPU-af19d7dd,0" (the
                # same GPU by UUID prefix, then by index) showed the GPU once without an error: a
                # repeat in the same kind of entry is fatal, in another kind it ends the list.
                # Extrapolated: a UUID repeated as a UUID (any tag or prefix) is fatal too.
                if kinds[chosen.index(found)] == kind:
                    init_error = _init_error(INVALID_DEVICE, "CUDA_VISIBLE_DEVICES=%r names %s twice: cuInit fails "
                                             "with CUDA_ERROR_INVALID_DEVICE (101) and a CUDA program sees no GPU"
                                             % (cuda_visible_devices, _label(*found)))
                    chosen = []
                    break
                found = None
            if found is None:
                invalid = entry
                break
            chosen.append(found)
            kinds.append(kind)
        if not chosen and gpus and init_error is None:
            init_error = _init_error(NO_DEVICE, "CUDA_VISIBLE_DEVICES=%r %s: cuInit fails with CUDA_ERROR_NO_DEVICE "
                                     "(100) and a CUDA program sees no GPU"
                                     % (cuda_visible_devices, "names no GPU (entry %r)" % invalid
                                        if invalid is not None else "is empty"))
    return {
        "cuda_visible_devices": cuda_visible_devices,
        "device_order": device_order,
        "devices": [{"cuda_index": position, "index": gpu["index"], "uuid": gpu.get("uuid"),
                     "mig_uuid": mig.get("uuid") if mig else None}
                    for position, (gpu, mig) in enumerate(chosen)],
        "invalid_entry": invalid,
        "cuda_init_error": init_error,
    }


def _driver_error(code, name):
    return "the CUDA driver's cuInit returned %s (%d): a CUDA program sees no GPU" % (name or "an unnamed error", code)


def _from_driver(gpus, answer):
    """(devices, cuda_init_error) from the CUDA driver's answer, each device matched to NVML's GPUs by UUID."""
    if answer["status"] == "init_error":
        error = answer["init_error"]
        return [], _init_error((error["code"], error["name"]), _driver_error(error["code"], error["name"]))
    devices = []
    for position, device in enumerate(answer["devices"]):
        matched = [(gpu, mig) for gpu, mig in _devices(gpus) if _digits((mig or gpu).get("uuid")) == device["uuid"]]
        gpu, mig = matched[0] if matched else ({"index": None, "uuid": "GPU-" + device["uuid"]}, None)
        devices.append({"cuda_index": position, "index": gpu["index"], "uuid": gpu.get("uuid"),
                        "mig_uuid": mig.get("uuid") if mig else None})
    return devices, None


def _reading(facts):
    return {"devices": [device["mig_uuid"] or device["uuid"] for device in facts["devices"]],
            "cuda_init_error": (facts["cuda_init_error"] or {}).get("code")}


def resolve(gpus, cuda_visible_devices=None, device_order=None, driver=None):
    """The visible section of the facts: the driver's answer where ``driver`` holds one, else the rules'.

    ``driver``: the child's ``cuda`` answer, or ``{"status": "timeout"|"error"|"not_asked", "message": ...}``
    when there is none (None: not asked).
    """
    facts = by_rules(gpus, cuda_visible_devices, device_order)
    driver = driver or {"status": "not_asked", "message": None}
    facts.update(source="rules", driver={"status": driver["status"], "message": driver.get("message")},
                 rules_agree=None, rules_reading=None)
    if driver["status"] not in ("ok", "init_error"):
        return facts
    devices, init_error = _from_driver(gpus, driver)
    answered = {"devices": devices, "cuda_init_error": init_error}
    rules_reading = _reading(facts)
    agree = _reading(answered) == rules_reading
    facts.update(source="driver", rules_agree=agree)
    if not agree:
        # The rules' invalid entry and reason explain a reading the driver did not make.
        facts.update(answered, invalid_entry=None, rules_reading=rules_reading)
    return facts


# The device order of the environments per_gpu() resolves: the node role's, for every GPU instance.
PER_GPU_ORDER = "PCI_BUS_ID"


def per_gpu_values(gpus):
    """The CUDA_VISIBLE_DEVICES of a process given one GPU or MIG device alone, by UUID, as the node role
    gives each instance its own: every GPU, then every MIG device."""
    return [(mig or gpu).get("uuid") for gpu, mig in _devices(gpus) if (mig or gpu).get("uuid")]


def per_gpu_entry(section):
    """One entry of ``visible.per_gpu``: what a resolve() section says such a process sees."""
    return {"cuda_visible_devices": section["cuda_visible_devices"], "device_order": section["device_order"],
            "source": section["source"], "devices": _reading(section)["devices"],
            "cuda_init_error": section["cuda_init_error"], "rules_agree": section["rules_agree"]}
