# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.exo's changes to exo, made as exo imports the modules they change.

The node role installs this file into exo's virtualenv with gpufleet_exo_patches.pth, which runs
install() whenever a Python of that virtualenv starts. install() puts a finder first on
sys.meta_path that answers only for the modules named in PATCHES: when exo imports one, the finder
hashes its source, and where the sha256 is one the patch was written against it runs the module,
then the patch, before any other module of exo can read it. Any other source (an exo this
collection does not know) is left as exo ships it, and the process says so on stderr (the
instance's journal). Every other import, in exo or in any other program of the virtualenv (pip, the
device probe), goes on as before. Standard library only; nothing here may stop exo from starting.

docs/node.md, "exo's view of its device", "A request whose ring breaks", "One request after another" and
"Models without the internet" say what each patch changes and why.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import asyncio
import collections
import contextvars
import functools
import hashlib
import json
import math
import os
import sys
import time
import weakref

PREFIX = "gpufleet.exo: "


def flag(argv, name):
    """The value of --name in argv, as "--name=value" or "--name value" (the node role writes the first), or None."""
    for index, arg in enumerate(argv):
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
    return None


def own_entry(argv):
    """This instance's device_capabilities in the manual discovery file its command line names, or None.

    The node role writes there each instance's own device (its GPU from NVML and the probe's chip
    table, or the CPU with its memory); without manual discovery there is no such entry.
    """
    node_id, path = flag(argv, "--node-id"), flag(argv, "--discovery-config-path")
    if flag(argv, "--discovery-module") != "manual" or not node_id or not path:
        return None
    with open(path) as handle:
        peer = json.load(handle).get("peers", {}).get(node_id)
    return (peer or {}).get("device_capabilities")


def say(message):
    sys.stderr.write(PREFIX + message + "\n")
    sys.stderr.flush()


def patch_device_capabilities(module):
    """exo describes itself with NVML's GPU 0 whatever CUDA_VISIBLE_DEVICES says, 0.0 flops for the parts
    its table lacks, and all of the host's RAM on the CPU; its ring partitioning splits layers by that
    memory. Patched, an instance describes itself as its own entry of the discovery file says."""
    exos_own = module.device_capabilities

    async def device_capabilities():
        try:
            entry = own_entry(sys.argv[1:])
        except (OSError, ValueError) as problem:
            say("exo describes its device itself: the discovery file cannot be read (%s)" % problem)
            entry = None
        if entry is None:
            return await exos_own()
        described = module.DeviceCapabilities(**entry)
        say("this instance describes its device as the discovery file does: %s" % described)
        return described

    module.device_capabilities = device_capabilities


class RingWatch(object):
    """A node's requests in flight at its API, ended with a reason when the ring they need breaks.

    exo keeps a request open until its API's timeout (900 s by default) when a member of the ring
    leaves mid-answer: the member's layers never answer and nothing tells the request. Each request
    gets a waiter here; a member that leaves the ring (gone from the node's peers, or its connection
    dropped since the last look: a restart keeps its id) sets every waiter, and a request whose next
    step could not be sent sets its own.
    """

    def __init__(self):
        self.waiters = set()
        self.requests = {}  # exo's request id -> the waiter of the API request that started it
        self.connected = set()  # the peers connected at the last look

    def end(self, reason, request_id=None):
        waiters = [self.requests.get(request_id)] if request_id is not None else list(self.waiters)
        for waiter in waiters:
            if waiter is not None and not waiter.done():
                waiter.set_result(reason)

    def forget(self, waiter):
        self.waiters.discard(waiter)
        for request_id in [r for r, w in self.requests.items() if w is waiter]:
            del self.requests[request_id]


WATCHES = weakref.WeakKeyDictionary()
# The waiter of the API request whose task runs (exo starts a request's first step from it).
WAITER = contextvars.ContextVar("gpufleet_exo_waiter", default=None)
# The gate's ticket of the API request whose task runs (Gate, below): Node.process_prompt gives it exo's request
# id, and a request whose ring broke frees its place.
TICKET = contextvars.ContextVar("gpufleet_exo_ticket", default=None)


def ring_watch(node):
    return WATCHES.setdefault(node, RingWatch())


