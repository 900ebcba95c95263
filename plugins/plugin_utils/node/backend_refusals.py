# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role's check of the tinygrad backends it forces, from device_facts' ``backends``.

The role forces a backend on the CPU instance (tinygrad's CPU backend) and, with
``exo_node_tinygrad_backend``, on every GPU instance. A forced backend that does not open makes
exo crash at start, and systemd restarts it for ever; the probe's ``tinygrad.backends`` says
whether each one opened and computed under the instance's environment (docs/tinygrad.md).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# What to do when a forced backend fails, by backend.
HINTS = {
    "cpu": "install clang on the host: tinygrad's CPU backend compiles every kernel with it (from tinygrad 0.10.2 "
           "with the compiler named by CC where it is set), or give the host a GPU exo can use",
    "nv": "set exo_node_tinygrad_backend to cuda (or auto): tinygrad's NV backend drives the GPU without libcuda and "
          "does not work with every driver (exo's tinygrad got 'rm_control returned 58' from driver 580)",
    "cuda": "check the NVIDIA driver and its libcuda on the host (nvidia-smi, and a CUDA program), "
            "or set exo_node_tinygrad_backend to auto",
}


def _runs_tinygrad(settings):
    """Whether exo runs tinygrad with these settings: another engine forces no tinygrad backend."""
    return settings.get("exo_node_inference_engine", "tinygrad") == "tinygrad"


def to_check(settings):
    """The backends the role may force with these settings, for device_facts' ``backends``.

    The CPU backend whenever a CPU instance may be planned: whether it is planned is known only
    once the facts are there, and the check costs one compile. None for an engine other than
    tinygrad, which forces no tinygrad backend.
    """
    backends = []
    if not _runs_tinygrad(settings):
        return backends
    if settings.get("exo_node_tinygrad_backend", "auto") != "auto":
        backends.append(settings["exo_node_tinygrad_backend"])
    if settings.get("exo_node_cpu_fallback"):
        backends.append("cpu")
    return backends


def _forced(settings, instances):
    """{backend: [instance names]} for the backends these instances force."""
    forced = {}
    if not _runs_tinygrad(settings):
        return forced
    for instance in instances:
        if instance["kind"] == "amd":
            # Forced onto tinygrad's AMD backend, whose use amd.support() decides from the facts.
            continue
        if instance["kind"] == "cpu":
            backend = "cpu"
        elif settings["exo_node_tinygrad_backend"] != "auto":
            backend = settings["exo_node_tinygrad_backend"]
        else:
            continue
        forced.setdefault(backend, []).append(instance["name"])
    return forced


def refusals(host, facts, settings, instances):
    """(errors, warnings): a forced backend that failed its check is an error, one not checked a warning."""
    tinygrad = facts.get("tinygrad") or {}
    checks = tinygrad.get("backends") or {}
    errors, warnings = [], []
    for backend, names in sorted(_forced(settings, instances).items()):
        entry = checks.get(backend)
        where = "instance%s %s" % ("s" if len(names) > 1 else "", ", ".join(names))
        if entry is None:
            warnings.append("host %s: tinygrad's %s backend, forced on %s, was not checked (the facts were gathered "
                            "without backends: [%s]); a backend that does not open makes exo crash at start"
                            % (host, backend, where, backend))
        elif entry["status"] == "failed":
            env = " ".join("%s=%s" % item for item in sorted((entry.get("env") or {}).items()))
            errors.append("host %s: tinygrad's %s backend does not work here, so %s would crash at start: under %s, "
                          "tinygrad %s in %s raised %s; %s"
                          % (host, backend, where, env or "its environment", tinygrad.get("version"),
                             tinygrad.get("python"), entry["reason"], HINTS.get(backend, "see docs/tinygrad.md")))
    return errors, warnings
