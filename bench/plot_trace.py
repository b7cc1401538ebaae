#!/usr/bin/env python3
"""Draws `--profile` traces of a bdc executable as one PNG: a row per thread, a bar per block,
coloured by nest, one panel per trace (e.g. the same model under --schedule op and block).

Usage: plot_trace.py OUT.png LABEL=TRACE.json [LABEL=TRACE.json ...]

Needs matplotlib (`pip install matplotlib`). The panels share the time axis, so the schedules'
wall times compare at a glance; gaps in a row are a thread waiting (at a barrier under the op
schedule, for a dependency or for work under the block schedule).
"""

import json
import sys


def load(path):
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    t0 = min(e["ts"] for e in events) if events else 0.0
    return events, t0


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.stderr.write(__doc__)
        return 1
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [a.split("=", 1) for a in sys.argv[2:]]
    loaded = [(label, *load(path)) for label, path in panels]
    span = max((max(e["ts"] + e["dur"] for e in ev) - t0) / 1e3 for _, ev, t0 in loaded if ev)
    fig, axes = plt.subplots(len(loaded), 1, figsize=(12, 1.4 + 1.1 * len(loaded)), sharex=True,
                             squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (label, events, t0) in zip(axes[:, 0], loaded):
        threads = sorted({e["tid"] for e in events})
        wall = (max(e["ts"] + e["dur"] for e in events) - t0) / 1e3 if events else 0.0
        busy = sum(e["dur"] for e in events) / 1e3
        for e in events:
            row = threads.index(e["tid"])
            ax.broken_barh([((e["ts"] - t0) / 1e3, e["dur"] / 1e3)], (row - 0.4, 0.8),
                           facecolors=cmap(e["args"]["nest"] % 20), linewidth=0)
        ax.set_yticks(range(len(threads)))
        ax.set_yticklabels(["thread %d" % t for t in threads])
        ax.set_xlim(0, span * 1.02)
        ax.set_title("%s: %.2f ms wall, threads busy %.0f%%" % (
            label, wall, 100.0 * busy / (wall * len(threads)) if wall else 0.0), fontsize=10)
    axes[-1, 0].set_xlabel("ms (one bar per block, colour by nest)")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
