"""The seeds' answers, each in the format its seed's author read: a job
file (job.py) names one and gives its settings under `answer:`. A change
is stated with its interval only where the suite's verdict stands behind
it (common.verdict_mark); the seed's own figures close each answer.
Each takes the job (job.Job), the command's options, what each variant
measured (job.Measured) and how the runs were taken."""

from __future__ import annotations

import argparse
import math
import statistics
from typing import Any, Callable

from ..runfiles import runs
from . import common


def _ratio(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def mmtests(job: Any, args: argparse.Namespace, measured: list[Any],
            accel: str) -> str:
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
    return "\n".join(lines) + "\n"


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
        accel: str) -> str:
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
    return "\n".join(lines) + "\n"


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
          accel: str) -> str:
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
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[Any, argparse.Namespace, list[Any], str],
                            str]] = {
    "mmtests": mmtests, "lkp": lkp, "loops": loops}
