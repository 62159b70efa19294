"""A bisect's state: what `storm bisect` was asked, fixed when it starts,
and what it learns on the way (the metric as the run files name it, the
tick correction, the levels of good and bad). Every `git bisect run` step
is a process of its own: it reads the state from state.json in the
bisect's directory, and writes back the levels it adds to.

`Reading` is the part that turns run files into samples, also used
without a bisect (storm box bisect-test decides one boot against two
result sets)."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import pathlib
from typing import Any

import numpy as np

from ..analysis import bootmodel, classify, stats, verdict
from ..report import compare
from ..runfiles import metrics, runs

# --metric failures: the storm's checks (runs.failures_of), decided
# without statistics: a commit is bad when any run of its boots failed
FAILURES = "failures"
# what measures a commit unless --measurer says otherwise
DEFAULT_MEASURER = "stormsuite.designs.bisect_measure:measure"


def resolve_metric(name: str, storm: str, available: list[str]) -> str:
    """'auto' (insn where instructions were counted, else time), 'insn'
    (instructions per operation on the storm's CPUs), 'time' (the storm's
    primary time per operation), 'runtime', a /proc/interrupts row
    ('CAL'), a name after '<storm>.' ('irq.CAL', 'latency.p99_ns') or a
    full metric name."""
    candidates = [name, f"{storm}.{name}"]
    insn = f"{storm}.insn_per_{metrics.PRIMARY[storm][2]}" \
        if storm in metrics.PRIMARY else ""
    if name == "auto":
        return resolve_metric("insn" if insn in available else "time",
                              storm, available)
    if name == "insn" and insn:
        candidates.insert(0, insn)
    if name == "time" and storm in metrics.PRIMARY:
        candidates[:0] = [metrics.PRIMARY[storm][0]] + (
            [metrics.UNTIMED[storm]] if storm in metrics.UNTIMED else [])
    if name == "runtime":
        candidates.insert(0, f"{storm}.runtime_ns")
    for c in candidates:
        if c in available:
            return c
    rows = [a for a in available if a.startswith(f"interrupts.{name}:")]
    if len(rows) == 1:
        return rows[0]
    raise ValueError(f"no metric {name!r}; this storm's metrics: "
                     + ", ".join(available))


@dataclasses.dataclass
class Reading:
    """How a commit's run files become samples: the metric asked for,
    and, once run files have named it, its full name, its kind and how a
    boot's runs are summarized; for instructions, the slope on ticks the
    endpoints gave (fit_boots) and the ticks every run is corrected to."""
    storm: str = ""
    asked: str = "auto"
    name: str = ""
    kind: str = ""
    summary: str = "min"
    tick_slope: float | None = None
    tick_ref: float | None = None

    @property
    def deterministic(self) -> bool:
        """--metric failures: a commit's runs decide it as they are, bad
        on any failure, never by odds or intervals."""
        return self.asked == FAILURES

    def samples(self, run_docs: list[dict[str, Any]]) -> list[float]:
        """The metric's value in each run, tick-corrected once the slope
        is known. A statistic is never made of runs whose storm's checks
        failed (a wrong kernel, not a slow one): runs.RunError names
        them."""
        if self.deterministic:
            self.name, self.kind, self.summary = FAILURES, FAILURES, "sum"
            return [float(runs.failures_of(d)) for d in run_docs]
        failed = [d for d in run_docs if runs.check_failed(d)]
        if failed:
            raise runs.RunError(
                f"the storm's checks failed in {runs.failed_text(failed)}: "
                f"no {self.asked} is measured on a kernel that fails them "
                f"(storm bisect --metric {FAILURES} finds where they began)")
        by_name = {m.name: (m, v)
                   for m, v in metrics.of_runs(run_docs).items()}
        self.name = resolve_metric(self.asked, self.storm, sorted(by_name))
        metric, values = by_name[self.name]
        self.kind = metric.kind
        self.summary = verdict.summary_of(metric, all(
            str(d.get("env", {}).get("virtualization", "unknown"))
            in verdict.SLOWS_ONLY for d in run_docs))
        ticks = by_name.get(metrics.TICKS_OF(self.name))
        if self.tick_slope is not None and self.tick_ref is not None \
                and ticks is not None and ticks[1] is not values:
            values = [y - self.tick_slope * (x - self.tick_ref)
                      for y, x in zip(values, ticks[1])]
        return values

    def fit_boots(self, boots: list[list[dict[str, Any]]]) -> None:
        """The slope of instructions on ticks within every boot (each its
        run documents), and the ticks every run is corrected to."""
        values, ticks = [], []
        for docs in boots:
            by_name = {m.name: v for m, v in metrics.of_runs(docs).items()}
            if self.name not in by_name or \
                    metrics.TICKS_OF(self.name) not in by_name:
                return
            values.append(by_name[self.name])
            ticks.append(by_name[metrics.TICKS_OF(self.name)])
        self.fit(values, ticks)

    def fit(self, values: list[list[float]], ticks: list[list[float]]
            ) -> None:
        """The slope of values on ticks within the boots (bootmodel's),
        and the ticks every run is corrected to (their mean)."""
        slope = bootmodel.within_slope([np.asarray(t, dtype=float)
                                        for t in ticks],
                                       [np.asarray(v, dtype=float)
                                        for v in values])
        if slope is not None:
            self.tick_slope = slope
            self.tick_ref = float(np.mean([x for g in ticks for x in g]))

    def numbers_of(self, values: list[list[float]],
                   ticks: list[list[float]]) -> list[float]:
        """One number per boot of raw values and their ticks, the slope
        fitted within these boots first (what boot_numbers does with run
        documents)."""
        self.fit(values, ticks)
        if self.tick_slope is None or self.tick_ref is None:
            return self.summaries(values)
        return self.summaries(
            [[y - self.tick_slope * (x - self.tick_ref)
              for y, x in zip(v, t)] for v, t in zip(values, ticks)])

    def boot_numbers(self, boots: list[list[dict[str, Any]]]
                     ) -> list[float]:
        """One number per boot (each its run documents): for
        instructions the slope is fitted within these boots first."""
        if boots:
            self.samples(boots[0])          # names the metric and kind
        if self.kind == "insn":
            self.fit_boots(boots)
        return self.summaries([self.samples(b) for b in boots])

    @property
    def floor(self) -> float:
        """The smallest change the verdicts call on this metric, percent
        (verdict.effect_floor; known once run files named the metric)."""
        return verdict.effect_floor(metrics.Metric(self.name, self.kind, ""),
                                    None)

    @property
    def unit(self) -> str:
        """What one sample of a commit is: a boot (runs in one boot share
        its level: bootmodel.py)."""
        return "boots"

    @property
    def log_scale(self) -> bool:
        """Times are compared as ratios; counts (which may be 0) as they
        are. Time until run files say otherwise."""
        if self.deterministic:
            return False
        return (self.kind or "time") in ("time", "insn")

    @property
    def min_spread(self) -> float:
        """classify's floor of the spread between boots: times
        (classify.MIN_SPREAD); instructions none, their boots' own
        spread is pooled over every commit measured."""
        return 0.0 if self.kind == "insn" else classify.MIN_SPREAD

    @property
    def shown(self) -> str:
        """The metric measured, as resolved from the run files ('auto' is
        time for a measurer that reads none)."""
        name = self.name or self.asked
        return "time" if name == "auto" else name

    def summaries(self, boots: list[list[float]]) -> list[float]:
        """One number per boot: for instructions bootmodel's (the mean
        of its runs after the ticks, runs far above left out), else
        stats.boot_summary as the metric asks; for failures, the boot's
        total."""
        if self.deterministic:
            return [float(sum(b)) for b in boots]
        if self.kind == "insn":
            return [bootmodel.boot_of(np.asarray(b)).number for b in boots]
        return [stats.boot_summary(b, self.summary) for b in boots]

    def describe(self, xs: list[float]) -> str:
        if self.deterministic:
            return failures_text(xs)
        s = stats.summarize(xs)
        unit = "ns" if self.name.endswith("_ns") else ""
        mean = compare.fmt_value(s.mean, metrics.Metric(self.name, "", unit))
        return f"mean {mean} CV {s.cv:.1f}% n={s.n}"


def failures_text(boots: list[float]) -> str:
    """'3 failures in 2 of 3 boots' from the boots' totals."""
    total = int(sum(boots))
    hit = sum(1 for b in boots if b > 0)
    return (f"{total} failure{'' if total == 1 else 's'} in {hit} of "
            f"{len(boots)} boot{'' if len(boots) == 1 else 's'}")


