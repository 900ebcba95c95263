# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Knock on each ADDRESS:PORT given, one after the other, every INTERVAL milliseconds, until the file STOP
exists (or 300 s pass), and print, as JSON, how many knocks there were ("knocks"), how each ended
("outcomes": refused, silent: ..., open) and when each one that got in began ("through": wall-clock seconds and
the target): a connection that opens is a moment the firewall let a machine outside the ring through.

    python3 knock_loop.py STOP INTERVAL ADDRESS:PORT...
"""
import json
import os
import sys
import time

# reach.py, installed beside this file.
from reach import knock


def main(stop, interval, targets):
    knocks, outcomes, through = 0, {}, []
    deadline = time.monotonic() + 300
    while not os.path.exists(stop) and time.monotonic() < deadline:
        for target in targets:
            began = time.time()
            # Short: a dropped knock must not hide a window behind it.
            outcome = knock(target, timeout=0.2)
            knocks += 1
            kind = outcome.split(":")[0]
            outcomes[kind] = outcomes.get(kind, 0) + 1
            if outcome == "open":
                through.append([round(began, 3), target])
        time.sleep(interval / 1000.0)
    print(json.dumps({"knocks": knocks, "outcomes": outcomes, "through": through}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
