# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """What the fleet can serve (plugins/plugin_utils/fleet/capacity.py), through the filter fleet_capacity.

The facts are those gpufleet.exo.device_facts reports on simulated hosts (tests/simulated/hosts.py: the
simulated libnvidia-ml under the real nvidia-ml-py, simulated /sys), as recorded in
tests/fixtures/simulated; the instances from the node planner with the role's defaults. exo's partitioning itself is checked against real exo in
tests/integration/test_capacity_exo.py.
"""

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.exo.plugins.filter import fleet_capacity as plugin
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity
from tests.simulated import hosts as simhosts

MIB = 1024 * 1024
FLEET = ("four", "mig", "cpu_only", "nvml_broken", "rtx", "reboot")


@pytest.fixture(scope="module")
def facts(probed):
    """Each simulated host's device_capabilities, as the probe reports them."""
    return dict((name, probed[name]) for name in FLEET)


def fleet(facts, hosts, headroom=capacity.HEADROOM, **variables):
    """fleet_capacity over hosts as a play gives them: hostvars with the facts and each host's variables."""
    hostvars = dict((h, dict({"ansible_facts": {"device_capabilities": copy.deepcopy(facts[h])}} if h in facts else {},
                             **variables.get(h, {}))) for h in hosts)
    return plugin.fleet_capacity(hosts, hostvars, headroom=headroom)


def model(report, model_id):
    return next(m for m in report["models"] if m["model"] == model_id)


# ---- the table ----------------------------------------------------------------------------------

def test_parameter_counts_are_the_published_ones():
    # Meta's model cards: Llama 3.2 1B 1.24B, 3B 3.21B, Llama 3.1 8B 8.03B, 70B 70.6B parameters.
    sizes = dict((row["model"], row["parameters"]) for row in capacity.model_sizes())
    assert sizes["llama-3.2-1b"] == 1235814400
    assert sizes["llama-3.2-3b"] == 3212749824
    assert sizes["llama-3.1-8b"] == 8030261248
    assert sizes["llama-3.3-70b"] == 70553706496


def test_every_row_cites_its_sources_and_the_engine_picks_the_set_by_name():
    for row in capacity.model_sizes():
        assert set(row["sources"]) == {"layers", "repo", "parameter_set", "parameters", "dtype_bytes"}
        assert all(source.startswith("exo/") for source in row["sources"].values())
        assert row["layers"] == capacity.PARAMETER_SETS[row["parameter_set"]]["n_layers"]
    assert capacity.parameter_set("llama-3.2-1b-8bit") == "1B"
    assert capacity.parameter_set("llama-3.1-70b-bf16") == "70B"
    assert capacity.parameter_set("LLAMA-3-8B") == "8B"


def test_a_node_needs_its_layers_the_ends_it_holds_and_their_kv_cache():
    p = capacity.PARAMETER_SETS["8B"]
    layer = capacity.layer_parameters(p)
    embedding = p["vocab_size"] * p["dim"]
    kv_per_layer = 2 * 2 * 8192 * 8 * 128   # two prompts, keys and values, max_context, kv heads, head dim
    middle = capacity.share_bytes(p, 4, False, False, 2)
    assert middle == (4 * layer + 4 * kv_per_layer) * 2
    assert capacity.share_bytes(p, 4, True, False, 2) == middle + embedding * 2
    assert capacity.share_bytes(p, 4, False, True, 2) == middle + (embedding + p["dim"]) * 2
    assert capacity.share_bytes(p, 4, False, False, 4) == 2 * middle
    # A tied head is the embedding: one node holding both ends keeps it once.
    tied = capacity.PARAMETER_SETS["1B"]
    both = capacity.share_bytes(tied, 16, True, True, 2)
    assert both == capacity.share_bytes(tied, 16, True, False, 2) + tied["dim"] * 2


# ---- exo's partitioning, by hand ------------------------------------------------------------------

def test_shares_follow_memory_and_round_to_five_places():
    parts = capacity.partition([("small", 1), ("big", 2)])
    assert parts == [("big", 0, 0.66667), ("small", 0.66667, 1.0)]
    assert capacity.shards(parts, 80) == [(0, 52), (53, 79)]


