"""storm report: a comparison as kernel developers paste it into mail.

Two styles, from the comparison `storm compare` makes (verdict.py), with
its numbers: each side's centre is the mean of its per-boot numbers (what
the verdict tests, a boot's number made as compare makes it), its spread
their CV, the change compare's estimate with its marker. Both styles
start with compare's verdict lines (the change with its confidence
interval, or ~, and the sample behind it) and end with its warnings
(emulation, one boot, a busy host), so that what is pasted says what
compare said.

  0day     the lkp-tests/0-day robot's table: base %stddev, %change,
           candidate %stddev, the metric's lkp name.
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

from . import compare, metrics, runs, sets, verdict

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


def _head(cmp: verdict.Comparison) -> list[str]:
    return [f"{cmp.storm}  {runs.params_text(cmp.params)}",
            "sets: " + ", ".join(f"{s.label} {s.size}" for s in cmp.sets),
            ""] + compare.verdict_lines(cmp) + [""]


def _tail(cmp: verdict.Comparison) -> list[str]:
    return [""] + [f"warning: {w}" for w in cmp.warnings]


def zeroday(cmp: verdict.Comparison, show_all: bool = False) -> str:
    labels = [s.label for s in cmp.sets]
    out = _head(cmp)
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
        base = r.boot_summaries[0]
        cells = [f"{_lkp_value(base.amean):>10}{_stddev(base.cv)}"]
        for i in range(1, len(cmp.sets)):
            s = r.boot_summaries[i]
            c = r.changes[i]
            # compare's estimate and marker: * a change, ~ not one by rule
            pct = compare.fmt_change(c).strip() if c is not None else ""
            cells.append(f"{pct:>12}  {_lkp_value(s.amean):>10}"
                         f"{_stddev(s.cv)}")
        out.append("".join(cells) + "  " + r.metric.name)
    out += _tail(cmp)
    return "\n".join(out).rstrip() + "\n"


def _imp(pct: float, m: metrics.Metric) -> float:
    """mmtests' pct imp from compare's change: positive when the
    candidate is better."""
    return pct + 0.0 if m.kind == "rate" else 0.0 - pct


def mmtests(cmp: verdict.Comparison, show_all: bool = False) -> str:
    op = metrics.PRIMARY.get(cmp.storm, ("", "", "op"))[2]
    params = " ".join(f"{k}={v}" for k, v in sorted(cmp.params.items()))
    width = max(len(s.label) for s in cmp.sets) + 2
    out = _head(cmp)
    rows = [r for r in cmp.rows if r.metric.primary
            or (show_all and r.shown and not r.derived)]
    for r in rows:
        m = r.metric
        what = (compare.primary_title(m, op) if m.primary
                else m.name)
        better = "Higher" if m.kind == "rate" else "Lower"
        head = "time" if m.kind == "time" else "value"
        how = compare.SUMMARY_TEXT[verdict.summary_of(m)]
        out += [RULE,
                f"Test          : {cmp.storm} {params}",
                f"Units         : Normalized {what}",
                f"Interpretation: {better} is better",
                f"Statistic     : AMean over boots of {how}",
                RULE,
                f"{'kernel:':<{width}}{head:>6} [pct imp](CV)"]
        for i, (s, summ) in enumerate(zip(cmp.sets, r.boot_summaries)):
            c = r.changes[i]
            pct = 0.0 if c is None else c.pct
            ratio = 1 + pct / 100
            mark = "" if c is None else ("*" if c.significant else
                                         "~" if not c.reported else "")
            out.append(f"{s.label:<{width}}{ratio:6.2f} "
                       f"[{_imp(pct, m):6.2f}]({summ.cv:5.2f}){mark}")
        out.append("")
    out += _tail(cmp)
    return "\n".join(out).rstrip() + "\n"


STYLES = {"0day": zeroday, "mmtests": mmtests}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm report",
        description="Print a comparison of result sets (as storm compare "
        "reads them) in a style kernel mail already uses: 0day (lkp-tests' "
        "%stddev %change %stddev table) or mmtests (normalized AMean "
        "[pct imp](CV), as seed 004 quotes it). Writes nothing.")
    p.add_argument("baseline", help="label under results/, or a directory")
    p.add_argument("candidates", nargs="+", metavar="candidate",
                   help="a set compared with the baseline: a label or a "
                   "directory, as the baseline (one or more)")
    p.add_argument("--style", choices=sorted(STYLES), default="0day",
                   help="0day: lkp-tests' table, a row per metric with "
                   "%%stddev %%change %%stddev; mmtests: normalized blocks "
                   "per metric (default 0day)")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels live (default: $STORM_RESULTS, "
                   "else results/)")
    p.add_argument("--pool", action="store_true",
                   help="read every series of a directory, not the newest")
    compare.add_stat_options(p, writes=False)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    compare.check_stat_options(p, args)
    try:
        resolved = [sets.resolve(s, args.results, pool=args.pool)
                    for s in [args.baseline] + args.candidates]
        done = [r.comparison for r in
                compare.compare(resolved, compare.Settings.of(args))]
    except (runs.RunError, verdict.CompareError) as e:
        print(f"storm report: {e}", file=sys.stderr)
        return 2
    for cmp in done:
        # --all: every row, not only the primary and marked ones
        print(STYLES[args.style](cmp, args.all))
    return compare.exit_status(done, args.fail_above)
