# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/node/files/gpufleet_exo_patches.py on the shapes of exo's ChatGPTAPI and downloader: a model that was
not placed is refused by every route that would load it, and never fetched; offline, exo's own lookups fail at
once. Real exo with the patch: tests/integration/test_exo_placed_models.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import asyncio
import json
import sys

import pytest

from tests.unit.roles.test_exo_patches import patches

TINYGRAD, DUMMY = "TinygradDynamicShardInferenceEngine", "DummyInferenceEngine"
# As exo's model cards (exo/models.py): each engine's repository of a model.
CARDS = {"llama-3.2-1b": {"repo": {TINYGRAD: "unsloth/Llama-3.2-1B-Instruct"}},
         "llama-3.2-3b": {"repo": {TINYGRAD: "unsloth/Llama-3.2-3B-Instruct"}},
         "llama-3.1-8b": {"repo": {TINYGRAD: "mlabonne/Meta-Llama-3.1-8B-Instruct-abliterated"}},
         "dummy": {"repo": {DUMMY: "dummy"}}}
REFUSAL = ("the model llama-3.2-3b is not placed on this ring, which serves llama-3.2-1b; exo would download it, and "
           "does not here: the node role places models, so add llama-3.2-3b to exo_node_models and run the role again")


class Request(object):
    def __init__(self, body):
        self.body = body

    async def json(self):
        return json.loads(self.body)


def exos_route(name):
    async def handle(self, request):
        return ("exo", name)
    return handle


class Web(object):
    @staticmethod
    def json_response(body, status):
        return status, body


@pytest.fixture
def api():
    """exo's ChatGPTAPI's model routes, each answering ("exo", its name), patched as the finder patches them."""
    module = type(sys)("fake_api")
    module.ChatGPTAPI = type("Api", (object,), dict((name, exos_route(name)) for name in patches.MODEL_ROUTES))
    module.web, module.model_cards = Web, CARDS
    patches.patch_api_models(module)
    return module.ChatGPTAPI


@pytest.mark.parametrize("placed, default, route, body, expected", [
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_chat_completions", {"model": "llama-3.2-3b"}, (404, REFUSAL)),
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_chat_completions", {"model": "llama-3.2-1b"}, "exo"),
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_chat_token_encode", {"model": "llama-3.2-3b"}, (404, REFUSAL)),
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_download", {"model": "llama-3.2-3b"}, (404, REFUSAL)),
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_image_generations", {"model": "llama-3.2-3b"}, (404, REFUSAL)),
    # exo's chat routes serve a gpt-* name, or one without a card, with its default model: refused where that is.
    ("llama-3.2-1b", "llama-3.2-1b", "handle_post_chat_completions", {"model": "gpt-4o"}, "exo"),
    ("llama-3.2-1b", "llama-3.1-8b", "handle_post_chat_completions", {"model": "gpt-4o"},
     (404, 'the model llama-3.1-8b (exo\'s choice for "gpt-4o") is not placed on this ring, which serves llama-3.2-1b')),
    ("llama-3.2-1b", "llama-3.1-8b", "handle_post_chat_completions", {},
     (404, "the model llama-3.1-8b is not placed on this ring, which serves llama-3.2-1b")),
    # The download route takes a name without a card as given, and exo refuses it itself.
    ("llama-3.2-1b", "llama-3.1-8b", "handle_post_download", {"model": "llama-9"}, "exo"),
    ("llama-3.2-1b,llama-3.2-3b", "llama-3.2-1b", "handle_post_download", {"model": "llama-3.2-3b"}, "exo"),
    # No models placed by the role: exo as it ships.
    (None, "llama-3.2-1b", "handle_post_chat_completions", {"model": "llama-3.2-3b"}, "exo"),
    ("", "llama-3.2-1b", "handle_post_chat_completions", {"model": "llama-3.2-1b"},
     (404, "the model llama-3.2-1b is not placed on this ring, which serves no model")),
])
def test_a_route_that_would_load_a_model_that_was_not_placed_refuses_it(api, monkeypatch, capsys, placed, default,
                                                                        route, body, expected):
    if placed is None:
        monkeypatch.delenv(patches.PLACED_ENV, raising=False)
    else:
        monkeypatch.setenv(patches.PLACED_ENV, placed)
    instance = api()
    instance.default_model, instance.inference_engine_classname = default, TINYGRAD
    answer = asyncio.run(getattr(instance, route)(Request(json.dumps(body))))
    if expected == "exo":
        assert answer == ("exo", route)
        assert capsys.readouterr().err == ""
    else:
        status, detail = expected
        assert answer[0] == status and answer[1]["detail"].startswith(detail), answer
        assert "gpufleet.exo: " + answer[1]["detail"] in capsys.readouterr().err