def test_a_node_too_small_for_a_layer_shifts_the_shards_and_the_last_gets_none():
    rows = capacity.assignment([("a", 1000), ("b", 1000), ("tiny", 10), ("c", 5)], 16)
    # Equal memory: exo orders by node id, descending too.
    assert rows == [("b", (0, 6), (0, 6)), ("a", (7, 14), (7, 14)), ("tiny", None, (15, 15)), ("c", (15, 15), None)]


# ---- the fleet ------------------------------------------------------------------------------------

def test_four_h100_serve_every_model_and_the_largest_is_a_70b(facts):
    report = fleet(facts, ["four"])
    assert len(report["nodes"]) == 4
    assert all(m["serves"] for m in report["models"]), [m["missing"] for m in report["models"]]
    assert report["largest"] in [m[0] for m in capacity.MODELS if capacity.parameter_set(m[0]) == "70B"]
    shares = model(report, "llama-3.3-70b")["shares"]
    assert [s["layers"] for s in shares] == [20, 20, 20, 20]
    assert shares[0]["need_mib"] > shares[1]["need_mib"] < shares[3]["need_mib"]  # the embedding and the head


def test_one_h100_serves_8b_not_70b_and_says_how_much_is_missing(facts):
    report = fleet(facts, ["four"], four={"exo_node_gpus": [0]})
    assert [n["instance"] for n in report["nodes"]] == [simhosts.uuid(0)]
    assert model(report, "llama-3.1-8b")["serves"]
    big = model(report, "llama-3.3-70b")
    assert not big["serves"]
    share = big["shares"][0]
    assert share["usable_mib"] == int(81559 * 0.9)
    assert big["short_mib"] == share["need_mib"] - share["usable_mib"] > 60000
    assert big["tight"] == ["four-" + simhosts.uuid(0)]
    assert any("layers 0-79 need %d MiB, %d MiB usable" % (share["need_mib"], share["usable_mib"]) in line
               for line in big["missing"])
    assert report["largest"] in ("llama-3.1-8b", "llama-3-8b")


def test_the_headroom_decides_a_tight_fit(facts):
    report = fleet(facts, ["rtx"], headroom=0.0)
    eight = model(report, "llama-3.1-8b")
    assert eight["serves"]
    margin = min(1 - s["need_mib"] / s["memory_mib"] for s in eight["shares"])
    assert not model(fleet(facts, ["rtx"], headroom=round(margin + 0.01, 2)), "llama-3.1-8b")["serves"]
    assert model(fleet(facts, ["rtx"], headroom=round(margin - 0.01, 2)), "llama-3.1-8b")["serves"]


def test_hosts_that_need_a_driver_or_a_reboot_or_gave_no_facts_stay_out(facts):
    report = fleet(facts, ["four", "nvml_broken", "reboot", "gone"])
    excluded = dict((e["host"], e["reason"]) for e in report["excluded"])
    assert excluded == {"nvml_broken": "driver_needed", "reboot": "pending_reboot", "gone": "no_facts"}
    assert set(n["host"] for n in report["nodes"]) == {"four"}
    rows = dict((h["host"], h) for h in report["hosts"])
    assert rows["reboot"]["pending_reboot"] and rows["nvml_broken"]["driver_needed"]
    assert rows["reboot"]["instances"] == [] and rows["four"]["excluded"] is None
    report = fleet(facts, ["four", "reboot"], four={"exo_node_gpus": [0]})
    assert "left out of the ring: reboot (pending reboot)" in model(report, "llama-3.3-70b")["missing"]


def test_a_host_whose_settings_the_planner_refuses_stays_out_with_its_message(facts):
    report = fleet(facts, ["four", "rtx"], rtx={"exo_node_gpus": [7]})
    [excluded] = report["excluded"]
    assert excluded["host"] == "rtx" and excluded["reason"] == "plan_errors" and "exo_node_gpus" in excluded["detail"]


