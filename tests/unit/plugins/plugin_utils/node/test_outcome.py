# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run of the node role found (plugins/plugin_utils/node/outcome.py): which instances restart,
their exposure figures, missing device nodes, over the instances the planner gives the recorded facts
of the simulated hosts two and four."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import files, outcome
from tests.helpers import plan_node_ok as ok
from tests.simulated.hosts import uuid


PATHS = {"units": "/etc/systemd/system", "instances": "/etc/exo/instances", "topology": "/etc/exo/topology.json",
         "firewall": "/etc/exo/firewall.nft", "firewall_unit": "exo-firewall.service"}


# The registered results below have the shape Ansible gives a loop over the plan's instances.

def loop(instances, **by_name):
    """A registered loop: one result per instance, with the fields given for it by name."""
    return {"results": [dict(by_name.get(i["name"], {}), item=i) for i in instances]}


def test_only_changed_instances_that_ran_before_restart(probed):
    instances = ok(probed["four"])["instances"]
    envs = loop(instances, **{uuid(1): {"changed": True}, uuid(3): {"changed": True}})
    dropins = loop(instances, **{uuid(2): {"changed": True}})
    before = [uuid(1), uuid(2)]  # GPU 3's instance is new: started, not restarted
    assert outcome.restarts(instances, before, [envs, dropins]) == [uuid(1), uuid(2)]
    assert outcome.restarts(instances, before, [loop(instances), loop(instances)]) == []


def test_the_templates_of_node_files_restart_the_instances_they_name_and_say_what_changed(probed):
    instances = ok(probed["four"])["instances"]
    names = [i["name"] for i in instances]
    layout = files.layout(instances, [], "exo", "exo", "/var/lib/exo", "/etc/exo", PATHS, True, "manual")

    def written(*changed):
        """gpufleet.exo.exo_files' registered results over the templates: the env files in a call of their own."""
        return [{"written": [t["dest"] for t in layout["templates"] if t["dest"] in changed and t["what"] != "env"]},
                {"written": [t["dest"] for t in layout["templates"] if t["dest"] in changed and t["what"] == "env"]}]

    def restarts(*changed):
        return outcome.restarts(instances, before, [], files=layout["templates"], written=written(*changed))

    def kinds(*changed):
        return outcome.kinds_written(layout["templates"], written(*changed))
    before = names[:3]
    dropin = "/etc/systemd/system/exo@%s.service.d/10-gpufleet.conf" % names[1]
    assert restarts(dropin, "/etc/exo/topology.json") == [names[1]]
    assert kinds(dropin)["reload"] and not kinds(dropin)["env"]
    # An instance's env file (its arguments, exo_node_extra_env) restarts it, and needs no reload.
    env = "/etc/exo/instances/%s.env" % names[2]
    assert restarts(env) == [names[2]] and kinds(env)["env"] and not kinds(env)["reload"]
    # The template unit restarts every instance that ran before; the firewall's table none.
    assert restarts("/etc/systemd/system/exo@.service") == before
    assert restarts("/etc/exo/firewall.nft") == []
    # An instance's limits (a new peer, an instance more on the host) take effect at the reload alone.
    limits = "/etc/systemd/system/exo@%s.service.d/20-limits.conf" % names[1]
    assert restarts(limits) == []
    assert kinds(limits)["reload"]
    table = kinds("/etc/exo/firewall.nft")
    assert table["firewall"] and not table["reload"]
    # Skipped (check mode before the plan, a tag): nothing written.
    assert outcome.kinds_written(layout["templates"], [{"skipped": True}])["unit"] is False
    assert outcome.kinds_written(layout["templates"], None)["unit"] is False


def test_a_new_model_link_restarts_the_instances_that_read_it(probed):
    instances = ok(probed["four"])["instances"]
    before = [uuid(n) for n in range(4)]
    # tinygrad keeps a model's files open: an instance must load the new link again
    changed = {"dest": "/var/lib/exo/x/downloads/m/model.safetensors", "instances": [uuid(2)]}
    same = {"dest": "/var/lib/exo/y/downloads/m/model.safetensors", "instances": [uuid(0)]}
    links = {"results": [{"changed": True, "item": changed}, {"changed": False, "item": same}]}
    assert outcome.restarts(instances, before, [loop(instances), links]) == [uuid(2)]


