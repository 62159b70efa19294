"""Seed 004: TIF_NOTIFY_IPI, ipistorm's single-call regression.

The seed's "revert" (send_call_function_single_ipi() always sends the
IPI; no flush_smp_call_function_queue() in do_idle()) against stock
6.1, with the seed's own command line, on the default idle (HLT, not
polling) and on idle=poll (polling, as the seed's EPYC idled), and the
answer in the seed's table: normalized runtime AMean, 1.00 [0.00] for
stock, x.xx [pct imp] for the revert; with CAL on the target CPU and the
calls that needed no IPI.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from . import common

TITLE = "TIF_NOTIFY_IPI: single calls to a polling idle CPU (ipistorm)"
KERNELS = [common.STOCK,
           common.Kernel("004-revert", "seed-004-ipi-even-to-polling-idle.patch")]
IDLES = [("", "default idle (HLT)"), ("idle=poll", "idle=poll")]
# insmod ipistorm.ko numipi=100000 single=1 offset=8 cpulist=8 wait=1
SEED_PARAMS = {"numipi": "100000", "single": "1", "offset": "8",
               "cpulist": "8", "wait": "1"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_guest_options(p, cpus=17, boots=4, runs_=8)
    p.add_argument("--numipi", type=int, default=100000,
                   help="calls per run (default 100000, the seed's)")


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    common.at_least(p, args, "the seed calls from CPU 8 to CPU 16 "
                    "(offset=8 cpulist=8)", cpus=17)
    common.at_least(p, args, numipi=1)


def params(args: argparse.Namespace) -> list[str]:
    # latency=0: the seed timed the whole storm, not sampled calls
    return [f"{k}={v}" for k, v in {**SEED_PARAMS,
                                    "numipi": str(args.numipi)}.items()] \
        + ["latency=0"]


def plan(args: argparse.Namespace) -> str:
    return (f"kernels: {', '.join(k.name for k in KERNELS)}; boot "
            f"arguments: default, idle=poll; {args.boots} boots each, "
            f"{args.warmup} warm-up + {args.runs} runs of ipistorm "
            f"{' '.join(params(args))} on {args.cpus} vCPUs")


def work(args: argparse.Namespace) -> tuple[list[int], int]:
    """For --dry-run's estimate: one storm a boot, every kernel booted
    args.boots times with each idle; the kernels to build."""
    return [1] * (len(KERNELS) * len(IDLES) * args.boots), len(KERNELS)


def run(args: argparse.Namespace, who: str) -> int:
    results = common.results_dir(args, "004")
    clock = common.Clock()
    with common.built(KERNELS, who, clock) as outs:
        sides = [side for append, _ in IDLES
                 for side in common.sides(KERNELS, outs, append)]
        sets = common.measure(sides, args, "ipistorm", params(args), results)
    docs = [common.compare_two(sets[i], sets[i + 1])
            for i in range(0, len(sets), 2)]
    clock.lap("compare")
    common.finish(who, "004", results,
                  answer(args, docs, common.accel(sets)), clock,
                  {"comparisons": docs})
    return 0


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def answer(args: argparse.Namespace, docs: list[dict[str, Any]],
           accel: str) -> str:
    target = (8 + 8) % args.cpus
    lines = [
        f"seed 004: insmod ipistorm.ko {' '.join(params(args))}",
        f"  ({args.cpus} vCPUs, {accel}; {args.boots} boots x "
        f"{args.runs} runs a kernel; CPU 8 calls CPU {target})",
        "",
        "  " + "=" * 66,
        "  Test          : ipistorm",
        "  Units         : Normalized runtime",
        "  Interpretation: Lower is better",
        "  Statistic     : AMean",
        "  " + "=" * 66,
    ]
    for (_, idle), doc in zip(IDLES, docs):
        base, cand = doc["baseline"], doc["candidates"][0]
        t0 = common.mean(doc, "ipistorm.runtime_ns", base)
        lines.append(f"  {idle}:")
        lines.append(f"  {'kernel:':30} {'time [pct imp]':17} "
                     f"{'CAL on CPU ' + str(target):>15} "
                     f"{'calls w/o IPI':>14}  change")
        for label, name in ((base, "stock 6.1"), (cand, "stock 6.1 + revert")):
            t = common.mean(doc, "ipistorm.runtime_ns", label) / t0
            cal = common.mean(doc, f"ipistorm.irq.CPU{target}.CAL", label)
            handled = common.mean(doc, "ipistorm.handled", label)
            no_ipi = max(0.0, handled - cal)
            ch = "" if label == base else common.verdict_mark(
                common.change(doc, "ipistorm.time_per_call_ns", label))
            lines.append(f"  {name:30} {_pct(t)} [{(1 - t) * 100:6.2f}]"
                         f"{'':3} {cal:15.0f} {no_ipi:14.0f}  {ch}")
        lines += insn_lines(doc, base, cand, target)
        lines.append("")
    lines.append("  The seed (2 x 64C EPYC, polling idle): tip 1.00 [0.00], "
                 "tip + revert 0.81 [19.36].")
    return "\n".join(lines) + "\n"


def insn_lines(doc: dict[str, Any], base: str, cand: str,
               target: int) -> list[str]:
    """Instructions per call on the sender (CPU 8) and the target, where
    they were counted (docs/insn.md), with the verdict on each."""
    rows = [("sender CPU 8", "ipistorm.insn_per_call.sender"),
            (f"target CPU {target}", "ipistorm.insn_per_call.target")]
    if not all(name in doc["metrics"] for _, name in rows):
        return []
    out = [f"  {'instructions per call:':30} "
           + " ".join(f"{what:>16}" for what, _ in rows)]
    for label, kernel in ((base, "stock 6.1"), (cand, "stock 6.1 + revert")):
        out.append(f"  {kernel:30} " + " ".join(
            f"{common.mean(doc, name, label):16.1f}" for _, name in rows))
    for what, name in rows:
        out.append(f"    {what}: "
                   + common.verdict_mark(common.change(doc, name, cand)))
    return out
