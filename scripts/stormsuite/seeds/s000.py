"""Seed 000: an IPI only when the target's call queue was empty.

The seed (2017) made smp_call_function_many() send an IPI only to a
target whose call_single_queue was empty: one with calls queued already
has an IPI on its way. 6.1 has it; patches/seed-000-* take it out again
(smp_call_function_many_cond(); the second variant also the single-call
queueing path). Several senders calling overlapping targets
(smp_call_function_many from CPUs 0-3, each to the other three), wait=0
and wait=1, the IPIs sent counted (count_sent=1) next to the interrupts
received. The answer in the seed's terms: each kernel without the fix
as "Base", stock 6.1 (with it) as "This patch", lkp stat names and the
change in percent.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from . import common

TITLE = "IPI only to an empty call queue: overlapping smp_call_function_many"
KERNELS = [common.Kernel("000-many", "seed-000-ipi-for-every-queued-call.patch"),
           common.Kernel("000-single",
                         "seed-000-ipi-for-every-queued-call-single-too.patch"),
           common.STOCK]
WAITS = ["0", "1"]
# (the seed's kind of row, its format, the primary metric whose verdict
# it states: the rows themselves restate a primary one and are not
# tested on their own)
ROWS = [("interrupts.CAL:Function_call_interrupts", "{:.1f}",
         "ipistorm.ipis_per_call"),
        ("ipistorm.ipis_sent", "{:.1f}", "ipistorm.ipis_sent_per_call"),
        ("ipistorm.runtime_ns", "{:.0f}", "ipistorm.time_per_call_ns"),
        ("ipistorm.insn_per_call", "{:.1f}", "ipistorm.insn_per_call")]


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_guest_options(p, cpus=4, boots=3, runs_=5, timeout=900)
    p.add_argument("--numipi", type=int, default=5000,
                   help="calls per sender and run (default 5000)")


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    common.at_least(p, args, "overlapping targets need three CPUs", cpus=3)
    common.at_least(p, args, numipi=1)


def params(args: argparse.Namespace, wait: str) -> list[str]:
    return [f"numipi={args.numipi}", "single=0", f"cpulist=0-{args.cpus - 1}",
            f"wait={wait}", "latency=0", "count_sent=1"]


def plan(args: argparse.Namespace) -> str:
    return (f"kernels: {', '.join(k.name for k in KERNELS)}; for wait=0 and "
            f"wait=1, {args.boots} boots each, {args.warmup} warm-up + "
            f"{args.runs} runs of ipistorm {' '.join(params(args, 'W'))} on "
            f"{args.cpus} vCPUs")


def work(args: argparse.Namespace) -> tuple[list[int], int]:
    """For --dry-run's estimate: the storms each boot runs (one per boot,
    every kernel booted args.boots times for each wait), and the kernels
    to build."""
    return [1] * (len(KERNELS) * len(WAITS) * args.boots), len(KERNELS)


def run(args: argparse.Namespace, who: str) -> int:
    results = common.results_dir(args, "000")
    clock = common.Clock()
    docs: dict[str, list[dict[str, Any]]] = {}
    measured = []
    with common.built(KERNELS, who, clock) as outs:
        sides = common.sides(KERNELS, outs)
        for wait in WAITS:
            sets = common.measure(sides, args, "ipistorm",
                                  params(args, wait), results)
            # the seed's direction: without the fix first
            docs[wait] = [common.compare_two(s, sets[-1])
                          for s in sets[:-1]]
            measured += sets
    common.finish(who, "000", results,
                  answer(args, docs, common.accel(measured)), clock,
                  {"comparisons": docs})
    return 0


def _arrow(pct: float) -> str:
    if math.isnan(pct):
        return ""
    return ("\u2191" if pct > 0 else "\u2193") + f"{abs(pct):.1f}%"


def answer(args: argparse.Namespace, docs: dict[str, list[dict[str, Any]]],
           accel: str) -> str:
    lines = [f"seed 000: {args.cpus} senders, each calling the other "
             f"{args.cpus - 1} with smp_call_function_many; {args.boots} "
             f"boots x {args.runs} runs a kernel, {accel}", ""]
    for wait, pair in docs.items():
        lines.append(f"ipistorm {' '.join(params(args, wait))}")
        for doc, kernel in zip(pair, KERNELS):
            base, cand = doc["baseline"], doc["candidates"][0]
            lines.append(f"  Base ({kernel.patch}):")
            for metric, fmt, _ in ROWS:
                if metric not in doc["metrics"]:
                    continue    # counted with --no-insn or off TCG
                lines.append(f"    \"{metric}\": "
                             + fmt.format(common.mean(doc, metric, base)) + ",")
            lines.append("  This patch (stock 6.1, which has it):")
            for metric, fmt, tested in ROWS:
                if metric not in doc["metrics"]:
                    continue
                b = common.mean(doc, metric, base)
                c = common.mean(doc, metric, cand)
                pct = (c / b - 1) * 100 if b else math.nan
                mark = common.verdict_mark(common.change(doc, tested, cand))
                lines.append(f"    \"{metric}\": " + fmt.format(c) + ", "
                             + _arrow(pct) + f"  ({tested.split('.')[1]}: "
                             f"{mark})")
            lines.append("")
    lines += ["The seed (vm-scalability on a 2-node, 88-thread Broadwell): "
              "interrupts.CAL:Function_call_interrupts \u219388.7%, "
              "throughput \u219118.6%.",
              "Counts are per run (the module's window for ipis_sent, the "
              "whole insmod for interrupts.CAL). runtime_ns includes the "
              "count_sent probes, about 250 ns per IPI sent: the kernels "
              "without the fix send more, so they pay more of it; so does "
              "insn_per_call (every instruction on the storm's CPUs in its "
              "window, per call: docs/insn.md).",
              "(...: verdict) is the suite's verdict on the primary metric "
              "the row restates: its change and 95% interval, or ~."]
    return "\n".join(lines) + "\n"
