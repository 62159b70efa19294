"""Is the difference between result sets real? The comparison model.

Boots are the unit of replication (stats.py): each boot of each side is
reduced to one number per metric, and the sides are compared on those.

The verdict is carried by each storm's primary metrics (metrics.py,
PRIMARY): time per operation and IPIs per operation, and with
count_sent=1 IPIs sent per operation (SENT_PRIMARY). They form the first
family: Holm's correction over them, at 1 - confidence (a row that
is not a change by rule, e.g. below --min-effect, is left out of its
family's correction). A primary
metric is a change when its corrected p-value is below alpha, its
confidence interval (95% by default, the uncorrected Welch interval of
the ratio) holds no zero, and the change is at least --min-effect.

Secondary rows (latency percentiles, interrupt rows) are the second
family, tested only behind the first (parallel gatekeeping): with no
primary change no secondary row is marked; with k of the n primaries
changed, Holm at alpha * k / n (one of two: alpha/2; both: alpha). Whatever the dependence between rows,
the chance that an A/A comparison marks anything stays at most alpha.
Rows that restate another (metrics.DERIVED, and a per-CPU row equal to
its total in every run) are shown, never tested. Counts follow lkp-tests:
means within +-1 of each other are equal, means below the floor are not
changes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import metrics, runs, stats

FLOOR = 10.0                 # counts: means below this are not changes
MIN_EFFECT = 1.0             # percent: smaller changes are never marked
# Instructions per operation vary by 0.15-0.3% from run to run once the
# window's ticks are accounted for, and a boot's mean by about 0.1-0.15%
# more (spin-waits run for as long as the other vCPU takes, which follows
# the host; docs/insn.md). With two boots a side or more boots are the
# unit; with one boot on a side the runs are, and the test adds the
# boot-to-boot spread its runs cannot show (INSN_BOOT_CV).
INSN_MIN_EFFECT = 0.1
INSN_BOOT_CV = 0.15
# What moves the numbers: sets that differ here are not compared unless
# forced. Emulation mode (TCG threading) moves CAL by a third and times by
# more; the vCPU count changes every broadcast.
ENV_MUST_MATCH = ("virtualization", "accel", "cpu_count")
ENV_SHOULD_MATCH = ("cpu_model", "qemu_version")


class CompareError(Exception):
    pass


@dataclasses.dataclass
class Change:
    """One candidate's change against the baseline on one row."""
    estimate: stats.Estimate
    p_adjusted: float       # after the row's family correction
    significant: bool       # marked: a change the suite stands behind
    reported: bool          # False: not a change by rule (floor, +-1, tiny)
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
    ticks: list[list[float]] | None = None  # per set, per run: the ticks
                                        # an insn row is tested against
    unit: str = "boot"                  # what the test counts: boot, run


@dataclasses.dataclass
class Comparison:
    sets: list[runs.Series]             # baseline first
    rows: list[Row]
    confidence: float
    floor: float
    min_effect: float
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

    def regressed(self, above_pct: float) -> list[str]:
        """Labels whose primary time got significantly slower by more
        than above_pct percent."""
        out = []
        for r in self.primary:
            if r.metric.kind != "time":
                continue
            for s, c in zip(self.sets, r.changes):
                if c is not None and c.significant and c.pct > above_pct:
                    out.append(s.label)
        return out


# ---------------------------------------------------------------------
# Refusals

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
    return out


def env_warnings(sets: list[runs.Series]) -> list[str]:
    out = []
    for s in sets:
        for name in ("kernel_release", "boot_args"):
            vals = env_values(s, name)
            if len(vals) > 1:
                out.append(f"{s.label}: runs differ in {name}: "
                           f"{', '.join(sorted(vals))}")
        if s.left_out:
            out.append(f"{s.label}: read series {', '.join(s.series_ids)} "
                       f"of {s.dir}; {len(s.left_out)} older series left "
                       "out (LABEL@ID picks one, --pool takes all)")
        if len(s.boots) < 2:
            out.append(f"{s.label}: one boot: no test is possible (boots, "
                       "not runs, are the unit of replication); use "
                       "--boots 3 or more")
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
        diff = sorted(k for k in set(b) | set(e) if b.get(k) != e.get(k))
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

def _not_a_change(m: metrics.Metric, est: stats.Estimate,
                  means: tuple[float, float], floor: float,
                  min_effect: float) -> str:
    """Why a change is not one by rule, or ''."""
    if m.kind == "count" and not m.primary:
        if max(abs(means[0]), abs(means[1])) < floor:
            return f"below {floor:g} counts"
        if abs(means[1] - means[0]) <= 1:
            return "within +-1"
    if math.isnan(est.pct):
        return "no baseline"
    if m.kind == "insn":
        min_effect = min(min_effect, INSN_MIN_EFFECT)
    if abs(est.pct) < min_effect:
        return f"below {min_effect:g}%"
    return ""


