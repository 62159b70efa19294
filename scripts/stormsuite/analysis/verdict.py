"""Is the difference between result sets real? The comparison model.

Boots are the unit of replication (stats.py): each boot of each side is
reduced to one number per metric (summary_of: a primary time takes the
fastest of the boot's runs under emulation and the median of its runs
elsewhere, other times the median, counts their mean), and the sides
are compared on those: Welch's t-test, on the
log scale for times, and its confidence interval (95% by default) for the
change.

The verdict is carried by each storm's primary metrics (metrics.py,
PRIMARY: time and IPIs per operation, IPIs sent per operation with
count_sent=1, and any other metric metrics.py makes primary); every other
row is secondary; rows that restate another (metrics.DERIVED, and a
per-CPU row equal to its total in every run) are shown, never tested.

Every tested row of every candidate is one hypothesis of a single family,
fixed by the design before the data are seen (the rows both sides have
that can be tested: 2 boots a side or more, or an instruction row's runs
with one boot a side), and corrected together by a graphical
multiple test (stats.graph_test): the primary rows of all candidates
share alpha (1 - confidence), 80% of it to the primary times and 20% to
the other primaries (counts and instructions per operation, exact or
nearly so under emulation: when they change their p-value is tiny),
each part split evenly; a primary row that is rejected passes half of
its share on to the other primary rows and half to its candidate's
secondary rows (split evenly), and a rejected secondary row passes its
share on to its candidate's other secondary rows. So secondary rows are
tested only behind a primary change of their candidate, and whatever the
dependence between rows and candidates, the chance that an A/A
comparison marks anything stays at most alpha. The corrected p-value's row is a
change when it is below alpha and no rule says it is not one: a change
below --min-effect, a count whose means are below the floor, or integer
counts whose ranges lie exactly 1 apart (lkp-tests' changed_stat). The
rules apply after the correction, so they never change the family.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..runfiles import environment, metrics, runs
from . import bootmodel, stats

FLOOR = 10.0                 # counts: means below this are not changes
MIN_EFFECT = 1.0             # percent: smaller changes are never marked
# the primary time's secondary twin row: a boot's number by the other
# estimator (summary_of)
MEDIAN_TWIN = ".median_of_runs"
FASTEST_TWIN = ".fastest_of_runs"
TIME_SHARE = 0.8             # of alpha, for the primary times (counts and
                             # instructions are exact or nearly: when they
                             # change their p is tiny, and needs little)
PASS_ON = 0.5                # share a rejected primary row passes to its
                             # candidate's secondary rows (the rest goes to
                             # the other primary rows)
# Instructions per operation: the model of boots and runs is
# bootmodel.py's (boots the unit; one boot a side needs a calibration of
# the storm on that kernel; sets in one boot share its level). A change
# under INSN_MIN_EFFECT is never one; --min-effect raises it.
INSN_MIN_EFFECT = 0.1
# What moves the numbers: sets that differ here are not compared unless
# forced. Emulation mode (TCG threading) moves CAL by a third and times by
# more; the vCPU count changes every broadcast.
# Where the instructions come from (the plugin, the PMU, neither) and the
# boot arguments that change what a window counts (nohz=off: every CPU
# takes every tick) decide which rows are primary and what they hold.
ENV_MUST_MATCH = ("virtualization", "accel", "cpu_count", "insn_source")
COUNTING_ARGS = ("nohz",)
ENV_SHOULD_MATCH = ("cpu_model", "qemu_version")


class CompareError(Exception):
    pass


# each storm's time per operation, primary or not (under emulation with
# instruction counts the instructions decide and the time is secondary)
TIME_PER_OP = {t for t, _, _ in metrics.PRIMARY.values()} \
    | set(metrics.UNTIMED.values())


def time_per_op(m: metrics.Metric) -> bool:
    """A storm's primary time (per call, flush or op)."""
    return m.kind == "time" and (m.primary or m.name in TIME_PER_OP)


