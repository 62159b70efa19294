"""The comparison as a picture: every run, kernels side by side.

Left: the storm's runtime of every run per result set, with the mean.
Right: the interrupt counts that matter (the IPI rows in total and on the
storm's CPUs, the largest first), every run as a dot over a bar at the
mean, one colour per result set.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .verdict import Comparison, Row

MAX_COUNT_METRICS = 8


def _count_rows(cmp: Comparison) -> list[Row]:
    rows = [r for r in cmp.rows if r.metric.kind == "count" and r.shown]
    ipi = [r for r in rows
           if any(f".{v}:" in r.metric.name or r.metric.name.endswith(f".{v}")
                  for v in ("CAL", "TLB", "RES"))]
    other = sorted((r for r in rows if r not in ipi),
                   key=lambda r: -max(s.amean for s in r.summaries))
    return (ipi + other)[:MAX_COUNT_METRICS]


def _short(name: str) -> str:
    """interrupts.CPU1.CAL:Function_call_interrupts -> "CPU1 CAL (/proc)",
    ipistorm.irq.CPU1.CAL -> "CPU1 CAL (module)"."""
    if name.startswith("interrupts."):
        head = name.removeprefix("interrupts.").partition(":")[0]
        return head.replace(".", " ") + "\n(/proc)"
    parts = name.split(".")[1:]
    if parts and parts[0] == "irq":
        parts = parts[1:]
    return " ".join(parts) + "\n(module)"


def plot(cmp: Comparison, path: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s.label for s in cmp.sets]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, (ax1, ax2) = plt.subplots(
        1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1, 2.2]})

    runtime = next((r for r in cmp.rows
                    if r.metric.name.endswith(".runtime_ns")), None)
    if runtime is not None:
        for i, vals in enumerate(runtime.values):
            ms = [v / 1e6 for v in vals]
            xs = [i + (j - (len(ms) - 1) / 2) * 0.05 for j in range(len(ms))]
            ax1.scatter(xs, ms, color=colours[i % len(colours)], zorder=3)
            mean = runtime.summaries[i].amean / 1e6
            ax1.hlines(mean, i - 0.3, i + 0.3,
                       color=colours[i % len(colours)], linewidth=2)
        ax1.set_xticks(range(len(labels)))
        ax1.set_xticklabels(labels, rotation=15, ha="right", fontsize=8)
        ax1.set_ylabel("runtime per run (ms)")
        ax1.set_ylim(bottom=0)
        ax1.set_title(f"{cmp.storm} runtime (runs and mean)")
    else:
        ax1.set_axis_off()

    rows = _count_rows(cmp)
    n = len(labels)
    width = 0.8 / max(n, 1)
    for i, label in enumerate(labels):
        colour = colours[i % len(colours)]
        for k, r in enumerate(rows):
            x = k + (i - (n - 1) / 2) * width
            ax2.bar(x, r.summaries[i].amean, width * 0.9, color=colour,
                    alpha=0.35, label=label if k == 0 else None)
            ax2.scatter([x] * len(r.values[i]), r.values[i], color=colour,
                        s=12, zorder=3)
    ax2.set_xticks(range(len(rows)))
    ax2.set_xticklabels([_short(r.metric.name) for r in rows], fontsize=8)
    ax2.set_ylabel("interrupts per run")
    ax2.set_title("interrupt counts (bars: mean, dots: runs)")
    if rows:
        ax2.legend(fontsize=8)
    fig.suptitle(f"{cmp.storm} {' '.join(f'{k}={v}' for k, v in sorted(cmp.params.items()))}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
