# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Try a TCP connection to each ADDRESS:PORT given and print, as JSON, what happened to each:
"open", "refused" (a reset, as the node role's firewall answers) or "silent: <error>"."""
import json
import socket
import sys


def knock(target, timeout=5):
    address, port = target.rsplit(":", 1)
    try:
        socket.create_connection((address, int(port)), timeout=timeout).close()
        return "open"
    except ConnectionRefusedError:
        return "refused"
    except OSError as problem:
        return "silent: %s" % problem


if __name__ == "__main__":
    print(json.dumps(dict((target, knock(target)) for target in sys.argv[1:]), sort_keys=True))
