# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run COMMAND..., which removes the role's nftables table (a flush of the ruleset, nftables.service, a loop
of either), then print, as JSON, how many seconds after it ended the table was back with its refusals
("seconds", null if not within 30 s), whether the command removed it at all ("removed"), and the
wall-clock seconds it began and ended ("began", "ended"), for the knocks from outside at that time."""
import json
import subprocess
import sys
import time


def closed():
    proc = subprocess.run(["nft", "list", "table", "inet", "gpufleet_exo"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.returncode == 0 and "reject with tcp reset" in proc.stdout and "chain output" in proc.stdout


def table_handle():
    """The table's handle: a table loaded again gets a new one."""
    proc = subprocess.run(["nft", "-a", "list", "table", "inet", "gpufleet_exo"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    return proc.stdout.split("# handle", 1)[1].split()[0] if "# handle" in proc.stdout else None


before = table_handle()
began = time.time()
subprocess.run(sys.argv[1:], check=True)
ended = time.time()
start = time.monotonic()
seconds = None
while time.monotonic() - start < 30:
    if closed():
        seconds = round(time.monotonic() - start, 3)
        break
    time.sleep(0.01)
print(json.dumps({"seconds": seconds, "removed": table_handle() != before, "began": began, "ended": ended}))
