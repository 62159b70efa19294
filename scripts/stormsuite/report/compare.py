"""storm compare: is the difference between kernels real?

Reads result sets (labels under results/, or directories of run files),
pairs the series of the same storm and parameters, and prints what
verdict.py decided: first the verdict lines, one per primary metric and
candidate, in the way Go's benchstat states a change (centre and spread
per side, the change with its 95% confidence interval, or ~, and the
sample behind it); the noise split into within-boot and between-boot CV;
then an mmtests compare-kernels style table of every metric (the mean
per kernel, Amean for times and counts, Hmean for rates, its CV, the
change against the baseline in percent and its marker). Also writes the
comparison as JSON, with the lkp-tests stat names, and a plot (plot.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import re
import sys
import textwrap
from typing import Any

from ..analysis import stats, verdict
from ..runfiles import metrics, runs, sets

SCHEMA = 2
EXIT_REGRESSION = 1         # --fail-above: a primary metric got worse


# ---------------------------------------------------------------------
# Text

WIDTH = 100                 # columns: what a mail client shows unwrapped


def wrap(text: str, indent: str = "    ") -> list[str]:
    """text in lines of at most WIDTH columns, continuation lines
    indented; a word (a path) longer than a line is left whole."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent,
                         break_long_words=False,
                         break_on_hyphens=False) or [""]


def _num4(x: float) -> str:
    """Four significant digits, trailing zeros kept (1.000, 0.9999,
    12.20); whole numbers from 1000 up (20006)."""
    if abs(x) >= 1000 or x == 0:
        return f"{x:.0f}"
    return f"{x:#.4g}".rstrip(".")


def fmt_value(x: float, m: metrics.Metric, ref: float | None = None) -> str:
    if x is None or math.isnan(x):
        return "-"
    if m.unit == "ns":
        r = abs(ref if ref is not None and not math.isnan(ref) else x)
        for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if r >= div:
                return f"{x / div:.4g} {unit}"
        return f"{x:.4g} ns"
    if m.unit == "/s":
        for unit, div in (("M", 1e6), ("k", 1e3)):
            if abs(x) >= div:
                return f"{x / div:.4g}{unit}/s"
        return f"{x:.4g}/s"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.4g}M"
    return _num4(x)


def fmt_cv(cv: float) -> str:
    """The spread of the per-boot numbers: their CV, to two decimals
    below 1% (an exact count's 0.03% is not its 0%)."""
    if math.isnan(cv):
        return ""
    if cv == 0:
        return "± 0%"
    return f"± {cv:.2f}%" if cv < 1 else f"± {cv:.1f}%"


fmt_pct = verdict.fmt_pct


def mark(c: verdict.Change) -> str:
    """* a change, ~ not one by rule, blank otherwise."""
    return "*" if c.significant else ("~" if not c.reported else " ")


def fmt_change(c: verdict.Change) -> str:
    """A table cell: the change and its marker (* a change, ~ not one by
    rule, blank otherwise)."""
    pct = "      -" if math.isnan(c.pct) else f"{c.pct:+7.2f}%"
    return f"{pct} {mark(c)}"


