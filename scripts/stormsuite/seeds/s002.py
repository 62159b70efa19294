"""Seed 002: the IPIs of creating slab caches.

The seed (SLAB, 2017) stopped kick_all_cpus_sync() when a cache gets its
first per-CPU array caches: 10000 loops of creating memcg caches went
from +47741 IPIs to +101. 6.1 still has SLAB (configs/slab.config): stock
6.1 built with it, against the same with the fix reverted
(patches/seed-002-*), and stock 6.1 on SLUB (the suite's default) for
comparison; slabstorm mode=create numcache=10000 cpu=1 on each: the
caches are created (and destroyed) by the module, since 6.1 no longer
makes per-memcg caches. The answer in the seed's form, "10000 loops: +N
ipis" for CPU 0 (the column the seed read) while the caches were
created, with all CPUs' count and the destroy phase's.
"""

from __future__ import annotations

import argparse
import statistics

from ..runfiles import runs
from . import common

TITLE = "IPIs of kmem_cache_create on SLAB and SLUB (slabstorm)"
SLAB = ("slab.config",)
KERNELS = [common.Kernel("002-slab-revert",
                         "seed-002-kick-all-cpus-on-first-cpu-cache.patch",
                         SLAB),
           common.Kernel("slab", None, SLAB),
           common.STOCK]
NAMES = {"002-slab-revert": "SLAB, fix reverted (the seed's unpatched)",
         "slab": "SLAB, stock 6.1 (the seed's patched)",
         "stock": "SLUB, stock 6.1"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_guest_options(p, cpus=4, boots=2, runs_=3, timeout=900)
    p.add_argument("--numcache", type=int, default=10000,
                   help="caches created per run (default 10000, the "
                   "seed's loops)")


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    common.at_least(p, args, numcache=1)
    common.at_least(p, args, "the IPIs go to the other CPUs", cpus=2)


def params(args: argparse.Namespace) -> list[str]:
    # the caches are created on CPU 1, so that CPU 0, the one column of
    # /proc/interrupts the seed's script read, is among those kicked
    return ["mode=create", f"numcache={args.numcache}", "cpu=1"]


def plan(args: argparse.Namespace) -> str:
    return (f"kernels: {', '.join(k.name for k in KERNELS)}; {args.boots} "
            f"boots each, {args.warmup} warm-up + {args.runs} runs of "
            f"slabstorm {' '.join(params(args))} on {args.cpus} vCPUs")


def work(args: argparse.Namespace) -> tuple[list[int], int]:
    """For --dry-run's estimate: one storm a boot, every kernel booted
    args.boots times; the kernels to build."""
    return [1] * (len(KERNELS) * args.boots), len(KERNELS)


def run(args: argparse.Namespace, who: str) -> int:
    results = common.results_dir(args, "002")
    clock = common.Clock()
    with common.built(KERNELS, who, clock) as outs:
        sets = common.measure(common.sides(KERNELS, outs), args,
                              "slabstorm", params(args), results)
    docs = [common.compare_two(sets[0], s) for s in sets[1:]]
    common.finish(who, "002", results,
                  answer(args, [phase_means(s) for s in sets]), clock,
                  {"comparisons": docs})
    return 0


def phase_means(s: runs.Series) -> dict[str, float]:
    """Per run, averaged over the series: the call-function interrupts
    (CAL) of the create and destroy phases, all CPUs and CPU 0."""
    out = {}
    for key in ("phase.create.irq.0.CAL", "phase.create.CAL",
                "phase.destroy.CAL"):
        out[key] = statistics.fmean(float(r["result"].get(key, "nan"))
                                    for r in s.runs)
    return out


def answer(args: argparse.Namespace, means: list[dict[str, float]]) -> str:
    n = args.numcache
    lines = [f"seed 002: slabstorm {' '.join(params(args))} "
             f"({args.cpus} vCPUs, {args.boots} boots x {args.runs} runs a "
             "kernel; means per run)", "",
             "  call-function IPIs received while the caches were created: "
             "on CPU 0 (the seed's column), on all CPUs; and while they "
             "were destroyed"]
    for k, m in zip(KERNELS, means):
        cpu0 = m["phase.create.irq.0.CAL"]
        lines.append(f"  {NAMES[k.name]:42} {n} loops: +{cpu0:.0f} ipis   "
                     f"(all CPUs +{m['phase.create.CAL']:.0f}, "
                     f"{m['phase.create.CAL'] / n:.3f} a cache; destroy "
                     f"+{m['phase.destroy.CAL']:.0f})")
    lines += ["", "  The seed (SLAB, 10000 memcg kmem cache clones, 2017): "
              "patched 10000 loops: +101 ipis; unpatched +47741 ipis "
              "(CPU 0's Function call interrupts).",
              "  Destroying a SLAB cache drains every CPU's array cache "
              "(drain_cpu_caches(): on_each_cpu()), with or without the "
              "fix: the seed counted before its script removed its cgroups."]
    return "\n".join(lines) + "\n"