def build(sets: list[runs.Series], *, confidence: float = 0.95,
          floor: float = FLOOR, min_effect: float = MIN_EFFECT,
          force: bool = False) -> Comparison:
    check_same(sets)
    mismatch = env_mismatches(sets)
    if mismatch and not force:
        raise CompareError(
            "refusing to compare sets taken in environments that move the "
            "numbers (--force compares them anyway):\n  "
            + "\n  ".join(mismatch))
    alpha = 1 - confidence
    per_set = [metrics.of_runs(s.runs) for s in sets]
    per_boot = [[metrics.of_runs(b) for b in s.boots] for s in sets]
    names = [m for m in per_set[0] if all(m in p for p in per_set[1:])]
    rows = []
    for m in names:
        if m.kind == "insn":
            rows.append(_insn_row(m, names, per_boot, floor))
            continue
        values, boots, noise = [], [], []
        for boot_metrics in per_boot:
            g = [b[m] for b in boot_metrics if b.get(m)]
            v = [x for b in g for x in b]
            values.append(v)
            boots.append([stats.boot_summary(x, robust=m.kind == "time")
                          for x in g])
            noise.append(stats.noise(g if m.kind == "time" else []))
        harmonic = m.kind == "rate"
        sums = [stats.summarize(v, harmonic=harmonic) for v in values]
        bsums = [stats.summarize(b) for b in boots]
        shown = m.kind != "count" or m.primary or \
            any(abs(s.amean) >= floor for s in sums)
        rows.append(Row(m, values, boots, sums, bsums, noise,
                        [None] * len(sets), shown, derived=m.derived))
    _mark_duplicate_cpu_rows(rows)
    for i in range(1, len(sets)):
        _decide(rows, i, alpha, confidence, floor, min_effect)
    rows.sort(key=lambda r: _order(r.metric))
    warnings = env_warnings(sets)
    if mismatch:
        warnings = [f"compared although {x} (--force)" for x in mismatch] \
            + warnings
    return Comparison(sets, rows, confidence, floor, min_effect, warnings)


def _insn_row(m: metrics.Metric, names: list[metrics.Metric],
              per_boot: list[list[dict[metrics.Metric, list[float]]]],
              floor: float) -> Row:
    """An instructions-per-operation row. Each tick runs thousands of
    instructions, and the ticks in a window follow its wall time (the
    noise of emulation), so the row is held against the ticks per
    operation on its CPUs (metrics.TICKS_OF). With two boots a side or
    more: every run adjusted to the mean ticks with one slope fitted
    within the boots, then one mean per boot, boots the unit. With one
    boot on a side: the runs are the unit, in an analysis of covariance
    that carries the slope's uncertainty (stats.covariate_change)."""
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
    one_boot = any(len(g) < 2 for g in groups)
    adjusted = groups
    if tgroups is not None and not one_boot:
        slope = stats.common_slope([x for tg in tgroups for x in tg],
                                   [y for g in groups for y in g])
        if slope is not None:
            centre = float(np.mean([x for tg in tgroups for b in tg
                                    for x in b]))
            adjusted = [[[y - slope * (x - centre) for y, x in zip(b, xb)]
                         for b, xb in zip(g, tg)]
                        for g, tg in zip(groups, tgroups)]
    if one_boot:
        boots = values
        noise = [stats.noise([]) for _ in groups]
    else:
        boots = [[float(np.mean(b)) for b in g] for g in adjusted]
        noise = [stats.noise(g) for g in adjusted]
    ticks = None
    if one_boot and tgroups is not None:
        ticks = [[x for b in tg for x in b] for tg in tgroups]
    return Row(m, values, boots, [stats.summarize(v) for v in values],
               [stats.summarize(b) for b in boots], noise,
               [None] * len(groups), True, derived=m.derived, ticks=ticks,
               unit="run" if one_boot else "boot")


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


def _decide(rows: list[Row], i: int, alpha: float, confidence: float,
            floor: float, min_effect: float) -> None:
    """Candidate i against the baseline, on every row: the estimate, then
    the two families (module docstring)."""
    pending: dict[int, tuple[stats.Estimate, str]] = {}
    for k, r in enumerate(rows):
        if r.ticks is not None:
            est = stats.covariate_change(r.values[0], r.ticks[0],
                                         r.values[i], r.ticks[i],
                                         confidence=confidence,
                                         boot_cv=INSN_BOOT_CV)
        else:
            est = stats.boot_change(r.boots[0], r.boots[i],
                                    log=r.metric.kind in ("time", "insn"),
                                    confidence=confidence)
        means = (r.boot_summaries[0].amean, r.boot_summaries[i].amean)
        pending[k] = (est, _not_a_change(r.metric, est, means, floor,
                                         min_effect))

    def family(ks: list[int], level: float) -> int:
        """Holm over rows ks at level; marks them; how many changed."""
        # the family is fixed before the data speak: a row that is not a
        # change by rule (below the floor, within +-1, below the minimum
        # effect) still counts in the correction, and the rule applies
        # after it
        tested = [k for k in ks if pending[k][0].testable
                  and not rows[k].derived]
        adj = stats.holm([pending[k][0].p for k in tested])
        adjusted = dict(zip(tested, adj))
        changed = 0
        for k in ks:
            est, rule = pending[k]
            p_adj = adjusted.get(k, math.nan)
            why = rule
            if rows[k].derived:
                why = "derived"
            elif not est.testable:
                why = why or "fewer than 2 boots a side"
            elif level <= 0:
                why = why or "no primary change"
            elif not p_adj < level:
                why = why or f"p={p_adj:.2g} after Holm"
            elif rows[k].metric.primary and not est.excludes_zero:
                why = why or "interval holds 0"
            significant = not why
            changed += significant
            rows[k].changes[i] = Change(est, p_adj, significant,
                                        reported=not rule, why_not=why)
        return changed

    primary = [k for k, r in enumerate(rows) if r.metric.primary]
    secondary = [k for k, r in enumerate(rows) if not r.metric.primary]
    changed = family(primary, alpha)
    level = alpha * changed / len(primary) if primary else alpha
    family(secondary, level)


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
