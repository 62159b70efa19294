"""Seed 003: how a broadcast's time grows with the vCPU count.

The seed (Xen's batched vCPU wakeups) timed IPI broadcasts in 64-vCPU
guests: 1.1 ms on average, over 2 ms at most, down to 310 us at most with
the batching. Here: smp_call_function_many() from CPU 0 to every other
online CPU, wait=1, every call timed into the module's histogram, in
guests of 4, 16 and 64 vCPUs on Debian's stock 6.1 and 6.12; per size the
broadcast's mean, p99 and max, and a plot of how they grow. No kernel is
built: the stock kernels are the subject.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import pathlib
import statistics
from typing import Any

from ..designs import matrix
from ..kernel import kernels
from ..runfiles import result, runs
from . import common

TITLE = "broadcast time against the vCPU count, 6.1 and 6.12 (ipistorm)"
KERNELS = ["6.1", "6.12"]
SIZES = [4, 16, 64]


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_guest_options(p, cpus=None, boots=2, runs_=3)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="the guests' vCPU counts, comma-separated (default "
                   "4,16,64; this seed takes no --cpus)")
    # the other seeds' --cpus, refused with what to say instead
    p.add_argument("--cpus", help=argparse.SUPPRESS)
    p.add_argument("--kernel", action="append", default=[],
                   help="a stock kernel (repeatable; default 6.1 and 6.12)")
    p.add_argument("--numipi", type=int, default=2000,
                   help="broadcasts per run (default 2000)")


def kernel_specs(args: argparse.Namespace) -> list[str]:
    """--kernel as given, or the default two (append's default list
    would be appended to, not replaced)."""
    return args.kernel or KERNELS


def sizes(args: argparse.Namespace) -> list[int]:
    return [int(x) for x in args.sizes.split(",") if x.strip()]


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.cpus is not None:
        p.error(f"--cpus {args.cpus}: seed 003's guests are sized by "
                f"--sizes (--sizes {args.cpus}: guests of {args.cpus} "
                "vCPUs only)")
    try:
        got = sizes(args)
    except ValueError:
        p.error(f"--sizes {args.sizes}: vCPU counts, e.g. 4,16,64")
    if not got or any(n < 2 or n > 255 for n in got):
        p.error("--sizes: every size between 2 (a broadcast needs a "
                "target) and 255 vCPUs")
    common.at_least(p, args, numipi=1)
    for spec in kernel_specs(args):
        try:
            kernels.resolve(spec)
        except kernels.KernelNotFound as e:
            p.error(str(e))


def params(args: argparse.Namespace) -> list[str]:
    return [f"numipi={args.numipi}", "wait=1", "cpulist=0", "latency=1"]


def plan(args: argparse.Namespace) -> str:
    return (f"kernels {', '.join(kernel_specs(args))} x guests of "
            f"{', '.join(map(str, sizes(args)))} vCPUs, {args.boots} boots "
            f"each, {args.warmup} warm-up + {args.runs} runs of ipistorm "
            f"{' '.join(params(args))}; nothing to build")


def work(args: argparse.Namespace) -> tuple[list[int], int]:
    """For --dry-run's estimate: one storm a boot, every kernel booted
    args.boots times at every size; nothing to build."""
    return [1] * (len(kernel_specs(args)) * len(sizes(args)) * args.boots), 0


def label(spec: str, cpus: int) -> str:
    return f"{kernels.resolve(spec).release}_{cpus}vcpu"


@dataclasses.dataclass
class Cell:
    kernel: str
    cpus: int
    mean_us: float          # mean of the runs' mean broadcast time
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


def cell(spec: str, cpus: int, s: runs.Series) -> Cell:
    boot_means = [statistics.fmean(int(r["result"]["latency.mean_ns"])
                                   for r in boot) for boot in s.boots]
    h = merged(s.runs)
    cv = (statistics.stdev(boot_means) / statistics.fmean(boot_means) * 100
          if len(boot_means) > 1 else math.nan)
    up = [float(boot[0].get("env", {}).get("seconds_since_boot", "nan"))
          for boot in s.boots]
    return Cell(spec, cpus, statistics.fmean(boot_means) / 1000, cv,
                h.percentile(99) / 1000, h.max_ns / 1000, h.count,
                statistics.fmean(up))


def run(args: argparse.Namespace, who: str) -> int:
    results = common.results_dir(args, "003")
    clock = common.Clock()
    cells = []
    measured = []
    specs = kernel_specs(args)
    for cpus in sizes(args):
        sides = [matrix.Side(spec, "", label(spec, cpus), cpus)
                 for spec in specs]
        common.say(who, f"{cpus} vCPUs: {', '.join(specs)}")
        sets = common.measure(sides, args, "ipistorm", params(args), results)
        cells += [cell(spec, cpus, s) for spec, s in zip(specs, sets)]
        measured += sets
        clock.lap(f"{cpus} vCPUs")
    accel = common.accel(measured)
    path = common.finish(who, "003", results, answer(args, cells, accel),
                         clock, {
        "params": params(args),
        "cells": [dataclasses.asdict(c) for c in cells]})
    png = plot(cells, path.with_suffix(".png"), accel)
    print(f"{who}: wrote {png}")
    return 0


def answer(args: argparse.Namespace, cells: list[Cell], accel: str) -> str:
    lines = [f"seed 003: broadcast (smp_call_function_many from CPU 0 to "
             f"all others, wait=1), ipistorm {' '.join(params(args))}",
             f"  ({args.boots} boots x {args.runs} runs per kernel and size, "
             f"{accel}; times per broadcast)", "",
             f"  {'kernel':10} {'vCPUs':>5} {'mean':>10} {'(boot CV)':>10} "
             f"{'p99':>10} {'max':>10} {'broadcasts':>11} {'uptime':>8}"]
    for c in cells:
        lines.append(f"  {c.kernel:10} {c.cpus:5} {c.mean_us:8.1f}us "
                     f"{'(' + format(c.boot_cv, '.1f') + '%)':>10} "
                     f"{c.p99_us:8.1f}us {c.max_us:8.1f}us {c.broadcasts:11} "
                     f"{c.uptime_s:7.1f}s")
    lines += ["", "  The seed (64-vCPU Windows guest on Xen, Ivybridge): "
              "average 1.1 ms, over 2 ms at most; with batched wakeups at "
              "most 310 us.",
              "  uptime: the guest kernel's uptime at its first measured "
              "run (boot, storm build check, warm-up run)."]
    return "\n".join(lines) + "\n"


def plot(cells: list[Cell], png: pathlib.Path,
         accel: str = "") -> pathlib.Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k in dict.fromkeys(c.kernel for c in cells):
        mine = [c for c in cells if c.kernel == k]
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
    ax.set_title("seed 003: smp_call_function_many to all, wait=1")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
