# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API's proxy on the host, as the module gpufleet.exo.exo_proxy sets it up or removes it: plain
functions over a runner of commands and a writer of files, so that the steps and their order read in
one place.

Only the role's two files are written or removed (the site in conf.d and the token file in a
directory of its own); nginx's own configuration and every other site stay as they are. A site is
checked by `nginx -t` alone, in a configuration of its own, before it reaches conf.d: there a site
nginx refuses would stop nginx's next start, other sites included. nginx keeps its old configuration
when a reload finds the new one wrong, and the reload succeeds all the same: the whole is checked
too, with the site among the others, before the reload.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import tempfile

from ansible_collections.gpufleet.exo.plugins.module_utils._root_files import read

UNIT = "nginx.service"
# A configuration that holds nothing but the site, for `nginx -t -c`.
ALONE = "events {}\nhttp { include %s; }\n"


class ProxyRefused(Exception):
    """What stops the proxy's setup; its message is the module's."""


def site_refusal(nginx, site, run):
    """What `nginx -t` says of the site alone, or None where it takes it."""
    scratch = tempfile.mkdtemp(prefix="gpufleet-exo-proxy-")
    try:
        path, conf = os.path.join(scratch, "site.conf"), os.path.join(scratch, "nginx.conf")
        with open(path, "w") as handle:
            handle.write(site)
        with open(conf, "w") as handle:
            handle.write(ALONE % path)
        rc, out, err = run([nginx, "-t", "-q", "-c", conf])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None if rc == 0 else (err or out).strip().replace(path, "the site")


def _service(params, run, check_mode, files_changed):
    """nginx enabled and, where systemd runs, started, or reloaded where its files changed: what changed."""
    systemctl = params["systemctl"]
    done = []
    if run([systemctl, "is-enabled", UNIT])[0] != 0:
        done.append("enabled")
    if params["systemd_running"]:
        if run([systemctl, "is-active", UNIT])[0] != 0:
            done.append("started")
        elif files_changed:
            done.append("reloaded")
    commands = {"enabled": [systemctl, "enable", UNIT], "started": [systemctl, "start", UNIT],
                "reloaded": [systemctl, "reload", UNIT]}
    for step in done if not check_mode else ():
        rc, out, err = run(commands[step])
        if rc != 0:
            raise ProxyRefused("systemctl %s %s failed (rc %s): %s" % (commands[step][1], UNIT, rc, (err or out).strip()))
    return done


def present(params, run, files, check_mode):
    """Write the token file and the site (checked by nginx first), then enable, start or reload nginx.

    files: {"directory": f(path, mode) -> changed, "put": f(path, content, mode) -> changed}, root's,
    each only saying in check mode whether it would change. Check mode may have no nginx yet (the
    role's install only showed it): the service is then left out.
    Returns {"changed", "site_changed", "tokens_changed", "nginx": steps done to nginx, "diff"}.
    """
    nginx = params["nginx"]
    found = os.path.exists(nginx)
    if not found and not check_mode:
        raise ProxyRefused("exo_node_api_proxy needs nginx, which is not installed (no %s); install the distribution's "
                           "nginx package, or set exo_node_manage_packages: true" % nginx)
    # Read by nginx's master (root) alone, when it loads the site.
    changed = files["directory"](os.path.dirname(params["tokens_path"]), "0700")
    tokens_changed = files["put"](params["tokens_path"], params["tokens"], "0600")
    before = read(params["site_path"])
    if before != params["site"] and not check_mode:
        refusal = site_refusal(nginx, params["site"], run)
        if refusal:
            raise ProxyRefused("nginx refuses the proxy's site, which stays out of %s: %s"
                               % (os.path.dirname(params["site_path"]), refusal))
    site_changed = files["put"](params["site_path"], params["site"], "0644")
    written = before != params["site"] or tokens_changed
    if written and found and not check_mode:
        rc, out, err = run([nginx, "-t", "-q"])
        if rc != 0:
            raise ProxyRefused("nginx refuses its whole configuration with the proxy's site: %s" % (err or out).strip())
    steps = _service(params, run, check_mode, written) if found else []
    return {"changed": changed or tokens_changed or site_changed or bool(steps), "site_changed": site_changed,
            "tokens_changed": tokens_changed, "nginx": steps,
            "diff": {"before": before or "", "after": params["site"], "before_header": params["site_path"],
                     "after_header": params["site_path"]}}


def absent(params, run, remove, check_mode):
    """Remove the site and the token directory; a running nginx reloads without them, a stopped one
    stays stopped. nginx itself stays: it may serve other sites. remove(path) -> changed."""
    before = read(params["site_path"])
    site, tokens = params["site_path"], os.path.dirname(params["tokens_path"])
    removed = [path for path in (site, tokens) if remove(path)]
    steps = []
    if removed and params["systemd_running"] and run([params["systemctl"], "is-active", UNIT])[0] == 0:
        steps = ["reloaded"]
        if not check_mode:
            rc, out, err = run([params["systemctl"], "reload", UNIT])
            if rc != 0:
                raise ProxyRefused("systemctl reload %s failed (rc %s): %s" % (UNIT, rc, (err or out).strip()))
    return {"changed": bool(removed), "site_changed": site in removed, "tokens_changed": tokens in removed, "nginx": steps,
            "diff": {"before": before or "", "after": "", "before_header": params["site_path"],
                     "after_header": params["site_path"]}}
