"""storm report: a comparison as kernel developers paste it into mail.

Two styles, from the same comparison `storm compare` makes (verdict.py):

  0day     the lkp-tests/0-day robot's table: each side's mean over its
           runs with its %stddev, the %change of those means, the
           metric's lkp name.
           Rows: the primary metrics and every row the verdict marked
           (--all: every row shown).
  mmtests  mmtests' compare-kernels blocks, as seed 004 quotes them: per
           primary metric the baseline normalized to 1.00 [0.00], each
           candidate as ratio [pct imp](CV), "imp" positive when better.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

from . import compare, metrics, runs, verdict

RULE = "=" * 66


def _lkp_value(x: float) -> str:
    if math.isnan(x):
        return "-"
    if abs(x) >= 100 or x == int(x):
        return f"{x:.0f}"
    return f"{x:.2f}"


def _stddev(cv: float) -> str:
    """lkp leaves the column empty for a stddev below 1%."""
    return f" \u00b1{cv:3.0f}%" if not math.isnan(cv) and cv >= 1 else " " * 6


def _wanted(row: verdict.Row, show_all: bool) -> bool:
    if not row.shown:
        return False
    if show_all or row.metric.primary:
        return True
    return any(c is not None and c.significant for c in row.changes)


def zeroday(cmp: verdict.Comparison, show_all: bool = False) -> str:
    labels = [s.label for s in cmp.sets]
    out = [f"{cmp.storm} " + " ".join(f"{k}={v}" for k, v in
                                      sorted(cmp.params.items())), ""]
    out.append("  ".join(f"{label:>16}" for label in labels))
    out.append(" ".join(["----------------"]
                        + ["---------------------------"] * (len(labels) - 1)))
    out.append("         %stddev" + "     %change         %stddev"
               * (len(labels) - 1))
    out.append("             \\" + "          |                \\"
               * (len(labels) - 1))
    for r in cmp.rows:
        if not _wanted(r, show_all):
            continue
        base = r.summaries[0]
        cells = [f"{_lkp_value(base.amean):>10}{_stddev(base.cv)}"]
        for i in range(1, len(cmp.sets)):
            s = r.summaries[i]
            # of the means shown, as lkp does (the verdict's estimate is
            # on per-boot summaries, see storm compare)
            pct = (f"{(s.amean / base.amean - 1) * 100:+.1f}%"
                   if base.amean else "")
            cells.append(f"{pct:>12}  {_lkp_value(s.amean):>10}"
                         f"{_stddev(s.cv)}")
        out.append("".join(cells) + "  " + r.metric.name)
    return "\n".join(out)


def _imp(ratio: float, m: metrics.Metric) -> float:
    """mmtests' pct imp: positive when the candidate is better."""
    return (ratio - 1) * 100 if m.kind == "rate" else (1 - ratio) * 100


def mmtests(cmp: verdict.Comparison, show_all: bool = False) -> str:
    op = metrics.PRIMARY.get(cmp.storm, ("", "", "op"))[2]
    params = " ".join(f"{k}={v}" for k, v in sorted(cmp.params.items()))
    width = max(len(s.label) for s in cmp.sets) + 2
    out = []
    rows = [r for r in cmp.rows if r.metric.primary
            or (show_all and r.shown and not r.derived)]
    for r in rows:
        m = r.metric
        what = (compare.primary_title(m, op) if m.primary
                else m.name)
        better = "Higher" if m.kind == "rate" else "Lower"
        head = "time" if m.kind == "time" else "value"
        out += [RULE,
                f"Test          : {cmp.storm} {params}",
                f"Units         : Normalized {what}",
                f"Interpretation: {better} is better",
                f"Statistic     : {m.stat.replace('mean', 'Mean')}",
                RULE,
                f"{'kernel:':<{width}}{head:>6} [pct imp](CV)"]
        base = r.summaries[0].mean
        for s, summ in zip(cmp.sets, r.summaries):
            ratio = summ.mean / base if base else math.nan
            out.append(f"{s.label:<{width}}{ratio:6.2f} "
                       f"[{_imp(ratio, m):6.2f}]({summ.cv:5.2f})")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


STYLES = {"0day": zeroday, "mmtests": mmtests}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="storm report",
        description="Print a comparison of result sets (as storm compare "
        "reads them) in a style kernel mail already uses: 0day (lkp-tests' "
        "%stddev %change %stddev table) or mmtests (normalized AMean "
        "[pct imp](CV), as seed 004 quotes it). Writes nothing.")
    p.add_argument("baseline", help="label under results/, or a directory")
    p.add_argument("candidates", nargs="+", metavar="candidate")
    p.add_argument("--style", choices=sorted(STYLES), default="0day")
    p.add_argument("--all", action="store_true",
                   help="every row, not only the primary and marked ones")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels live (default: $STORM_RESULTS, "
                   "else results/)")
    p.add_argument("--force", action="store_true",
                   help="compare sets taken in different environments")
    args = p.parse_args(argv)
    try:
        sets = [runs.resolve(s, args.results)
                for s in [args.baseline] + args.candidates]
        for group in compare.pair(sets):
            cmp = verdict.build(group, force=args.force)
            print(STYLES[args.style](cmp, args.all))
    except (runs.RunError, verdict.CompareError) as e:
        print(f"storm report: {e}", file=sys.stderr)
        return 2
    return 0