def summary_of(m: metrics.Metric, slows_only: bool = True) -> str:
    """How a boot's runs make its number on this row (stats.boot_summary):
    for a time per operation the fastest run where noise only ever slows
    a run down (slows_only: under emulation, noise_only_slows), else the
    median run; the median run for other times and rates; the mean for
    counts and for instructions (after the ticks, runs far above left
    out: bootmodel.boot_of)."""
    if time_per_op(m):
        return "min" if slows_only else "median"
    if m.kind in ("time", "rate"):
        return "median"
    return "mean"


# Where a run's time is only ever stretched by what else runs: under
# single-threaded TCG a vCPU runs only while QEMU's one thread runs it,
# and the fastest of a boot's runs calls a known change far more often
# than its median (tests/test_verdicts_sim.py, on real TCG boots). On
# KVM and hardware a kernel can make some runs faster (a frequency
# boost, a cache left warm), which nothing here has measured: there a
# boot's number is its median run, and the fastest is the twin row.
SLOWS_ONLY = {"tcg"}


def noise_only_slows(sets: list[runs.Series]) -> bool:
    """Every run of every set ran where noise only slows a run down."""
    return all(env_values(s, "virtualization") <= SLOWS_ONLY for s in sets)


@dataclasses.dataclass
class Change:
    """One candidate's change against the baseline on one row."""
    estimate: stats.Estimate
    p_adjusted: float       # after the row's family correction
    significant: bool       # marked: a change the suite stands behind
    reported: bool          # False: not a change by rule (floor, 1 apart,
                            # below the minimum effect)
    why_not: str = ""       # why it is not marked, for the reader

    @property
    def pct(self) -> float:
        return self.estimate.pct

    @property
    def p(self) -> float:
        return self.estimate.p


@dataclasses.dataclass
class Row:
    metric: metrics.Metric
    values: list[list[float]]           # per set, per run
    boots: list[list[float]]            # per set, one summary per boot
    summaries: list[stats.Summary]      # per set, over runs
    boot_summaries: list[stats.Summary]  # per set, over boot summaries
    noise: list[stats.Noise]            # per set
    changes: list[Change | None]        # per set; None for the baseline
    shown: bool                         # False: tiny everywhere
    derived: bool = False               # restates another row: not tested
    run_groups: list[list[list[float]]] = dataclasses.field(
        default_factory=list)           # per set, per boot, per run
    model: list[list[bootmodel.Boot]] | None = None  # insn rows: per
                                        # set, its boots (bootmodel.py)
    calibrations: list[bootmodel.Calibration | None] | None = None
    summary: str = "mean"               # how a boot's runs make its number
                                        # (summary_of; insn rows: bootmodel)

    @property
    def log_scale(self) -> bool:
        """The row is tested on the log scale (stats.boot_changes: times,
        every per-boot number above 0), so its change is one of geometric
        means; instruction rows are bootmodel.py's, on the linear scale."""
        return self.metric.kind == "time" and self.model is None and all(
            x > 0 for b in self.boots for x in b)


def fmt_pct(x: float) -> str:
    """A change in percent, signed, one decimal; - when there is none."""
    return "-" if math.isnan(x) else f"{x:+.1f}%"


@dataclasses.dataclass
class Comparison:
    sets: list[runs.Series]             # baseline first
    rows: list[Row]
    confidence: float
    floor: float
    min_effect: float | None            # --min-effect; None: each kind's
                                        # default (effect_floor)
    warnings: list[str]

    @property
    def storm(self) -> str:
        return self.sets[0].storm

    @property
    def params(self) -> dict[str, str]:
        return self.sets[0].params

    @property
    def primary(self) -> list[Row]:
        return [r for r in self.rows if r.metric.primary]

    def size(self, i: int) -> str:
        """'3+3 boots x 5 runs' for candidate i against the baseline."""
        b, c = self.sets[0], self.sets[i]
        per = {len(x) for s in (b, c) for x in s.boots}
        runs_txt = f"{per.pop()} runs" if len(per) == 1 else \
            f"{len(b.runs)}+{len(c.runs)} runs"
        return f"{len(b.boots)}+{len(c.boots)} boots x {runs_txt}"

    def regressed(self, above_pct: float) -> list[tuple[str, str, float]]:
        """(label, metric, change in percent) for every primary metric of
        a candidate that got significantly worse by more than above_pct
        percent: slower, more IPIs or instructions per operation, or a
        lower rate."""
        out = []
        for r in self.primary:
            sign = -1.0 if r.metric.kind == "rate" else 1.0
            for s, c in zip(self.sets, r.changes):
                if c is not None and c.significant \
                        and sign * c.pct > above_pct:
                    out.append((s.label, r.metric.name, c.pct))
        return out


