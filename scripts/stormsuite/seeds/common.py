"""What the seed commands share: their kernels, guests and answers.

A seed's kernels are Debian's linux-source-6.1 (linux_source.py) with a
patch from patches/ and config fragments from configs/, each built once
into build/kernel/seed-<name> (source.build_revision: a build directory
that already holds it is not built again) and named 6.1.192-seed-<name>,
which is also the label of its results under results/seeds/NNN/.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import pathlib
import sys
import time
from typing import Any, Iterator

from .. import REPO
from ..designs import matrix, options
from ..kernel import linux_source, source
from ..report import compare
from ..runfiles import runs

RESULTS = runs.RESULTS / "seeds"
PATCHES = REPO / "patches"
CONFIGS = REPO / "configs"


@dataclasses.dataclass(frozen=True)
class Kernel:
    name: str                           # seed-<name>: directory, release
    patch: str | None = None            # under patches/
    config: tuple[str, ...] = ()        # fragments under configs/
    stock: str | None = None            # a kernel storm vm knows: not built

    @property
    def patch_path(self) -> pathlib.Path | None:
        return PATCHES / self.patch if self.patch else None

    @property
    def fragments(self) -> tuple[pathlib.Path, ...]:
        return tuple(CONFIGS / c for c in self.config)

    @property
    def localversion(self) -> str:
        return f"-seed-{self.name}"


class Clock:
    """Where a seed command's time went, for its last line."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.parts: list[tuple[str, float]] = []
        self._t = self.started

    def lap(self, what: str) -> None:
        now = time.monotonic()
        self.parts.append((what, now - self._t))
        self._t = now

    def line(self, who: str) -> str:
        total = time.monotonic() - self.started
        return f"{who}: " + ", ".join(f"{w} {s / 60:.1f} min"
                                      for w, s in self.parts) \
            + f"; total {total / 60:.1f} min"


def say(who: str, msg: str) -> None:
    print(f"{who}: {msg}", file=sys.stderr, flush=True)


def check_patches(kernels: list[Kernel], tree: pathlib.Path,
                  rev: str) -> None:
    """source.SourceError unless every patch applies to REV: before the
    first build, not after it."""
    for k in kernels:
        if k.patch_path is not None:
            source.check_patch(tree, rev, k.patch_path)


def at_least(p: argparse.ArgumentParser, args: argparse.Namespace,
             why: str = "", **least: int) -> None:
    """Refuse an option below its least value (--numipi must be at least
    1), with WHY when one is given."""
    for name, n in least.items():
        if getattr(args, name) < n:
            p.error(f"--{name} must be at least {n}" + (f": {why}" if why
                                                        else ""))


@contextlib.contextmanager
def built(kernels: list[Kernel], who: str,
          clock: Clock) -> Iterator[dict[str, pathlib.Path]]:
    """The kernels built (or found built), name -> build directory, held
    against another command's rebuild (source.lock) while the block boots
    them; the clock's laps are the builds and the boots."""
    with source.lock(who):
        outs = build(kernels, who)
        clock.lap("builds")
        yield outs
        clock.lap("boots and runs")


def build(kernels: list[Kernel], who: str) -> dict[str, pathlib.Path]:
    """Every kernel built (or found built); name -> build directory. The
    caller holds source.lock()."""
    tree = linux_source.TREE
    rev = linux_source.ensure(tree, say=lambda m: say(who, m))
    check_patches(kernels, tree, rev)
    return {k.name: source.build_revision(
        tree, rev, f"seed-{k.name}", f"{who}: {k.name}", patch=k.patch_path,
        fragments=k.fragments, localversion=k.localversion)
        for k in kernels}


def add_guest_options(p: argparse.ArgumentParser, *, cpus: int | None,
                      boots: int,
                      runs_: int, timeout: float = 1800) -> None:
    """options.add_guest_options with the seeds' results directory (cpus
    None: no --cpus)."""
    options.add_guest_options(
        p, "kernel and boot arguments", boots=boots, runs_=runs_, cpus=cpus,
        timeout=timeout, results=None,
        results_help="seeds/<the seed's number> in $STORM_RESULTS or results/")


