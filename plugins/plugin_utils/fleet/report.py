# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report as one self-contained HTML page: tables and an inline SVG plot (matplotlib).

html() takes what capacity.fleet() returns (plus "generated", the time of the run) and returns the
page. Nothing in it is fetched when it is opened. Every number a cell shows carries the JSON key it
comes from in a data-field attribute, so a reader (or a test) can trace it back to the JSON file.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import io
from html import escape


GIB = 1024.0
COLOURS = {"serves": "#2e7d32", "short": "#c62828", "memory": "#90caf9", "usable": "#1565c0"}
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; } .verdict { font-size: 1.3em; margin: 0.5em 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.serves td.state { background: #e8f5e9; } tr.short td.state { background: #ffebee; }
tr.excluded td { color: #888; } tr.gpu td { background: #fafafa; font-size: 0.92em; }
.plot svg { max-width: 100%; height: auto; } small { color: #666; }
"""


class MissingLibrary(Exception):
    """A library the report needs is not installed on the controller."""


def _cell(value, field=None, num=False, css=None):
    classes = " ".join(c for c in ("num" if num else None, css) if c)
    attrs = (' class="%s"' % classes if classes else "") + (' data-field="%s"' % escape(field) if field else "")
    text = "" if value is None else ("yes" if value is True else "no" if value is False else str(value))
    return "<td%s>%s</td>" % (attrs, escape(text))


def _row_height(rows):
    """Inches per bar: readable for a lab, bounded for thousands of hosts."""
    return max(0.12, min(0.3, 24.0 / max(rows, 1)))


def _matplotlib():
    """matplotlib, its Figure and PolyCollection, imported when a page is drawn, not with this file: the
    import takes about half a second, and ansible-core loads every filter file of the collection to find
    any one of its filters, in each task's worker."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        from matplotlib.collections import PolyCollection  # pylint: disable=import-outside-toplevel
        from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    except ImportError as problem:  # the playbook says what to install, instead of a traceback
        raise MissingLibrary("the fleet report needs matplotlib on the controller (%s); install it with "
                             "pip install -r requirements.txt, or scripts/bootstrap.sh" % problem)
    return matplotlib, Figure, PolyCollection


# Host and model names are shown as given: matplotlib would read "$...$" in one as math.
RC = {"svg.fonttype": "none", "svg.hashsalt": "gpufleet-exo", "text.parse_math": False}


def plot_svg(report):
    """The plot as SVG markup: each model's need against the fleet, and each host's instances against their shares."""
    matplotlib, Figure, PolyCollection = _matplotlib()  # pylint: disable=invalid-name
    with matplotlib.rc_context(RC):
        return _draw(report, Figure, PolyCollection)


def _bar(position, left, width, height):
    """The corners of a horizontal bar at row position, as barh draws one (centred on the row)."""
    low, high = position - height / 2.0, position + height / 2.0
    return [(left, low), (left + width, low), (left + width, high), (left, high)]


def _draw(report, Figure, PolyCollection):  # pylint: disable=invalid-name
    models = report["models"]
    hosts = [h for h in report["hosts"] if h["instances"]]
    rows = max(len(hosts), 1)
    figure = Figure(figsize=(10, 2.5 + 0.3 * len(models) + _row_height(rows) * rows))
    top, bottom = figure.subplots(2, 1, gridspec_kw={"height_ratios": [0.3 * len(models) + 1,
                                                                       _row_height(rows) * rows + 1]})
    top.barh([m["model"] for m in models], [m["need_mib"] / GIB for m in models],
             color=[COLOURS["serves"] if m["serves"] else COLOURS["short"] for m in models])
    usable = sum(int(n["memory_mib"] * (1 - report["headroom"])) for n in report["nodes"]) / GIB
    top.axvline(usable, color=COLOURS["usable"], linestyle="--", label="fleet memory less headroom: %.1f GiB" % usable)
    top.invert_yaxis()
    top.set_xlabel("GiB the ring needs (green: every node's share fits; red: not)")
    top.set_title("Models of exo's model cards for the tinygrad engine")
    top.legend(loc="lower right")
    # Each host is a bar of its instances, one segment each; the markers are the host's part of a model.
    # The bars are two collections, not a patch each: barh's patches cost the page most of its time, and
    # more per host the more hosts there are.
    positions = list(range(len(hosts)))
    segments, usable_bars = [], []
    for position, host in zip(positions, hosts):
        left = 0.0
        for instance in host["instances"]:
            width = instance["memory_mib"] / GIB
            segments.append(_bar(position, left, width, 0.8))
            left += width
        usable_bars.append(_bar(position, 0.0, left * (1 - report["headroom"]), 0.25))
    for bars, style in ((segments, {"facecolors": COLOURS["memory"], "edgecolors": "white",
                                    "label": "memory exo sees, one segment per instance"}),
                        (usable_bars, {"facecolors": COLOURS["usable"], "edgecolors": "none",
                                       "label": "less headroom"})):
        collection = PolyCollection(bars, **style)
        collection.sticky_edges.x.append(0)  # as barh's: the bars start at the axis, with no margin before 0
        bottom.add_collection(collection)
    bottom.autoscale_view()
    by_set = {}
    for model in models:
        by_set.setdefault(model["parameter_set"], model)
    for mark, (name, model) in zip("ovsD^<>", sorted(by_set.items(), key=lambda item: item[1]["parameters"])):
        need, fits = {}, {}
        # A set: asked once per share, a list made the page grow with the square of the ring.
        broken_ids = set(model["empty"]) | set(model["unassigned"])
        for share in model["shares"]:
            need[share["host"]] = need.get(share["host"], 0) + share["need_mib"]
            broken = share["node_id"] in broken_ids
            fits[share["host"]] = fits.get(share["host"], True) and not broken and (
                share["fits"] or share["start_layer"] is None)
        placed = [(p, h["host"]) for p, h in zip(positions, hosts) if need.get(h["host"])]
        bottom.scatter([need[host] / GIB for _p, host in placed], [p for p, _host in placed], marker=mark,
                       c=[COLOURS["serves"] if fits[host] else COLOURS["short"] for _p, host in placed],
                       edgecolors="black", linewidths=0.5, zorder=3, label="%s (%s)" % (name, model["model"]))
    bottom.set_yticks(positions)
    bottom.set_yticklabels(["%s (%d)" % (h["host"], len(h["instances"])) for h in hosts])
    bottom.invert_yaxis()
    bottom.set_xlabel("GiB per host (markers: the layers exo gives its instances; green fits, red does not)")
    bottom.set_title("Hosts in the ring (number of exo instances)")
    bottom.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


# The tables: (header, JSON key, how the cell shows it). "num" right-aligns, "state" colours the
# row's verdict, "lines" puts a list one item a line.
MODEL_COLUMNS = (("Model", "model", "text"), ("Set", "parameter_set", "text"), ("Parameters", "parameters", "num"),
                 ("Layers", "layers", "num"), ("Weights MiB", "weights_mib", "num"),
                 ("Ring needs MiB", "need_mib", "num"), ("Usable MiB", "usable_mib", "num"),
                 ("Short MiB", "short_mib", "num"), ("Fewest nodes", "fewest_nodes", "num"),
                 ("Serves", "serves", "state"),
                 ("What is missing", "missing", "lines"))
HOST_COLUMNS = (("Host", "host", "text"), ("Ring", "ring", "text"), ("Backend", "backend", "text"),
                ("NVML", "nvml_status", "text"), ("Driver", "driver_version", "text"),
                ("Driver needed", "driver_needed", "text"), ("Pending reboot", "pending_reboot", "text"),
                ("RAM MiB", "memory_mib", "num"),
                ("exo sees", "exo_chip", "text"), ("exo MiB", "exo_memory_mib", "num"),
                ("Instances", "instances", "num"), ("In the ring", "excluded_reason", "text"))
# A ring's counts: "hosts" and "models" are lists in the JSON, shown as how many.
RING_COLUMNS = (("Ring", "ring", "text"), ("Hosts", "hosts", "num"), ("Nodes", "nodes", "num"),
                ("Memory MiB", "memory_mib", "num"), ("Largest model", "largest", "text"),
                ("Models served", "models", "num"))
# What the report calls the ring of the hosts that name none (exo_node_ring ""): the node role's is the play's.
UNNAMED_RING = "(the play's hosts)"
GPU_COLUMNS = (("Host", "host", "text"), ("GPU", "index", "num"), ("Name", "name", "text"), ("Chip", "chip", "text"),
               ("Memory MiB", "memory_mib", "num"), ("fp16 TFLOPS", "fp16_tflops", "num"),
               ("fp32 TFLOPS", "fp32_tflops", "num"), ("TFLOPS from", "flops_source", "text"), ("MIG", "mig", "text"),
               ("Health", "health", "text"), ("Health reasons", "health_reasons", "lines"),
               ("Watcher", "watcher", "text"), ("Watcher's reason", "watcher_reason", "lines"),
               ("Since", "watcher_since", "text"))


def _table(table_id, columns, rows):
    """rows: [(tr attributes, {key: value})]."""
    out = ["<table id=\"%s\"><tr>%s</tr>" % (table_id, "".join("<th>%s</th>" % escape(c[0]) for c in columns))]
    for attributes, values in rows:
        cells = []
        for _header, key, how in columns:
            if how == "lines":
                cells.append('<td data-field="%s">%s</td>' % (key, "<br>".join(escape(x) for x in values.get(key) or ())))
            else:
                cells.append(_cell(values.get(key), key, how == "num", "state" if how == "state" else None))
        out.append("<tr %s>%s</tr>" % (" ".join('%s="%s"' % (k, escape(str(v))) for k, v in attributes), "".join(cells)))
    out.append("</table>")
    return "".join(out)


def _models_table(report):
    return _table("models", MODEL_COLUMNS, [
        ((("class", "serves" if m["serves"] else "short"), ("data-model", m["model"])), m) for m in report["models"]])


def _hosts_table(report):
    return _table("hosts", HOST_COLUMNS, [
        ((("class", "host excluded" if h["excluded"] else "host"), ("data-host", h["host"])),
         dict(h, instances=len(h["instances"]), excluded_reason=h["excluded_reason"] or "yes"))
        for h in report["hosts"]])


def _rings_table(report):
    return _table("rings", RING_COLUMNS, [
        ((("class", "ring"), ("data-ring", r["ring"])),
         dict(r, ring=r["ring"] or UNNAMED_RING, hosts=len(r["hosts"]), models=len(r["models"])))
        for r in report["rings"]])


def _gpus_table(report):
    return _table("gpus", GPU_COLUMNS, [
        ((("class", "gpu"), ("data-host", h["host"]), ("data-gpu", g["index"])), dict(g, host=h["host"]))
        for h in report["hosts"] for g in h["gpus"]])


def _sources(report):
    return ("<p><small>Model sizes: exo's tinygrad parameter sets (%s), layers and repositories (%s), "
            "bytes per parameter (%s), KV cache (%s; %s). Partitioning: %s. Models of other engines only (%s): "
            "%s.</small></p>" % tuple(escape(x) for x in (
                report["sources"]["parameter_set"], report["sources"]["models"], report["sources"]["dtype_bytes"],
                report["sources"]["max_context"], report["sources"]["prompt_states"],
                report["sources"]["partitioning"], report["sources"]["other_engines"],
                ", ".join(report["other_engines"]))))


def html(report, title="exo fleet"):
    """The page, as a string."""
    plot = plot_svg(report)
    served = [m["model"] for m in report["models"] if m["serves"]]
    if report["largest"]:
        verdict = ("This fleet serves <b id=\"served\">%d</b> of %d models; the largest is <b id=\"largest\">%s</b>."
                   % (len(served), len(report["models"]), escape(report["largest"])))
    else:
        verdict = ("This fleet serves <b id=\"served\">0</b> of %d models<b id=\"largest\"></b>; the table says "
                   "what each one misses." % len(report["models"]))
    fewer = [m for m in report["models"] if not m["serves"] and m["fewest_nodes"]]
    if fewer:
        verdict += (" <b id=\"fewer\">%d</b> more serve on a ring of fewer, larger nodes (the column Fewest nodes; "
                    "what is missing names them)." % len(fewer))
    excluded = "".join("<li>%s: %s</li>" % (escape(e["host"]), escape(e["detail"])) for e in report["excluded"])
    drained = "".join('<li data-host="%s" data-gpu="%s">%s GPU %s: %s (since %s)</li>' % (
        escape(h["host"]), g["index"], escape(h["host"]), g["index"], escape("; ".join(g.get("watcher_reason") or [])),
        escape(str(g.get("watcher_since")))) for h in report["hosts"] for g in h["gpus"] if g.get("watcher") == "drained")
    return "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title><style>%s</style></head><body>"
        % (escape(title), STYLE),
        "<h1>%s</h1><p><small>%s; %s; headroom <span id=\"headroom\">%s</span> of each node's memory; "
        "%d hosts, %d exo nodes.</small></p>" % (
            escape(title), escape(str(report.get("generated", ""))), escape(report["exo"]), report["headroom"],
            len(report["hosts"]), len(report["nodes"])),
        "<p class=\"verdict\">%s</p>" % verdict,
        "<h2>Hosts left out of the ring</h2><ul id=\"excluded\">%s</ul>" % excluded if excluded else "",
        "<h2>GPUs the health watcher holds out</h2><ul id=\"drained\">%s</ul>" % drained if drained else "",
        "<h2>Rings</h2><p>Each ring is exo's ring over the nodes of the hosts that name it (<code>exo_node_ring</code>): "
        "what it serves is what those nodes hold, whatever the rest of the fleet has. The verdict above and the table "
        "below are the whole fleet as one ring.</p>", _rings_table(report),
        "<h2>What the fleet can serve</h2>", _models_table(report),
        "<h2>Memory per host and instance against the models' needs</h2><div class=\"plot\">%s</div>" % plot,
        "<h2>Hosts</h2>", _hosts_table(report),
        "<h2>GPUs</h2>", _gpus_table(report),
        _sources(report),
        "</body></html>\n",
    ))