# state.json's keys for Reading's fields
_READING_KEYS = {"storm": "storm", "asked": "metric", "name": "metric_name",
                 "kind": "metric_kind", "summary": "metric_summary",
                 "tick_slope": "tick_slope", "tick_ref": "tick_ref"}


@dataclasses.dataclass
class BisectState:
    """One bisect: its directory, tree and endpoints, the storm and how
    to boot it, the limits, and what the steps have learnt."""
    dir: str
    tree: str                      # where git bisect runs: the worktree
    # the user's tree, of which the worktree is made: what --resume
    # makes the worktree from again, and checks its commits in
    user_tree: str = ""
    good: str = ""
    bad: str = ""
    params: list[str] = dataclasses.field(default_factory=list)
    boots: int = 3
    runs: int = 10
    warmup: int = 1
    max_boots: int = 16
    jobs: int = 2
    endpoint_max_boots: int = 20
    confidence: float = 0.95
    append: str = ""
    config: list[str] = dataclasses.field(default_factory=list)
    cpus: int = 4
    memory: str = ""
    timeout: int = 0
    insn: bool = True
    accel: str = "tcg"
    arch: str = "x86_64"        # the guests': arm64 builds cross-compiled
    build_dir: str = ""
    localversion: str = "-storm"
    results: str = ""
    measurer: str = DEFAULT_MEASURER
    reading: Reading = dataclasses.field(default_factory=Reading)
    # learnt: each side's level, one list of boot summaries per commit
    # called that side (the endpoints' first)
    levels: dict[str, list[list[float]]] = dataclasses.field(
        default_factory=lambda: {"good": [], "bad": []})
    good_files: list[str] = dataclasses.field(default_factory=list)
    bad_files: list[str] = dataclasses.field(default_factory=list)
    endpoints_p: float | None = None
    # the endpoints' change (lo, hi percent) and its confidence, when it
    # showed them closer than the floor (classify.within_floor)
    endpoints_within: list[float] | None = None
    parent: str | None = None      # of the first bad commit, once named

    @property
    def storm(self) -> str:
        return self.reading.storm

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(self.dir) / "state.json"

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name)
             for f in dataclasses.fields(self) if f.name != "reading"}
        d.update({key: getattr(self.reading, attr)
                  for attr, key in _READING_KEYS.items()})
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BisectState:
        reading = Reading(**{attr: d[key] for attr, key in
                             _READING_KEYS.items() if key in d})
        names = {f.name for f in dataclasses.fields(cls)} - {"reading"}
        return cls(reading=reading,
                   **{k: v for k, v in d.items() if k in names})

    @classmethod
    def load(cls, path: pathlib.Path) -> BisectState:
        return cls.from_json(json.loads(path.read_text()))

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        tmp.replace(self.path)

    def log_step(self, record: dict[str, Any]) -> None:
        with open(pathlib.Path(self.dir) / "steps.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")

    def classify_levels(self) -> classify.Levels:
        log = self.reading.log_scale
        return classify.Levels(
            [classify.to_scale(g, log) for g in self.levels["good"]],
            [classify.to_scale(g, log) for g in self.levels["bad"]],
            min_spread=self.reading.min_spread)


