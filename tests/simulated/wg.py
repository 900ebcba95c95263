# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated `wg` (wireguard-tools) for tests on a machine without it: its genkey and pubkey, the
same X25519 keys in the same base64 (through the cryptography package, which ansible-core needs), so
that a key it makes is one real WireGuard reads. Everything else it refuses, as wg does a wrong verb."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import os
import sys

SCRIPT = """#!%(python)s
# Simulated wg (tests/simulated/wg.py): genkey and pubkey only.
import sys
sys.path.insert(0, %(tests)r)
from simulated.wg import main
sys.exit(main(sys.argv[1:]))
"""


def public_key(private):
    """The public key of a base64 private key, in base64, as `wg pubkey` answers it."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    key = X25519PrivateKey.from_private_bytes(base64.b64decode(private.strip()))
    return base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def main(argv):
    if argv == ["genkey"]:
        key = bytearray(os.urandom(32))
        # Clamped as X25519 wants it, as wg genkey does.
        key[0] &= 248
        key[31] = (key[31] & 127) | 64
        print(base64.b64encode(bytes(key)).decode())
        return 0
    if argv == ["pubkey"]:
        try:
            print(public_key(sys.stdin.read()))
        except ValueError:
            sys.stderr.write("Key is not the correct length or format\n")
            return 1
        return 0
    sys.stderr.write("Invalid subcommand: %s (simulated wg: genkey and pubkey only)\n" % " ".join(argv))
    return 1


def install(directory):
    """Write the simulated wg into directory (for PATH); its path."""
    path = os.path.join(directory, "wg")
    with open(path, "w") as handle:
        handle.write(SCRIPT % {"python": sys.executable, "tests": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    os.chmod(path, 0o755)
    return path