# ---------------------------------------------------------------------
# Refusals

def _key(s: runs.Series, vary: tuple[str, ...]) -> tuple[Any, ...]:
    return (s.storm, tuple(sorted((k, v) for k, v in s.params.items()
                                  if k not in vary)))


def check_same(sets: list[runs.Series], vary: tuple[str, ...] = ()) -> None:
    """Refuse to compare different storms or parameters (but for the
    parameters in vary, which the sets differ in by design)."""
    base = sets[0]
    for s in sets[1:]:
        if _key(s, vary) != _key(base, vary):
            raise CompareError(
                "refusing to compare different storms or parameters:\n"
                f"  {base.label}: {base.what}\n  {s.label}: {s.what}")
    for s in sets:
        if not s.runs:
            raise CompareError(f"{s.label}: no untraced runs in {s.dir}")


def env_values(s: runs.Series, name: str) -> set[str]:
    """env.<name> over the runs; 'unknown' for run files without it."""
    return {str(r["env"].get(name, "unknown")) for r in s.runs}


def env_mismatches(sets: list[runs.Series]) -> list[str]:
    """Fields that move the numbers and differ between the sets."""
    out = []
    base = sets[0]
    for name in ENV_MUST_MATCH:
        for s in sets[1:]:
            a, b = env_values(base, name), env_values(s, name)
            if a != b:
                out.append(f"{name}: {base.label} has {', '.join(sorted(a))}"
                           f", {s.label} has {', '.join(sorted(b))}")
    for s in sets:
        for name in ENV_MUST_MATCH:
            vals = env_values(s, name)
            if len(vals) > 1:
                out.append(f"{name}: {s.label}'s runs differ: "
                           f"{', '.join(sorted(vals))}")
    for s in sets[1:]:
        a, b = counting_args(base), counting_args(s)
        if a != b:
            out.append(f"counting boot arguments: {base.label} has "
                       f"{' '.join(sorted(a)) or 'none'}, {s.label} has "
                       f"{' '.join(sorted(b)) or 'none'}")
    # the box's settings: governor, turbo, SMT, C-states, ...
    return out + environment.mismatches(sets)


def counting_args(s: runs.Series) -> set[str]:
    """The boot arguments of s's runs that change what an instruction
    window counts (COUNTING_ARGS: nohz=off, which counting guests boot
    with)."""
    return {a for r in s.runs
            for a in str(r["env"].get("cmdline")
                         or r["env"].get("boot_args") or "").split()
            if a.partition("=")[0] in COUNTING_ARGS}


