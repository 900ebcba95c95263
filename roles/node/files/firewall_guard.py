# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keeps the node role's nftables table in place: exo-firewall.service runs it as root with
CAP_NET_ADMIN alone (the role copies it to the host; the host's /usr/bin/python3 runs it).

    firewall_guard.py FAMILY TABLE FILE

The table is what FILE loads. Whatever else removes or changes it (`nft flush ruleset`, the
distribution's nftables.service starting, reloading or stopping, a rule deleted by hand) is undone
within a second: nft's monitor reports every change to the ruleset, and a check every CHECK_EVERY
seconds covers what the monitor cannot (the changes before it listened). exo is never restarted
for it: the instances only start after this unit, they do not depend on it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import select
import subprocess
import sys

NFT = "/usr/sbin/nft"
CHECK_EVERY = 10


def concerns(text, family, table):
    """Whether lines of `nft monitor` may report a change to the table (a flush names every table)."""
    return re.search(r"(^|\s)%s %s(\s|$)" % (re.escape(family), re.escape(table)), text, re.M) is not None


def listing(family, table):
    """The table as nft lists it now, or None where it does not exist."""
    proc = subprocess.run([NFT, "list", "table", family, table], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def load(path):
    """Loads FILE (one transaction, which replaces the table); nft's own message where it fails."""
    proc = subprocess.run([NFT, "-f", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit("nft -f %s failed: %s" % (path, proc.stdout.strip()))


def keep(family, table, path, wanted):
    """The table as it should be: loaded again where it differs from wanted (the listing of the last load)."""
    now = listing(family, table)
    if now == wanted:
        return wanted
    load(path)
    print("table %s %s was %s; loaded %s again" % (family, table, "removed" if now is None else "changed", path),
          flush=True)
    return listing(family, table)


def main(argv):
    family, table, path = argv
    monitor = subprocess.Popen([NFT, "monitor"], stdout=subprocess.PIPE)
    load(path)
    wanted = listing(family, table)
    print("keeping table %s %s as %s loads it" % (family, table, path), flush=True)
    while True:
        ready = select.select([monitor.stdout], [], [], CHECK_EVERY)[0]
        if ready:
            # Whatever the monitor wrote so far, unbuffered: a line left in a buffer would wait for the next check.
            text = os.read(monitor.stdout.fileno(), 65536).decode("utf-8", "replace")
            if not text:
                # The monitor ended: systemd starts the guard again (Restart=always), which loads the table.
                raise SystemExit("nft monitor exited with %s" % monitor.wait())
            if not concerns(text, family, table):
                continue
        wanted = keep(family, table, path, wanted)


if __name__ == "__main__":
    main(sys.argv[1:])
