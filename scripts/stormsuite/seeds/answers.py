"""The seeds' answers, each in the format its seed's author read: a job
file (job.py) names one and gives its settings under `answer:`. A change
is stated with its interval only where the suite's verdict stands behind
it (common.verdict_mark); the seed's own figures close each answer.
Each takes the job (job.Job), the command's options, what each variant
measured (job.Measured) and how the runs were taken."""

from __future__ import annotations

import argparse
import dataclasses
import math
import pathlib
import statistics
from typing import Any, Callable

from ..runfiles import result, runs
from . import common


@dataclasses.dataclass
class Answer:
    text: str
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    # writes a plot to the path it is given, next to the answer
    plot: Callable[[pathlib.Path], pathlib.Path] | None = None


def _ratio(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def mmtests(job: Any, args: argparse.Namespace, measured: list[Any],
            accel: str) -> Answer:
    """mmtests' normalized AMean: 1.00 [0.00] for the baseline, x.xx
    [pct imp] for each other kernel; with the target CPU's CAL, the calls
    that needed no IPI, and instructions per call where counted."""
    a = job.answer
    storm, sender, target = job.storm, a["sender"], a["target"]
    lines = [
        f"seed {job.seed}: insmod {storm}.ko "
        f"{' '.join(job.storm_params(args))}",
        f"  ({args.cpus} vCPUs, {accel}; {args.boots} boots x "
        f"{args.runs} runs a kernel; CPU {sender} calls CPU {target})",
        "",
        "  " + "=" * 66,
        f"  Test          : {storm}",
        "  Units         : Normalized runtime",
        "  Interpretation: Lower is better",
        "  Statistic     : AMean",
        "  " + "=" * 66,
    ]
    for m in measured:
        first = m.comparisons[0]
        base = first.labels[0]
        rows = [(first.base, base, first.doc)] + [
            (c.cand, c.labels[1], c.doc) for c in m.comparisons]
        t0 = common.mean(first.doc, f"{storm}.runtime_ns", base)
        lines.append(f"  {m.variant.says}:")
        lines.append(f"  {'kernel:':30} {'time [pct imp]':17} "
                     f"{'CAL on CPU ' + str(target):>15} "
                     f"{'calls w/o IPI':>14}  change")
        for kernel, label, d in rows:
            t = common.mean(d, f"{storm}.runtime_ns", label) / t0
            cal = common.mean(d, f"{storm}.irq.CPU{target}.CAL", label)
            handled = common.mean(d, f"{storm}.handled", label)
            no_ipi = max(0.0, handled - cal)
            ch = "" if label == base else common.verdict_mark(
                common.change(d, f"{storm}.time_per_call_ns", label))
            lines.append(f"  {job.says[kernel.name]:30} {_ratio(t)} "
                         f"[{(1 - t) * 100:6.2f}]{'':3} {cal:15.0f} "
                         f"{no_ipi:14.0f}  {ch}")
        lines += insn_lines(job, rows, m.comparisons, sender, target)
        lines.append("")
    lines.append(f"  {a['seed']}")
    return Answer("\n".join(lines) + "\n")


def insn_lines(job: Any, rows: list[tuple[Any, str, dict[str, Any]]],
               comparisons: list[Any], sender: int,
               target: int) -> list[str]:
    """Instructions per call on the sender and the target, where they
    were counted (docs/insn.md), with the verdict on each."""
    metrics = [(f"sender CPU {sender}", f"{job.storm}.insn_per_call.sender"),
               (f"target CPU {target}", f"{job.storm}.insn_per_call.target")]
    if not all(name in comparisons[0].doc["metrics"] for _, name in metrics):
        return []
    out = [f"  {'instructions per call:':30} "
           + " ".join(f"{what:>16}" for what, _ in metrics)]
    for kernel, label, d in rows:
        out.append(f"  {job.says[kernel.name]:30} " + " ".join(
            f"{common.mean(d, name, label):16.1f}" for _, name in metrics))
    for c in comparisons:
        for what, name in metrics:
            out.append(f"    {what}: " + common.verdict_mark(
                common.change(c.doc, name, c.labels[1])))
    return out


def _arrow(pct: float) -> str:
    if math.isnan(pct):
        return ""
    return ("\u2191" if pct > 0 else "\u2193") + f"{abs(pct):.1f}%"


def lkp(job: Any, args: argparse.Namespace, measured: list[Any],
        accel: str) -> Answer:
    """lkp's stat lines: each compared kernel as "Base", the other as
    "This patch" with the change in percent, and the suite's verdict on
    the primary metric each row restates."""
    a = job.answer
    lines = [f"seed {job.seed}: {args.cpus} senders, each calling the "
             f"other {args.cpus - 1} with smp_call_function_many; "
             f"{args.boots} boots x {args.runs} runs a kernel, {accel}", ""]
    for m in measured:
        lines.append(f"{job.storm} "
                     f"{' '.join(job.storm_params(args, m.variant))}")
        for c in m.comparisons:
            doc, (base, cand) = c.doc, c.labels
            lines.append(f"  Base ({c.base.patch or c.base.name}):")
            for metric, fmt, _ in a["rows"]:
                if metric not in doc["metrics"]:
                    continue    # counted with --no-insn or off TCG
                lines.append(f"    \"{metric}\": "
                             + fmt.format(common.mean(doc, metric, base))
                             + ",")
            lines.append(f"  This patch ({job.says[c.cand.name]}):")
            for metric, fmt, tested in a["rows"]:
                if metric not in doc["metrics"]:
                    continue
                b = common.mean(doc, metric, base)
                v = common.mean(doc, metric, cand)
                pct = (v / b - 1) * 100 if b else math.nan
                mark = common.verdict_mark(common.change(doc, tested, cand))
                lines.append(f"    \"{metric}\": " + fmt.format(v) + ", "
                             + _arrow(pct) + f"  ({tested.split('.')[1]}: "
                             f"{mark})")
            lines.append("")
    lines += [a["seed"], a["notes"],
              "(...: verdict) is the suite's verdict on the primary metric "
              "the row restates: its change and 95% interval, or ~."]
    return Answer("\n".join(lines) + "\n")


def phase_means(s: runs.Series) -> dict[str, float]:
    """Per run, averaged over the series: the call-function interrupts
    (CAL) of the create and destroy phases, all CPUs and CPU 0."""
    out = {}
    for key in ("phase.create.irq.0.CAL", "phase.create.CAL",
                "phase.destroy.CAL"):
        out[key] = statistics.fmean(float(r["result"].get(key, "nan"))
                                    for r in s.runs)
    return out


def loops(job: Any, args: argparse.Namespace, measured: list[Any],
          accel: str) -> Answer:
    """The seed's "N loops: +X ipis": CPU 0's call-function interrupts
    while the caches were created (the column its script read), with all
    CPUs' and the destroy phase's."""
    a = job.answer
    n = getattr(args, a["count"])
    lines = [f"seed {job.seed}: {job.storm} "
             f"{' '.join(job.storm_params(args))} ({args.cpus} vCPUs, "
             f"{args.boots} boots x {args.runs} runs a kernel; means per "
             f"run; {accel})", "",
             "  call-function IPIs received while the caches were created: "
             "on CPU 0 (the seed's column), on all CPUs; and while they "
             "were destroyed"]
    for m in measured:
        if m.variant.says:
            lines.append(f"  {m.variant.says}:")
        for k, s in zip(job.kernels, m.sets):
            pm = phase_means(s)
            lines.append(
                f"  {job.says[k.name]:42} {n} loops: "
                f"+{pm['phase.create.irq.0.CAL']:.0f} ipis   (all CPUs "
                f"+{pm['phase.create.CAL']:.0f}, "
                f"{pm['phase.create.CAL'] / n:.3f} a cache; destroy "
                f"+{pm['phase.destroy.CAL']:.0f})")
    lines += ["", f"  {a['seed']}", f"  {a['notes']}"]
    return Answer("\n".join(lines) + "\n")


@dataclasses.dataclass
class Cell:
    kernel: str
    cpus: int
    mean_us: float          # mean of the boots' mean broadcast time
    boot_cv: float          # between-boot CV of the per-boot means, %
    p99_us: float           # of every broadcast of every run
    max_us: float
    broadcasts: int
    uptime_s: float         # the guest's uptime at its first measured run


def merged(docs: list[dict[str, Any]]) -> result.Histogram:
    """One histogram of every run's broadcasts."""
    counts: dict[int, int] = {}
    total = mn = mx = 0
    weighted = 0.0
    for d in docs:
        h = result.histogram({k: str(v) for k, v in d["result"].items()})
        if h is None or not h.count:
            continue
        for low, c in h.buckets:
            counts[low] = counts.get(low, 0) + c
        mn = h.min_ns if not total else min(mn, h.min_ns)
        mx = max(mx, h.max_ns)
        weighted += h.mean_ns * h.count
        total += h.count
    return result.Histogram(sorted(counts.items()), total, mn, mx,
                            int(weighted / total) if total else 0)


def cell(kernel: str, cpus: int, s: runs.Series) -> Cell:
    boot_means = [statistics.fmean(int(r["result"]["latency.mean_ns"])
                                   for r in boot) for boot in s.boots]
    h = merged(s.runs)
    cv = (statistics.stdev(boot_means) / statistics.fmean(boot_means) * 100
          if len(boot_means) > 1 else math.nan)
    up = [float(boot[0].get("env", {}).get("seconds_since_boot", "nan"))
          for boot in s.boots]
    return Cell(kernel, cpus, statistics.fmean(boot_means) / 1000, cv,
                h.percentile(99) / 1000, h.max_ns / 1000, h.count,
                statistics.fmean(up))


def broadcast(job: Any, args: argparse.Namespace, measured: list[Any],
              accel: str) -> Answer:
    """A broadcast's time by guest size: per kernel and vCPU count the
    mean (with the boots' spread), p99 and max of every broadcast timed,
    and a plot of how they grow."""
    a = job.answer
    cells = [cell(k.name, m.variant.cpus, s) for m in measured
             for k, s in zip(m.kernels, m.sets)]
    lines = [f"seed {job.seed}: broadcast (smp_call_function_many from "
             f"CPU 0 to all others, wait=1), {job.storm} "
             f"{' '.join(job.storm_params(args))}",
             f"  ({args.boots} boots x {args.runs} runs per kernel and "
             f"size, {accel}; times per broadcast)", "",
             f"  {'kernel':10} {'vCPUs':>5} {'mean':>10} {'(boot CV)':>10} "
             f"{'p99':>10} {'max':>10} {'broadcasts':>11} {'uptime':>8}"]
    for c in sorted(cells, key=lambda c: (c.kernel, c.cpus)):
        lines.append(f"  {c.kernel:10} {c.cpus:5} {c.mean_us:8.1f}us "
                     f"{'(' + format(c.boot_cv, '.1f') + '%)':>10} "
                     f"{c.p99_us:8.1f}us {c.max_us:8.1f}us "
                     f"{c.broadcasts:11} {c.uptime_s:7.1f}s")
    lines += ["", f"  {a['seed']}", f"  {a['notes']}"]
    return Answer("\n".join(lines) + "\n",
                  {"cells": [dataclasses.asdict(c) for c in cells]},
                  lambda png: plot(cells, png, accel))


def plot(cells: list[Cell], png: pathlib.Path,
         accel: str = "") -> pathlib.Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in dict.fromkeys(c.kernel for c in cells):
        mine = sorted((c for c in cells if c.kernel == k),
                      key=lambda c: c.cpus)
        xs = [c.cpus for c in mine]
        line, = ax.plot(xs, [c.mean_us for c in mine], "o-",
                        label=f"{k} mean")
        ax.plot(xs, [c.p99_us for c in mine], "s--", color=line.get_color(),
                label=f"{k} p99")
        ax.plot(xs, [c.max_us for c in mine], "x:", color=line.get_color(),
                label=f"{k} max")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sorted({c.cpus for c in cells}))
    ax.set_xticklabels([str(x) for x in sorted({c.cpus for c in cells})])
    ax.set_xlabel(f"vCPUs ({accel})" if accel else "vCPUs")
    ax.set_ylabel("broadcast time, us")
    ax.set_title("smp_call_function_many to all, wait=1")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png


FORMATS: dict[str, Callable[[Any, argparse.Namespace, list[Any], str],
                            Answer]] = {
    "mmtests": mmtests, "lkp": lkp, "loops": loops, "broadcast": broadcast}