def env_warnings(sets: list[runs.Series], vary: tuple[str, ...] = (),
                 insn_rows: bool = False) -> list[str]:
    """What the reader must know about the sets. insn_rows: there are
    instruction rows, which one boot a side can test (bootmodel.py)."""
    out = []
    for s in sets:
        for name in ("kernel_release", "boot_args"):
            vals = env_values(s, name)
            if len(vals) > 1:
                out.append(f"{s.label}: runs differ in {name}: "
                           f"{', '.join(sorted(vals))}")
        if s.left_out:
            out.append(f"{s.label}: read series {', '.join(s.series_ids)} "
                       f"of {s.dir.name}; {len(s.left_out)} older series left "
                       "out (LABEL@ID picks one, --pool takes all)")
        if len(s.boots) < 2:
            what = "only the instruction rows are tested, against a " \
                "calibration of the boot-to-boot spread (or the other " \
                "sets' runs in the same boot); for the rest" \
                if insn_rows else "no test is possible"
            out.append(f"{s.label}: one boot: {what} (boots, "
                       "not runs, are the unit of replication): storm "
                       "matrix and ab take --boots 3 or more; on a test "
                       "box, reboot and `storm run --series ID` again "
                       "into the same label, 3 boots or more")
    base = sets[0]
    for name in ENV_SHOULD_MATCH:
        for s in sets[1:]:
            a, b = env_values(base, name), env_values(s, name)
            if a != b and a != {"unknown"} and b != {"unknown"}:
                out.append(f"environments differ in {name}: {base.label} has "
                           f"{', '.join(sorted(a))}, {s.label} has "
                           f"{', '.join(sorted(b))}")

    def effective(s: runs.Series) -> dict[str, str]:
        return {k: str(v) for k, v in s.runs[0]["result"].items()
                if k.startswith("param.")}
    b = effective(base)
    for s in sets[1:]:
        e = effective(s)
        diff = sorted(k for k in set(b) | set(e) if b.get(k) != e.get(k)
                      and k.removeprefix("param.") not in vary)
        if diff:
            out.append(f"{s.label}: the module resolved parameters "
                       "differently: " + ", ".join(
                           f"{k} {b.get(k)} vs {e.get(k)}" for k in diff))
    for s in sets:
        busy = host_overload(s)
        if busy:
            out.append(f"{s.label}: the host's load reached {busy[0]:g} on "
                       f"{busy[1]} cores during its runs: other work "
                       "competed with the guests, and times are noisier")
    out += environment.warnings(sets)
    virt = set().union(*(env_values(s, "virtualization") for s in sets))
    if virt & {"tcg", "qemu"}:
        out.append("taken under emulation (TCG): times are emulated, not "
                   "hardware timings; interrupt counts are still real")
    return out


def host_overload(s: runs.Series) -> tuple[float, int] | None:
    """(highest host load, host cores) when a run saw a load above the
    host's cores + 2 (two guests and their QEMU I/O threads keep a 2-core
    host near 3); None otherwise or when not recorded."""
    worst = None
    for r in s.runs:
        try:
            cores = int(r["env"].get("host_cpus") or 0)
            loads = [float(r["run"].get(k) or "nan")
                     for k in ("host_load_start", "host_load_end")]
        except ValueError:
            continue
        load = max((x for x in loads if not math.isnan(x)), default=0.0)
        if cores and load > cores + 2 and (worst is None or load > worst[0]):
            worst = (load, cores)
    return worst


# ---------------------------------------------------------------------
# The comparison

def _one_apart(a: list[float], b: list[float]) -> bool:
    """lkp-tests' changed_stat: integer samples whose ranges lie exactly
    1 apart (every run of one side one more than every run of the other)
    are not a change."""
    if not a or not b or not all(float(x).is_integer() for x in a + b):
        return False
    return min(a) - max(b) == 1 or min(b) - max(a) == 1


def _not_a_change(m: metrics.Metric, est: stats.Estimate,
                  means: tuple[float, float], values: tuple[list[float],
                                                            list[float]],
                  floor: float, min_effect: float | None) -> str:
    """Why a change is not one by rule, or ''."""
    if m.kind == "count":
        if not m.primary and max(abs(means[0]), abs(means[1])) < floor:
            return f"below {floor:g} counts"
        # lkp's rule is for raw event counts: IPIs per call of 1 and 0
        # are integers 1 apart, and all of a change (seed 004)
        if "_per_" not in m.name and _one_apart(*values):
            return "1 apart"
    if math.isnan(est.pct):
        return "no baseline"
    min_effect = effect_floor(m, min_effect)
    if abs(est.pct) < min_effect:
        return f"below {min_effect:g}%"
    return ""


def effect_floor(m: metrics.Metric, min_effect: float | None) -> float:
    """The smallest change called on m: --min-effect when given (never
    below INSN_MIN_EFFECT for instructions), else MIN_EFFECT, and
    INSN_MIN_EFFECT for instructions."""
    if m.kind == "insn":
        return max(INSN_MIN_EFFECT, min_effect or 0.0)
    return MIN_EFFECT if min_effect is None else min_effect


def check_run_counts(sets: list[runs.Series], rows: list[Row]) -> str:
    """'' when every boot of every set has as many runs on each row whose
    per-boot number is a minimum (it falls with more runs); else what
    differs."""
    for r in rows:
        if r.summary != "min":
            continue
        counts = {s.label: sorted({len(x) for x in v})
                  for s, v in zip(sets, r.run_groups)}
        if len({n for c in counts.values() for n in c}) > 1:
            return (f"{r.metric.name}: a boot's number is the fastest of its "
                    "runs, which falls with more runs, and the boots have "
                    "different numbers of runs (" + "; ".join(
                        f"{label}: {', '.join(map(str, c))}"
                        for label, c in counts.items()) + ")")
    return ""


