"""Seed 002: the IPIs of creating slab caches.

The seed (SLAB, 2017) stopped kick_all_cpus_sync() when a cache gets its
first per-CPU array caches: 10000 loops of creating memcg caches went
from +47741 IPIs to +101. 6.1 still has SLAB (configs/slab.config): stock
6.1 built with it, against the same with the fix reverted
(patches/seed-002-*), and stock 6.1 on SLUB (the suite's default) for
comparison; slabstorm mode=create numcache=10000 on each: the caches are
created (and destroyed) by the module, since 6.1 no longer makes
per-memcg caches. The answer in the seed's form, "10000 loops: +N ipis",
with the IPIs per creation.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import matrix, source
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
    if args.numcache < 1:
        p.error("--numcache must be at least 1")
    if args.cpus < 2:
        p.error("--cpus must be at least 2: the IPIs go to the other CPUs")


def params(args: argparse.Namespace) -> list[str]:
    return ["mode=create", f"numcache={args.numcache}"]


def plan(args: argparse.Namespace) -> str:
    return (f"kernels: {', '.join(k.name for k in KERNELS)}; {args.boots} "
            f"boots each, {args.warmup} warm-up + {args.runs} runs of "
            f"slabstorm {' '.join(params(args))} on {args.cpus} vCPUs")


def run(args: argparse.Namespace, who: str) -> int:
    results = common.results_dir(args, "002")
    clock = common.Clock()
    with source.lock(who):
        outs = common.build(KERNELS, who)
        clock.lap("builds")
        sides = [matrix.Side(str(outs[k.name]), "",
                             common.release(outs[k.name])) for k in KERNELS]
        sets = common.measure(sides, args, "slabstorm", params(args),
                              results)
        clock.lap("boots and runs")
    docs = [common.compare_two(sets[0], s) for s in sets[1:]]
    text = answer(args, docs)
    print(text)
    path = common.write_answer(results, text + clock.line(who) + "\n")
    common.write_json(results, path, {"seed": "002", "comparisons": docs})
    print(f"{who}: wrote {path}")
    print(clock.line(who))
    return 0


def answer(args: argparse.Namespace, docs: list[dict[str, Any]]) -> str:
    n = args.numcache
    lines = [f"seed 002: slabstorm {' '.join(params(args))} "
             f"({args.cpus} vCPUs, {args.boots} boots x {args.runs} runs a "
             "kernel; means per run)", ""]
    labels = [docs[0]["baseline"]] + [d["candidates"][0] for d in docs]
    for k, label in zip(KERNELS, labels):
        doc = docs[0] if label == docs[0]["baseline"] else \
            next(d for d in docs if d["candidates"][0] == label)
        window = common.mean(doc, "slabstorm.irq.CAL", label)
        whole = common.mean(doc, "interrupts.CAL:Function_call_interrupts",
                            label)
        per_op = common.mean(doc, "slabstorm.ipis_per_op", label)
        lines.append(f"  {NAMES[k.name]:42} {n} loops: +{window:.0f} ipis "
                     f"({per_op:.3f} per cache; +{whole:.0f} with insmod "
                     "and rmmod)")
    lines += ["", "  The seed (memcg kmem caches, SLAB, 2017): patched "
              "10000 loops: +101 ipis; unpatched 10000 loops: +47741 ipis.",
              "  ipis: call-function interrupts received (CAL), all CPUs, "
              "in the storm's window (the module's irq_stat deltas)."]
    return "\n".join(lines) + "\n"