def _short_pct(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{x:+.2f}%" if abs(x) < 10 else f"{x:+.1f}%"


def centre(r: verdict.Row, i: int) -> float:
    """Set i's number on row r as the test sees it: the mean of its
    per-boot numbers (a boot's number as verdict.summary_of makes it),
    geometric where the test is on the log scale, so that the sides'
    numbers differ by the change the row states."""
    if r.log_scale and r.boots[i]:
        return math.exp(sum(math.log(x) for x in r.boots[i])
                        / len(r.boots[i]))
    return r.boot_summaries[i].amean


def spread(r: verdict.Row, i: int) -> float:
    """The CV of set i's per-boot numbers (nan for one boot: no spread
    to see, which is not the same as none)."""
    s = r.boot_summaries[i]
    return s.cv if s.n > 1 else math.nan


def fmt_primary_value(x: float, m: metrics.Metric) -> str:
    if m.unit == "ns":
        return fmt_value(x, m)
    return "-" if math.isnan(x) else _num4(x)


def fmt_p(p: float) -> str:
    return f"p={p:.2g}" if p >= 0.001 else f"p={p:.2e}"


def verdict_lines(cmp: verdict.Comparison) -> list[str]:
    """benchstat-style lines for the primary metrics: the baseline's
    number -> the candidate's (the mean of each side's per-boot numbers,
    as tested: centre), the change [95% CI] or ~, and (p=..., boots x
    runs): p after the multiple test, the one that decides. With several
    candidates, each one's lines under its label. One line each, however
    long (verdict_block wraps them for printing)."""
    op = metrics.PRIMARY.get(cmp.storm, ("", "", "op"))[2]
    width = max([13] + [len(metrics.primary_title(r.metric, op))
                        for r in cmp.primary])
    out = []
    for i in range(1, len(cmp.sets)):
        if len(cmp.sets) > 2:
            out.append(f"{cmp.sets[i].label} against {cmp.sets[0].label}:")
        for r in cmp.primary:
            title = metrics.primary_title(r.metric, op)
            c = r.changes[i]
            assert c is not None
            est = c.estimate
            if c.significant:
                change = (f"{fmt_pct(est.pct)} [{fmt_pct(est.lo)}, "
                          f"{fmt_pct(est.hi)}]")
            else:
                change = "~"
            p = c.p_adjusted if not math.isnan(c.p_adjusted) else est.p
            facts = ([] if math.isnan(p) else [fmt_p(p)]) + [cmp.size(i)]
            # the corrected p is shown already
            why = "" if c.significant or c.why_not.endswith(" corrected") \
                else f"; {c.why_not}"
            # a one-boot side's calibration: what the verdict rests on
            if est.basis and est.basis != c.why_not:
                why += f"; {est.basis}"
            line = (f"{title:<{width}}  "
                    f"{fmt_primary_value(centre(r, 0), r.metric)} -> "
                    f"{fmt_primary_value(centre(r, i), r.metric)}"
                    f"   {change}  ({', '.join(facts)}{why})")
            out.append(line)
    return out


def verdict_block(cmp: verdict.Comparison) -> list[str]:
    """verdict_lines as printed: a line longer than WIDTH goes on under
    its title's column."""
    op = metrics.PRIMARY.get(cmp.storm, ("", "", "op"))[2]
    width = max([13] + [len(metrics.primary_title(r.metric, op))
                        for r in cmp.primary])
    return [w for line in verdict_lines(cmp)
            for w in wrap(line, " " * (width + 2))]


def _cv(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}%"


SUMMARY_TEXT = {"min": "the fastest of its runs", "median": "the median "
                "of its runs", "mean": "the mean of its runs"}


def noise_lines(cmp: verdict.Comparison) -> list[str]:
    """Per time per operation: the CV of the per-boot numbers the test
    compares, split into what a boot's own runs make of it and what the
    boots add (stats.noise), and the CV of single runs inside a boot."""
    out = []
    for r in cmp.rows:
        if not verdict.time_per_op(r.metric):
            continue
        parts = [f"{s.label} {_cv(n.tested_cv)} ({_cv(n.within_cv)} within, "
                 f"{_cv(n.between_cv)} between; single runs "
                 f"{_cv(n.runs_cv)})" for s, n in zip(cmp.sets, r.noise)]
        out += wrap(f"noise, {r.metric.name}: CV of the boots' numbers "
                    "(from a boot's runs, from the boots): "
                    + "; ".join(parts))
    return out


def _cells(r: verdict.Row, nsets: int) -> list[str]:
    ref = centre(r, 0)
    out = []
    for i in range(nsets):
        cell = f"{fmt_value(centre(r, i), r.metric, ref)} " \
            f"{fmt_cv(spread(r, i))}".rstrip()
        out.append(cell)
    return out


def _change_cell(r: verdict.Row, i: int) -> str:
    c = r.changes[i]
    if c is None:
        return ""
    return f"{_short_pct(c.pct)} {mark(c)}"


def stat_of(r: verdict.Row) -> str:
    """The row's first column: (der) for a row never tested, else the
    mean of the per-boot numbers shown: Gmean for a row tested on the
    log scale, else Amean."""
    if r.derived:
        return "(der)"
    return "Gmean" if r.log_scale else "Amean"


def select(rows: list[verdict.Row], pattern: str | None) -> list[verdict.Row]:
    """The rows whose name matches pattern (--metrics: a regular
    expression, searched in the lkp name), all without one."""
    if not pattern:
        return rows
    rx = re.compile(pattern)
    return [r for r in rows if rx.search(r.metric.name)]


def table_lines(cmp: verdict.Comparison, rows: list[verdict.Row]
                ) -> list[str]:
    """mmtests compare-kernels' layout: statistic, name, per set the
    mean of its per-boot numbers ± their CV, for candidates the change
    and its marker. A name too long for its column goes on a line of
    its own."""
    n = len(cmp.sets)
    cells = [_cells(r, n) for r in rows]
    changes = [[_change_cell(r, i) for i in range(1, n)] for r in rows]
    valw = [max([len(c[i]) for c in cells] + [8]) for i in range(n)]
    chw = [max([len(c[i]) for c in changes] + [6]) for i in range(n - 1)]
    labels = [s.label for s in cmp.sets]
    namew = max([len(r.metric.name) for r in rows] + [10])
    # the columns as wide as their labels, when that fits
    wide = [max(valw[0], len(labels[0]))] + [
        max(valw[i], len(labels[i]) - 1 - chw[i - 1]) for i in range(1, n)]

    def rest(w: list[int]) -> int:
        return sum(w) + sum(chw) + 3 * n + 5
    out = []
    if rest(wide) + min(namew, 45) <= WIDTH:
        valw = wide
    else:
        # a label wider than its column: letters, named above
        out += [f"{chr(ord('A') + i)}: {s}" for i, s in enumerate(labels)]
        labels = [chr(ord("A") + i) for i in range(n)]
    namew = min(namew, max(WIDTH - rest(valw), 20))
    head = " " * (6 + namew)
    for i, label in enumerate(labels):
        if i == 0:
            head += f"  {label:>{valw[0]}}"
        elif len(label) <= valw[i]:
            # over the value; a longer label reaches over the change
            head += f"  {label:>{valw[i]}}" + " " * (1 + chw[i - 1])
        else:
            head += f"  {label:>{valw[i] + 1 + chw[i - 1]}}"
    out.append(head.rstrip())
    for r, c, ch in zip(rows, cells, changes):
        line = ""
        for i in range(n):
            line += f"  {c[i]:>{valw[i]}}"
            if i:
                line += f" {ch[i - 1]:<{chw[i - 1]}}"
        name = r.metric.name
        if len(name) > namew:
            out.append(f"{stat_of(r):5} {name}")
            out.append(f"{'':5} {'':<{namew}}{line}".rstrip())
        else:
            out.append(f"{stat_of(r):5} {name:<{namew}}{line}".rstrip())
    return out


def legend(cmp: verdict.Comparison) -> list[str]:
    """--explain: how to read every part."""
    alpha = 1 - cmp.confidence
    paras = [
        "Verdict lines: the mean of each side's per-boot numbers (a boot's "
        "number: the fastest of its runs for the primary time, the median "
        "of its runs for other times, the mean for counts), baseline -> "
        f"candidate; the change with its {cmp.confidence:.0%} confidence "
        "interval (Welch's t-test on the per-boot numbers, log scale for "
        "times), or ~ when it is not a change: its p not below "
        f"{alpha:.2g} after one graphical multiple test over every row of "
        "every candidate (the p shown is that corrected p), or a rule "
        "(named after the sample size).",
        "Noise: the CV of a time's per-boot numbers, split into what "
        "resampling a boot's own runs gives (within) and what the boots "
        "add beyond that (between; the two add in quadrature), and the CV "
        "of single runs in a boot.",
        "Table: Amean: the mean of the per-boot numbers, the ones tested; "
        "± their CV; %: the test's change against "
        f"{cmp.sets[0].label} (baseline); times: lower is better, rates: "
        "higher is better.",
        "*: a change (secondary rows: tested only behind a primary "
        f"change); ~: not a change by rule (below {cmp.floor:g} counts, "
        f"integer counts 1 apart, below {_time_floor(cmp):g}%); (der): "
        "restates another row, not tested."]
    insn = [r for r in cmp.rows if r.metric.kind == "insn"]
    if insn:
        floor = verdict.effect_floor(insn[0].metric, cmp.min_effect)
        paras.append(
            "insn rows: instructions per operation on the CPUs named "
            "(docs/insn.md), held against the ticks in each window; boots "
            "the unit, each the mean of its runs after the ticks; a side of "
            "one boot is tested with the calibrated spread of a boot on its "
            "kernel, and sets in one boot on that boot's runs; a change "
            f"under {floor:g}% is never one.")
    out = []
    for p in paras:
        out += wrap(p, "  ")
    return out


def render(cmp: verdict.Comparison, show_all: bool = False,
           metrics_re: str | None = None, explain: bool = False) -> str:
    """The comparison as text, every line at most WIDTH columns (but a
    word longer than that): the verdict lines, the noise, the table of
    every row shown (--all: every row; metrics_re: the rows whose name
    matches), one line of legend (explain: all of it), the warnings."""
    shown = [r for r in cmp.rows if r.shown or show_all]
    rows = select(shown, metrics_re)
    out = [f"{cmp.storm}  {runs.params_text(cmp.params)}"]
    out += wrap("sets: " + ", ".join(f"{s.label} {s.size}"
                                     for s in cmp.sets))
    out.append("")
    out += verdict_block(cmp)
    out += noise_lines(cmp) + [""]
    if rows:
        out += table_lines(cmp, rows)
    else:
        out.append(f"no row matches --metrics {metrics_re!r}")
    out.append("")
    if explain:
        out += legend(cmp)
    else:
        out.append("*: a change; ~: not a change by rule; (der): not tested; "
                   "--explain: how to read this")
    hidden = len(cmp.rows) - len(shown)
    if hidden:
        out.append(f"{hidden} interrupt rows with every mean below "
                   f"{cmp.floor:g} not shown (--all shows them).")
    if metrics_re and len(rows) < len(shown):
        out.append(f"{len(shown) - len(rows)} rows not matching "
                   f"--metrics {metrics_re!r} not shown.")
    for w in cmp.warnings:
        out += wrap(f"warning: {w}")
    return "\n".join(out) + "\n"


def _time_floor(cmp: verdict.Comparison) -> float:
    return verdict.MIN_EFFECT if cmp.min_effect is None else cmp.min_effect


# ---------------------------------------------------------------------
# JSON

def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else x


ENV_JSON = ("kernel_release", "cmdline", "idle", "cpu_count", "cpu_model",
            "virtualization", "accel", "qemu_version", "cpuidle_driver",
            "clocksource", "suite_version", "suite_commit", "kernel_config",
            "kernel_commit")


def to_json(cmp: verdict.Comparison) -> dict[str, Any]:
    labels = [s.label for s in cmp.sets]
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": "storm-compare",
        "storm": cmp.storm,
        "params": cmp.params,
        "baseline": labels[0],
        "candidates": labels[1:],
        "test": "welch-per-boot",
        "test_name": "Welch's t-test on per-boot summaries",
        "correction": "graphical multiple test (Bretz et al. 2009) over "
                      "every tested row of every candidate",
        "confidence": cmp.confidence,
        "floor": cmp.floor,
        "min_effect_pct": _time_floor(cmp),
        "insn_min_effect_pct": verdict.effect_floor(
            metrics.Metric("insn", "insn", ""), cmp.min_effect),
        "sets": [{
            "label": s.label,
            "dir": str(s.dir),
            "runs": len(s.runs),
            "boots": len(s.boots),
            "series": s.series_ids,
            "files": [pathlib.Path(r["_path"]).name for r in s.runs],
            "env": {k: sorted(verdict.env_values(s, k)) for k in ENV_JSON},
        } for s in cmp.sets],
        "verdict": {},
        "metrics": {},
        "stats": {label: {} for label in labels},
        "matrix": {label: {} for label in labels},
        "warnings": cmp.warnings,
    }
    for r in cmp.rows:
        m = r.metric
        entry: dict[str, Any] = {
            "kind": m.kind, "stat": m.stat, "unit": m.unit, "shown": r.shown,
            "role": "derived" if r.derived else m.role,
            "boot_summary": r.summary,
            "values": {}, "changes": {}}
        for label, s, bs, v, b, n, c in zip(labels, r.summaries,
                                            r.boot_summaries, r.values,
                                            r.boots, r.noise, r.changes):
            entry["values"][label] = {
                "n": s.n, "mean": _num(s.mean), "amean": _num(s.amean),
                "stddev": _num(s.stddev), "cv": _num(s.cv),
                "min": _num(s.min), "max": _num(s.max), "samples": v,
                "boots": b, "boot_mean": _num(bs.amean),
                "boot_cv": _num(bs.cv),
                "tested_cv": _num(n.tested_cv),
                "within_boot_cv": _num(n.within_cv),
                "between_boot_cv": _num(n.between_cv),
                "runs_cv": _num(n.runs_cv)}
            if c is not None:
                e = c.estimate
                entry["changes"][label] = {
                    "pct": _num(e.pct), "ci_low": _num(e.lo),
                    "ci_high": _num(e.hi), "p": _num(e.p),
                    "p_adjusted": _num(c.p_adjusted),
                    "significant": c.significant, "reported": c.reported,
                    "why_not": c.why_not, "basis": c.estimate.basis}
            doc["stats"][label][m.name] = _num(s.mean)
            doc["matrix"][label][m.name] = [_num(x) for x in v]
        doc["metrics"][m.name] = entry
        if m.primary:
            doc["verdict"][m.name] = {
                label: entry["changes"][label] for label in labels[1:]}
    return doc


