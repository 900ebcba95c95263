# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The API's proxy (exo_node_api_proxy) for real: the role's nginx site and token file, rendered by
ansible-playbook with the filter node_proxy and the role's templates, served by this machine's nginx
(Debian's package) as a process of the test's own (its prefix, pid and temp files under tmp_path; the
system's nginx service is never touched), in front of a small stand-in for exo on 127.0.0.1 that
answers as exo's routes do and records what reaches it. Shown with real HTTP requests: the tokens,
the stream passing chunk by chunk, exo's administrative routes refused, CORS for the named origins
only, TLS with a self-signed certificate."""

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_proxy as exo_proxy
from tests.helpers import REPO, local_inventory, recap, run_example

TEMPLATES = os.path.join(REPO, "roles", "node", "templates")
# Every character RFC 6750 lets a token hold: '.' and '+' mean something to nginx's regular expressions.
TOKEN = "Tk.9+a/b~c_d-e0123456789=="
OTHER_TOKEN = "0123456789abcdef0123"
ORIGIN = "https://chat.example.net"

pytestmark = pytest.mark.skipif(not shutil.which("nginx") or not shutil.which("openssl"),
                                reason="nginx or openssl is not installed; tests/run.sh integration installs them")


class Exo(BaseHTTPRequestHandler):
    """exo's API as far as the proxy can tell: its routes, its allow-any-origin CORS, a streamed completion.

    The stream's second chunk waits until the test has read the first (release), so the chunks can only
    arrive one by one if nothing between them buffers.
    """
    protocol_version = "HTTP/1.1"
    seen = []
    release = threading.Event()

    def log_message(self, *args):
        pass

    def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(data)

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        Exo.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if (self.command, self.path) == ("POST", "/v1/chat/completions"):
            return self._stream()
        routes = {("GET", "/v1/topology"): {"nodes": {}}, ("GET", "/models"): [], ("POST", "/quit"): {"detail": "Quit"}}
        if (self.command, self.path) in routes:
            return self._reply(200, routes[(self.command, self.path)])
        return self._reply(404, {"detail": "not found"})

    def _stream(self):
        # As aiohttp streams: chunked to an HTTP/1.1 request, else until the connection closes.
        chunked = self.request_version == "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header(*(("Transfer-Encoding", "chunked") if chunked else ("Connection", "close")))
        self.end_headers()
        self.close_connection = not chunked
        for number, text in enumerate(("data: one\n\n", "data: two\n\n", "data: [DONE]\n\n")):
            if number == 1:
                Exo.release.wait(30)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(text), text.encode()) if chunked else text.encode())
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_DELETE = do_OPTIONS = _handle


def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def exo():
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Exo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def render(tmp, api_port, proxy_port, origins, tls):
    """The role's site and token file, as the role renders them: filter node_proxy, then the templates."""
    site, tokens = os.path.join(tmp, "site.conf"), os.path.join(tmp, "tokens")
    instances = [{"name": "cpu", "slot": 0, "ports": {"api": api_port}}]
    variables = {"__exo_node_proxy_conf_path": site, "__exo_node_proxy_tokens_path": tokens,
                 "__exo_node_proxy": "{{ instances | gpufleet.exo.node_proxy(settings) }}",
                 "instances": instances,
                 # As the role's preflight hands them on: checked.
                 "settings": "{{ (given | gpufleet.exo.node_settings('localhost')).settings }}",
                 "given": {"exo_node_api_proxy": True, "exo_node_api_proxy_port": proxy_port,
                           "exo_node_api_proxy_tokens": [TOKEN, OTHER_TOKEN], "exo_node_address": "127.0.0.1",
                           "exo_node_api_proxy_tls_certificate": tls[0], "exo_node_api_proxy_tls_key": tls[1],
                           "exo_node_api_proxy_cors_origins": origins, "exo_node_id_prefix": "test",
                           "exo_node_cluster_hosts": ["localhost"]}}
    play = [{"name": "Render the proxy", "hosts": "all", "gather_facts": False, "vars": variables, "tasks": [
        {"name": "Write the tokens", "ansible.builtin.template": {"src": os.path.join(TEMPLATES, "proxy-tokens.j2"),
                                                                  "dest": tokens, "mode": "0600"}, "no_log": True},
        {"name": "Write the site", "ansible.builtin.template": {"src": os.path.join(TEMPLATES, "proxy.conf.j2"),
                                                                "dest": site, "mode": "0644"}}]}]
    proc = run_example(tmp, json.dumps(play), local_inventory())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    assert TOKEN not in proc.stdout
    return site, tokens


@contextlib.contextmanager
def nginx(tmp, site):
    """nginx as a process of its own around the site, until the block ends."""
    # Workers (nobody, where the test runs as root) write request bodies and buffers there.
    scratch = tempfile.mkdtemp(prefix="exo-proxy-")
    os.chmod(scratch, 0o755)
    if os.geteuid() == 0:
        os.chown(scratch, 65534, 65534)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as handle:
        handle.write("user nobody nogroup;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/error.log;\n"
                     "events { worker_connections 64; }\nhttp {\n  access_log %s/access.log;\n"
                     "  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n  fastcgi_temp_path %s/fastcgi;\n"
                     "  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n  include %s;\n}\n"
                     % ((tmp, tmp, tmp) + (scratch,) * 5 + (site,)))
    command = ["nginx", "-e", "stderr", "-p", tmp, "-c", conf]
    check = subprocess.run(command + ["-t"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                           check=False)
    assert check.returncode == 0, check.stdout
    proc = subprocess.Popen(command + ["-g", "daemon off;"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def connect(port, context=None):
    """A connection once nginx listens on port."""
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "nginx never listened on %d" % port
            time.sleep(0.1)
    if context is not None:
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=context)
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def ask(port, method, path, token=None, headers=None, context=None):
    """(status, headers, body) of one request; headers as a dict of lower-case names."""
    connection = connect(port, context)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = "Bearer " + token
    connection.request(method, path, body=b"{}" if method == "POST" else None, headers=sent)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), body


@pytest.fixture(scope="module")
def plain(exo, tmp_path_factory):
    """The proxy without TLS, with ORIGIN allowed: its port."""
    tmp = str(tmp_path_factory.mktemp("plain"))
    port = free_port()
    site, tokens = render(tmp, exo, port, [ORIGIN], ("", ""))
    with nginx(tmp, site):
        yield {"port": port, "tokens": tokens, "site": site}


def reached(method, path):
    return [seen for seen in Exo.seen if seen[:2] == (method, path)]


def test_the_token_file_is_the_masters_alone_and_the_site_holds_no_token(plain):
    assert os.stat(plain["tokens"]).st_mode & 0o777 == 0o600
    with open(plain["site"]) as handle:
        assert TOKEN not in handle.read()


@pytest.mark.parametrize("token", [
    None,
    "wrong-token-0123456789",
    # what the token would match as a regular expression with '.' and '+' unescaped, or in another
    # case: nginx compares them exactly
    TOKEN.replace("+", ""),
    TOKEN.replace(".", "x").replace("+", ""),
    TOKEN.swapcase(),
    TOKEN + "x",
])
def test_a_request_without_a_valid_token_gets_401_and_never_reaches_exo(plain, token):
    before = len(Exo.seen)
    status, headers, dummy = ask(plain["port"], "GET", "/v1/topology", token)
    assert status == 401
    assert headers.get("www-authenticate") == "Bearer"
    assert len(Exo.seen) == before


@pytest.mark.parametrize("token", [TOKEN, OTHER_TOKEN])
def test_each_token_reaches_exo_which_never_sees_it(plain, token):
    status, headers, body = ask(plain["port"], "GET", "/v1/topology", token)
    assert (status, json.loads(body)) == (200, {"nodes": {}})
    assert reached("GET", "/v1/topology")[-1][2] is None
    assert "www-authenticate" not in headers
    # exo's allow-any-origin header never passes, here to a request without an Origin
    assert "access-control-allow-origin" not in headers


def test_the_stream_arrives_chunk_by_chunk(plain):
    Exo.release.clear()
    connection = connect(plain["port"])
    connection.request("POST", "/v1/chat/completions", body=b"{}", headers={"Authorization": "Bearer " + TOKEN})
    response = connection.getresponse()
    assert response.status == 200
    # exo holds back its second chunk until the first has arrived here: a buffering proxy would stall
    # (the read times out) instead of passing it on.
    first = response.read1(1024) if hasattr(response, "read1") else response.fp.read1(1024)
    assert first == b"data: one\n\n"
    Exo.release.set()
    assert response.read() == b"data: two\n\ndata: [DONE]\n\n"
    connection.close()


@pytest.mark.parametrize("method, path", [
    ("POST", "/quit"),
    ("GET", "/quit"),
    # the same route as nginx decodes and normalizes it before choosing the location
    ("POST", "//quit"),
    ("POST", "/%71uit"),
    ("POST", "/v1/../quit"),
    ("POST", "/quit?now=1"),
    ("POST", "/download"),
    ("POST", "/download/llama-3.2-1b"),
    ("DELETE", "/models/llama-3.2-1b"),
    ("DELETE", "/models/llama-3.2-1b?x=1"),
    ("POST", "/create_animation"),
])
def test_the_administrative_routes_are_refused_even_with_a_token(plain, method, path):
    before = len(Exo.seen)
    assert ask(plain["port"], method, path, TOKEN)[0] == 403
    assert len(Exo.seen) == before
    assert reached("POST", "/quit") == []


def test_the_model_list_next_to_the_refused_routes_still_passes(plain):
    assert ask(plain["port"], "GET", "/models", TOKEN)[0] == 200
    assert reached("GET", "/models")


def test_a_preflight_from_the_named_origin_gets_cors_and_from_another_none(plain):
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    status, headers, dummy = ask(plain["port"], "OPTIONS", "/v1/chat/completions",
                                 headers=dict(preflight, Origin=ORIGIN))
    assert status == 204
    assert headers["access-control-allow-origin"] == ORIGIN
    assert "Authorization" in headers["access-control-allow-headers"]
    assert "POST" in headers["access-control-allow-methods"]
    status, headers, dummy = ask(plain["port"], "OPTIONS", "/v1/chat/completions",
                                 headers=dict(preflight, Origin="https://evil.example.org"))
    assert status == 204
    assert not [name for name in headers if name.startswith("access-control-")]
    assert reached("OPTIONS", "/v1/chat/completions") == []


def test_the_named_origin_gets_its_own_name_instead_of_exos_any(plain):
    status, headers, dummy = ask(plain["port"], "GET", "/v1/topology", TOKEN, headers={"Origin": ORIGIN})
    assert (status, headers["access-control-allow-origin"]) == (200, ORIGIN)
    status, headers, dummy = ask(plain["port"], "GET", "/v1/topology", TOKEN, headers={"Origin": "https://evil.example.org"})
    assert status == 200 and "access-control-allow-origin" not in headers


def site_check(path):
    """What gpufleet.exo.exo_proxy says of a site before it writes it (plugins/module_utils/_exo_proxy.py),
    with this machine's nginx: None where nginx takes it."""
    def run(argv):
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    with open(path) as handle:
        return exo_proxy.site_refusal(shutil.which("nginx"), handle.read(), run)


def test_the_roles_check_takes_the_site_and_refuses_one_nginx_would_not_load(plain, tmp_path):
    assert site_check(plain["site"]) is None
    broken = str(tmp_path / "site.conf")
    with open(plain["site"]) as handle, open(broken, "w") as out:
        out.write(handle.read().replace("listen ", "ssl_certificate /nonexistent/exo.crt;\n\tlisten ", 1))
    refusal = site_check(broken)
    assert refusal and "/nonexistent/exo.crt" in refusal, refusal


def test_tls_with_a_self_signed_certificate_and_no_cors_at_all(exo, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("tls"))
    certificate, key = os.path.join(tmp, "proxy.crt"), os.path.join(tmp, "proxy.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
    port = free_port()
    site, dummy = render(tmp, exo, port, [], (certificate, key))
    context = ssl.create_default_context(cafile=certificate)
    with nginx(tmp, site):
        status, headers, body = ask(port, "GET", "/v1/topology", TOKEN, headers={"Origin": ORIGIN}, context=context)
        assert (status, json.loads(body)) == (200, {"nodes": {}})
        # no origin named: no CORS header, not even exo's own
        assert not [name for name in headers if name.startswith("access-control-")]
        assert ask(port, "GET", "/v1/topology", context=context)[0] == 401
        assert ask(port, "POST", "/quit", TOKEN, context=context)[0] == 403
        # plain HTTP on the TLS port is refused by nginx itself
        assert ask(port, "GET", "/v1/topology", TOKEN)[0] == 400


@pytest.mark.skipif(not shutil.which("nft"), reason="nft is not installed")
def test_the_firewall_lets_the_clients_reach_the_proxy_and_only_the_host_exos_api(tmp_path):
    """The role's nftables table with the proxy on, rendered by the filter node_firewall and its template,
    as nft reads it (nft -c: checked, not loaded)."""
    table = str(tmp_path / "firewall.nft")
    instances = [{"name": "GPU-%d" % slot, "slot": slot, "ports": {"grpc": 50051 + slot, "api": 52415 + slot}}
                 for slot in range(2)]
    variables = {"instances": instances, "cluster": {"peers": {"h-GPU-0": {"address": "10.0.0.1"}}},
                 # As the role's preflight hands them on: checked.
                 "settings": "{{ (given | gpufleet.exo.node_settings('h')).settings }}",
                 "given": {"exo_node_api_clients": ["192.0.2.0/24"], "exo_node_api_proxy": True,
                           "exo_node_api_proxy_tokens": ["t" * 32], "exo_node_id_prefix": "h",
                           "exo_node_address": "10.0.0.1", "exo_node_cluster_hosts": ["h"],
                           # a user every Debian has: nft looks the names up as it reads the table
                           "exo_node_user": "daemon"},
                 "__exo_node_firewall": "{{ instances | gpufleet.exo.node_firewall(cluster, settings, os_family='Debian') }}"}
    play = [{"name": "Render the firewall", "hosts": "all", "gather_facts": False, "vars": variables, "tasks": [
        {"name": "Write the table", "ansible.builtin.template": {"src": os.path.join(TEMPLATES, "firewall.nft.j2"),
                                                                 "dest": table, "mode": "0600"}}]}]
    proc = run_example(str(tmp_path), json.dumps(play), local_inventory())
    assert recap(proc, "localhost")["failed"] == 0, proc.stdout[-4000:]
    check = subprocess.run(["nft", "-c", "-f", table], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, check=False)
    assert check.returncode == 0, check.stdout
    with open(table) as handle:
        rules = [line.strip() for line in handle if "dport" in line]
    assert "tcp dport { 52515, 52516 } ip saddr @clients4 accept" in rules
    # exo's own API: no set may reach it, only the loopback accepted before
    assert [rule for rule in rules if "52415, 52416" in rule and "skuid" not in rule] == [
        "tcp dport { 52415, 52416 } reject with tcp reset"]
    # on the host itself, nginx's worker reaches exo's API; only root and exo's user every port of the ring
    assert 'oifname "lo" tcp dport { 52415, 52416 } meta skuid "www-data" accept' in rules
    assert [rule for rule in rules if rule.startswith('oifname "lo" meta l4proto { tcp, udp }')] == [
        'oifname "lo" meta l4proto { tcp, udp } th dport { 50051, 50052, 52415, 52416 } meta skuid != { "daemon", "root" } '
        'reject']