def test_a_new_unit_or_exo_restarts_every_instance_that_ran_before(probed):
    instances = ok(probed["four"])["instances"]
    before = [uuid(n) for n in range(4)]
    assert outcome.restarts(instances, before, [loop(instances)], all_changed=True) == before


def units(**by_name):
    """What gpufleet.exo.exo_unit_check returns: what it found of each unit, by instance name."""
    return {"changed": False, "units": [dict(found, name=name, unit="exo@%s.service" % name) for name, found in by_name.items()]}


def test_an_instance_older_than_its_files_restarts(probed):
    # A run that stopped before its handlers left exo@GPU-1 running on settings older than its files.
    instances = ok(probed["two"])["instances"]
    started = units(**{uuid(0): {"started": 1700000100, "modified": 1700000050},
                       uuid(1): {"started": 1700000100, "modified": 1700000200}})
    assert outcome.restarts(instances, [], [], started=started) == [uuid(1)]
    # Never started, or none of its files could be read: no restart.
    started = units(**{uuid(0): {"started": None, "modified": 1700000200},
                       uuid(1): {"started": 1700000100, "modified": None}})
    assert outcome.restarts(instances, [], [], started=started) == []
    # Check mode skips the module: a skipped result has no units.
    assert outcome.restarts(instances, [], [], started={"skipped": True, "changed": False}) == []


def test_exposure_figures_from_systemd_analyze(probed):
    instances = ok(probed["two"])["instances"]
    security = units(**{uuid(0): {"exposure": "1.6"}, uuid(1): {"exposure": None}})
    assert outcome.findings(instances, "h", units=security)["exposure"] == {uuid(0): "1.6"}
    assert outcome.exposures({"skipped": True, "changed": False}) == {}


def test_missing_device_nodes_and_what_nvidia_modprobe_said(probed):
    devices = {"/dev/nvidia0": True, "/dev/nvidia-uvm-tools": False, "/dev/nvidia-uvm": False}
    found = outcome.findings([], "h", devices=devices, modprobe={"rc": 1, "stderr": "no such module"})
    assert found["missing_devices"] == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"] and found["modprobe_needed"]
    assert found["devices_note"] == ("host h: /dev/nvidia-uvm, /dev/nvidia-uvm-tools missing (nvidia-modprobe: "
                                     "no such module); DeviceAllow= lines for them take effect only once they "
                                     "exist and the instance restarts")
    skipped = outcome.findings([], "h", devices=devices, modprobe={"skipped": True})
    assert "missing; DeviceAllow=" in skipped["devices_note"]
    assert outcome.findings([], "h", devices={"/dev/nvidia0": True}) == {
        "missing_devices": [], "modprobe_needed": False, "devices_note": None, "exposure": {}, "restart": [],
        "written": {"unit": False, "env": False, "dropin": False, "limits": False, "topology": False,
                    "firewall": False, "firewall_unit": False, "reload": False}, "unpatched": None}


def module(name, matches):
    return {"module": name, "origin": "/opt/exo/lib/python3.12/site-packages/%s.py" % name.replace(".", "/"),
            "sha256": "0" * 64, "known": {"1" * 64: "exo e4238f9ef"}, "matches": matches}


def test_the_summary_says_which_modules_run_without_the_patches():
    """gpufleet.exo.exo_venv's result where exo_node_exo_unpatched let an exo the patches do not know in."""
    exo = {"exo_changed": False, "patches": {"checked": "virtualenv", "warning": "...", "unknown": ["...", "..."],
                                             "modules": [module("exo.api.chatgpt_api", False),
                                                         module("exo.orchestration.node", True),
                                                         module("exo.inference.tokenizers", False)]}}
    assert outcome.findings([], "h", exo=exo)["unpatched"] == (
        "exo runs without the collection's patches of exo.api.chatgpt_api, exo.inference.tokenizers, whose sources "
        "they do not know (exo_node_exo_unpatched: true); transformers still runs no code of a model")
    # Every source known, nothing checked (check mode before an install), or no install task in this run (--tags).
    known = {"patches": {"checked": "wheelhouse", "warning": None, "unknown": [],
                         "modules": [module("exo.api.chatgpt_api", True)]}}
    unchecked = {"patches": {"checked": None, "modules": [], "unknown": [], "warning": None}}
    assert [outcome.findings([], "h", exo=e)["unpatched"] for e in (known, unchecked, {}, None)] == [None] * 4
