# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a ring of published instances holds a model (capacity.ring, the filter ring_capacity), from a table."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.exo.plugins.filter.ring_capacity import FilterModule
from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity


def cpu(host, memory):
    return {"node_id": host + "-cpu", "name": "cpu", "kind": "cpu", "gpu_index": None,
            "capabilities": {"model": "Linux Box (CPU)", "chip": "CPU", "memory": memory}}


def gpu(host, index, memory, chip="NVIDIA L4"):
    return {"node_id": "%s-gpu%d" % (host, index), "name": "gpu%d" % index, "kind": "gpu", "gpu_index": index,
            "capabilities": {"model": "Linux Box (%s)" % chip, "chip": chip, "memory": memory}}


CASES = [
    # model, members, serves, what the verdict says
    ("llama-3.2-1b", {"a": [cpu("a", 23900)], "b": [cpu("b", 23900)]}, True, []),
    # 1B on one 2 GB GPU: the whole model and its cache need more (2 bytes a weight on a GPU).
    ("llama-3.2-1b", {"a": [gpu("a", 0, 2048)]}, False,
     ["1026 MiB short on 1 node(s)", "a GPU 0: layers 0-15 need 2869 MiB, 1843 MiB usable"]),
    # 8B on a 16 GB and a 4 GB GPU: the small one's share is short, and it says by how much...
    ("llama-3.1-8b", {"a": [gpu("a", 0, 16384), gpu("a", 1, 4096, "NVIDIA T4")]}, False,
     ["676 MiB short on 1 node(s)", "a GPU 1: layers 25-31 need 4362 MiB, 3686 MiB usable"]),
    # ...while beside a 24 GB one its smaller share fits.
    ("llama-3.1-8b", {"a": [gpu("a", 0, 23034), gpu("a", 1, 4096, "NVIDIA T4")]}, True, []),
    # The CPU backend holds BF16 as float32: twice a GPU's bytes for the same share.
    ("llama-3.2-3b", {"a": [cpu("a", 8192)]}, False, ["a CPU: layers 0-27 need 15840 MiB, 7372 MiB usable"]),
    # A host that published nothing yet is not in the ring.
    ("llama-3.2-1b", {"a": [cpu("a", 23900)], "b": None}, True, []),
]


@pytest.mark.parametrize("model, members, serves, says", CASES)
def test_a_ring_holds_a_model_when_every_share_fits(model, members, serves, says):
    verdict = capacity.ring(model, members)
    assert verdict["serves"] is serves, verdict
    text = "; ".join(verdict["missing"])
    assert all(part in text for part in says), text


def test_the_summary_gives_each_instances_share_and_shortfall():
    verdict = capacity.ring("llama-3.1-8b", {"a": [gpu("a", 0, 16384), gpu("a", 1, 4096, "NVIDIA T4")]})
    assert verdict["summary"] == ["a-gpu0: layers 0-24, 13002 MiB needed of 14745 MiB usable",
                                  "a-gpu1: layers 25-31, 4362 MiB needed of 3686 MiB usable (676 MiB short)"]


@pytest.mark.parametrize("model", ["dummy", "qwen-2.5-7b", "no-such-model"])
def test_a_model_the_table_does_not_size_has_no_verdict(model):
    assert capacity.ring(model, {"a": [cpu("a", 23900)]}) is None


def test_the_filter_reads_each_hosts_published_instances():
    hostvars = {"a": {"ansible_facts": {"exo_node_instances": [gpu("a", 0, 2048)]}},
                "b": {"ansible_facts": {}}}
    verdict = FilterModule().filters()["ring_capacity"]("llama-3.2-1b", ["a", "b", "c"], hostvars)
    assert [s["node_id"] for s in verdict["shares"]] == ["a-gpu0"] and not verdict["serves"]


def test_a_bad_headroom_is_named():
    with pytest.raises(AnsibleFilterError, match="ring_capacity: the headroom is 2; it must be a fraction from 0.0 to 0.9"):
        FilterModule().filters()["ring_capacity"]("llama-3.2-1b", ["a"], {"a": {}}, headroom=2)


def admitting(instance, requests):
    return dict(instance, requests_in_flight=requests)


@pytest.mark.parametrize("members, requests, states", [
    # Instances published before the node role admitted requests count one each; exo keeps two caches at least.
    ({"a": [cpu("a", 23900)]}, 1, 2),
    ({"a": [admitting(cpu("a", 23900), 1)], "b": [admitting(cpu("b", 23900), 1)], "c": None}, 2, 2),
    # Every instance's API is an entry: the ring computes the sum of their limits at once.
    ({"a": [admitting(gpu("a", 0, 3400), 2), admitting(gpu("a", 1, 3400), 2)], "b": [admitting(cpu("b", 8192), 3)]}, 7, 7),
])
def test_a_ring_computes_the_sum_of_its_entries_limits_at_once(members, requests, states):
    assert (capacity.ring_requests(members), capacity.ring_states(members)) == (requests, states)


def test_the_memory_check_counts_a_cache_for_every_request_the_ring_computes_at_once():
    # 1B on a 3400 MiB GPU: weights and exo's two caches (256 MiB each in float16) fit in the 3060 MiB usable;
    # four requests at once need two caches more.
    assert capacity.ring("llama-3.2-1b", {"a": [admitting(gpu("a", 0, 3400), 2)]})["serves"] is True
    verdict = capacity.ring("llama-3.2-1b", {"a": [admitting(gpu("a", 0, 3400), 4)]})
    assert verdict["serves"] is False and verdict["summary"] == [
        "a-gpu0: layers 0-15, 3381 MiB needed of 3060 MiB usable (321 MiB short)"], verdict
