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
  mmtests  mmtests' compare-kernels table: per metric the mean (Gmean
           for times, Amean for the rest), each candidate's comparison
           in percent, positive when better, `( x.xx%)`, or `* x.xx%*`
           where compare calls a change; then the CoeffVar rows.
Rows: the primary metrics and every row the verdict marked (--all: every
row shown; --metrics: those whose name matches).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import re
import sys

from ..analysis import verdict
from ..runfiles import metrics, runs, sets
from . import compare

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


def _rows(cmp: verdict.Comparison, show_all: bool,
          metrics_re: str | None) -> list[verdict.Row]:
    return compare.select([r for r in cmp.rows if _wanted(r, show_all)],
                          metrics_re)


def _head(cmp: verdict.Comparison) -> list[str]:
    return ([f"{cmp.storm}  {runs.params_text(cmp.params)}"]
            + compare.wrap("sets: " + ", ".join(f"{s.label} {s.size}"
                                                for s in cmp.sets))
            + [""] + compare.verdict_block(cmp) + [""])


def _tail(cmp: verdict.Comparison) -> list[str]:
    return [""] + [x for w in cmp.warnings
                   for x in compare.wrap(f"warning: {w}")]


def _letters(labels: list[str], widths: list[int]) -> tuple[list[str],
                                                           list[str]]:
    """The column heads: the labels where each fits its column, else
    letters, with lines naming them."""
    if all(len(label) <= w for label, w in zip(labels, widths)):
        return labels, []
    letters = [chr(ord("A") + i) for i in range(len(labels))]
    return letters, [f"{x}: {label}" for x, label in zip(letters, labels)]


def zeroday(cmp: verdict.Comparison, show_all: bool = False,
            metrics_re: str | None = None) -> str:
    """lkp-tests' compare table: per set the mean of its per-boot
    numbers and their %stddev, per candidate compare's change and
    marker, then the lkp name."""
    n = len(cmp.sets)
    heads, names = _letters([s.label for s in cmp.sets],
                            [16] + [27] * (n - 1))
    out = _head(cmp) + names
    out.append(f"{heads[0]:>16}" + "".join(f" {h:>27}" for h in heads[1:]))
    out.append(" ".join(["----------------"]
                        + ["---------------------------"] * (n - 1)))
    out.append("         %stddev" + "     %change         %stddev"
               * (n - 1))
    out.append("             \\" + "          |                \\"
               * (n - 1))
    for r in _rows(cmp, show_all, metrics_re):
        cells = [f"{_lkp_value(compare.centre(r, 0)):>10}"
                 f"{_stddev(compare.spread(r, 0))}"]
        for i in range(1, n):
            c = r.changes[i]
            # compare's estimate and marker: * a change, ~ not one by rule
            pct = compare.fmt_change(c).strip() if c is not None else ""
            cells.append(f"{pct:>12}  {_lkp_value(compare.centre(r, i)):>10}"
                         f"{_stddev(compare.spread(r, i))}")
        out.append("".join(cells) + "  " + r.metric.name)
    out += _tail(cmp)
    return "\n".join(out).rstrip() + "\n"


def _imp(pct: float, m: metrics.Metric) -> float:
    """mmtests' pdiff/pndiff from compare's change: positive when the
    candidate is better (pndiff for times and counts, lower better;
    pdiff for rates)."""
    return pct + 0.0 if m.kind == "rate" else 0.0 - pct


FIELD = 12                  # mmtests' _FieldLength: %12.2f
COMPARE = 7                 # its _CompareLength: (%7.2f%%)


def _mm_cell(value: float, imp: float, marked: bool) -> str:
    """One kernel's cell as compare-kernels prints it: the value, then
    the comparison in brackets, or between stars when significant."""
    x = 0.0 if math.isnan(imp) else imp
    cmp = f" *{x:{COMPARE}.2f}%*" if marked else f" ({x:{COMPARE}.2f}%)"
    return f"{value:{FIELD}.2f}{cmp}"


def _mm_head(label: str) -> tuple[str, str]:
    """compare-kernels' two header lines of a kernel's column: its name
    split at the first '-' (after an -rcN)."""
    m = re.match(r"(.*?-rc[0-9]+|[^-]*)(?:-(.*))?$", label)
    assert m is not None
    return m.group(1), m.group(2) or ""


def mmtests(cmp: verdict.Comparison, show_all: bool = False,
            metrics_re: str | None = None) -> str:
    """mmtests' compare-kernels table: a block of means (Gmean for times,
    tested on the log scale; Amean for the rest: of the per-boot numbers
    compare tests), each candidate's comparison with the baseline in
    percent, positive when better, between stars where compare calls a
    change; then a CoeffVar block (the CV of the per-boot numbers)."""
    rows = _rows(cmp, show_all, metrics_re)
    statw = len("CoeffVar")
    namew = max([len(r.metric.name) for r in rows] + [1])
    cellw = FIELD + COMPARE + 4
    out = _head(cmp)
    heads = [_mm_head(s.label) for s in cmp.sets]
    for k in (0, 1):
        out.append(" " * (statw + 1 + namew)
                   + "".join(f"{h[k]:>{cellw}}" for h in heads))
    for r in rows:
        stat = "Gmean" if r.log_scale else "Amean"
        cells = []
        for i in range(len(cmp.sets)):
            c = r.changes[i]
            imp = 0.0 if c is None else _imp(c.pct, r.metric)
            cells.append(_mm_cell(compare.centre(r, i), imp,
                                  c is not None and c.significant))
        out.append(f"{stat:<{statw}} {r.metric.name:<{namew}}"
                   + "".join(cells))
    for r in rows:
        base = compare.spread(r, 0)
        cells = []
        for i in range(len(cmp.sets)):
            cv = compare.spread(r, i)
            # lower is better: pndiff, 0 where the baseline's shows as
            # none (0.00)
            imp = 100 * (base - cv) / base if round(base, 2) else 0.0
            cells.append(_mm_cell(cv, imp, False))
        out.append(f"{'CoeffVar':<{statw}} {r.metric.name:<{namew}}"
                   + "".join(cells))
    out += _tail(cmp)
    return "\n".join(out).rstrip() + "\n"


STYLES = {"0day": zeroday, "mmtests": mmtests}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm report",
        description="Print a comparison of result sets (as storm compare "
        "reads them) in a style kernel mail already uses: 0day (lkp-tests' "
        "%stddev %change %stddev table) or mmtests (compare-kernels' "
        "Amean/Gmean rows with ( x.xx%) or * x.xx%*, and CoeffVar). Writes "
        "nothing.")
    p.add_argument("baseline", help="label under results/, or a directory")
    p.add_argument("candidates", nargs="+", metavar="candidate",
                   help="a set compared with the baseline: a label or a "
                   "directory, as the baseline (one or more)")
    p.add_argument("--style", choices=sorted(STYLES), default="0day",
                   help="0day: lkp-tests' table, a row per metric with "
                   "%%stddev %%change %%stddev; mmtests: compare-kernels' "
                   "table (default 0day)")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels live (default: $STORM_RESULTS, "
                   "else results/)")
    p.add_argument("--pool", action="store_true",
                   help="read every series of a directory, not the newest")
    compare.add_stat_options(p, writes=False)
    p.add_argument("--metrics", metavar="REGEX",
                   help="show only the rows whose lkp name matches REGEX "
                   "(searched); the verdict lines stay")
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
        print(STYLES[args.style](cmp, args.all, args.metrics))
    return compare.exit_status(done, args.fail_above)
