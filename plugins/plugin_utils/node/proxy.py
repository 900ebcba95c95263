# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's authenticated front of exo's HTTP API (exo_node_api_proxy): nginx from the
distribution, one server per instance, on its own port (exo_node_api_proxy_port + the slot).

exo e4238f9ef's API (exo/api/chatgpt_api.py) has no authentication and allows any origin. Through
the proxy a request needs one of the operator's bearer tokens, only the origins named get CORS
headers, and the routes that change the host are refused whatever the token (REFUSED). exo's own
port is then the host's alone: the firewall (firewall.py) lets the clients reach the proxy ports
instead. The tokens are never part of a message: an entry is named by its position.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import re

from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import SettingError, show

# RFC 6750's b64token, the characters a bearer token may hold; nginx then needs no quoting for it.
TOKEN_RE = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")
TOKEN_MIN = 16
# An origin as a browser sends it: scheme, host and an optional port, nothing after.
ORIGIN_RE = re.compile(r"^https?://([A-Za-z0-9-]+([.][A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$")
# What nginx would read differently in a path of its configuration: whitespace, quotes, a backslash,
# ';', braces, '$' (a variable) or '#' (a comment).
NGINX_PATH_RE = re.compile(r"^(/[^\s\"'\\;{}$#]*)?$")

# exo e4238f9ef's routes that change the host, refused with 403 whatever the token: (nginx
# location, why). nginx matches the URI decoded and normalized ('//quit', '/%71uit' and
# '/x/../quit' are /quit), before it passes the request on.
REFUSED = (
    ("= /quit", "POST /quit stops exo"),
    ("= /download", "POST /download downloads any model of exo's cards into the host"),
    ("/download/", "below /download, refused with it"),
    ("/models/", "DELETE /models/{model_name} deletes a cached model (exo's only route below /models/)"),
    ("= /create_animation", "POST /create_animation reads a file of the host that the request names"),
)
# exo's streamed routes: each chunk passes as it arrives (proxy_buffering off).
STREAMED = ("/v1/chat/completions", "/chat/completions")
# exo's own limits (--chatgpt-api-response-timeout, 900 s by default; client_max_size, 100 MiB for
# images): nginx waits as long between two chunks and takes bodies as large.
READ_TIMEOUT = 900
BODY_LIMIT = "100m"
# The headers a listed origin's pages may send, and the methods exo's routes take.
CORS_HEADERS = "Authorization, Content-Type"
CORS_METHODS = "GET, POST, OPTIONS"


def read_tokens(name, value):
    """exo_node_api_proxy_tokens as a list of tokens, or SettingError naming each bad entry by position only."""
    if not isinstance(value, (list, tuple)):
        raise SettingError("%s is not a list (its value is not shown: it holds secrets); give a list of tokens, "
                           "each made for example with `openssl rand -hex 32`" % name)
    problems = []
    for position, token in enumerate(value, 1):
        if not isinstance(token, str):
            problems.append("entry %d is not a string" % position)
        elif not token:
            problems.append("entry %d is empty" % position)
        elif not TOKEN_RE.match(token):
            problems.append("entry %d holds whitespace, quotes or other characters a bearer token may not hold "
                            "(RFC 6750: letters, digits and -._~+/, then '=' padding)" % position)
        elif len(token) < TOKEN_MIN:
            problems.append("entry %d is shorter than %d characters" % (position, TOKEN_MIN))
    if problems:
        raise SettingError("%s %s (values not shown: they are secrets); make each token for example with "
                           "`openssl rand -hex 32`" % (name, "; ".join(problems)))
    return list(value)


def origin_errors(origins):
    """One message per exo_node_api_proxy_cors_origins entry that is not an origin."""
    return ["exo_node_api_proxy_cors_origins entry %s is not an origin; give the scheme, host and port a browser "
            "sends, such as https://chat.example.net or http://192.0.2.10:8080, without a path or '*'" % show(origin)
            for origin in origins if not isinstance(origin, str) or not ORIGIN_RE.match(origin)]


def setting_errors(values):
    """The proxy's settings together: tokens to let anyone in, the firewall that keeps exo's own port
    to the host, and a certificate with its key."""
    errors = origin_errors(values.get("exo_node_api_proxy_cors_origins") or [])
    # A path refused on its own is absent from values: it is not counted missing again.
    pair = [values.get(name) for name in ("exo_node_api_proxy_tls_certificate", "exo_node_api_proxy_tls_key")]
    certificate, key = pair
    if None not in pair and bool(certificate) != bool(key):
        errors.append("exo_node_api_proxy_tls_certificate is %s and exo_node_api_proxy_tls_key is %s; give both "
                      "paths on the host for TLS, or neither for plain HTTP" % (show(certificate), show(key)))
    if not values.get("exo_node_api_proxy"):
        return errors
    if "exo_node_api_proxy_tokens" in values and not values["exo_node_api_proxy_tokens"]:
        errors.append("exo_node_api_proxy is true but exo_node_api_proxy_tokens is empty, so the proxy would let "
                      "no request through; give at least one token")
    if values.get("exo_node_firewall") is False:
        errors.append("exo_node_api_proxy is true but exo_node_firewall is false; exo's own API port would stay "
                      "open to everyone beside the proxy. Keep exo_node_firewall: true")
    return errors


def ports(instances, base):
    """Each instance's proxy port by name: base + its slot, as its other ports."""
    return dict((i["name"], int(base) + i["slot"]) for i in instances)


def _listen(port, address):
    """Every address of the family of exo_node_address (IPv6's socket takes IPv4 as well)."""
    try:
        version = ipaddress.ip_address(str(address).strip()).version
    except ValueError:
        version = 4
    return "[::]:%d ipv6only=off" % port if version == 6 else "%d" % port


def token_key(token):
    """The nginx map key that matches exactly 'Authorization: Bearer <token>'. A regular expression,
    which nginx matches case-sensitively (its plain keys are not); '.' and '+' are the only characters
    of a token that mean something there."""
    return "~^Bearer %s$" % re.sub(r"([.+])", r"\\\1", token)


def proxy(instances, base, tokens, address, certificate="", key="", origins=()):
    """What the role's nginx site says: {"servers", "refused", "streamed", "tls", "certificate", "key",
    "cors_origins", "cors_headers", "cors_methods", "token_keys", "read_timeout", "body_limit"}.

    instances: the host's instances (their slot and API port); base: exo_node_api_proxy_port; tokens
    and origins as the settings checked them; address: exo_node_address, whose family the proxy listens on.
    """
    by_port = ports(instances, base)
    servers = [{"instance": i["name"], "port": by_port[i["name"]], "listen": _listen(by_port[i["name"]], address),
                "upstream": "http://127.0.0.1:%d" % i["ports"]["api"]} for i in instances]
    return {
        "servers": servers,
        "refused": [{"location": location, "why": why} for location, why in REFUSED],
        "streamed": list(STREAMED),
        "tls": bool(certificate and key),
        "certificate": certificate or "",
        "key": key or "",
        "cors_origins": sorted(set(origins)),
        "cors_headers": CORS_HEADERS,
        "cors_methods": CORS_METHODS,
        "token_keys": sorted(set(token_key(t) for t in tokens)),
        "read_timeout": READ_TIMEOUT,
        "body_limit": BODY_LIMIT,
    }
