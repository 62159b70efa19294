"""storm compare: is the difference between kernels real?

Reads result sets (labels under results/, or directories of run files),
pairs the series of the same storm and parameters, and for every metric
(see metrics.py) prints an mmtests compare-kernels style table: the mean
per kernel (Amean for times and counts, Hmean for rates), its CV, the
change against the baseline in percent and whether that change is
significant (stats.py). Also writes the comparison as JSON, with the
lkp-tests stat names, and a plot (plot.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import sys
from typing import Any

from . import metrics, runs, stats

SCHEMA = 1
FLOOR = 10.0                 # counts: means below this are not changes
ENV_MUST_MATCH = ("cpu_count", "virtualization", "cpu_model")


class CompareError(Exception):
    pass


@dataclasses.dataclass
class Row:
    metric: metrics.Metric
    values: list[list[float]]           # per set, per run
    summaries: list[stats.Summary]      # per set
    changes: list[stats.Change | None]  # per set; None for the baseline
    shown: bool                         # False: tiny everywhere


@dataclasses.dataclass
class Comparison:
    sets: list[runs.Series]             # baseline first
    rows: list[Row]
    test: str
    confidence: float
    floor: float
    warnings: list[str]

    @property
    def storm(self) -> str:
        return self.sets[0].storm

    @property
    def params(self) -> dict[str, str]:
        return self.sets[0].params


def check_same(sets: list[runs.Series]) -> None:
    """Refuse to compare different storms or parameters."""
    base = sets[0]
    for s in sets[1:]:
        if s.key != base.key:
            raise CompareError(
                "refusing to compare different storms or parameters:\n"
                f"  {base.label}: {base.what}\n  {s.label}: {s.what}")
    for s in sets:
        if not s.runs:
            raise CompareError(f"{s.label}: no untraced runs in {s.dir}")


def env_warnings(sets: list[runs.Series]) -> list[str]:
    out = []
    for s in sets:
        for name in ("kernel_release", "cmdline", "cpu_count",
                     "virtualization"):
            vals = s.env(name)
            if len(vals) > 1:
                out.append(f"{s.label}: runs differ in {name}: "
                           f"{', '.join(sorted(vals))}")
    base = sets[0]
    for name in ENV_MUST_MATCH:
        for s in sets[1:]:
            if s.env(name) != base.env(name):
                out.append(
                    f"environments differ in {name}: {base.label} has "
                    f"{', '.join(sorted(base.env(name)))}, {s.label} has "
                    f"{', '.join(sorted(s.env(name)))}")
    # parameters the module resolved differently (e.g. default cpulists)
    def effective(s: runs.Series) -> dict[str, str]:
        return {k: str(v) for k, v in s.runs[0]["result"].items()
                if k.startswith("param.")}
    b = effective(base)
    for s in sets[1:]:
        e = effective(s)
        diff = sorted(k for k in set(b) | set(e) if b.get(k) != e.get(k))
        if diff:
            out.append(f"{s.label}: the module resolved parameters "
                       "differently: " + ", ".join(
                           f"{k} {b.get(k)} vs {e.get(k)}" for k in diff))
    virt = set().union(*(s.env("virtualization") for s in sets))
    if virt & {"tcg", "qemu"}:
        out.append("taken under emulation (TCG): times are emulated, not "
                   "hardware timings; interrupt counts are still real")
    return out


def build(sets: list[runs.Series], *, test: str = "welch",
          confidence: float = 0.95, floor: float = FLOOR) -> Comparison:
    check_same(sets)
    per_set = [metrics.of_runs(s.runs) for s in sets]
    names = [m for m in per_set[0] if all(m in p for p in per_set[1:])]
    rows = []
    for m in names:
        values = [p[m] for p in per_set]
        harmonic = m.kind == "rate"
        sums = [stats.summarize(v, harmonic=harmonic) for v in values]
        fl = floor if m.kind == "count" else 0.0
        changes: list[stats.Change | None] = [None] + [
            stats.change(values[0], v, harmonic=harmonic, test=test,
                         confidence=confidence, floor=fl)
            for v in values[1:]]
        shown = m.kind != "count" or any(abs(s.amean) >= floor for s in sums)
        rows.append(Row(m, values, sums, changes, shown))
    rows.sort(key=lambda r: _order(r.metric))
    return Comparison(sets, rows, test, confidence, floor,
                      env_warnings(sets))


def _order(m: metrics.Metric) -> tuple[int, str]:
    """Times and rates first (in the order made), then the module's own
    counts, then /proc/interrupts: totals, then per CPU by row."""
    if m.kind != "count":
        return (0, "")
    group = 3 if m.name.startswith("interrupts.") else 1
    if ".CPU" in m.name:
        head, rest = m.name.split(".CPU", 1)
        cpu, _, row = rest.partition(".")
        return (group + 1, f"{head}.{row}.{int(cpu):05d}")
    return (group, m.name)


# ---------------------------------------------------------------------
# Text

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
    return f"{x:.1f}"


def fmt_cv(cv: float) -> str:
    return "(CV    -)" if math.isnan(cv) else f"(CV {cv:5.1f}%)"


def fmt_change(c: stats.Change) -> str:
    if math.isnan(c.pct):
        pct = "      -"
    else:
        pct = f"{c.pct:+7.2f}%"
    mark = "*" if c.significant else ("~" if not c.reported else " ")
    return f"{pct} {mark}"


def render(cmp: Comparison, show_all: bool = False) -> str:
    rows = [r for r in cmp.rows if r.shown or show_all]
    namew = max([len(r.metric.name) for r in rows] + [20])
    cells: list[list[str]] = []
    for r in rows:
        ref = r.summaries[0].mean
        line = []
        for i, s in enumerate(r.summaries):
            cell = f"{fmt_value(s.mean, r.metric, ref)} {fmt_cv(s.cv)}"
            change = r.changes[i]
            if change is not None:
                cell += f" {fmt_change(change)}"
            line.append(cell)
        cells.append(line)
    colw = [max([len(s.label) for s in cmp.sets][i:i + 1]
                + [len(c[i]) for c in cells] + [10])
            for i in range(len(cmp.sets))]
    pad = 6 + namew
    out = [f"{cmp.storm}  {runs.params_text(cmp.params)}",
           "runs: " + ", ".join(f"{s.label} {len(s.runs)}"
                                for s in cmp.sets), ""]
    out.append(" " * pad + "  ".join(
        f"{s.label:>{colw[i]}}" for i, s in enumerate(cmp.sets)))
    for r, c in zip(rows, cells):
        out.append(f"{r.metric.stat:5} {r.metric.name:<{namew}}" + "  ".join(
            f"{cell:>{colw[i]}}" for i, cell in enumerate(c)))
    hidden = len(cmp.rows) - len(rows)
    test = stats.TESTS[cmp.test]
    out += ["",
            "Amean: arithmetic mean (times, counts); Hmean: harmonic mean "
            "(rates); CV: stddev/mean of the runs.",
            f"%: change of the mean against {cmp.sets[0].label} (baseline). "
            "Times: lower is better; rates: higher is better.",
            f"*: significant at {cmp.confidence:.0%} confidence ({test}, "
            f"two-sided, p < {1 - cmp.confidence:.2g}); "
            f"~: below {cmp.floor:g} counts, not reported as a change."]
    if hidden:
        out.append(f"{hidden} interrupt rows with every mean below "
                   f"{cmp.floor:g} not shown (--all shows them).")
    for w in cmp.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------
# JSON

def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else x


def to_json(cmp: Comparison) -> dict[str, Any]:
    labels = [s.label for s in cmp.sets]
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": "storm-compare",
        "storm": cmp.storm,
        "params": cmp.params,
        "baseline": labels[0],
        "candidates": labels[1:],
        "test": cmp.test,
        "test_name": stats.TESTS[cmp.test],
        "confidence": cmp.confidence,
        "floor": cmp.floor,
        "sets": [{
            "label": s.label,
            "dir": str(s.dir),
            "runs": len(s.runs),
            "files": [pathlib.Path(r["_path"]).name for r in s.runs],
            "env": {k: sorted(s.env(k)) for k in (
                "kernel_release", "cmdline", "idle", "cpu_count",
                "cpu_model", "virtualization", "cpuidle_driver",
                "clocksource", "suite_version")},
        } for s in cmp.sets],
        "metrics": {},
        "stats": {label: {} for label in labels},
        "warnings": cmp.warnings,
    }
    for r in cmp.rows:
        m = r.metric
        entry: dict[str, Any] = {
            "kind": m.kind, "stat": m.stat, "unit": m.unit, "shown": r.shown,
            "values": {}, "changes": {}}
        for label, s, v, c in zip(labels, r.summaries, r.values, r.changes):
            entry["values"][label] = {
                "n": s.n, "mean": _num(s.mean), "amean": _num(s.amean),
                "stddev": _num(s.stddev), "cv": _num(s.cv),
                "min": _num(s.min), "max": _num(s.max), "samples": v}
            if c is not None:
                entry["changes"][label] = {
                    "pct": _num(c.pct), "p": _num(c.p),
                    "significant": c.significant, "reported": c.reported}
            doc["stats"][label][m.name] = _num(s.mean)
        doc["metrics"][m.name] = entry
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
        raise CompareError(
            "refusing to compare: no storm with the same parameters in "
            "every result set:\n" + "\n".join(
                f"  {side[0].label}: " + "; ".join(x.what for x in side)
                for side in sides))
    return [[k[key] for k in keys] for key in common]


def write_outputs(cmp: Comparison, table: str, out: pathlib.Path | None,
                  plot: bool = True) -> list[pathlib.Path]:
    base = cmp.sets[0].label
    if out is None:
        d = cmp.sets[1].dir
        stem = f"compare-vs-{base}"
    else:
        d = out
        stem = f"compare-{cmp.sets[1].dir.name}"
    d.mkdir(parents=True, exist_ok=True)
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


def compare(sides: list[list[runs.Series]], args: argparse.Namespace,
            out: pathlib.Path | None = None) -> list[Comparison]:
    done = []
    for group in pair(sides):
        cmp = build(group, test=args.test, confidence=args.confidence,
                    floor=args.floor)
        table = render(cmp, show_all=args.all)
        print(table)
        if not args.no_write:
            for f in write_outputs(cmp, table, out, plot=not args.no_plot):
                print(f"wrote {f}", file=sys.stderr)
        done.append(cmp)
    return done


def add_stat_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test", choices=sorted(stats.TESTS), default="welch",
                   help="significance test: welch (Welch's t-test, the "
                   "default) or mannwhitney (Mann-Whitney U)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level for the * marker (default 0.95)")
    p.add_argument("--floor", type=float, default=FLOOR,
                   help="interrupt counts whose means are all below this "
                   f"are not changes (default {FLOOR:g})")
    p.add_argument("--all", action="store_true",
                   help="also show interrupt rows below the floor")
    p.add_argument("--no-plot", action="store_true", help="no PNG")
    p.add_argument("--no-write", action="store_true",
                   help="print the table only; write no files")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="storm compare",
        description="Compare storm result sets: for every metric (runtime, "
        "latency percentiles, throughput, /proc/interrupts rows in total and "
        "per storm CPU) the mean per set (Amean for times and counts, Hmean "
        "for rates), CV, change against the baseline, and a significance "
        "marker. Writes the table, a JSON file (lkp-tests stat names) and a "
        "PNG plot into the first candidate's series directory, or --out. "
        "Refuses to compare different storms or parameters.",
        epilog="examples: storm compare 6.1.0-56-amd64 "
        "6.12.117+deb12-amd64;  storm compare results/A/ipistorm-x "
        "results/B/ipistorm-x --test mannwhitney")
    p.add_argument("baseline", help="label under results/, or a directory")
    p.add_argument("candidates", nargs="+", metavar="candidate",
                   help="labels or directories to compare with the baseline")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels live (default: the repository's "
                   "results/)")
    p.add_argument("--out", type=pathlib.Path,
                   help="write the table, JSON and PNG here")
    add_stat_options(p)
    args = p.parse_args(argv)
    if not 0 < args.confidence < 1:
        p.error("--confidence must be between 0 and 1")
    try:
        sides = [runs.resolve(s, args.results)
                 for s in [args.baseline] + args.candidates]
        compare(sides, args, args.out)
    except (runs.RunError, CompareError) as e:
        print(f"storm compare: {e}", file=sys.stderr)
        return 2
    return 0
