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
import json
import pathlib
from typing import Any

import numpy as np

from . import classify, compare, metrics, runs, stats, verdict


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
    endpoints gave (fit_ticks) and the ticks every run is corrected to."""
    storm: str = ""
    asked: str = "auto"
    name: str = ""
    kind: str = ""
    summary: str = "min"
    tick_slope: float | None = None
    tick_ref: float | None = None

    def samples(self, run_docs: list[dict[str, Any]]) -> list[float]:
        """The metric's value in each run, tick-corrected once the slope
        is known."""
        by_name = {m.name: (m, v)
                   for m, v in metrics.of_runs(run_docs).items()}
        self.name = resolve_metric(self.asked, self.storm, sorted(by_name))
        metric, values = by_name[self.name]
        self.kind = metric.kind
        self.summary = verdict.summary_of(metric)
        ticks = by_name.get(metrics.TICKS_OF(self.name))
        if self.tick_slope is not None and self.tick_ref is not None \
                and ticks is not None and ticks[1] is not values:
            values = [y - self.tick_slope * (x - self.tick_ref)
                      for y, x in zip(values, ticks[1])]
        return values

    def fit_ticks(self, files: list[list[str]]) -> None:
        """The slope of instructions on ticks, fitted within each
        endpoint's runs (one list of run files each), and the ticks every
        run is corrected to (their mean)."""
        xs, ys = [], []
        for group in files:
            docs = [runs.load_run(pathlib.Path(f)) for f in group
                    if f.endswith(".json") and pathlib.Path(f).is_file()]
            if not docs:
                return
            by_name = {m.name: v for m, v in metrics.of_runs(docs).items()}
            if self.name not in by_name or \
                    metrics.TICKS_OF(self.name) not in by_name:
                return
            ys.append(by_name[self.name])
            xs.append(by_name[metrics.TICKS_OF(self.name)])
        slope = stats.common_slope(xs, ys)
        if slope is not None:
            self.tick_slope = slope
            self.tick_ref = float(np.mean([x for g in xs for x in g]))

    @property
    def by_run(self) -> bool:
        """Instructions: every run is a sample (one boot a step), as the
        verdict takes them with one boot a side."""
        return self.kind == "insn"

    @property
    def unit(self) -> str:
        """What one sample of a commit is: a boot, or a run."""
        return "runs" if self.by_run else "boots"

    @property
    def log_scale(self) -> bool:
        """Times are compared as ratios; counts (which may be 0) as they
        are. Time until run files say otherwise."""
        return (self.kind or "time") == "time"

    @property
    def shown(self) -> str:
        """The metric measured, as resolved from the run files ('auto' is
        time for a measurer that reads none)."""
        name = self.name or self.asked
        return "time" if name == "auto" else name

    def summaries(self, boots: list[list[float]]) -> list[float]:
        """One number per boot (stats.boot_summary, as the metric asks)."""
        return [stats.boot_summary(b, self.summary) for b in boots]

    def describe(self, xs: list[float]) -> str:
        s = stats.summarize(xs)
        unit = "ns" if self.name.endswith("_ns") else ""
        mean = compare.fmt_value(s.mean, metrics.Metric(self.name, "", unit))
        return f"mean {mean} CV {s.cv:.1f}% n={s.n}"


# state.json's keys for Reading's fields
_READING_KEYS = {"storm": "storm", "asked": "metric", "name": "metric_name",
                 "kind": "metric_kind", "summary": "metric_summary",
                 "tick_slope": "tick_slope", "tick_ref": "tick_ref"}


@dataclasses.dataclass
class BisectState:
    """One bisect: its directory, tree and endpoints, the storm and how
    to boot it, the limits, and what the steps have learnt."""
    dir: str
    tree: str
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
    build_dir: str = ""
    localversion: str = "-storm"
    results: str = ""
    measurer: str = "stormsuite.bisect:measure"
    reading: Reading = dataclasses.field(default_factory=Reading)
    # learnt: each side's level, one list of boot summaries per commit
    # called that side (the endpoints' first)
    levels: dict[str, list[list[float]]] = dataclasses.field(
        default_factory=lambda: {"good": [], "bad": []})
    good_files: list[str] = dataclasses.field(default_factory=list)
    bad_files: list[str] = dataclasses.field(default_factory=list)
    endpoints_p: float | None = None
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
            [classify.to_scale(g, log) for g in self.levels["bad"]])