def test_a_cpu_node_loads_float32_and_a_mixed_fleet_can_lose_the_smallest_model(facts):
    report = fleet(facts, ["four", "mig", "cpu_only", "rtx"])
    nodes = dict((n["node_id"], n) for n in report["nodes"])
    assert nodes["cpu_only-cpu"]["dtype_bytes"] == 4 and nodes["four-" + simhosts.uuid(0)]["dtype_bytes"] == 2
    small = model(report, "llama-3.2-1b")
    # 16 layers over 8 nodes: a 16 GiB node's share is under one layer, and exo's ring breaks.
    assert not small["serves"] and small["empty"] and small["unassigned"]
    assert any(line.startswith("1 of 8 nodes get no layer of their own (") and "1 node(s) at the end of the ring" in line
               for line in small["missing"]), small["missing"]
    assert model(report, "llama-3.3-70b")["serves"]


def test_no_host_serves_nothing(facts):
    report = fleet(facts, ["gone"])
    assert report["largest"] is None and report["nodes"] == []
    assert all(not m["serves"] and m["missing"][0].startswith("no node can run exo") for m in report["models"])


@pytest.mark.parametrize("headroom", [-0.1, 0.95, "lots", None, True])
def test_a_bad_headroom_is_refused_by_name(facts, headroom):
    with pytest.raises(AnsibleFilterError, match="fleet_report_headroom"):
        fleet(facts, ["four"], headroom=headroom)


def test_the_node_role_defaults_that_are_templates_all_have_a_stand_in():
    templated = [name for name, value in plugin.node_defaults().items() if isinstance(value, str) and "{{" in value]
    assert sorted(templated) == sorted(plugin.TEMPLATED_DEFAULTS)
    settings = plugin.host_settings("h1", {"ansible_host": "10.1.2.3", "exo_node_grpc_port": 6000}, ["h1", "h2"],
                                    plugin.node_defaults())
    assert (settings["exo_node_address"], settings["exo_node_cluster_hosts"], settings["exo_node_grpc_port"]) == \
        ("10.1.2.3", ["h1", "h2"], 6000)


def test_a_ring_of_more_nodes_than_layers_serves_nothing():
    model_70b = next(row for row in capacity.model_sizes() if row["model"] == "llama-3.3-70b")
    nodes = [{"node_id": "n%03d" % i, "host": "h%03d" % i, "label": "GPU 0", "memory_mib": 81559, "dtype_bytes": 2}
             for i in range(81)]
    assert capacity.serve(model_70b, nodes[:80])["serves"]
    verdict = capacity.serve(model_70b, nodes)
    assert not verdict["serves"] and len(verdict["empty"]) == len(verdict["unassigned"]) == 1
    assert verdict["short_mib"] == 0 and verdict["tight"] == []


def test_the_fewest_of_the_largest_nodes_that_serve_a_model():
    model_70b = next(row for row in capacity.model_sizes() if row["model"] == "llama-3.3-70b")
    nodes = [{"node_id": "n%03d" % i, "host": "h%03d" % i, "label": "GPU 0", "memory_mib": 81559, "dtype_bytes": 2}
             for i in range(81)]
    ordered = capacity.exo_order(nodes)
    smallest = capacity.fewest_nodes(model_70b, ordered)
    # one H100 holds a 70B share only from two nodes on (about 140 GiB of weights and cache)
    assert len(smallest["shares"]) == 2 and smallest["serves"]
    assert not capacity.serve(model_70b, ordered[:1])["serves"]
    # the search stops at as many nodes as layers: nothing is tried past 80 for 80 layers
    tiny = [dict(n, memory_mib=1024) for n in nodes]
    assert capacity.fewest_nodes(model_70b, capacity.exo_order(tiny)) is None


def test_a_fleet_whose_whole_ring_breaks_names_a_smaller_ring_that_serves(facts):
    report = fleet(facts, ["four", "mig", "cpu_only", "rtx"])
    small = model(report, "llama-3.2-1b")
    assert not small["serves"] and small["fewest_nodes"] == 1
    largest = report["nodes"][0]
    assert small["missing"][0] == "serves on a ring of the fleet's 1 largest node(s): %s %s" % (
        largest["host"], largest["label"])
    served = model(report, "llama-3.3-70b")
    assert served["serves"] and served["missing"] == [] and 1 < served["fewest_nodes"] <= len(report["nodes"])
    assert model(fleet(facts, ["gone"]), "llama-3.2-1b")["fewest_nodes"] is None