def patch_node(module):
    """Node: tell the ring watch when a member leaves, which request started here, and which could not go on."""
    node_class = module.Node
    exos_update_peers, exos_process_prompt = node_class.update_peers, node_class.process_prompt

    async def update_peers(self, wait_for_peers=0):
        watch = ring_watch(self)
        before = set(peer.id() for peer in self.peers)
        dropped = set([peer.id() for peer in self.peers if peer.id() in watch.connected and not await peer.is_connected()])
        changed = await exos_update_peers(self, wait_for_peers)
        watch.connected = set([peer.id() for peer in self.peers if await peer.is_connected()])
        left = sorted((before - set(peer.id() for peer in self.peers)) | dropped)
        if left:
            watch.end("ring member %s left the ring" % ", ".join(left))
        return changed

    async def process_prompt(self, base_shard, prompt, request_id=None, *args, **kwargs):
        waiter, ticket = WAITER.get(), TICKET.get()
        if waiter is not None and request_id is not None:
            ring_watch(self).requests[request_id] = waiter
        if ticket is not None and request_id is not None:
            ticket.request_id = request_id
        return await exos_process_prompt(self, base_shard, prompt, request_id, *args, **kwargs)

    def forwarding(exos_forward):
        async def forward(self, base_shard, data, request_id, target_index, *args, **kwargs):
            try:
                return await exos_forward(self, base_shard, data, request_id, target_index, *args, **kwargs)
            except Exception as problem:
                ring_watch(self).end("the request's next step, to ring member %s, failed: %s"
                                     % (member(self, target_index), failure(problem)), request_id)
                raise
        return forward

    node_class.update_peers, node_class.process_prompt = update_peers, process_prompt
    node_class.forward_prompt = forwarding(node_class.forward_prompt)
    node_class.forward_tensor = forwarding(node_class.forward_tensor)


def failure(problem):
    """A gRPC error's code and details (its text is a page of debugging output), else the error as it reads."""
    try:
        return "%s, %s" % (problem.code().name, problem.details())
    except Exception:  # not a gRPC error
        return str(problem) or type(problem).__name__


def member(node, target_index):
    """The node id of the ring's partition target_index, as exo's forward_* find it, or its index."""
    try:
        return node.partitioning_strategy.partition(node.topology)[target_index].node_id
    except Exception:  # the ring changed under the request: its index is what is left to say
        return "#%s" % target_index


# How many health checks in a row a member that once answered may miss while its gRPC connection stays up, before
# the ring lets it go: about two minutes (a check every 5 s, each waiting up to 5 s).
HEALTH_MISSES = 12


def patch_peer_handle(module):
    """GRPCPeerHandle: a member whose connection is up stays in the ring through late health checks.

    exo's manual discovery asks each peer of the file every 5 s (HealthCheck, a 5 s deadline) and forgets it at
    its first miss. A member loading a model keeps its Python busy (tinygrad's loading thread holds the GIL), and on
    a loaded host it answered after the deadline: its ring partner forgot it, and the request both were loading the
    model for failed. gRPC's keepalive pings, which gRPC answers outside Python, keep the connection of a busy member
    up and drop a dead or frozen one's within 15 s; a member whose process died closes it at once. So a member that
    answered once and whose connection is up misses up to HEALTH_MISSES - 1 checks in a row; one whose connection is
    down, or that never answered, is unhealthy as exo has it."""
    handle_class = module.GRPCPeerHandle
    exos_health_check = handle_class.health_check

    async def health_check(self):
        misses = getattr(self, "gpufleet_misses", None)  # None: it never answered
        if await exos_health_check(self):
            self.gpufleet_misses = 0
            return True
        if misses is None or not await self.is_connected():
            return False
        self.gpufleet_misses = misses + 1
        if self.gpufleet_misses == 1:
            say("ring member %s missed its health check once; its connection is up, so it stays" % self.id())
        elif self.gpufleet_misses == HEALTH_MISSES:
            say("ring member %s missed its health check %d times in a row; its connection is up: it leaves the ring"
                % (self.id(), HEALTH_MISSES))
        return self.gpufleet_misses < HEALTH_MISSES

    handle_class.health_check = health_check


