# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The windows the outside knocks found, event by event: NAMES is a JSON list of the events' names, EVENTS one
of what closed_after.py printed for each (its JSON, as text); KNOCKS what knock_loop.py printed. Prints, as JSON, for each event its name,
how many milliseconds after it ended the table was back ("table_ms"), the knocks that got in while it ran or
until the table was back ("through"), the windows they fall in ("windows": knocks that got in with less than
GAP between them make one) and the longest ("window_ms": from its first to its last, 0 where none got in),
and which targets they reached. An event that removes the table several times (a loop) opens several.

    python3 windows.py NAMES EVENTS KNOCKS
"""
import json
import sys

# A knock in flight when the table came back may open a moment after: so much later still counts.
SLACK = 0.05
# Knocks go round every target every few milliseconds: a longer pause between two that got in is two windows.
GAP = 0.03


def spans(times):
    """The windows times (sorted) fall in, each as its (first, last)."""
    found = []
    for at in times:
        if found and at - found[-1][1] <= GAP:
            found[-1][1] = at
        else:
            found.append([at, at])
    return found


def windows(names, events, knocks):
    found = []
    for name, event in zip(names, (json.loads(text) for text in events)):
        end = event["ended"] + (event["seconds"] or 0) + SLACK
        inside = [(at, target) for at, target in knocks["through"] if event["began"] <= at <= end]
        windows_ = spans(sorted(at for at, target in inside))
        found.append({"name": name, "table_ms": round((event["seconds"] or 0) * 1000), "through": len(inside),
                      "windows": len(windows_), "window_ms": max([round((last - first) * 1000) for first, last in windows_] or [0]),
                      "targets": sorted(set(target for at, target in inside))})
    return found


if __name__ == "__main__":
    print(json.dumps(windows(json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]))))