# ---- rings by group (exo_node_ring) ---------------------------------------------------------------

SMALL = ["llama-3.2-1b", "llama-3.2-1b-8bit", "llama-3.2-3b", "llama-3.2-3b-8bit", "llama-3.2-3b-bf16"]
UP_TO_8B = SMALL + ["llama-3.1-8b", "llama-3-8b"]
EVERY = [row[0] for row in capacity.MODELS]
# (hosts, each host's variables, {ring: (its hosts, nodes, the models it serves, the largest, its hosts left out)})
RINGS = {
    "two rings of different hardware, each serving its own": (
        ["four", "rtx"], {"four": {"exo_node_ring": "big"}, "rtx": {"exo_node_ring": "small"}},
        {"big": (["four"], 4, EVERY, "llama-3.3-70b", []),
         "small": (["rtx"], 2, UP_TO_8B, "llama-3.1-8b", [])}),
    "the hosts that name no ring, or \"\", are the unnamed one": (
        ["mig", "four", "cpu_only"], {"four": {"exo_node_ring": "big"}, "mig": {"exo_node_ring": ""}},
        {"": (["mig", "cpu_only"], 2, SMALL, "llama-3.2-3b-bf16", []),
         "big": (["four"], 4, EVERY, "llama-3.3-70b", [])}),
    "a host left out is named in its own ring": (
        ["rtx", "four", "reboot", "gone"],
        {"rtx": {"exo_node_ring": "small"}, "reboot": {"exo_node_ring": "small"}, "gone": {"exo_node_ring": "small"}},
        {"": (["four"], 4, EVERY, "llama-3.3-70b", []),
         "small": (["rtx", "reboot", "gone"], 2, UP_TO_8B, "llama-3.1-8b", ["reboot", "gone"])}),
    "a ring of nothing but hosts left out serves nothing": (
        ["four", "reboot"], {"reboot": {"exo_node_ring": "down"}},
        {"": (["four"], 4, EVERY, "llama-3.3-70b", []),
         "down": (["reboot"], 0, [], None, ["reboot"])}),
}


@pytest.mark.parametrize("hosts, variables, rings", list(RINGS.values()), ids=list(RINGS))
def test_each_ring_says_what_it_serves_over_its_own_nodes(facts, hosts, variables, rings):
    report = fleet(facts, hosts, **variables)
    assert [r["ring"] for r in report["rings"]] == sorted(rings)
    for ring in report["rings"]:
        members, nodes, models, largest, excluded = rings[ring["ring"]]
        memory = sum(n["memory_mib"] for n in report["nodes"] if n["host"] in members)
        assert ring == {"ring": ring["ring"], "hosts": members, "nodes": nodes, "memory_mib": memory,
                        "models": models, "largest": largest, "excluded": excluded}
    assert dict((h["host"], h["ring"]) for h in report["hosts"]) == dict(
        (host, name) for name, ring in rings.items() for host in ring[0])


def test_the_unnamed_ring_of_the_whole_play_serves_what_the_fleet_serves(facts):
    # 8 nodes in one ring: the 1B models' ring breaks (a 16 GiB share under one layer), whatever the hosts.
    report = fleet(facts, ["four", "mig", "cpu_only", "rtx"])
    [ring] = report["rings"]
    assert (ring["ring"], ring["hosts"], ring["nodes"]) == ("", ["four", "mig", "cpu_only", "rtx"], 8)
    assert ring["models"] == [m["model"] for m in report["models"] if m["serves"]] and "llama-3.2-1b" not in ring["models"]
    assert ring["largest"] == report["largest"]
    # The same hosts in two rings: each ring is small enough for the 1B models, which the fleet as one ring is not.
    split = fleet(facts, ["four", "mig", "cpu_only", "rtx"], four={"exo_node_ring": "a"}, rtx={"exo_node_ring": "a"})
    assert all("llama-3.2-1b" in ring["models"] for ring in split["rings"])
    assert not model(split, "llama-3.2-1b")["serves"]  # the whole-fleet view stays the one ring of every node