# ---------------------------------------------------------------------
# Pairing result sets and the command line

def pair(sides: list[list[runs.Series]]) -> list[list[runs.Series]]:
    """Group the series of each side by storm and parameters; every group
    must exist on every side."""
    if all(len(s) == 1 for s in sides):
        return [[s[0] for s in sides]]
    keys = [{x.key: x for x in side} for side in sides]
    common = [k for k in keys[0] if all(k in other for other in keys[1:])]
    if not common:
        raise verdict.CompareError(
            "refusing to compare: no storm with the same parameters in "
            "every result set:\n" + "\n".join(
                f"  {side[0].label}: " + "; ".join(x.what for x in side)
                for side in sides))
    return [[k[key] for k in keys] for key in common]


def write_outputs(cmp: verdict.Comparison, table: str,
                  out: pathlib.Path | None,
                  plot: bool = True) -> list[pathlib.Path]:
    """The table, JSON and PNG, next to the candidate's runs (or in out).
    Named after the series compared; an existing comparison is never
    overwritten (a numbered name is taken instead)."""
    base = cmp.sets[0].label
    series = "+".join(i for i in cmp.sets[1].series_ids
                      if i != runs.LEGACY_SERIES)
    if out is None:
        d = cmp.sets[1].dir
        stem = f"compare-vs-{base}"
    else:
        d = out
        stem = f"compare-{cmp.sets[1].dir.name}"
    if series:
        stem += f"-{series[:40]}"
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    final = stem
    while any((d / f"{final}.{ext}").exists() for ext in ("txt", "json")):
        n += 1
        final = f"{stem}.{n}"
    stem = final
    written = []
    txt = d / f"{stem}.txt"
    txt.write_text(table)
    written.append(txt)
    js = d / f"{stem}.json"
    js.write_text(json.dumps(to_json(cmp), indent=1) + "\n")
    written.append(js)
    if plot:
        from . import plot as plotmod
        png = d / f"{stem}.png"
        plotmod.plot(cmp, png)
        written.append(png)
    return written


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the verdict is asked (add_stat_options' options): from a
    command line with of(), or as a caller without one sets it."""
    confidence: float = 0.95
    floor: float = verdict.FLOOR
    min_effect: float | None = None     # None: each kind's default
    force: bool = False
    show_all: bool = False              # --all: every row in the table
    vary: tuple[str, ...] = ()          # parameters the sets differ in
    metrics: str | None = None          # --metrics: the rows shown
    explain: bool = False               # --explain: the whole legend

    @classmethod
    def of(cls, args: argparse.Namespace) -> Settings:
        return cls(confidence=args.confidence, floor=args.floor,
                   min_effect=args.min_effect, force=args.force,
                   show_all=args.all,
                   vary=tuple(getattr(args, "vary_params", ())),
                   metrics=getattr(args, "metrics", None),
                   explain=getattr(args, "explain", False))


@dataclasses.dataclass(frozen=True)
class Result:
    """One comparison (a storm and its parameters on every side): the
    verdict's model and the table compare prints for it."""
    comparison: verdict.Comparison
    table: str


def compare(sides: list[list[runs.Series]],
            settings: Settings = Settings()) -> list[Result]:
    """The comparisons of the sides (pair's groups), computed: nothing is
    printed or written (show does that)."""
    out = []
    for group in pair(sides):
        cmp = verdict.build(group, confidence=settings.confidence,
                            floor=settings.floor,
                            min_effect=settings.min_effect,
                            force=settings.force, vary=settings.vary)
        out.append(Result(cmp, render(cmp, show_all=settings.show_all,
                                      metrics_re=settings.metrics,
                                      explain=settings.explain)))
    return out


def show(results: list[Result], out: pathlib.Path | None, *, write: bool,
         plot: bool = True) -> None:
    """Print each comparison's table and, when asked, write its files
    (write_outputs), saying where."""
    for r in results:
        print(r.table)
        if write:
            for f in write_outputs(r.comparison, r.table, out, plot=plot):
                print(f"wrote {f}", file=sys.stderr)


def exit_status(done: list[verdict.Comparison],
                fail_above: float | None) -> int:
    """EXIT_REGRESSION when --fail-above is given and a primary metric got
    significantly worse by more than it (for CI gates), else 0."""
    if fail_above is None:
        return 0
    bad = [(c.storm, r) for c in done for r in c.regressed(fail_above)]
    for storm, (label, metric, pct) in bad:
        print(f"storm compare: {storm} on {label}: {metric} got worse by "
              f"{pct:+.1f}%, more than {fail_above:g}%", file=sys.stderr)
    return EXIT_REGRESSION if bad else 0


def add_stat_options(p: argparse.ArgumentParser, writes: bool = True
                     ) -> None:
    """The verdict's options; writes: the command writes its comparison
    unless told --no-write (matrix, ab), rather than only with --out."""
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of the intervals, and 1 - the "
                   "family-wise error rate of the markers (default 0.95)")
    p.add_argument("--min-effect", type=float, default=None,
                   metavar="PCT",
                   help="changes smaller than this are never a change, on "
                   f"every row (default {verdict.MIN_EFFECT:g}%%; "
                   f"instructions {verdict.INSN_MIN_EFFECT:g}%%, which "
                   "--min-effect can raise, not lower)")
    p.add_argument("--floor", type=float, default=verdict.FLOOR,
                   help="interrupt counts whose means are all below this "
                   f"are not changes (default {verdict.FLOOR:g})")
    p.add_argument("--fail-above", type=float, metavar="PCT",
                   help=f"exit {EXIT_REGRESSION} when a primary metric "
                   "(time, IPIs or instructions per operation) got "
                   "significantly worse by more than PCT percent")
    p.add_argument("--force", action="store_true",
                   help="compare sets whose environments differ in what "
                   "moves the numbers (emulation mode, vCPUs)")
    p.add_argument("--all", action="store_true",
                   help="also show interrupt rows below the floor")
    p.add_argument("--no-plot", action="store_true", help="no PNG")
    if writes:
        p.add_argument("--no-write", action="store_true",
                       help="print the table only; write no files")


