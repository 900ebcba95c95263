# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/node/files/gpufleet_exo_patches.py on a module shaped as exo's device_capabilities: which entry of the
discovery file an instance reads, and that only a source the table knows is patched; its --check, which the node
role runs before it installs or keeps exo; and transformers' refusal of a model's code, whatever exo's source. Real
exo with the patch: tests/integration/test_exo_wheelhouse.py, test_exo_tokenizers.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import asyncio
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import pytest

from tests.helpers import REPO

SPEC = importlib.util.spec_from_file_location("gpufleet_exo_patches",
                                              os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.py"))
patches = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(patches)

H100 = {"model": "Linux Box (NVIDIA H100 80GB HBM3)", "chip": "NVIDIA H100 80GB HBM3", "memory": 81559,
        "flops": {"fp32": 66.9, "fp16": 989.5, "int8": 1979.0}}
L4 = {"model": "Linux Box (NVIDIA L4)", "chip": "NVIDIA L4", "memory": 23034,
      "flops": {"fp32": 30.3, "fp16": 121.0, "int8": 242.5}}
# What exo's own probe says on a GPU host: NVML's GPU 0 for every instance, whatever it was pinned to.
EXOS_OWN = {"model": "Linux Box (NVIDIA H100 80GB HBM3)", "chip": "NVIDIA H100 80GB HBM3", "memory": 81559,
            "flops": {"fp32": 0, "fp16": 0, "int8": 0}}
# The shape of exo's module: a pydantic model in exo, a plain class here.
MODULE = '''
class DeviceCapabilities(object):
    def __init__(self, model, chip, memory, flops):
        self.model, self.chip, self.memory, self.flops = model, chip, memory, flops

    def to_dict(self):
        return {"model": self.model, "chip": self.chip, "memory": self.memory, "flops": self.flops}

    def __str__(self):
        return "%s %s MB" % (self.model, self.memory)


async def device_capabilities():
    return DeviceCapabilities(**EXOS_OWN)
'''.replace("EXOS_OWN", repr(EXOS_OWN))


@pytest.fixture
def topology(tmp_path):
    path = tmp_path / "topology.json"
    path.write_text(json.dumps({"peers": {"h1-gpu0": {"address": "10.0.0.1", "port": 5678, "device_capabilities": H100},
                                          "h1-gpu1": {"address": "10.0.0.1", "port": 5679, "device_capabilities": L4}}}))
    return str(path)


@pytest.mark.parametrize("argv, expected", [
    (["--node-id=h1-gpu1", "--discovery-module=manual", "--discovery-config-path={t}"], L4),
    (["--node-id", "h1-gpu0", "--discovery-module", "manual", "--discovery-config-path", "{t}"], H100),
    # UDP discovery has no file; an id the file lacks has no entry; a flag without its value is no flag.
    (["--node-id=h1-gpu1", "--discovery-module=udp", "--discovery-config-path={t}"], None),
    (["--node-id=h2-gpu0", "--discovery-module=manual", "--discovery-config-path={t}"], None),
    (["--discovery-module=manual", "--discovery-config-path={t}", "--node-id"], None),
    # exo's --node-id-filter is not --node-id.
    (["--node-id-filter=h1-gpu1", "--discovery-module=manual", "--discovery-config-path={t}"], None),
])
def test_an_instance_reads_its_own_entry_of_the_discovery_file(topology, argv, expected):
    assert patches.own_entry([arg.replace("{t}", topology) for arg in argv]) == expected


@pytest.fixture
def fake_exo(tmp_path, monkeypatch):
    """A package gf_fake_exo.topology.device_capabilities shaped as exo's, importable from tmp_path."""
    package = tmp_path / "gf_fake_exo" / "topology"
    package.mkdir(parents=True)
    for directory in (tmp_path / "gf_fake_exo", package):
        (directory / "__init__.py").write_text("")
    (package / "device_capabilities.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "gf_fake_exo.topology.device_capabilities", hashlib.sha256(MODULE.encode()).hexdigest()
    for name in [n for n in sys.modules if n.startswith("gf_fake_exo")]:
        del sys.modules[name]


def load(name, finder, monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [finder] + sys.meta_path)
    return importlib.import_module(name)


def test_a_known_source_describes_the_instance_as_its_entry(fake_exo, topology, monkeypatch, capsys):
    name, digest = fake_exo
    finder = patches.Finder({name: ({digest: "exo test"}, patches.patch_device_capabilities)})
    module = load(name, finder, monkeypatch)
    monkeypatch.setattr(sys, "argv", ["/opt/exo/bin/exo", "--node-id=h1-gpu1", "--discovery-module=manual",
                                      "--discovery-config-path=" + topology])
    assert asyncio.run(module.device_capabilities()).to_dict() == L4
    assert "gpufleet.exo: this instance describes its device as the discovery file does: Linux Box (NVIDIA L4)" \
        in capsys.readouterr().err
    # Without manual discovery, exo's own answer.
    monkeypatch.setattr(sys, "argv", ["/opt/exo/bin/exo", "--node-id=h1-gpu1"])
    assert asyncio.run(module.device_capabilities()).to_dict() == EXOS_OWN


def test_an_unreadable_discovery_file_leaves_exos_own_answer(fake_exo, tmp_path, monkeypatch, capsys):
    name, digest = fake_exo
    module = load(name, patches.Finder({name: ({digest: "exo test"}, patches.patch_device_capabilities)}), monkeypatch)
    (tmp_path / "broken.json").write_text("{")
    monkeypatch.setattr(sys, "argv", ["exo", "--node-id=a", "--discovery-module=manual",
                                      "--discovery-config-path=%s" % (tmp_path / "broken.json")])
    assert asyncio.run(module.device_capabilities()).to_dict() == EXOS_OWN
    assert "exo describes its device itself: the discovery file cannot be read" in capsys.readouterr().err


def test_a_source_the_table_does_not_know_is_left_as_exo_ships_it(fake_exo, topology, monkeypatch, capsys):
    name, digest = fake_exo
    finder = patches.Finder({name: ({"0" * 64: "exo e4238f9ef"}, patches.patch_device_capabilities)})
    module = load(name, finder, monkeypatch)
    monkeypatch.setattr(sys, "argv", ["exo", "--node-id=h1-gpu1", "--discovery-module=manual",
                                      "--discovery-config-path=" + topology])
    assert asyncio.run(module.device_capabilities()).to_dict() == EXOS_OWN
    assert ("gpufleet.exo: %s (%s, sha256 %s) is not a source this collection knows (sha256 %s of exo e4238f9ef): "
            "left as exo ships it" % (name, module.__file__, digest, "0" * 64)) in capsys.readouterr().err


def test_other_imports_are_not_the_finders(monkeypatch):
    finder = patches.Finder()
    assert finder.find_spec("json") is None and finder.find_spec("exo.main") is None
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    patches.install()
    patches.install()
    assert [type(f).__name__ for f in sys.meta_path].count("Finder") == 1 and isinstance(sys.meta_path[0], patches.Finder)


def test_the_pth_file_installs_the_finder():
    with open(os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.pth")) as handle:
        assert handle.read() == "import gpufleet_exo_patches; gpufleet_exo_patches.install()\n"


# The shapes of exo's Node and ChatGPTAPI that the ring watch wraps: peers with ids and connections, a request
# started from the API's handler, and its next step forwarded to another member.
class Peer(object):
    def __init__(self, name):
        self.name, self.up = name, True

    def id(self):
        return self.name

    async def is_connected(self):
        return self.up


EXOS_DEFAULT = ("exo's default",)


class Node(object):
    def __init__(self, *names):
        self.peers, self.discovered = [Peer(n) for n in names], None

    async def update_peers(self, wait_for_peers=0):
        if self.discovered is not None:
            self.peers = [p for p in self.peers if p.id() in self.discovered]
        return False

    # exo's default is {}: the patch must pass on whatever default exo has, not one of its own.
    async def process_prompt(self, base_shard, prompt, request_id=None, inference_state=EXOS_DEFAULT):
        self.started = (request_id, inference_state)

    async def forward_prompt(self, base_shard, prompt, request_id, target_index, inference_state=None):
        return None

    async def forward_tensor(self, base_shard, tensor, request_id, target_index, inference_state=None):
        raise OSError("UNAVAILABLE")


class Writer(object):
    def __init__(self, output_size):
        self.output_size, self.written, self.eof = output_size, b"", False

    async def write(self, data):
        self.written += data

    async def write_eof(self):
        self.eof = True


class Request(object):
    def __init__(self, request_id, streamed=False):
        self.request_id, self.writer = request_id, Writer(120 if streamed else 0)


class Api(object):
    def __init__(self, node):
        self.node = node

    async def handle_post_chat_completions(self, request):
        # exo's handler: the request's first step, then its tokens, which never come when the ring broke.
        await self.node.process_prompt("shard", "prompt", request_id=request.request_id)
        await asyncio.sleep(3600)


class Web(object):
    @staticmethod
    def json_response(body, status):
        return status, body


@pytest.fixture
def exo(monkeypatch):
    """Node and Api patched as the finder patches exo's modules."""
    node_module = type(sys)("fake_node")
    node_module.Node = type("Node", (Node,), {})
    api_module = type(sys)("fake_api")
    api_module.ChatGPTAPI, api_module.web = type("Api", (Api,), {}), Web
    patches.patch_node(node_module)
    patches.patch_chatgpt_api(api_module)
    return node_module.Node, api_module.ChatGPTAPI


def ring(exo, change, *requests):
    """Requests in flight at a's API, then change(node) and a look at the peers, as exo's loop takes every 2 s."""
    node_class, api_class = exo

    async def scenario():
        node = node_class("b", "c")
        await node.update_peers()
        api = api_class(node)
        answers = [asyncio.ensure_future(api.handle_post_chat_completions(r)) for r in requests]
        await asyncio.sleep(0.01)  # each handler and the request it started have run
        await change(node)
        await node.update_peers()
        done, pending = await asyncio.wait(answers, timeout=1)
        for answer in pending:
            answer.cancel()
        return [a.exception() or a.result() if a in done else "still waiting" for a in answers], node

    return asyncio.run(scenario())


async def leave(node):
    node.discovered = ["c"]


async def restart(node):
    node.peers[0].up = False


async def nothing(node):
    pass


@pytest.mark.parametrize("change, expected", [
    (leave, (503, {"detail": "the request ended: ring member b left the ring; retry once the ring has formed again"})),
    # Restarted between two looks it keeps its id and its place: its dropped connection tells.
    (restart, (503, {"detail": "the request ended: ring member b left the ring; retry once the ring has formed again"})),
    (nothing, "still waiting"),
])
def test_a_request_ends_when_a_member_leaves_the_ring(exo, change, expected, capsys):
    answers, node = ring(exo, change, Request("r1"), Request("r2"))
    assert answers == [expected, expected]
    assert node.started == ("r2", EXOS_DEFAULT), "exo's defaults reach it"
    assert ("gpufleet.exo: the request ended: ring member b left" in capsys.readouterr().err) == (change is not nothing)


def test_a_streamed_answer_ends_with_an_event_that_says_why(exo):
    request = Request("r1", streamed=True)
    answers, dummy = ring(exo, leave, request)
    assert isinstance(answers[0], ConnectionResetError)
    event = json.loads(request.writer.written.decode()[len("data: "):])
    message = "the request ended: ring member b left the ring; retry once the ring has formed again"
    assert event == {"error": {"type": "ring_broken", "message": message}}
    assert request.writer.written.endswith(b"\n\n") and request.writer.eof


def test_a_step_that_cannot_be_sent_ends_its_own_request_only(exo):
    node_class, api_class = exo

    async def scenario():
        node = node_class("b")
        node.partitioning_strategy = type("S", (), {"partition": lambda self, t: [type("P", (), {"node_id": "b"})()]})()
        node.topology = None
        api = api_class(node)
        first, second = (asyncio.ensure_future(api.handle_post_chat_completions(Request(r))) for r in ("r1", "r2"))
        await asyncio.sleep(0.01)  # each handler and the request it started have run
        with pytest.raises(OSError):
            await node.forward_tensor("shard", "tensor", "r1", 0)
        await asyncio.sleep(0)
        assert not second.done()
        second.cancel()
        return await first, patches.ring_watch(node)

    answer, watch = asyncio.run(scenario())
    assert answer == (503, {"detail": "the request ended: the request's next step, to ring member b, failed: "
                                      "UNAVAILABLE; retry once the ring has formed again"})
    assert watch.waiters == set() and watch.requests == {}, "an ended request leaves nothing behind"


def test_an_answer_that_comes_is_exos(exo):
    node_class, api_class = exo

    async def answered(self, request):
        return "exo's answer"

    plain = type("Api", (Api,), {"handle_post_chat_completions": answered})
    module = type(sys)("fake_api2")
    module.ChatGPTAPI, module.web = plain, Web
    patches.patch_chatgpt_api(module)
    node = node_class("b")
    assert asyncio.run(module.ChatGPTAPI(node).handle_post_chat_completions(Request("r1"))) == "exo's answer"
    assert patches.ring_watch(node).waiters == set()


# The shape of exo's tokenizers module: transformers' Auto classes as names of the module, read at each call.
TOKENIZERS = '''
class AutoProcessor(object):
    @classmethod
    def from_pretrained(cls, path, **kwargs):
        return ("processor", path, kwargs)


class AutoTokenizer(AutoProcessor):
    pass


def resolve(path):
    return (AutoProcessor.from_pretrained(path, use_fast=False, trust_remote_code=True),
            AutoTokenizer.from_pretrained(path, trust_remote_code=True))
'''


def test_exos_tokenizers_are_loaded_without_remote_code(tmp_path, monkeypatch):
    package = tmp_path / "gf_fake_tok"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tokenizers.py").write_text(TOKENIZERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    digest = hashlib.sha256(TOKENIZERS.encode()).hexdigest()
    try:
        module = load("gf_fake_tok.tokenizers", patches.Finder({"gf_fake_tok.tokenizers": ({digest: "exo test"},
                                                                                           patches.patch_tokenizers)}),
                      monkeypatch)
        processor, tokenizer = module.resolve("/models/m")
    finally:
        for name in [n for n in sys.modules if n.startswith("gf_fake_tok")]:
            del sys.modules[name]
    assert processor == ("processor", "/models/m", {"use_fast": False, "trust_remote_code": False})
    assert tokenizer[2] == {"trust_remote_code": False}


def test_the_tokenizers_patch_is_written_against_exos_source():
    known, patch = patches.PATCHES["exo.inference.tokenizers"]
    assert patch is patches.patch_tokenizers and list(known.values()) == ["exo e4238f9ef"]


# The node role's check of exo's sources before it installs or keeps them (gpufleet.exo.exo_venv runs the file with
# --check): the table and the hashing of the finder itself.
SCRIPT = os.path.join(REPO, "roles", "node", "files", "gpufleet_exo_patches.py")
KNOWN_CAPABILITIES = "d0498756e39b7f132a127eb7561394c20086ec229a1430a733520fe38b8c4d73"


def test_the_check_names_a_source_it_does_not_know_its_sha256_and_the_known_one(fake_exo):
    name, digest = fake_exo
    table = {name: ({"0" * 64: "exo e4238f9ef", "1" * 64: "exo 1111111"}, patches.patch_device_capabilities),
             "gf_fake_exo.gone": ({"2" * 64: "exo e4238f9ef"}, patches.patch_node),
             "gf_fake_exo.any": (patches.ANY_SOURCE, patches.patch_node)}
    found = patches.check(patches=table)
    origin = os.path.join(sys.path[0], *name.split(".")) + ".py"
    assert found["modules"] == [
        {"module": "gf_fake_exo.gone", "origin": None, "sha256": None, "known": {"2" * 64: "exo e4238f9ef"},
         "matches": False},
        {"module": name, "origin": origin, "sha256": digest, "known": table[name][0], "matches": False}]
    assert found["unknown"] == [
        "gf_fake_exo.gone (no source of it found) is not a source this collection knows (sha256 %s of exo e4238f9ef)"
        % ("2" * 64),
        "%s (%s, sha256 %s) is not a source this collection knows (sha256 %s of exo e4238f9ef, sha256 %s of exo "
        "1111111)" % (name, origin, digest, "0" * 64, "1" * 64)]
    # Nothing was imported to read them.
    assert not [n for n in sys.modules if n.startswith("gf_fake_exo")]
    found = patches.check(patches={name: ({digest: "exo test"}, patches.patch_device_capabilities)})
    assert found["unknown"] == [] and found["modules"][0]["matches"]


def fake_wheel(path, files):
    with zipfile.ZipFile(str(path), "w") as archive:
        for member, text in sorted(files.items()):
            archive.writestr(member, text)
    return str(path)


def test_the_check_reads_exos_wheels_with_the_files_own_table(tmp_path):
    """What the role runs on the host: the file itself with --check, on the wheelhouse pip is about to install from."""
    (tmp_path / "wheels").mkdir()
    fake_wheel(tmp_path / "wheels" / "helper-1.0-py3-none-any.whl", {"helper.py": "VALUE = 1\n"})
    wheel = fake_wheel(tmp_path / "wheels" / "exo-0.0.1-py3-none-any.whl",
                       {"exo/__init__.py": "", "exo/topology/device_capabilities.py": MODULE,
                        "exo-0.0.1.data/purelib/exo/orchestration/node.py": "class Node(object):\n    pass\n"})
    proc = subprocess.run([sys.executable, "-I", SCRIPT, "--check", str(tmp_path / "wheels")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    by_name = dict((m["module"], m) for m in found["modules"])
    # Every module whose patch needs a known source, and no other: transformers' is patched whatever its source.
    assert sorted(by_name) == sorted(n for n, (known, dummy) in patches.PATCHES.items() if known is not None)
    assert "transformers.dynamic_module_utils" in patches.PATCHES and "transformers.dynamic_module_utils" not in by_name
    capabilities = by_name["exo.topology.device_capabilities"]
    assert capabilities["origin"] == "exo/topology/device_capabilities.py in %s" % wheel
    assert capabilities["sha256"] == hashlib.sha256(MODULE.encode()).hexdigest() and not capabilities["matches"]
    assert by_name["exo.orchestration.node"]["origin"].startswith("exo-0.0.1.data/purelib/exo/orchestration/node.py in ")
    assert ("exo.topology.device_capabilities (exo/topology/device_capabilities.py in %s, sha256 %s) is not a source "
            "this collection knows (sha256 %s of exo e4238f9ef)" % (wheel, capabilities["sha256"], KNOWN_CAPABILITIES)
            in found["unknown"])
    assert len(found["unknown"]) == len(by_name)
    proc = subprocess.run([sys.executable, "-I", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert proc.returncode == 2 and "usage:" in proc.stderr


# transformers' own gate of a model's code, as transformers 4.46.3 has it (transformers/dynamic_module_utils.py):
# the Auto classes ask resolve_trust_remote_code, then import the model's class with get_class_from_dynamic_module.
TRANSFORMERS = {
    "__init__.py": "",
    "dynamic_module_utils.py": '''
RAN = []


def resolve_trust_remote_code(trust_remote_code, model_name, has_local_code, has_remote_code):
    if has_remote_code and not has_local_code and not trust_remote_code:
        raise ValueError("Loading %s requires you to execute the configuration file in that repo" % model_name)
    return trust_remote_code


def get_class_from_dynamic_module(class_reference, pretrained_model_name_or_path, **kwargs):
    RAN.append(class_reference)
    return type("ModelsOwn", (object,), {})


def get_class_in_module(class_name, module_path, force_reload=False):
    RAN.append(class_name)
''',
    "auto.py": '''
from .dynamic_module_utils import get_class_from_dynamic_module, resolve_trust_remote_code


class LocalTokenizer(object):
    pass


class AutoTokenizer(object):
    @classmethod
    def from_pretrained(cls, path, trust_remote_code=None, local=False):
        trust_remote_code = resolve_trust_remote_code(trust_remote_code, path, local, True)
        if trust_remote_code:
            return get_class_from_dynamic_module("tokenization_evil.EvilTokenizer", path)
        return LocalTokenizer
''',
}
# exo's tokenizers module, changed: the finder does not know its source, so exo's own patch is not made.
EXO_TOKENIZERS = '''
from transformers.auto import AutoTokenizer


def resolve(path, local=False):
    return AutoTokenizer.from_pretrained(path, trust_remote_code=True, local=local)
'''


@pytest.fixture
def fake_transformers(tmp_path, monkeypatch):
    """A transformers shaped as above and an exo whose tokenizers module no table knows, importable from tmp_path."""
    for package, files in (("transformers", TRANSFORMERS),
                           ("exo", {"__init__.py": ""}), ("exo/inference", {"__init__.py": "",
                                                                            "tokenizers.py": EXO_TOKENIZERS})):
        (tmp_path / package).mkdir()
        for name, text in files.items():
            (tmp_path / package / name).write_text(text)

    def names():
        return [n for n in sys.modules if n.split(".")[0] in ("transformers", "exo")]
    assert names() == []
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in names():
        del sys.modules[name]


def test_transformers_runs_no_code_of_a_model_whatever_exos_source(fake_transformers, monkeypatch, capsys):
    tokenizers = load("exo.inference.tokenizers", patches.Finder(), monkeypatch)
    assert "exo.inference.tokenizers" in patches.PATCHES  # left as it ships: its sha256 is not the known one
    assert "is not a source this collection knows" in capsys.readouterr().err
    dynamic = sys.modules["transformers.dynamic_module_utils"]
    with pytest.raises(ValueError, match="requires you to execute the configuration file"):
        tokenizers.resolve("/models/evil")
    # A model transformers has a class of its own for loads with it, not with the model's.
    assert tokenizers.resolve("/models/evil", local=True).__name__ == "LocalTokenizer"
    for name in ("get_class_from_dynamic_module", "get_class_in_module"):
        with pytest.raises(patches.RemoteCodeRefused, match="gpufleet.exo runs no code of a model"):
            getattr(dynamic, name)("tokenization_evil.EvilTokenizer", "/models/evil")
    assert dynamic.RAN == []


def test_a_request_whose_ring_broke_frees_its_place_at_the_gate(exo):
    """exo never computes the last token of a request whose ring broke: the gate must not wait for it."""
    node_class, api_class = exo

    async def scenario():
        node = node_class("b", "c")
        await node.update_peers()
        ticket = patches.Ticket()
        token = patches.TICKET.set(ticket)  # as the gate sets it around exo's handler
        answer = asyncio.ensure_future(api_class(node).handle_post_chat_completions(Request("r1")))
        patches.TICKET.reset(token)
        await asyncio.sleep(0.01)
        await leave(node)
        await node.update_peers()
        await asyncio.wait([answer], timeout=1)
        return ticket, answer.result()

    ticket, answer = asyncio.run(scenario())
    assert answer[0] == 503 and ticket.request_id == "r1" and ticket.finished.is_set()


class Connection(object):
    def __init__(self):
        self.closing = False

    def is_closing(self):
        return self.closing


class Client(object):
    """What the gate looks at of an aiohttp request: its connection."""

    def __init__(self):
        self.transport = Connection()


def test_the_gate_lets_requests_in_in_arrival_order_and_refuses_past_its_queue():
    async def scenario():
        gate, events = patches.Gate(1, 2), []
        first = await gate.enter(Client())
        waiting = [asyncio.ensure_future(gate.enter(Client())) for dummy in range(2)]
        await asyncio.sleep(0.01)
        with pytest.raises(patches.QueueFull) as refused:
            await gate.enter(Client())
        events.append(("refused", refused.value.retry_after))
        for number, ticket in enumerate([first] + waiting):
            ticket = ticket if number == 0 else await ticket
            events.append(("in", number, len(gate.running), len(gate.waiting)))
            gate.leave(ticket, "answered")
        return gate, events

    gate, events = asyncio.run(scenario())
    # Before any answer, 10 s for each request ahead of the refused one and itself, over the one place.
    assert events == [("refused", 30), ("in", 0, 1, 2), ("in", 1, 1, 1), ("in", 2, 1, 0)]
    assert gate.outcomes == {"answered": 3, "failed": 0, "refused": 1, "left": 0} and not gate.running


def test_a_client_that_leaves_the_queue_is_counted_and_its_place_goes_on():
    async def scenario():
        gate, leaving = patches.Gate(1, 1), Client()
        first = await gate.enter(Client())
        waiting = asyncio.ensure_future(gate.enter(leaving))
        await asyncio.sleep(0.01)
        leaving.transport.closing = True
        left = await asyncio.wait_for(waiting, 2)
        after = asyncio.ensure_future(gate.enter(Client()))
        await asyncio.sleep(0.01)
        gate.leave(first, "answered")
        return gate, left, await asyncio.wait_for(after, 1)

    gate, left, after = asyncio.run(scenario())
    assert left is None and after is not None and gate.outcomes["left"] == 1 and gate.running == {after}


def test_a_place_waits_for_exos_last_token_when_the_client_went_first():
    async def scenario():
        gate = patches.Gate(1, 1)
        ticket = await gate.enter(Client())
        ticket.request_id = "r1"
        gate.leave(ticket, "failed")  # its client left mid-answer: exo computes on
        waiting = asyncio.ensure_future(gate.enter(Client()))
        await asyncio.sleep(0.01)
        held = not waiting.done()
        gate.on_token("r1", [5], False)
        gate.on_token("r1", [5, 6], True)
        gate.give_back(ticket)  # what the API's handler does once the last token came
        return held, await asyncio.wait_for(waiting, 1), ticket

    held, after, ticket = asyncio.run(scenario())
    assert held and after is not None and ticket.first_token is not None


def test_the_metrics_are_prometheus_text_labelled_with_the_node():
    from prometheus_client.parser import text_string_to_metric_families
    gate = patches.Gate(2, 4)
    gate.outcomes["refused"] = 3
    text = patches.metrics('gf-a-"cpu"', gate.samples(), patches.REQUEST_METRICS)
    samples = dict(((s.name, s.labels.get("outcome") or s.labels.get("le")), (s.labels["node_id"], s.value))
                   for family in text_string_to_metric_families(text) for s in family.samples)
    assert samples[("gpufleet_exo_requests_total", "refused")] == ('gf-a-"cpu"', 3)
    assert samples[("gpufleet_exo_requests_limit", None)] == ('gf-a-"cpu"', 2)
    assert samples[("gpufleet_exo_first_token_seconds_bucket", "+Inf")] == ('gf-a-"cpu"', 0)


# GRPCPeerHandle.health_check as exo's manual discovery calls it every 5 s: answered in time or not, and the state of
# the handle's gRPC connection at that moment.
class Handle(object):
    def __init__(self, answers):
        self.answers = list(answers)  # (answered in time, connection up) per check

    def id(self):
        return "gf-b-cpu"

    async def health_check(self):
        self.up = self.answers[0][1]
        return self.answers.pop(0)[0]

    async def is_connected(self):
        return self.up


def checks(answers):
    """What the patched health check says at each of these checks."""
    module = type(sys)("fake_peer_handle")
    module.GRPCPeerHandle = type("GRPCPeerHandle", (Handle,), {})
    patches.patch_peer_handle(module)
    handle = module.GRPCPeerHandle(answers)

    async def scenario():
        return [await handle.health_check() for dummy in range(len(answers))]
    return asyncio.run(scenario())


LATE, DOWN, ANSWERED = (False, True), (False, False), (True, True)


@pytest.mark.parametrize("answers, expected", [
    # busy loading a model: its connection is up, it stays, then answers again
    ([ANSWERED, LATE, LATE, ANSWERED], [True, True, True, True]),
    # its process died or froze: its connection went down
    ([ANSWERED, DOWN], [True, False]),
    # a member that never answered is not taken on trust
    ([LATE, ANSWERED], [False, True]),
    # up but silent for too long: the twelfth late check in a row lets it go
    ([ANSWERED] + [LATE] * patches.HEALTH_MISSES, [True] + [True] * (patches.HEALTH_MISSES - 1) + [False]),
    # an answer starts the count again
    ([ANSWERED] + [LATE] * (patches.HEALTH_MISSES - 1) + [ANSWERED] + [LATE] * (patches.HEALTH_MISSES - 1),
     [True] * (2 * patches.HEALTH_MISSES)),
])
def test_a_member_whose_connection_is_up_stays_through_late_health_checks(answers, expected, capsys):
    assert checks(answers) == expected
    said = capsys.readouterr().err
    if LATE in answers[1:2]:
        assert "gpufleet.exo: ring member gf-b-cpu missed its health check once; its connection is up, so it stays" in said
    if answers[-1] == LATE and expected[-1] is False:
        assert ("gpufleet.exo: ring member gf-b-cpu missed its health check %d times in a row; its connection is up: "
                "it leaves the ring" % patches.HEALTH_MISSES) in said


def test_the_health_check_patch_is_written_against_exos_source():
    known, patch = patches.PATCHES["exo.networking.grpc.grpc_peer_handle"]
    assert patch is patches.patch_peer_handle and list(known.values()) == ["exo e4238f9ef"]
