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

docs/node.md, "exo's view of its device", says what each patch changes and why.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import sys

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


# module -> ({sha256 of a source the patch was written against: the exo release it comes from}, patch)
PATCHES = {
    "exo.topology.device_capabilities": (
        {"d0498756e39b7f132a127eb7561394c20086ec229a1430a733520fe38b8c4d73": "exo e4238f9ef"},
        patch_device_capabilities),
}


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


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
        digest = sha256(spec.origin) if spec.origin and spec.has_location else None
        if digest not in known:
            say("%s (%s, sha256 %s) is not a source this collection knows (%s): left as exo ships it"
                % (name, spec.origin, digest, ", ".join(sorted(known.values()))))
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