def failures_verdict(boot_failures: list[float]) -> classify.Verdict:
    """--metric failures: bad if any boot's runs failed the storm's
    checks, good if none did; certain either way (the odds are 0 or
    infinite, the position 1 or 0)."""
    if any(n > 0 for n in boot_failures):
        return classify.Verdict(classify.BAD, 0.0, 1.0)
    return classify.Verdict(classify.GOOD, float("inf"), 0.0)


def failures_differ(good: list[float], bad: list[float]) -> bool:
    """The endpoints of a failures bisect: none at good, some at bad."""
    return not any(n > 0 for n in good) and any(n > 0 for n in bad)


def steps(state_dir: pathlib.Path) -> list[dict[str, Any]]:
    path = state_dir / "steps.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()
            if line.strip()]


class Refused(ValueError):
    """The tree or revisions cannot be bisected as asked (exit 2)."""


def hold(state_dir: pathlib.Path) -> Any:
    """The bisect directory's lock (bisect.lock), held by the process
    that bisects in it until it ends (the kernel lets go of it however
    the process dies), or Refused: --resume on a bisect that is in fact
    still running would remove its worktree from under it."""
    f = open(state_dir / "bisect.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        f.close()
        raise Refused(f"a storm bisect is still running in {state_dir} "
                      "(it holds bisect.lock)") from e
    return f