def of_runs(docs: list[dict[str, Any]]) -> dict[metrics.Metric, list[float]]:
    """metrics.of_runs, taking a run's metrics from its "_metrics" when
    the caller made them already (storm simulate resamples the same real
    runs thousands of times)."""
    per_run = [d["_metrics"] if "_metrics" in d else metrics.of_run(d)
               for d in docs]
    shared = set(per_run[0]).intersection(*per_run[1:]) if per_run \
        else set()
    common = [m for m in per_run[0] if m in shared] if per_run else []
    return {m: [p[m] for p in per_run] for m in common}


def build(sets: list[runs.Series], *, confidence: float = 0.95,
          floor: float = FLOOR, min_effect: float | None = None,
          force: bool = False, vary: tuple[str, ...] = (),
          calibrations: list[bootmodel.Calibration] | None = None
          ) -> Comparison:
    """Compare sets[1:] with sets[0] (the module docstring). vary: module
    parameters the sets differ in by design (storm matrix --vary).
    calibrations: the boot spreads a side of one boot is tested with
    (default: bootmodel.CALIBRATIONS)."""
    check_same(sets, vary)
    mismatch = env_mismatches(sets)
    if mismatch and not force:
        raise CompareError(
            "refusing to compare sets taken in environments that move the "
            "numbers (--force compares them anyway):\n  "
            + "\n  ".join(mismatch))
    alpha = 1 - confidence
    per_boot = [[of_runs(b) for b in s.boots] for s in sets]
    # a metric every run of every set has
    names = [m for m in per_boot[0][0]
             if all(m in b for p in per_boot for b in p)]
    # each primary time again as a secondary row, a boot's number by the
    # other estimator: the median of its runs where the primary takes the
    # fastest (the estimate that does not assume noise only slows runs
    # down), else the fastest
    slows_only = noise_only_slows(sets)
    suffix, other = (MEDIAN_TWIN, "median") if slows_only \
        else (FASTEST_TWIN, "min")
    twins = {metrics.Metric(f"{m.name}{suffix}", m.kind, m.unit,
                            metrics.SECONDARY): m
             for m in names if time_per_op(m)}
    rows = []
    for m in names + list(twins):
        if m.kind == "insn":
            rows.append(_insn_row(m, names, per_boot, sets, calibrations))
            continue
        how = other if m in twins else summary_of(m, slows_only)
        values, boots, noise, groups = [], [], [], []
        for boot_metrics in per_boot:
            g = [b[twins.get(m, m)] for b in boot_metrics]
            groups.append(g)
            values.append([x for b in g for x in b])
            boots.append([stats.boot_summary(x, how) for x in g])
            # the noise line is the times per operation's
            noise.append(stats.noise(
                g if time_per_op(m) else [], how))
        harmonic = m.kind == "rate"
        sums = [stats.summarize(v, harmonic=harmonic) for v in values]
        bsums = [stats.summarize(b) for b in boots]
        shown = m.kind != "count" or m.primary or \
            any(abs(s.amean) >= floor for s in sums)
        rows.append(Row(m, values, boots, sums, bsums, noise,
                        [None] * len(sets), shown, derived=m.derived,
                        run_groups=groups, summary=how))
    uneven = check_run_counts(sets, rows)
    testable = all(len(s.boots) > 1 for s in sets)
    if uneven and testable and not force:
        raise CompareError(
            f"refusing to compare: {uneven}; take as many runs in every "
            "boot (--force compares them anyway)")
    _mark_duplicate_cpu_rows(rows)
    shared = [same_boot(sets[0], s) for s in sets]
    decide(rows, len(sets), alpha, confidence, floor, min_effect,
           same_boot=shared)
    rows.sort(key=lambda r: _order(r.metric))
    warnings = env_warnings(sets, vary, insn_rows=any(
        r.model is not None for r in rows))
    if vary:
        warnings.insert(0, "the sets differ in " + ", ".join(
            f"{k} ({', '.join(str(s.params.get(k, '-')) for s in sets)})"
            for k in vary) + " by design (--vary)")
    if mismatch:
        warnings = [f"compared although {x} (--force)" for x in mismatch] \
            + warnings
    if any(shared[1:]):
        warnings.insert(0, "measured in the baseline's boot: "
                        + ", ".join(s.label for s, x in zip(sets[1:],
                                                           shared[1:]) if x)
                        + "; what is called holds for that boot (the "
                        "boot-to-boot spread is not in the test)")
    if uneven:
        warnings.insert(0, f"compared although {uneven}"
                        + (" (--force)" if testable else ""))
    return Comparison(sets, rows, confidence, floor, min_effect, warnings)