@pytest.mark.parametrize("engine, model", [
    # exo's dummy engine serves its dummy model from nothing: there is nothing to download.
    (DUMMY, "dummy"),
    # A model without a repository for the engine: exo refuses it itself (HTTP 400), downloading nothing.
    (TINYGRAD, "dummy"),
    (DUMMY, "llama-3.2-3b"),
])
def test_a_model_exo_would_not_fetch_is_exos_to_answer(api, monkeypatch, engine, model):
    monkeypatch.setenv(patches.PLACED_ENV, "llama-3.2-1b")
    instance = api()
    instance.default_model, instance.inference_engine_classname = "llama-3.2-1b", engine
    for route in patches.MODEL_ROUTES:
        assert asyncio.run(getattr(instance, route)(Request(json.dumps({"model": model})))) == ("exo", route)


def test_a_body_that_is_not_json_is_exos_to_answer(api, monkeypatch):
    monkeypatch.setenv(patches.PLACED_ENV, "llama-3.2-1b")
    instance = api()
    instance.default_model, instance.inference_engine_classname = "llama-3.1-8b", TINYGRAD
    assert asyncio.run(instance.handle_post_chat_completions(Request("{"))) == ("exo", "handle_post_chat_completions")


class Shard(object):
    def __init__(self, model_id):
        self.model_id = model_id


@pytest.fixture
def downloads():
    """exo's downloader module's three functions, each recording its call, patched as the finder patches them."""
    module = type(sys)("fake_downloads")
    module.calls = []

    def exos(name):
        async def call(*args, **kwargs):
            module.calls.append(name)
            return name
        return call

    module.download_shard, module.fetch_file_list_with_retry, module.file_meta = (
        exos("download_shard"), exos("fetch_file_list_with_retry"), exos("file_meta"))
    patches.patch_downloads(module)
    return module


def test_a_model_that_was_not_placed_is_never_fetched(downloads, monkeypatch, capsys):
    monkeypatch.setenv(patches.PLACED_ENV, "llama-3.2-1b")
    with pytest.raises(patches.NotPlaced) as refused:
        asyncio.run(downloads.download_shard(Shard("llama-3.2-3b"), "TinygradDynamicShardInferenceEngine"))
    assert str(refused.value) == REFUSAL and downloads.calls == []
    assert "gpufleet.exo: a download refused: " + REFUSAL in capsys.readouterr().err
    # The API's look at every model's status (GET /modelpool) refuses it too, without a line per model.
    with pytest.raises(patches.NotPlaced):
        asyncio.run(downloads.download_shard(Shard("llama-3.2-3b"), "x", None, skip_download=True))
    assert capsys.readouterr().err == ""
    assert asyncio.run(downloads.download_shard(Shard("llama-3.2-1b"), "TinygradDynamicShardInferenceEngine")) \
        == "download_shard"
    monkeypatch.delenv(patches.PLACED_ENV)
    assert asyncio.run(downloads.download_shard(Shard("llama-3.2-3b"), "x")) == "download_shard"


@pytest.mark.parametrize("value, is_offline", [("1", True), ("true", True), ("ON", True), ("yes", True),
                                               ("0", False), ("", False), (None, False)])
def test_offline_exos_own_lookups_fail_at_once(downloads, monkeypatch, value, is_offline):
    if value is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
    lookups = (downloads.fetch_file_list_with_retry("unsloth/Llama-3.2-1B-Instruct"),
               downloads.file_meta("unsloth/Llama-3.2-1B-Instruct", "main", "model.safetensors"))
    if not is_offline:
        assert [asyncio.run(lookup) for lookup in lookups] == ["fetch_file_list_with_retry", "file_meta"]
        return
    messages = []
    for lookup in lookups:
        # A FileNotFoundError: exo's download_file_with_retry gives up at once on one.
        with pytest.raises(FileNotFoundError) as refused:
            asyncio.run(lookup)
        messages.append(str(refused.value))
    assert downloads.calls == []
    assert messages == [
        "this instance runs offline (HF_HUB_OFFLINE): exo asked its hub for the file list of "
        "unsloth/Llama-3.2-1B-Instruct at main, which the node role's placement should hold; run the role again to "
        "place the model's files",
        "this instance runs offline (HF_HUB_OFFLINE): exo asked its hub for the size and checksum of "
        "unsloth/Llama-3.2-1B-Instruct/model.safetensors at main, which the node role's placement should hold; run "
        "the role again to place the model's files"]


def test_the_patches_are_written_against_exos_sources():
    assert [(name, patch.__name__, list(known.values())) for name, (known, patch) in sorted(patches.PATCHES.items())
            if name in ("exo.api.chatgpt_api", "exo.download.new_shard_download")] == [
        ("exo.api.chatgpt_api", "patch_api", ["exo e4238f9ef"]),
        ("exo.download.new_shard_download", "patch_downloads", ["exo e4238f9ef"])]