def add_view_options(p: argparse.ArgumentParser) -> None:
    """What is shown, not what is decided: --metrics and --explain."""
    p.add_argument("--metrics", metavar="REGEX",
                   help="show only the table rows whose lkp name matches "
                   "REGEX (searched, e.g. 'CAL|latency'); the verdict "
                   "lines and the JSON keep every row")
    p.add_argument("--explain", action="store_true",
                   help="end with how to read every part (the statistics, "
                   "the markers, the rules) instead of one line")


def check_stat_options(p: argparse.ArgumentParser,
                       args: argparse.Namespace) -> None:
    if not 0 < args.confidence < 1:
        p.error("--confidence must be between 0 and 1")
    if args.min_effect is not None and args.min_effect < 0:
        p.error("--min-effect must not be negative")
    if getattr(args, "metrics", None):
        try:
            re.compile(args.metrics)
        except re.error as e:
            p.error(f"--metrics: not a regular expression: {e}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm compare",
        description="Compare storm result sets, boots as the unit of "
        "replication. First the verdict lines: for the storm's primary "
        "metrics (time and IPIs per call, flush or op, and IPIs sent per "
        "operation with count_sent=1) the change with its "
        "95% confidence interval and (p=..., boots x runs), or ~ when it "
        "is not a change; then the within- and between-boot noise; then a "
        "table of every metric (runtime, latency percentiles, throughput, "
        "/proc/interrupts rows in total and per storm CPU): the mean of "
        "each set's per-boot numbers and their CV, the change against the "
        "baseline, and * for a change that survives the family-wise "
        "correction; at most 100 columns. With --out DIR, also writes the table, "
        "a JSON file (lkp-tests stat names) and a PNG plot there. Refuses different storms or "
        "parameters, and environments that move the numbers (--force).",
        epilog="A directory may hold several series (one per storm run, "
        "matrix, ab or bisect invocation): the newest is read, LABEL@ID "
        "picks one, --pool takes them all. Exit status: 0, 1 with "
        "--fail-above when a primary metric got worse, 2 on errors. "
        "examples: storm compare 6.1.0-56-amd64 6.12.117+deb12-amd64;  "
        "storm compare --fail-above 5 results/A/ipistorm-x "
        "results/B/ipistorm-x")
    p.add_argument("baseline", help="label under results/, or a directory "
                   "(LABEL@SERIES picks a series)")
    p.add_argument("candidates", nargs="+", metavar="candidate",
                   help="labels or directories to compare with the baseline")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels live (default: $STORM_RESULTS, "
                   "else results/)")
    p.add_argument("--out", type=pathlib.Path, metavar="DIR",
                   help="write the table, JSON and PNG there (default: "
                   "print the table, write nothing: results/ holds runs, "
                   "and a comparison is written where it was asked for)")
    p.add_argument("--pool", action="store_true",
                   help="read every series of a directory, not the newest")
    add_stat_options(p, writes=False)
    add_view_options(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    check_stat_options(p, args)
    try:
        sides = [sets.resolve(s, args.results, pool=args.pool)
                 for s in [args.baseline] + args.candidates]
        results = compare(sides, Settings.of(args))
    except (runs.RunError, verdict.CompareError) as e:
        print(f"storm compare: {e}", file=sys.stderr)
        return 2
    # results/ holds runs: a comparison is written where it was asked for
    show(results, args.out, write=args.out is not None,
         plot=not args.no_plot)
    return exit_status([r.comparison for r in results], args.fail_above)