def patch_chatgpt_api(module):
    """ChatGPTAPI: a chat completion whose ring breaks ends at once, with the reason, instead of at the API's timeout."""
    api_class, web = module.ChatGPTAPI, module.web
    exos_handler = api_class.handle_post_chat_completions

    async def handle_post_chat_completions(self, request):
        watch = ring_watch(self.node)
        waiter = asyncio.get_running_loop().create_future()
        watch.waiters.add(waiter)
        token = WAITER.set(waiter)
        try:
            answer = asyncio.ensure_future(exos_handler(self, request))
        finally:
            WAITER.reset(token)
        try:
            await asyncio.wait([answer, waiter], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the client left, or exo's own timeout
            answer.cancel()
            raise
        finally:
            watch.forget(waiter)
        if answer.done():
            return answer.result()
        answer.cancel()
        detail = "the request ended: %s; retry once the ring has formed again" % waiter.result()
        say(detail)
        ticket = TICKET.get()
        if ticket is not None:  # exo will never compute its last token: its place at the gate is free
            ticket.finished.set()
        if request.writer is not None and request.writer.output_size > 0:
            # A streamed answer has begun: its last event says why, and the stream ends.
            await request.writer.write(("data: %s\n\n" % json.dumps({"error": {"message": detail, "type": "ring_broken"}})).encode())
            await request.writer.write_eof()
            # A response returned now would be written after the stream; raised, aiohttp closes the connection.
            raise ConnectionResetError(detail)
        return web.json_response({"detail": detail}, status=503)

    api_class.handle_post_chat_completions = handle_post_chat_completions


class NoRemoteCode(object):
    """transformers' Auto class auto, whose from_pretrained never runs code from the model's directory."""

    def __init__(self, auto):
        self.auto = auto

    def from_pretrained(self, *args, **kwargs):
        kwargs["trust_remote_code"] = False
        return self.auto.from_pretrained(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.auto, name)


def patch_tokenizers(module):
    """exo loads a model's processor and tokenizer with trust_remote_code=True: a model whose configuration
    maps a class to a *.py of its directory (auto_map) runs that code in exo. Patched, transformers is
    told not to; such a model then fails to load, as transformers says, and no code of it runs.
    patch_remote_code() makes sure of it in transformers itself, whatever exo's source."""
    module.AutoProcessor = NoRemoteCode(module.AutoProcessor)
    module.AutoTokenizer = NoRemoteCode(module.AutoTokenizer)


class RemoteCodeRefused(ValueError):
    """A model's own code that transformers was about to run (a ValueError, as transformers' own refusal is)."""


def refuse_remote_code(what):
    def refuse(*args, **kwargs):
        raise RemoteCodeRefused("gpufleet.exo runs no code of a model (%s %s): this virtualenv's transformers always "
                                "has trust_remote_code=False" % (what, ", ".join(repr(a) for a in args[:2])))
    return refuse


def patch_remote_code(module):
    """transformers.dynamic_module_utils, whatever exo's source and transformers' version: every Auto class (config,
    tokenizer, processor, model, image processor, feature extractor) asks its resolve_trust_remote_code whether to
    run a model's code, and is answered as if trust_remote_code=False were given (a model that has no class but its
    own then fails to load, as transformers says; no interactive question either); the functions that import a
    model's code (get_class_from_dynamic_module, which the pipelines and agents also call, and get_class_in_module)
    refuse. The Auto classes take these names from this module as they are first imported, after the patch."""
    resolve = getattr(module, "resolve_trust_remote_code", None)
    if resolve is not None:
        def resolve_trust_remote_code(*args, **kwargs):
            if args:
                args = (False,) + args[1:]
            else:
                kwargs["trust_remote_code"] = False
            return resolve(*args, **kwargs)
        module.resolve_trust_remote_code = resolve_trust_remote_code
    for name in ("get_class_from_dynamic_module", "get_class_in_module"):
        setattr(module, name, refuse_remote_code(name))


# The model ids the node role placed for an instance (plugins/plugin_utils/node/models.py, instance_env()).
PLACED_ENV = "GPUFLEET_EXO_PLACED_MODELS"
# exo's API routes that load a model, and whether each falls back to exo's default model as its chat
# routes do (a gpt-* name, or one exo has no model card for); the others take the name as given.
MODEL_ROUTES = {"handle_post_chat_completions": True, "handle_post_chat_token_encode": True,
                "handle_post_image_generations": False, "handle_post_download": False}
# Repositories exo answers itself, fetching nothing: its dummy engine's (exo/inference/tokenizers.py,
# resolve_tokenizer; exo/main.py gives that engine a downloader that downloads nothing).
FETCHES_NOTHING = ("dummy",)


class NotPlaced(ValueError):
    """A model this ring does not serve: exo would download it."""


class Offline(FileNotFoundError):
    """A hub lookup of an instance that runs offline. A FileNotFoundError, which exo's download_file_with_retry
    raises at once instead of trying 30 times."""


def placed_models():
    """The model ids this instance serves, or None where the node role placed none: then exo downloads as it ships."""
    value = os.environ.get(PLACED_ENV)
    return None if value is None else [model.strip() for model in value.split(",") if model.strip()]


def offline():
    """Whether this instance runs offline: huggingface_hub's HF_HUB_OFFLINE, as huggingface_hub reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def not_placed(model, asked=None):
    """Why this instance refuses model (asked: the name the request gave, where exo chose model for it), or None."""
    placed = placed_models()
    if placed is None or model in placed:
        return None
    chosen = " (exo's choice for %s)" % json.dumps(asked) if asked not in (None, model) else ""
    return ("the model %s%s is not placed on this ring, which serves %s; exo would download it, and does not here: "
            "the node role places models, so add %s to exo_node_models and run the role again"
            % (model, chosen, ", ".join(placed) or "no model", model))


def model_of(api, data, cards, falls_back):
    """(the model exo loads for a request's body, the name the body gives), as the route's handler reads them."""
    asked = data.get("model", api.default_model if falls_back else None)
    if not falls_back or (isinstance(asked, str) and asked in cards and not asked.startswith("gpt-")):
        return asked, asked
    return api.default_model, asked


def fetched(api, model, cards):
    """Whether exo would fetch model's repository for a request to api: its card names one for api's engine that
    exo does not answer itself. Without a repository exo refuses the model itself (HTTP 400)."""
    repo = (cards.get(model) or {}).get("repo", {}).get(api.inference_engine_classname) if isinstance(model, str) else None
    return repo is not None and repo not in FETCHES_NOTHING


def patch_api_models(module):
    """ChatGPTAPI: a request naming a model that was not placed is answered 404 at once, saying so, instead of
    exo looking it up on the hub (a blocking lookup, retried for minutes) and downloading it on every node."""
    api_class, web, cards = module.ChatGPTAPI, module.web, module.model_cards

    def refusing(exos_handler, falls_back):
        async def handle(self, request):
            try:
                data = await request.json()  # aiohttp keeps the body: exo's handler reads it again
            except Exception:  # not JSON: exo's own answer
                data = None
            if isinstance(data, dict):
                model, asked = model_of(self, data, cards, falls_back)
                refusal = not_placed(model, asked) if fetched(self, model, cards) else None
                if refusal:
                    say(refusal)
                    return web.json_response({"detail": refusal}, status=404)
            return await exos_handler(self, request)
        return handle

    for name, falls_back in MODEL_ROUTES.items():
        setattr(api_class, name, refusing(getattr(api_class, name), falls_back))


# The node role's limits of an instance's API (exo_node_requests_in_flight, exo_node_request_queue): chat
# completions it computes at once, and those it keeps waiting in arrival order; unset, exo admits every request
# as it ships.
REQUESTS_ENV, QUEUE_ENV = "GPUFLEET_EXO_REQUESTS_IN_FLIGHT", "GPUFLEET_EXO_REQUEST_QUEUE"
# The key of the manual discovery file where the role writes what the whole ring computes at once: the sum of
# its instances' exo_node_requests_in_flight, each instance's API being an entry.
RING_REQUESTS_KEY = "ring_requests_in_flight"
# What a refused client is told to wait before any request has been answered here, in seconds.
FIRST_RETRY_AFTER = 10
# The time to first token's histogram, in seconds.
FIRST_TOKEN_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
# (name, type, help): what /metrics says of the instance (docs/node.md, "Many requests at once"), each sample
# labelled with its node id; the requests' only where the role gave the instance its limits.
INSTANCE_METRICS = (
    ("gpufleet_exo_instance_started_seconds", "gauge", "when this exo process started, in seconds since the epoch"),
    ("gpufleet_exo_ring_members", "gauge", "instances of the ring in this instance's view of it (exo's topology)"),
    ("gpufleet_exo_ring_members_expected", "gauge", "instances of the ring the discovery file lists"),
)
REQUEST_METRICS = (
    ("gpufleet_exo_requests_in_flight", "gauge", "chat completions this instance's API is computing"),
    ("gpufleet_exo_requests_queued", "gauge", "chat completions waiting for a place, in arrival order"),
    ("gpufleet_exo_requests_limit", "gauge", "chat completions the instance's API computes at once"),
    ("gpufleet_exo_requests_queue_limit", "gauge", "chat completions it keeps waiting; past them, 429"),
    ("gpufleet_exo_requests_total", "counter", "chat completions that ended, by outcome: answered, failed "
                                               "(an error status or a broken stream), refused (429), left "
                                               "(the client went away while it waited)"),
    ("gpufleet_exo_first_token_seconds", "histogram", "from a request's arrival to its first token"),
)
STARTED = time.time()
OUTCOMES = ("answered", "failed", "refused", "left")


def limit_of(name):
    """A positive integer from the environment variable name, or None where it is unset or not one."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def discovery_file(argv):
    """The manual discovery file of this instance's command line, read now (exo reads a new peer from it without a
    restart), or None where there is none or it cannot be read."""
    path = flag(argv, "--discovery-config-path")
    if flag(argv, "--discovery-module") != "manual" or not path:
        return None
    try:
        with open(path) as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def ring_requests(argv):
    """How many requests the ring computes at once, by the discovery file, else this instance's own limit; None
    without either."""
    value = (discovery_file(argv) or {}).get(RING_REQUESTS_KEY)
    return value if isinstance(value, int) and value > 0 else limit_of(REQUESTS_ENV)


class Ticket(object):
    """One chat completion's place at the gate: when it came, its exo request id, whether exo finished it."""

    def __init__(self):
        self.arrived = time.monotonic()
        self.request_id = None
        self.first_token = None
        self.finished = asyncio.Event()


class QueueFull(Exception):
    def __init__(self, retry_after):
        Exception.__init__(self, retry_after)
        self.retry_after = retry_after


class Gate(object):
    """An instance's admission: at most `limit` chat completions computing, at most `queue` waiting, each let in
    in arrival order; past that a request is refused at once. A place is given back when exo has finished the
    request (its last token), not when the client leaves: exo goes on computing a request whose client left."""

    def __init__(self, limit, queue):
        self.limit, self.queue = limit, queue
        self.running = set()  # the tickets computing
        self.waiting = collections.deque()  # (ticket, future), in arrival order
        self.outcomes = dict((outcome, 0) for outcome in OUTCOMES)
        self.first_tokens = [0] * (len(FIRST_TOKEN_BUCKETS) + 1)
        self.first_token_sum = 0.0
        self.durations = collections.deque(maxlen=16)

    def retry_after(self):
        """Seconds until a place is likely free: the mean of the last answers' times, for every request ahead."""
        mean = sum(self.durations) / len(self.durations) if self.durations else FIRST_RETRY_AFTER
        return max(1, int(math.ceil(mean * (len(self.waiting) + 1) / self.limit)))

    async def enter(self, request):
        """A ticket once the request has a place; QueueFull where none is left; None where the client left."""
        ticket = Ticket()
        if len(self.running) < self.limit and not self.waiting:
            self.running.add(ticket)
            return ticket
        if len(self.waiting) >= self.queue:
            self.outcomes["refused"] += 1
            raise QueueFull(self.retry_after())
        place = asyncio.get_running_loop().create_future()
        self.waiting.append((ticket, place))
        try:
            # aiohttp does not end a handler whose client went away: look at the connection while waiting.
            while not place.done():
                try:
                    await asyncio.wait_for(asyncio.shield(place), timeout=0.5)
                except asyncio.TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break
        except BaseException:  # exo's own timeout (its middleware) ended the request while it waited
            self.abandon(ticket, place)
            raise
        if place.done():
            return ticket
        self.abandon(ticket, place)
        self.outcomes["left"] += 1
        return None

    def abandon(self, ticket, place):
        """A waiting request gone: out of the queue, or, where a place came to it meanwhile, that place given back."""
        if (ticket, place) in self.waiting:
            self.waiting.remove((ticket, place))
        else:
            self.give_back(ticket)

    def leave(self, ticket, outcome):
        """The ticket's request ended for its client; its place waits for exo to finish it."""
        self.outcomes[outcome] += 1
        self.durations.append(time.monotonic() - ticket.arrived)
        if ticket.request_id is None or ticket.finished.is_set():
            self.give_back(ticket)

    def give_back(self, ticket):
        """The ticket's place, to the first waiting request; a ticket given back already has none."""
        if ticket not in self.running:
            return
        self.running.remove(ticket)
        if self.waiting:
            waiting, place = self.waiting.popleft()
            self.running.add(waiting)
            place.set_result(None)

    def on_token(self, request_id, tokens, is_finished):
        """exo's node's on_token: a request's first token, and its end."""
        for ticket in list(self.running):
            if ticket.request_id != request_id:
                continue
            if ticket.first_token is None:
                ticket.first_token = time.monotonic() - ticket.arrived
                self.first_token_sum += ticket.first_token
                bucket = len([b for b in FIRST_TOKEN_BUCKETS if ticket.first_token > b])
                self.first_tokens[bucket] += 1
            if is_finished:
                ticket.finished.set()

    def samples(self):
        """{name: [(labels, value)]} of REQUEST_METRICS (a histogram's as its suffix and labels)."""
        samples = {"gpufleet_exo_requests_in_flight": [("", len(self.running))],
                   "gpufleet_exo_requests_queued": [("", len(self.waiting))],
                   "gpufleet_exo_requests_limit": [("", self.limit)],
                   "gpufleet_exo_requests_queue_limit": [("", self.queue)],
                   "gpufleet_exo_requests_total": [(',outcome="%s"' % o, self.outcomes[o]) for o in OUTCOMES]}
        buckets, count = [], 0
        for bound, number in zip([str(b) for b in FIRST_TOKEN_BUCKETS] + ["+Inf"], self.first_tokens):
            count += number
            buckets.append(('_bucket|,le="%s"' % bound, count))
        samples["gpufleet_exo_first_token_seconds"] = buckets + [("_sum|", "%.3f" % self.first_token_sum),
                                                                 ("_count|", count)]
        return samples


def metrics(node_id, samples, table):
    """Prometheus's text format of table's metrics: samples {name: [(labels, value)]}, each labelled with node_id (a
    label of the form "SUFFIX|LABELS" puts SUFFIX after the metric's name)."""
    node = 'node_id="%s"' % node_id.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lines = []
    for name, kind, help_text in table:
        lines += ["# HELP %s %s" % (name, help_text), "# TYPE %s %s" % (name, kind)]
        for labels, value in samples.get(name, []):
            suffix, dummy, labels = labels.rpartition("|")
            lines.append("%s%s{%s%s} %s" % (name, suffix, node, labels, value))
    return "\n".join(lines) + "\n"


def instance_samples(api):
    """{name: [(labels, value)]} of INSTANCE_METRICS."""
    samples = {"gpufleet_exo_instance_started_seconds": [("", "%.3f" % STARTED)],
               "gpufleet_exo_ring_members": [("", len(getattr(api.node.topology, "nodes", None) or {}))]}
    found = discovery_file(sys.argv[1:])
    if found is not None:
        samples["gpufleet_exo_ring_members_expected"] = [("", len(found.get("peers") or {}))]
    return samples


GATES = weakref.WeakKeyDictionary()


def gate_of(api):
    """The gate of an instance's API, made on its first request from the role's limits; None without them."""
    if api not in GATES:
        limit, queue = limit_of(REQUESTS_ENV), limit_of(QUEUE_ENV)
        GATES[api] = Gate(limit, queue or 0) if limit else None
        if limit:
            api.node.on_token.register("gpufleet-exo-gate").on_next(GATES[api].on_token)
    return GATES[api]


def refused(web, retry_after):
    """HTTP 429 in OpenAI's error form, with Retry-After."""
    message = ("this instance is computing and queueing all the requests it admits; retry in %d s" % retry_after)
    return web.json_response({"error": {"message": message, "type": "requests", "param": None,
                                        "code": "rate_limit_exceeded"}}, status=429,
                             headers={"Retry-After": str(retry_after)})


def patch_api_gate(module):
    """ChatGPTAPI: chat completions are admitted as the role's limits say (Gate), and /metrics says how many are
    in flight, waiting, refused and answered, and their time to first token."""
    api_class, web = module.ChatGPTAPI, module.web
    exos_init, exos_handler = api_class.__init__, api_class.handle_post_chat_completions

    def __init__(self, *args, **kwargs):
        exos_init(self, *args, **kwargs)
        self.app.router.add_get("/metrics", self.gpufleet_metrics)

    async def gpufleet_metrics(self, request):
        gate = gate_of(self)
        text = metrics(self.node.id, instance_samples(self), INSTANCE_METRICS)
        if gate is not None:
            text += metrics(self.node.id, gate.samples(), REQUEST_METRICS)
        return web.Response(text=text, content_type="text/plain", charset="utf-8",
                            headers={"Cache-Control": "no-store"})

    async def handle_post_chat_completions(self, request):
        gate = gate_of(self)
        if gate is None:
            return await exos_handler(self, request)
        try:
            ticket = await gate.enter(request)
        except QueueFull as full:
            return refused(web, full.retry_after)
        if ticket is None:  # its client went away while it waited
            return web.Response(status=499)
        token = TICKET.set(ticket)
        outcome = "failed"
        try:
            response = await exos_handler(self, request)
            outcome = "answered" if response.status < 400 else "failed"
            return response
        finally:
            TICKET.reset(token)
            gate.leave(ticket, outcome)
            if ticket.request_id is not None and not ticket.finished.is_set():
                asyncio.ensure_future(give_back_when_finished(gate, ticket, self.response_timeout))

    api_class.__init__, api_class.gpufleet_metrics = __init__, gpufleet_metrics
    api_class.handle_post_chat_completions = handle_post_chat_completions


async def give_back_when_finished(gate, ticket, timeout):
    """A request whose client left (or whose stream broke) holds its place until exo finishes it, at most timeout."""
    try:
        await asyncio.wait_for(ticket.finished.wait(), timeout)
    except asyncio.TimeoutError:
        say("a request's place was given back after %d s without its last token (exo request %s)"
            % (timeout, ticket.request_id))
    gate.give_back(ticket)


def patch_api(module):
    patch_chatgpt_api(module)
    patch_api_gate(module)
    patch_api_models(module)


def hub_lookup(what, repo_id, revision, path):
    return ("this instance runs offline (HF_HUB_OFFLINE): exo asked its hub for %s of %s%s at %s, which the node "
            "role's placement should hold; run the role again to place the model's files"
            % (what, repo_id, "/" + path if path else "", revision))


def patch_downloads(module):
    """exo's downloader: a model that was not placed is never fetched, whoever asks (the API, a peer's
    SendPrompt or its start_process_prompt status); offline, exo's own lookups (it ignores HF_HUB_OFFLINE)
    fail at once instead of asking the hub."""
    exos_download_shard, exos_file_list, exos_file_meta = (module.download_shard, module.fetch_file_list_with_retry,
                                                           module.file_meta)

    async def download_shard(shard, *args, **kwargs):
        refusal = not_placed(shard.model_id)
        if refusal:
            if not kwargs.get("skip_download"):  # a download, not the API's look at every model's status
                say("a download refused: " + refusal)
            raise NotPlaced(refusal)
        return await exos_download_shard(shard, *args, **kwargs)

    async def fetch_file_list_with_retry(repo_id, revision="main", path=""):
        if offline():
            raise Offline(hub_lookup("the file list", repo_id, revision, path))
        return await exos_file_list(repo_id, revision, path)

    async def file_meta(repo_id, revision, path):
        if offline():
            raise Offline(hub_lookup("the size and checksum", repo_id, revision, path))
        return await exos_file_meta(repo_id, revision, path)

    module.download_shard, module.fetch_file_list_with_retry, module.file_meta = (
        download_shard, fetch_file_list_with_retry, file_meta)


def decode_step(model, x, start_pos, *cache):
    """One decode step of exo's tinygrad model, its KV cache given as tensors of their own: TinyJit takes only
    the tensors among its arguments as inputs, and swaps their buffers on every call."""
    return model.forward_base(x, start_pos, cache=list(cache) or None)


def patch_llama(module):
    """exo's tinygrad models (Transformer, TransformerShard): a request's decode steps read and write its own KV
    cache. exo hands the cache to the model's TinyJit as a list, which TinyJit does not look into: the JIT
    captured on the first request's second decode step keeps that request's cache buffers, and every later
    request's decode steps replay against them. A request after another one then answers from the other's
    context: its first token (from the prompt's own pass, outside the JIT) is right, every token after it is not.
    Patched, the JIT is given the cache's tensors one by one, as inputs that it swaps on every call."""
    for model_class in (module.Transformer, module.TransformerShard):
        exos_init = model_class.__init__

        def __init__(self, *args, exos_init=exos_init, **kwargs):
            exos_init(self, *args, **kwargs)
            if self.forward_jit is not None:
                self.forward_jit = module.TinyJit(functools.partial(decode_step, self))

        def forward(self, x, start_pos, cache=None):
            if x.shape[0:2] == (1, 1) and self.forward_jit is not None and start_pos != 0:
                return self.forward_jit(x, module.Variable("start_pos", 1, self.max_context).bind(start_pos), *(cache or ()))
            return self.forward_base(x, start_pos, cache=cache)

        model_class.__init__, model_class.forward = __init__, forward


def patch_tinygrad_engine(module):
    """exo's tinygrad engine builds the model of a shard once per request that finds it not built yet: requests
    that arrive together before the first answer each build it (a whole model's memory each, the first cause of
    an instance killed for memory). Patched, one builds it and the others wait for it. And it keeps the KV caches
    of 2 requests, dropping the oldest for a third, which then goes on from an empty cache: patched, it keeps
    as many as the role lets into the ring at once (ring_requests())."""
    engine_class = module.TinygradDynamicShardInferenceEngine
    exos_ensure_shard, exos_poll_state = engine_class.ensure_shard, engine_class.poll_state

    async def ensure_shard(self, shard):
        if self.shard == shard:
            return
        loading = self.__dict__.setdefault("gpufleet_loading", asyncio.Lock())
        async with loading:
            return await exos_ensure_shard(self, shard)

    def poll_state(self, x, request_id, max_states=2):
        if request_id not in self.states:  # a new request: the ring may have grown since the last
            self.gpufleet_states = max(max_states, ring_requests(sys.argv[1:]) or 0)
        return exos_poll_state(self, x, request_id, max_states=getattr(self, "gpufleet_states", max_states))

    engine_class.ensure_shard, engine_class.poll_state = ensure_shard, poll_state


# Where a patch applies to the module whatever its source: transformers' own refusal of a model's code.
ANY_SOURCE = None
# module -> ({sha256 of a source the patch was written against: the exo release it comes from}, patch), or
# (ANY_SOURCE, patch). The node role refuses an exo whose sources these tables do not know before it installs
# anything (check(), run by gpufleet.exo.exo_venv with --check), unless the operator opted in to an unpatched exo.
PATCHES = {
    "exo.topology.device_capabilities": (
        {"d0498756e39b7f132a127eb7561394c20086ec229a1430a733520fe38b8c4d73": "exo e4238f9ef"},
        patch_device_capabilities),
    "exo.orchestration.node": ({"c94cf0d1b31b654789398ca2d6e3a976bbe8c62792c9b3b3c1083a8db48f5b25": "exo e4238f9ef"}, patch_node),
    "exo.networking.grpc.grpc_peer_handle": (
        {"70c38635158d804b8c2af2de66c355fb3b4bc7e37e46dcc80dba1ea4948ab938": "exo e4238f9ef"}, patch_peer_handle),
    "exo.api.chatgpt_api": ({"ac7416fe37f509fbedddab63f2e7bea828e6ab372bd9e1e29fb98f0dd5332b8e": "exo e4238f9ef"}, patch_api),
    "exo.download.new_shard_download": (
        {"1542ed63c4fa687f62ae8d5376c1e7310cbb023d6b2721b52d6eaa001364094d": "exo e4238f9ef"}, patch_downloads),
    "exo.inference.tinygrad.models.llama": (
        {"f70a4f9555562b80adf3fccd9f9524d0f5d866aaf8db7b6bec5bd018c0c0a3e7": "exo e4238f9ef"}, patch_llama),
    "exo.inference.tinygrad.inference": (
        {"b8b5e83e2ecdab8c4f5335b88b5c1c9d42e739b97d9bcd21db2f670fe0cc272f": "exo e4238f9ef"}, patch_tinygrad_engine),
    "exo.inference.tokenizers": (
        {"e679c1407433535a1f298936a5045d8fc10c6c190d103d80ef0415e6588eda64": "exo e4238f9ef"}, patch_tokenizers),
    "transformers.dynamic_module_utils": (ANY_SOURCE, patch_remote_code),
}


def digest(data):
    return hashlib.sha256(data).hexdigest()


def sha256(path):
    with open(path, "rb") as handle:
        return digest(handle.read())


def unknown_source(name, origin, found, known):
    """What is said of module name whose source (at origin, with sha256 found) is not one of known, the sources its
    patch was written against; origin None: no source of it was found."""
    where = "%s, sha256 %s" % (origin, found) if origin else "no source of it found"
    return "%s (%s) is not a source this collection knows (%s)" % (
        name, where, ", ".join("sha256 %s of %s" % (h, known[h]) for h in sorted(known)))


class Finder(object):
    """A meta path finder for the modules of PATCHES: the spec the other finders give, its loader patched."""

    def __init__(self, patches=None):
        self.patches = PATCHES if patches is None else patches

    def find_spec(self, name, path=None, target=None):
        if name not in self.patches:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        else:
            return None
        known, patch = self.patches[name]
        if known is not ANY_SOURCE:
            found = sha256(spec.origin) if spec.origin and spec.has_location else None
            if found not in known:
                say("%s: left as exo ships it" % unknown_source(name, spec.origin, found, known))
                return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


def install():
    """Put the finder first, once (a .pth file runs for every Python of the virtualenv)."""
    if not any(isinstance(finder, Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, Finder())


def installed_source(name):
    """(where, content) of module name's source as this Python's import path finds it, without running it or the
    packages above it; (None, None) where it finds none. A directory on the path is searched as Python's own finder
    searches it: a package (with __init__.py) first, then a module, else its part of a namespace package."""
    locations = [entry or os.getcwd() for entry in sys.path]
    for part in name.split("."):
        portions, found = [], None
        for location in locations:
            package = os.path.join(location, part)
            if os.path.isfile(os.path.join(package, "__init__.py")):
                found = (os.path.join(package, "__init__.py"), [package])
            elif os.path.isfile(package + ".py"):
                found = (package + ".py", [])
            elif os.path.isdir(package):
                portions.append(package)
            if found:
                break
        origin, locations = found or (None, portions)
        if not locations and origin is None:
            return None, None
    if origin is None:  # a namespace package has no source
        return None, None
    with open(origin, "rb") as handle:
        return origin, handle.read()


def wheel_source(name, wheels):
    """(where, content) of module name's source in the first of wheels that holds it, as pip would install it (at the
    top of the wheel, or under its .data/purelib or platlib); (None, None) where none does. (Imported here, not at
    the top: the .pth file imports this file at every start of the virtualenv's Python.)"""
    import re
    import zipfile
    relative = name.replace(".", "/")
    member = re.compile(r"^([^/]+\.data/(purelib|platlib)/)?%s(\.py|/__init__\.py)$" % re.escape(relative))
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for entry in sorted(archive.namelist()):
                if member.match(entry):
                    return "%s in %s" % (entry, wheel), archive.read(entry)
    return None, None


def check(wheels=None, patches=None):
    """Whether each module of patches (PATCHES) that is patched only where its source is known is such a source:
    {"modules": [{"module", "origin", "sha256", "known", "matches"}], "unknown": [what unknown_source() says of each
    that is not]}. The sources are read from wheels (paths of wheels: an exo still to be installed), else where this
    Python would import them; none is run."""
    patches = PATCHES if patches is None else patches
    modules, unknown = [], []
    for name in sorted(patches):
        known = patches[name][0]
        if known is ANY_SOURCE:
            continue
        origin, content = wheel_source(name, wheels) if wheels is not None else installed_source(name)
        found = digest(content) if content is not None else None
        modules.append({"module": name, "origin": origin, "sha256": found, "known": known, "matches": found in known})
        if found not in known:
            unknown.append(unknown_source(name, origin, found, known))
    return {"modules": modules, "unknown": unknown}


def main(argv):
    """--check [WHEEL or DIRECTORY OF WHEELS ...]: check()'s answer as JSON on stdout; with no path, of the sources
    this Python imports."""
    if argv[:1] != ["--check"]:
        sys.stderr.write("usage: %s --check [WHEEL or DIRECTORY OF WHEELS ...]\n" % os.path.basename(__file__))
        return 2
    wheels = None
    if argv[1:]:
        wheels = []
        for path in argv[1:]:
            wheels += (sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".whl"))
                       if os.path.isdir(path) else [path])
    sys.stdout.write(json.dumps(check(wheels), sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