def measure(sides: list[matrix.Side], args: argparse.Namespace, storm: str,
            params: list[str], results: pathlib.Path) -> list[runs.Series]:
    """Boot each side args.boots times (interleaved, args.jobs at a time),
    run STORM PARAMS in each; one series per side."""
    design = matrix.Design.of(args, storm=storm, params=tuple(params))
    sets, _, breakdown = matrix.measure(sides, design, results)
    say("storm seed", f"guests: {breakdown}")
    return sets


def accel(sets: list[runs.Series]) -> str:
    """accel_of the runs of every series."""
    return accel_of([r for s in sets for r in s.runs])


def accel_of(docs: list[dict[str, Any]]) -> str:
    """How the runs were taken, for an answer's first lines: 'accel
    tcg,thread=single' (one host thread for every vCPU), 'accel kvm'."""
    seen = sorted({str(d.get("env", {}).get("accel", "unknown"))
                   for d in docs})
    return "accel " + "/".join(seen)


def compare_two(base: runs.Series, cand: runs.Series) -> dict[str, Any]:
    """storm compare of two series: its table printed, its files written
    next to the candidate's runs (compare-vs-<base label>.*); the
    comparison as JSON."""
    results = compare.compare([[base], [cand]])
    compare.show(results, None, write=True)
    return compare.to_json(results[0].comparison)


def mean(doc: dict[str, Any], metric: str, label: str) -> float:
    """A metric's mean on one side of a comparison (NaN when absent)."""
    try:
        v = doc["metrics"][metric]["values"][label]["mean"]
    except KeyError:
        return float("nan")
    return float("nan") if v is None else float(v)


def change(doc: dict[str, Any], metric: str, label: str) -> dict[str, Any]:
    return doc["metrics"].get(metric, {}).get("changes", {}).get(label, {})


def verdict_mark(ch: dict[str, Any]) -> str:
    """benchstat's reading of a change: its interval, or ~ for none."""
    if not ch or ch.get("pct") is None:
        return "~"
    interval = (f"[{ch['ci_low']:+.1f}%, {ch['ci_high']:+.1f}%]"
                if ch.get("ci_low") is not None
                and ch.get("ci_high") is not None else "")
    p = f"p={ch['p']:.2g}" if ch.get("p") is not None else ""
    if not ch.get("significant"):
        # what the data allow: the interval says how large a change
        # could still hide in the noise
        return "~ " + " ".join(x for x in (interval, p) if x)
    return f"{ch['pct']:+.1f}% {interval} {p}".strip()


def results_dir(args: argparse.Namespace, nnn: str) -> pathlib.Path:
    return (args.results or RESULTS / nnn).resolve()


def write_answer(results: pathlib.Path, text: str) -> pathlib.Path:
    """answer-<UTC time>.txt: never overwrites an earlier one."""
    results.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y%m%dT%H%M%SZ")
    path = results / f"answer-{stamp}.txt"
    n = 0
    while path.exists():
        n += 1
        path = results / f"answer-{stamp}.{n}.txt"
    path.write_text(text)
    return path


def write_json(results: pathlib.Path, answer: pathlib.Path,
               doc: dict[str, Any]) -> pathlib.Path:
    path = answer.with_suffix(".json")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def finish(who: str, nnn: str, results: pathlib.Path, text: str,
           clock: Clock, data: dict[str, Any]) -> pathlib.Path:
    """Print the answer, keep it (text with where the time went, and
    DATA as JSON) and say where; the answer's path."""
    print(text)
    path = write_answer(results, text + clock.line(who) + "\n")
    write_json(results, path, {"seed": nnn, **data})
    print(f"{who}: wrote {path}")
    print(clock.line(who))
    return path


def release(out: pathlib.Path) -> str:
    from ..kernel import kbuild
    return kbuild.release_of(out)
