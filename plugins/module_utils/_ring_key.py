# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's WireGuard key for the ring's tunnel, as the module gpufleet.exo.exo_ring_key makes and reads
it: the private key made once, with `wg genkey`, into a file that is root's alone from its first byte,
and read only by `wg pubkey`, whose answer is all that leaves the host."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import tempfile


class KeyFailed(Exception):
    """A wg command that failed; its message is the module's, and never holds the key."""


def _wg(wg, run, verb, data=None):
    rc, out, err = run([wg, verb], data=data)
    if rc != 0:
        raise KeyFailed("wg %s failed (rc %s): %s" % (verb, rc, err.strip()))
    return out


def _make(path, wg, run):
    private = _wg(wg, run, "genkey")
    # umask 077: the directory where missing, and the file (mkstemp's mode 0600 too), root's alone.
    old = os.umask(0o077)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as handle:
            handle.write(private)
        os.rename(temp, path)
    finally:
        os.umask(old)


def ring_key(path, wg, run, check_mode):
    """{"changed": whether the key was (in check mode, would be) made, "public_key"}.

    wg: the path of wg, or None (check mode only: its package is then only shown installed); run:
    AnsibleModule.run_command. The public key is empty where there is no key to read yet (check mode).
    """
    made = not os.path.lexists(path)
    if made and not check_mode:
        _make(path, wg, run)
    if not wg or (made and check_mode):
        return {"changed": made, "public_key": ""}
    with open(path) as handle:
        private = handle.read()
    return {"changed": made, "public_key": _wg(wg, run, "pubkey", data=private).strip()}
