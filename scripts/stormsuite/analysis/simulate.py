"""storm simulate: the verdicts' error rates, measured by resampling real
boots, and on a noise model as a second check.

Real data (--data, the default): per-boot run files of ipistorm's default
storm on 6.1 under TCG (tests/data/resample/<name>/boots.json.gz, cut from
real `storm matrix`, bench and bisect runs: their slow runs, the two
clusters of call times and the boot-to-boot floor included). A
comparison draws distinct real boots for both sides and some of each
boot's runs; a true change of X% multiplies every time of the candidate's
runs by 1 + X/100 (and divides its rates).

The noise model (--model): every run's time per call is lognormal with a
per-run CV (default 10%), and every boot shifts all of its runs together
by a lognormal drift (default 6%). Counts follow the storm: one CAL per
call on the target (deterministic under TCG), timer ticks (LOC) in
proportion to the runtime, a few stray reschedule IPIs.

Either way the run documents are storm-run documents (runs.load_run's
schema) and go through the real verdict.build and classify code, so what
is measured is the code users run:

  aa      the fraction of A/A comparisons (same kernel, separate boots)
          that mark anything: a primary change or any * row
  power   the fraction of comparisons that call a true change of X%
  bisect  the fraction of bisects (classify.decide over a linear history,
          as git bisect walks it) that name the right commit
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gzip
import json
import math
import pathlib
import sys
import time
from typing import Any, Sequence

import numpy as np

from .. import REPO
from ..runfiles import metrics, runs
from . import classify, stats, verdict

CALLS = 2000
TICK_HZ = 250
CPUS = 4


@dataclasses.dataclass(frozen=True)
class Noise:
    run_cv: float = 0.10        # per-run lognormal sigma
    boot_cv: float = 0.06       # per-boot lognormal drift sigma
    base_ns: float = 40000.0    # time per call
    # count_sent=1: IPIs sent per call to the target (None: no send-side
    # counts); 2% of the calls find the target polling and send none
    sent_per_call: float | None = None


POLLING = 0.02


def run_doc(rng: np.random.Generator, per_call_ns: float, label: str,
            boot: str, series: str, index: int,
            sent_per_call: float | None = None) -> dict[str, Any]:
    runtime = per_call_ns * CALLS
    loc = rng.poisson(runtime / 1e9 * TICK_HZ * CPUS)
    res_ipis = rng.poisson(3)
    stray = rng.poisson(0.5)
    result = {
        "storm": "ipistorm", "status": "done", "runtime_ns": int(runtime),
        "param.cpulist": "0", "param.targets": "1",
        "sender.0.calls": CALLS, "sender.0.target": 1,
        "handled.1": CALLS, "irq.0.CAL": int(stray),
        "irq.1.CAL": CALLS, "irq.0.RES": int(res_ipis), "irq.1.RES": 0,
    }
    if sent_per_call is not None:
        to_target = round(CALLS * sent_per_call) - rng.binomial(CALLS, POLLING)
        result.update({
            "sent.source": "kprobe (simulated)",
            "sent.0.CAL": int(stray), "sent_by.0.CAL": int(to_target),
            "sent.1.CAL": int(to_target), "sent_by.1.CAL": int(stray),
            "sent.0.RES": int(res_ipis), "sent_by.0.RES": 0,
            "sent.1.RES": 0, "sent_by.1.RES": int(res_ipis),
        })
    rows = {
        "CAL": {"description": "Function call interrupts",
                "total": CALLS + int(stray) + 40,
                "delta": [int(stray) + 20, CALLS + 20, 0, 0]},
        "LOC": {"description": "Local timer interrupts", "total": int(loc),
                "delta": [int(loc) // 4] * 4},
        "RES": {"description": "Rescheduling interrupts",
                "total": int(res_ipis) + 12, "delta": [3, 3, 3, 3]},
    }
    return {"schema": runs.SCHEMA, "kind": "storm-run", "storm": "ipistorm",
            "label": label, "params": {"numipi": str(CALLS)},
            "result": result, "interrupts": {"cpus": list(range(CPUS)),
                                             "rows": rows},
            "env": {"boot_id": boot, "virtualization": "tcg",
                    "accel": "tcg,thread=single", "cpu_count": CPUS},
            "run": {"series": series, "index": index, "traced": False},
            "_path": f"/sim/{label}/{boot}-{index}.json"}


def boot_runs(rng: np.random.Generator, noise: Noise, level: float,
              nruns: int, label: str, boot: str) -> list[dict[str, Any]]:
    drift = rng.normal(0, noise.boot_cv)
    return [run_doc(rng, noise.base_ns * level
                    * math.exp(drift + rng.normal(0, noise.run_cv)),
                    label, boot, "sim", i + 1, noise.sent_per_call)
            for i in range(nruns)]


def side(rng: np.random.Generator, noise: Noise, level: float, boots: int,
         nruns: int, label: str) -> runs.Series:
    docs = []
    for b in range(boots):
        docs += boot_runs(rng, noise, level, nruns, label, f"{label}-b{b}")
    return runs.series_from_runs(label, runs.RESULTS / label, docs)


# ---------------------------------------------------------------- real boots

DATA = REPO / "tests" / "data" / "resample"
DEFAULT_DATA = "ipistorm-6.1-aa"
Boot = list[dict[str, Any]]             # one real boot's run documents


@functools.lru_cache(maxsize=None)
def _load(path: pathlib.Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def data_path(name: str) -> pathlib.Path:
    """A data set by name (under tests/data/resample) or path."""
    p = pathlib.Path(name)
    if p.is_dir():
        p = p / "boots.json.gz"
    return p if p.is_file() else DATA / name / "boots.json.gz"


def real_boots(name: str = DEFAULT_DATA, level: str | None = None
               ) -> list[Boot]:
    """The real boots of a data set (only its groups at `level`, e.g.
    "good" or "bad" of the e2e bisect tree), each a list of run
    documents with their metrics made once ("_metrics"). A boot's first
    run when the boot had no warm-up run is left out: the designs
    resampled warm up first.

    Each group is a session (a matrix, a bench run) on a host in some
    state; sessions of one kernel sat up to 11% apart (slabstorm's two),
    while a comparison's sides are measured in one session, interleaved.
    So each group's times are set to the level of its kind (the median
    over all its kind's boots of their fastest run): what stays is the
    spread of boots and runs within a session, and levels apart (good
    and bad) stay apart."""
    doc = _load(data_path(name))
    by_level: dict[str, list[list[Boot]]] = {}
    for g in doc["groups"]:
        if level is not None and g["level"] != level:
            continue
        boots = []
        for b in g["boots"]:
            docs = []
            for r in b["runs"]:
                if r["run"].get("warmup") == 0 and r["run"].get("index") == 1:
                    continue
                d = dict(r, _path=f"{g['name']}/{b['boot_id']}/"
                         f"{r['run'].get('index')}")
                d["_metrics"] = metrics.of_run(d)
                docs.append(d)
            boots.append(docs)
        by_level.setdefault(g["level"], []).append(boots)
    out = []
    for groups in by_level.values():
        ref = _level([b for g in groups for b in g])
        for g in groups:
            factor = ref / _level(g)
            out += [[dict(d, _metrics=scaled(d["_metrics"], factor))
                     for d in b] for b in g]
    return out


def _level(boots: list[Boot]) -> float:
    """The median over boots of their fastest run's primary time."""
    return float(np.median([min(b) for b in real_boot_numbers(boots, 1)]))


def levels(name: str = DEFAULT_DATA) -> list[str]:
    """The levels of a data set's groups ("aa"; "good" and "bad")."""
    return sorted({g["level"] for g in _load(data_path(name))["groups"]})


def scaled(ms: dict[metrics.Metric, float], factor: float
           ) -> dict[metrics.Metric, float]:
    """A run's metrics with every time multiplied by factor (rates
    divided): what a kernel that makes the storm's work factor times as
    slow would show."""
    if factor == 1:
        return ms
    return {m: v * factor if m.kind == "time" else
            v / factor if m.kind == "rate" else v for m, v in ms.items()}


def resampled_side(rng: np.random.Generator, pool: list[Boot],
                   which: Sequence[int], nruns: int, factor: float,
                   label: str) -> runs.Series:
    """A side of real boots pool[which], nruns of each boot's runs drawn
    without replacement (in their order), times scaled by factor."""
    docs = []
    for j, k in enumerate(which):
        boot = pool[k]
        if len(boot) < nruns:
            raise ValueError(f"a boot has {len(boot)} runs, fewer than "
                             f"{nruns}")
        for i in sorted(rng.choice(len(boot), size=nruns, replace=False)):
            d = boot[i]
            docs.append(dict(d, label=label,
                             env=dict(d["env"], boot_id=f"{label}-{j}"),
                             _metrics=scaled(d["_metrics"], factor)))
    return runs.series_from_runs(label, runs.RESULTS / label, docs)


def resample(rng: np.random.Generator, pool: list[Boot], change: float,
             trials: int, boots: int, nruns: int,
             candidates: list[Boot] | None = None,
             vary: tuple[str, ...] = ()) -> tuple[float, float]:
    """(fraction with anything marked, fraction with the primary time
    called a change) over trials comparisons of real boots: both sides
    from pool (2 x boots distinct boots a trial) and the candidate's
    times scaled by 1 + change; or, given candidates, the candidate's
    boots drawn from them (a real change: VARY names the parameters its
    boots ran with other values of)."""
    usable = [b for b in pool if len(b) >= nruns]
    other = [b for b in candidates if len(b) >= nruns] \
        if candidates is not None else None
    need = 2 * boots if other is None else boots
    if len(usable) < need or (other is not None and len(other) < boots):
        raise ValueError(f"{len(usable)} boots with {nruns} runs or more: "
                         f"too few for {boots}+{boots} distinct boots")
    marked = called = 0
    for _ in range(trials):
        pick = rng.permutation(len(usable))[:need]
        a = resampled_side(rng, usable, pick[:boots], nruns, 1.0, "A")
        if other is None:
            b = resampled_side(rng, usable, pick[boots:], nruns,
                               1.0 + change, "B")
        else:
            b = resampled_side(rng, other,
                               rng.permutation(len(other))[:boots], nruns,
                               1.0, "B")
        cmp = verdict.build([a, b], vary=vary)
        marked += any_marked(cmp)
        called += primary_time_called(cmp)
    return marked / trials, called / trials


def differing_params(a: list[Boot], b: list[Boot]) -> tuple[str, ...]:
    """The parameters the first runs of two sets of boots differ in."""
    pa, pb = a[0][0]["params"], b[0][0]["params"]
    return tuple(sorted(k for k in pa.keys() | pb.keys()
                        if pa.get(k) != pb.get(k)))


def real_boot_numbers(pool: list[Boot], nruns: int) -> list[list[float]]:
    """Per real boot, its runs' primary times (metrics.PRIMARY's time, or
    the untimed runtime per call), for drawing boots' numbers quickly."""
    out = []
    for boot in pool:
        if len(boot) < nruns:
            continue
        ms = boot[0]["_metrics"]
        name = next(m for m in ms if m.name in verdict.TIME_PER_OP)
        out.append([d["_metrics"][name] for d in boot])
    return out


def any_marked(cmp: verdict.Comparison) -> bool:
    return any(c is not None and c.significant
               for r in cmp.rows for c in r.changes)


def primary_time_called(cmp: verdict.Comparison) -> bool:
    """Whether the time per operation (primary, or secondary beside
    instruction counts) was called a change."""
    r = next(r for r in cmp.rows if r.metric.name in verdict.TIME_PER_OP)
    c = r.changes[1]
    return c is not None and c.significant


def comparisons(rng: np.random.Generator, noise: Noise, change: float,
                trials: int, boots: int, nruns: int) -> tuple[float, float]:
    """(fraction with anything marked, fraction with the primary time
    called a change) over trials comparisons of a change (0: A/A)."""
    marked = called = 0
    for _ in range(trials):
        a = side(rng, noise, 1.0, boots, nruns, "A")
        b = side(rng, noise, 1.0 + change, boots, nruns, "B")
        cmp = verdict.build([a, b])
        marked += any_marked(cmp)
        called += primary_time_called(cmp)
    return marked / trials, called / trials


DETECT_GRID = (0.02, 0.03, 0.05, 0.07, 0.10, 0.15, 0.20, 0.30, 0.50, 1.0)


def smallest_detectable(rng: np.random.Generator, noise: Noise, boots: int,
                        nruns: int, trials: int, power: float = 0.9
                        ) -> tuple[float | None, list[tuple[float, float]]]:
    """The smallest change on DETECT_GRID that the verdict calls in at
    least `power` of the trials, and the power at each change tried."""
    tried = []
    for change in DETECT_GRID:
        _, called = comparisons(rng, noise, change, trials, boots, nruns)
        tried.append((change, called))
        if called >= power:
            return change, tried
    return None, tried


# ---------------------------------------------------------------- bisect

@dataclasses.dataclass(frozen=True)
class BisectPlan:
    """The bisect driver's defaults (bisect.py)."""
    boots: int = 3              # endpoints' first boots
    first: int = 2              # a commit's first boots (two at a time)
    more: int = 2               # then this many at a time
    cap: int = 16               # a commit's boots before the odds decide
    endpoint_cap: int = 20      # endpoint boots before refusing
    runs: int = 10


def boot_summaries(rng: np.random.Generator, noise: Noise, level: float,
                   n: int, nruns: int) -> list[float]:
    """n boots' numbers of the primary time, as bisect takes them
    (stats.boot_summary, the fastest run)."""
    out = []
    for _ in range(n):
        drift = rng.normal(0, noise.boot_cv)
        vals = noise.base_ns * level * np.exp(
            drift + rng.normal(0, noise.run_cv, nruns))
        out.append(stats.boot_summary(list(vals), "min"))
    return out


@dataclasses.dataclass(frozen=True)
class RealNoise:
    """Boots' numbers drawn from real boots: each boot's runs' primary
    times over the level of its group (the median over the group's boots
    of their fastest run), so that groups at different levels (the good
    and the bad commits of a bisect) pool."""
    boots: tuple[tuple[float, ...], ...]

    @classmethod
    def of(cls, *pools: list[Boot]) -> "RealNoise":
        out = []
        for pool in pools:
            numbers = real_boot_numbers(pool, 1)
            level = float(np.median([min(b) for b in numbers]))
            out += [tuple(x / level for x in b) for b in numbers]
        return cls(tuple(out))

    def summaries(self, rng: np.random.Generator, level: float, n: int,
                  nruns: int) -> list[float]:
        """n boots at level: each a real boot drawn at random (with
        replacement), nruns of its runs (without), its fastest run."""
        usable = [b for b in self.boots if len(b) >= nruns]
        out = []
        for k in rng.integers(len(usable), size=n):
            b = usable[k]
            pick = rng.choice(len(b), size=nruns, replace=False)
            out.append(level * stats.boot_summary([b[i] for i in pick],
                                                  "min"))
        return out


def draw_boots(rng: np.random.Generator, noise: Noise | RealNoise,
               level: float, n: int, nruns: int) -> list[float]:
    if isinstance(noise, RealNoise):
        return noise.summaries(rng, level, n, nruns)
    return boot_summaries(rng, noise, level, n, nruns)


def bisect_once(rng: np.random.Generator, noise: Noise | RealNoise,
                effect: float,
                ncommits: int, culprit: int, plan: BisectPlan
                ) -> tuple[int | None, int]:
    """One simulated bisect of commits 1..ncommits (0 is good, ncommits
    bad; commit k is bad when k >= culprit): (the commit named or None,
    boots used)."""
    def level(k: int) -> float:
        return 1.0 + effect if k >= culprit else 1.0

    def measure(k: int, n: int) -> list[float]:
        nonlocal used
        used += n
        return draw_boots(rng, noise, level(k), n, plan.runs)

    used = 0
    good = measure(0, plan.boots)
    bad = measure(ncommits, plan.boots)
    while not classify.endpoints_clear(good, bad, log=True):
        if len(good) >= plan.endpoint_cap:
            break
        good += measure(0, 1)
        bad += measure(ncommits, 1)
    if not classify.endpoints_differ(good, bad, log=True)[0]:
        return None, used
    levels = classify.Levels([np.log(good)], [np.log(bad)])
    lo, hi = 0, ncommits            # lo good, hi bad
    skipped: set[int] = set()
    while hi - lo > 1:
        candidates = [k for k in range(lo + 1, hi) if k not in skipped]
        if not candidates:
            return None, used       # only skipped commits left
        mid = min(candidates, key=lambda k: abs(k - (lo + hi) / 2))
        v, boots = classify.decide(
            lambda n, k=mid: measure(k, n), levels, log=True,
            first=plan.first, cap=plan.cap,
            more=plan.more)
        classify.learn(levels, v, boots)
        if v.decision == classify.GOOD:
            lo = mid
        elif v.decision == classify.BAD:
            hi = mid
        else:
            skipped.add(mid)
    return hi, used


def bisect_accuracy(rng: np.random.Generator, noise: Noise | RealNoise,
                    effect: float,
                    trials: int, ncommits: int, plan: BisectPlan
                    ) -> tuple[float, float]:
    """(fraction right, mean boots per bisect), the culprit drawn
    uniformly from 1..ncommits."""
    right = 0
    boots = 0
    for _ in range(trials):
        culprit = int(rng.integers(1, ncommits + 1))
        named, used = bisect_once(rng, noise, effect, ncommits, culprit, plan)
        right += named == culprit
        boots += used
    return right / trials, boots / trials


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm simulate",
        description="Measure the verdicts' error rates through the real "
        "compare and bisect code: the A/A false-alarm rate, the power to "
        "call 5%, 10% and 20% changes, and bisect accuracy. By default "
        "on real boots (resampling the per-boot run files of a data set "
        "under tests/data/resample); with --model on lognormal per-run noise "
        "and per-boot drift.")
    p.add_argument("--data", default=DEFAULT_DATA, metavar="NAME",
                   help="real boots: a data set under tests/data/resample or "
                   f"its directory (default {DEFAULT_DATA})")
    p.add_argument("--level", help="the data set's boots at this level "
                   "(e.g. good or bad of the e2e tree) for A/A and power; "
                   "needed when it has several")
    p.add_argument("--against", metavar="LEVEL",
                   help="real boots: also compare --level's boots with "
                   "this level's, a real change (a time-design pool's "
                   "plant), and say how often it is called")
    p.add_argument("--changes", default="5,10,20", metavar="PCT,...",
                   help="the changes whose power is measured, in percent "
                   "(default 5,10,20)")
    p.add_argument("--model", action="store_true",
                   help="the lognormal model instead of real boots")
    p.add_argument("--trials", type=int, default=1000,
                   help="comparisons or bisects per figure (default 1000)")
    p.add_argument("--run-cv", type=float, default=10.0,
                   help="--model: per-run noise, CV in percent (default 10)")
    p.add_argument("--boot-cv", type=float, default=6.0,
                   help="--model: per-boot drift, CV in percent "
                   "(default 6)")
    p.add_argument("--boots", type=int, default=8,
                   help="boots per side (default 8)")
    p.add_argument("--runs", type=int, default=5,
                   help="runs per boot (default 5)")
    p.add_argument("--bisect-runs", type=int, default=BisectPlan.runs,
                   help="runs per boot in a bisect (default "
                   f"{BisectPlan.runs}, storm bisect's)")
    p.add_argument("--commits", type=int, default=5,
                   help="commits between the bisect's endpoints (default 5)")
    p.add_argument("--seed", type=int, default=1, help="random seed")
    p.add_argument("--only", choices=("aa", "power", "bisect", "detectable"),
                   help="one figure only (detectable: the smallest change "
                   "called 90%% of the time, --model only, not run by "
                   "default)")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.trials < 1 or args.boots < 1 or args.runs < 1:
        p.error("--trials, --boots and --runs must be positive")
    try:
        changes = [float(c) / 100 for c in args.changes.split(",")]
    except ValueError:
        p.error(f"--changes {args.changes}: percents, e.g. 5,10,20")
    if args.against and args.model:
        p.error("--against compares real boots: not with --model")
    rng = np.random.default_rng(args.seed)
    noise = Noise(args.run_cv / 100, args.boot_cv / 100)
    pool: list[Boot] = []
    if args.model:
        print(f"noise: lognormal, per-run CV {args.run_cv:g}%, per-boot "
              f"drift {args.boot_cv:g}%; {args.boots} boots x {args.runs} "
              f"runs a side; {args.trials} trials, seed {args.seed}")
    else:
        if not data_path(args.data).is_file():
            p.error(f"no data set {args.data!r} ({data_path(args.data)})")
        have = levels(args.data)
        level = args.level or (have[0] if len(have) == 1 else None)
        if level not in have and args.only in (None, "aa", "power"):
            p.error(f"{args.data}: give --level, one of {', '.join(have)}")
        pool = real_boots(args.data, level)
        if args.against and args.against not in have:
            p.error(f"--against {args.against}: {args.data} has levels "
                    f"{', '.join(have)}")
        print(f"noise: {len(pool)} real boots of {args.data} at level "
              f"{level or ', '.join(have)} (resampled); "
              f"{args.boots} boots x {args.runs} runs a side; "
              f"{args.trials} trials, seed {args.seed}")

    plan = BisectPlan(boots=min(args.boots, BisectPlan.boots),
                      runs=args.bisect_runs)
    # bisect accuracy on real noise: every level's boots over their level
    drawn: Noise | RealNoise = noise if args.model else \
        RealNoise.of(*[real_boots(args.data, lv)
                       for lv in levels(args.data)])
    bisects = args.only in (None, "bisect")
    short = ""
    if bisects and isinstance(drawn, RealNoise) and \
            not any(len(b) >= plan.runs for b in drawn.boots):
        short = (f"the data set's boots have fewer than {plan.runs} runs "
                 "(give --bisect-runs, or --data ipistorm-6.1-e2e)")
        if args.only == "bisect":
            p.error(short)
        bisects = False

    def rates(change: float) -> tuple[float, float]:
        if args.model:
            return comparisons(rng, noise, change, args.trials, args.boots,
                               args.runs)
        return resample(rng, pool, change, args.trials, args.boots,
                        args.runs)
    t0 = time.monotonic()
    try:
        if args.only in (None, "aa"):
            marked, called = rates(0.0)
            print(f"A/A: {100 * marked:.1f}% marked anything, "
                  f"{100 * called:.1f}% called the primary time a change")
        if args.only in (None, "power"):
            for change in changes:
                _, called = rates(change)
                print(f"power: a {100 * change:g}% change called in "
                      f"{100 * called:.1f}%")
            if args.against:
                other = real_boots(args.data, args.against)
                _, called = resample(rng, pool, 0.0, args.trials,
                                     args.boots, args.runs, candidates=other,
                                     vary=differing_params(pool, other))
                print(f"power: the real change to {args.against} called in "
                      f"{100 * called:.1f}%")
    except ValueError as e:
        p.error(str(e))
    if args.only == "detectable":
        if not args.model:
            p.error("--only detectable needs --model")
        found, tried = smallest_detectable(rng, noise, args.boots, args.runs,
                                           args.trials)
        print("power: " + ", ".join(f"{100 * c:g}% {100 * p:.0f}%"
                                    for c, p in tried))
        print("smallest change called 90% of the time: "
              + (f"{100 * found:g}%" if found else
                 f"more than {100 * DETECT_GRID[-1]:g}%"))
    if not bisects and args.only is None:
        print(f"bisect: not simulated: {short}")
    if bisects:
        for effect in (0.05, 0.10, 0.20):
            right, boots = bisect_accuracy(rng, drawn, effect, args.trials,
                                           args.commits, plan)
            print(f"bisect: a {100 * effect:g}% regression in "
                  f"{args.commits} commits named right in {100 * right:.1f}%"
                  f", {boots:.1f} boots per bisect")
    print(f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    return 0
