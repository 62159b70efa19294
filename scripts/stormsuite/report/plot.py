"""The comparison as a picture: the verdict's numbers, boots as the unit.

Top: one panel per primary metric (the rows the verdict lines state):
each set's per-boot numbers as dots, their mean (geometric where the
test is on the log scale, as compare prints it) as a bar, and its
confidence interval (Student's t over the boots, on the log scale for
times); the panel's title gives the verdict line's change and interval,
or ~. Bottom: the interrupt counts that matter (the IPI rows in total
and on the storm's CPUs, the largest first), a bar at each set's mean of
its per-boot numbers and a dot per boot, one colour per result set.
"""

from __future__ import annotations

import math
import pathlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.verdict import Comparison, Row

MAX_COUNT_METRICS = 8


def _count_rows(cmp: Comparison) -> list[Row]:
    rows = [r for r in cmp.rows if r.metric.kind == "count" and r.shown
            and not r.metric.primary]
    ipi = [r for r in rows
           if any(f".{v}:" in r.metric.name or r.metric.name.endswith(f".{v}")
                  for v in ("CAL", "TLB", "RES"))]
    other = sorted((r for r in rows if r not in ipi),
                   key=lambda r: -max(s.amean for s in r.boot_summaries))
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


def interval(boots: list[float], log: bool, confidence: float
             ) -> tuple[float, float, float]:
    """(centre, low, high) of a set's per-boot numbers: the mean and its
    confidence interval, Student's t over the boots, on the log scale
    when log; low and high are nan for fewer than two boots."""
    from scipy import stats as sst
    xs = [x for x in boots if not math.isnan(x)]
    if log and xs and all(x > 0 for x in xs):
        c, lo, hi = interval([math.log(x) for x in xs], False, confidence)
        return math.exp(c), math.exp(lo), math.exp(hi)
    if not xs:
        return math.nan, math.nan, math.nan
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(sst.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def _scale(r: Row) -> tuple[float, str]:
    """A divisor and unit for the row's axis."""
    if r.metric.unit != "ns":
        return 1.0, r.metric.unit
    top = max((x for b in r.boots for x in b if not math.isnan(x)),
              default=0.0)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if top >= div:
            return div, unit
    return 1.0, "ns"


def _verdict(cmp: Comparison, r: Row) -> str:
    """The verdict line's change per candidate: +x% [lo, hi], or ~."""
    from ..analysis.verdict import fmt_pct
    out = []
    for c in r.changes[1:]:
        if c is None:
            continue
        e = c.estimate
        out.append(f"{fmt_pct(e.pct)} [{fmt_pct(e.lo)}, {fmt_pct(e.hi)}]"
                   if c.significant else "~")
    return ", ".join(out)


def panels(cmp: Comparison) -> list[tuple[Row, list[tuple[
        list[float], tuple[float, float, float]]]]]:
    """The top panels: per primary row, per set its per-boot numbers and
    (centre, low, high) of their mean."""
    return [(r, [(b, interval(b, r.log_scale, cmp.confidence))
                 for b in r.boots]) for r in cmp.primary]


def plot(cmp: Comparison, path: pathlib.Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runfiles.metrics import PRIMARY, primary_title

    labels = [s.label for s in cmp.sets]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    primary = cmp.primary
    op = PRIMARY.get(cmp.storm, ("", "", "op"))[2]
    ncol = max(len(primary), 1)
    fig = plt.figure(figsize=(max(4.2 * ncol, 9), 9))
    grid = fig.add_gridspec(2, ncol, height_ratios=[1.2, 1])

    for k, (r, sides) in enumerate(panels(cmp)):
        ax = fig.add_subplot(grid[0, k])
        div, unit = _scale(r)
        for i, (boots, (c, lo, hi)) in enumerate(sides):
            colour = colours[i % len(colours)]
            xs = [i + (j - (len(boots) - 1) / 2) * 0.06
                  for j in range(len(boots))]
            ax.scatter(xs, [x / div for x in boots], color=colour, s=18,
                       zorder=3)
            ax.hlines(c / div, i - 0.3, i + 0.3, color=colour, linewidth=2)
            if not math.isnan(lo):
                ax.errorbar([i + 0.35], [c / div],
                            yerr=[[(c - lo) / div], [(hi - c) / div]],
                            color=colour, capsize=4, linewidth=1.5)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=15, ha="right", fontsize=8)
        ax.set_ylabel(f"{primary_title(r.metric, op)}"
                      + (f" ({unit})" if unit else ""), fontsize=9)
        ax.set_title(f"{primary_title(r.metric, op)}: {_verdict(cmp, r)}",
                     fontsize=9)
        ax.margins(y=0.3)

    ax2 = fig.add_subplot(grid[1, :])
    rows = _count_rows(cmp)
    n = len(labels)
    width = 0.8 / max(n, 1)
    for i, label in enumerate(labels):
        colour = colours[i % len(colours)]
        for k, r in enumerate(rows):
            x = k + (i - (n - 1) / 2) * width
            ax2.bar(x, r.boot_summaries[i].amean, width * 0.9,
                    color=colour, alpha=0.35, label=label if k == 0 else None)
            ax2.scatter([x] * len(r.boots[i]), r.boots[i], color=colour,
                        s=12, zorder=3)
    ax2.set_xticks(range(len(rows)))
    ax2.set_xticklabels([_short(r.metric.name) for r in rows], fontsize=8)
    ax2.set_ylabel("interrupts per run")
    ax2.set_title("interrupt counts (bars: mean of the boots, dots: "
                  "a boot's mean of its runs)", fontsize=9)
    if rows:
        ax2.legend(fontsize=8)
    params = " ".join(f"{k}={v}" for k, v in sorted(cmp.params.items()))
    fig.suptitle(f"{cmp.storm} {params}\nprimary metrics: a dot per boot "
                 "(its number, as tested), a line at the mean, whiskers its "
                 f"{cmp.confidence:.0%} interval", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