def same_boot(base: runs.Series, s: runs.Series) -> bool:
    """Both sets are the runs of one boot, the same one (env.boot_id)."""
    ids = [{str(r["env"].get("boot_id") or "") for r in x.runs}
           for x in (base, s)]
    return len(ids[0]) == 1 and ids[0] == ids[1] and "" not in ids[0]


def release_of(s: runs.Series) -> str:
    """The kernel release every run of s ran on; '' when they differ."""
    rel = env_values(s, "kernel_release")
    return rel.pop() if len(rel) == 1 else ""


def _insn_row(m: metrics.Metric, names: list[metrics.Metric],
              per_boot: list[list[dict[metrics.Metric, list[float]]]],
              sets: list[runs.Series],
              table: list[bootmodel.Calibration] | None = None) -> Row:
    """An instructions-per-operation row, read through bootmodel.py: the
    runs held against the ticks per operation on its CPUs
    (metrics.TICKS_OF: each tick runs thousands of instructions, and the
    ticks in a window follow its wall time) with one slope fitted within
    the boots, one number a boot; and the calibration of the storm on
    each set's kernel, for a side of one boot."""
    t = next((n for n in names if n.name == metrics.TICKS_OF(m.name)
              and n is not m), None)
    groups = [[b[m] for b in bm if b.get(m)] for bm in per_boot]
    tgroups = None
    if t is not None:
        tgroups = [[b[t] for b in bm if b.get(m) and b.get(t)]
                   for bm in per_boot]
        if [[len(x) for x in g] for g in tgroups] != \
                [[len(y) for y in g] for g in groups]:
            tgroups = None
    values = [[y for b in g for y in b] for g in groups]
    if table is None:
        table = bootmodel.load()
    cals = [bootmodel.find(s.storm, release_of(s), m.name, s.params, table)
            for s in sets]
    # a side of one boot: the ticks' slope of the calibration all the
    # sets share, fitted on its many boots, when there is one
    known = None
    if any(len(g) < 2 for g in groups) and cals[0] is not None \
            and cals[0].tick_slope is not None \
            and all(c is cals[0] for c in cals):
        known = (cals[0].tick_slope, cals[0].tick_slope_var)
    model = bootmodel.boots_of(groups, tgroups, known)
    boots = [[b.number for b in g] for g in model]
    adjusted = [[list(b.values) for b in g] for g in model]
    noise = [stats.noise(g) if len(g) > 1 else stats.noise([])
             for g in adjusted]
    return Row(m, values, boots, [stats.summarize(v) for v in values],
               [stats.summarize(b) for b in boots], noise,
               [None] * len(groups), True, derived=m.derived, model=model,
               calibrations=cals)


def _mark_duplicate_cpu_rows(rows: list[Row]) -> None:
    """A per-CPU row that equals its total in every run (one CPU does all
    of it) restates the total."""
    by_name = {r.metric.name: r for r in rows}
    for r in rows:
        name = r.metric.name
        if ".CPU" not in name:
            continue
        head, rest = name.split(".CPU", 1)
        total = by_name.get(head + "." + rest.partition(".")[2])
        if total is not None and total.values == r.values:
            r.derived = True


