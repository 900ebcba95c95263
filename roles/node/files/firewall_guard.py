# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keeps the node role's nftables table in place: exo-firewall.service runs it as root with
CAP_NET_ADMIN alone (the role copies it to the host; the host's /usr/bin/python3 runs it).

    firewall_guard.py FAMILY TABLE FILE

The table is what FILE loads. Whatever else removes or changes it (`nft flush ruleset`, the
distribution's nftables.service starting, reloading or stopping, a rule deleted by hand) is undone
at once: nft's monitor reports every change to the ruleset, and a check every CHECK_EVERY seconds, on
its own clock however busy the monitor is, covers what the monitor cannot (the changes before it
listened, a line it never wrote). What the guard keeps is the table FILE loads, never "no table": a
flush that lands between a load and the listing that records it only makes it load again. exo is
never restarted for it: the instances only start after this unit, they do not depend on it.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import select
import subprocess
import sys
import time

NFT = "/usr/sbin/nft"
# A listing costs one nft process (milliseconds): once a second bounds what the monitor could miss.
CHECK_EVERY = 1.0
# Between loads that something keeps undoing (a restart loop of nftables.service): short, as the table is
# missing meanwhile; a load and a listing take two nft processes already, so the guard never spins.
RETRY_AFTER = 0.005


def concerns(text, family, table):
    """Whether lines of `nft monitor` may report a change to the table (a flush names every table)."""
    return re.search(r"(^|\s)%s %s(\s|$)" % (re.escape(family), re.escape(table)), text, re.M) is not None


def deleted(text, family, table):
    """Whether lines of `nft monitor` say the table is gone (a flush, nftables.service, a delete by hand): then it
    is loaded at once, without the listing first, as every millisecond the table is missing is a window. The
    last word counts: loading FILE itself deletes the table and adds it again, in one transaction."""
    said = re.findall(r"^(add|delete) table %s %s$" % (re.escape(family), re.escape(table)), text, re.M)
    return bool(said) and said[-1] == "delete"


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


def loaded(family, table, path):
    """Loads FILE until nft lists the table, and returns that listing: what the guard keeps from then on.
    Another flush may land between the load and the listing; that only means loading again."""
    while True:
        load(path)
        now = listing(family, table)
        if now is not None:
            return now
        time.sleep(RETRY_AFTER)


def restore(family, table, path):
    """Loads FILE where the table is gone, in the shortest transaction: FILE's first lines replace the table
    (they delete it, which costs the kernel a grace period, some 10 ms); where there is none to replace, the
    table is created instead, refused as a whole where it exists again already. Then as loaded() does."""
    with open(path) as handle:
        text = handle.read()
    header = "table {0} {1}\ndelete table {0} {1}\n".format(family, table)
    if header in text:
        proc = subprocess.run([NFT, "-f", "-"], input=text.replace(header, "create table %s %s\n" % (family, table), 1),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
        now = listing(family, table) if proc.returncode == 0 else None
        if now is not None:
            return now
    return loaded(family, table, path)


def keep(family, table, path, wanted):
    """The table as it should be: loaded again where it differs from wanted (the listing of the last load)."""
    now = listing(family, table)
    if now == wanted:
        return wanted
    print("table %s %s was %s; loading %s again" % (family, table, "removed" if now is None else "changed", path),
          flush=True)
    return loaded(family, table, path)


def main(argv):
    family, table, path = argv
    # Listening before the first load: no change after it goes unreported.
    monitor = subprocess.Popen([NFT, "monitor"], stdout=subprocess.PIPE)
    wanted = loaded(family, table, path)
    print("keeping table %s %s as %s loads it" % (family, table, path), flush=True)
    due = time.monotonic() + CHECK_EVERY
    while True:
        ready = select.select([monitor.stdout], [], [], max(0.0, due - time.monotonic()))[0]
        check = False
        if ready:
            # Whatever the monitor wrote so far, unbuffered: a line left in a buffer would wait for the next check.
            text = os.read(monitor.stdout.fileno(), 65536).decode("utf-8", "replace")
            if not text:
                # The monitor ended: systemd starts the guard again (Restart=always), which loads the table.
                raise SystemExit("nft monitor exited with %s" % monitor.wait())
            if deleted(text, family, table):
                wanted = restore(family, table, path)
                print("table %s %s was removed; loaded %s again" % (family, table, path), flush=True)
                continue
            check = concerns(text, family, table)
        if time.monotonic() >= due:
            check, due = True, time.monotonic() + CHECK_EVERY
        if check:
            wanted = keep(family, table, path, wanted)


if __name__ == "__main__":
    main(sys.argv[1:])