def decide(rows: list[Row], nsets: int, alpha: float, confidence: float,
           floor: float, min_effect: float | None,
           same_boot: list[bool] | None = None) -> None:
    """Every candidate against the baseline on every row: the estimates,
    then one graphical multiple test over every tested row of every
    candidate (module docstring), then the rules. same_boot[i]: candidate
    i ran in the baseline's one boot."""
    shared = same_boot or [False] * nsets
    nodes: list[tuple[int, int]] = []          # (row, candidate) tested
    pending: dict[tuple[int, int], tuple[stats.Estimate, str]] = {}
    for i in range(1, nsets):
        ests = stats.boot_changes([(r.boots[0], r.boots[i]) for r in rows],
                                  [r.metric.kind in ("time", "insn")
                                   for r in rows], confidence)
        for k, (r, est) in enumerate(zip(rows, ests)):
            if r.model is not None:
                # instructions: bootmodel.py's boots and runs
                cals = r.calibrations or [None] * nsets
                est = bootmodel.change(r.model[0], r.model[i],
                                       cal_base=cals[0], cal_new=cals[i],
                                       same_boot=shared[i],
                                       confidence=confidence,
                                       row=r.metric.name)
            means = (r.boot_summaries[0].amean, r.boot_summaries[i].amean)
            rule = _not_a_change(r.metric, est, means,
                                 (r.values[0], r.values[i]), floor,
                                 min_effect)
            pending[(k, i)] = (est, rule)
            if est.testable and not r.derived:
                nodes.append((k, i))
    weights, transitions = family_graph(
        [(rows[k].metric.primary, i, rows[k].metric.kind == "time")
         for k, i in nodes])
    adjusted = dict(zip(nodes, stats.graph_test(
        [pending[n][0].p for n in nodes], weights, transitions)))
    primary_change = {i: any(adjusted[n] < alpha for n in nodes
                             if n[1] == i and rows[n[0]].metric.primary)
                      for i in range(1, nsets)}
    for (k, i), (est, rule) in pending.items():
        r = rows[k]
        p_adj = adjusted.get((k, i), math.nan)
        if r.derived:
            why = "derived"
        elif not est.testable:
            why = rule or est.basis or "fewer than 2 boots a side"
        elif not p_adj < alpha:
            why = rule or (f"p={p_adj:.2g} corrected"
                           if r.metric.primary or primary_change[i]
                           else "no primary change")
        else:
            why = rule
        r.changes[i] = Change(est, p_adj, not why, reported=not rule,
                              why_not=why)


def family_graph(nodes: list[tuple[bool, int, bool]]
                 ) -> tuple[list[float], list[list[float]]]:
    """The graph of the family (module docstring) over nodes given as
    (primary, candidate, a time): its initial weights and transitions."""
    n = len(nodes)
    prim = [j for j, (p, _, _) in enumerate(nodes) if p]
    times = [j for j in prim if nodes[j][2]]
    rest = [j for j in prim if not nodes[j][2]]
    share = TIME_SHARE if times and rest else (1.0 if times else 0.0)
    w = [0.0] * n
    for j in times:
        w[j] = share / len(times)
    for j in rest:
        w[j] = (1.0 - share) / len(rest)
    g = [[0.0] * n for _ in range(n)]
    for j, (p, cand, _) in enumerate(nodes):
        others = [k for k in prim if k != j]
        sec = [k for k, (q, c, _) in enumerate(nodes)
               if not q and c == cand and k != j]
        if p:
            share = PASS_ON if others and sec else (1.0 if sec else 0.0)
            for k in sec:
                g[j][k] = share / len(sec)
            for k in others:
                g[j][k] = (1.0 - share) / len(others)
        else:
            for k in (sec or others):
                g[j][k] = 1.0 / len(sec or others)
    if not prim and n:
        # no primary row: the secondary rows are one Holm family
        w = [1.0 / n] * n
    return w, g


def _order(m: metrics.Metric) -> tuple[int, str]:
    """Primary first, then times and rates (in the order made), then the
    module's own counts, then /proc/interrupts: totals, then per CPU."""
    if m.primary:
        return (-1, "")
    if m.kind != "count":
        return (0, "")
    group = 3 if m.name.startswith("interrupts.") else 1
    if ".CPU" in m.name:
        head, rest = m.name.split(".CPU", 1)
        cpu, _, row = rest.partition(".")
        return (group + 1, f"{head}.{row}.{int(cpu):05d}")
    return (group, m.name)
