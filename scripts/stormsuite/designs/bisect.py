"""storm bisect: find the commit that changed a storm's numbers.

    storm bisect --tree TREE --good REV --bad REV [--boots N] [--runs N]
                 [--metric M] STORM [PARAM=VALUE ...]

Boots are the unit (stats.py); a boot's number is made from its runs as
compare makes it (verdict.summary_of: the fastest run for the primary
time, the median run for other times, the mean for counts).

1. Builds both endpoints (each in its own build directory) and boots them
   interleaved, two at a time (--boots each, then one more pair at a time)
   until their difference is clear or --endpoint-max-boots; refuses to go
   on unless they differ at --confidence (classify.py).
2. `git bisect run storm bisect-step STATE`: each step builds the commit
   (incrementally, in one build directory) and boots it two at a time
   until the likelihood ratio of "like good" against "like bad" is clear
   (classify.decide), at most --max-boots times; then good (0) or bad (1).
   A failed build or boot: skip (125). --metric failures decides without
   statistics: --boots boots of --runs runs each, bad if the storm's
   checks failed in any run, else good.
3. Measures the first bad commit against its parent again (0-day's check
   before a report): both built and booted, interleaved, --boots each,
   and prints both with the change and its confidence interval; says so
   when that re-measurement does not confirm the change. Leaves the tree
   where it was (git bisect reset). Everything (state, every step, every
   run file, git's bisect log) is kept under results/bisect/<tree>-<time>/.

    storm bisect --resume STATE_DIR [OPTIONS]

carries on a bisect that was stopped (Ctrl-C, a reboot, a killed
driver) in its own directory: the arguments come from STATE_DIR/state.json
(any given must agree with them), the steps recorded in steps.jsonl are
replayed into a fresh git bisect (git then picks the commit the stopped
one would have tested next), and every measurement in measurements.jsonl
(the endpoints' rounds, a step's first boots, the parent check) is
answered from there instead of being built and booted again.

Measuring is one function, `measure(state, requests)`: for each (sha,
boots) request, build and boot it, and return its per-boot samples and run
files; --measurer MODULE:FUNCTION replaces it (the tests drive real git
bisects with a fake). The state (bisect_state.BisectState) is what the
bisect was asked and what it has learnt, in state.json for every step.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

from .. import storms
from ..analysis import classify, stats, verdict
from ..kernel import kbuild, source
from ..machines import box, guest
from ..report import compare
from ..runfiles import runs
from . import boxbisect, matrix, options
from .bisect_state import (
    FAILURES, BisectState, Reading, failures_differ, failures_verdict)
from ..kernel.git import git

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125
EXIT_ABORT = 128            # git bisect run stops on this
EXIT_UNCONFIRMED = 3        # named a commit, but its parent check failed
DEFAULT_MEASURER = "stormsuite.designs.bisect:measure"
Request = tuple[str, int]               # (commit, boots)
DEFAULT_RUNS = 10           # a boot's runs, summarized to the boot's number
MAX_BOOTS = 16              # a commit's boots before the odds decide
ENDPOINT_MAX_BOOTS = 20     # each endpoint's boots before bisecting anyway
Measured = tuple[list[list[float]], list[str]]  # per-boot samples, files


class MeasureError(Exception):
    """The commit could not be measured (build or boot failed)."""


# ---------------------------------------------------------------- git

def subject(tree: pathlib.Path, sha: str) -> str:
    return git(tree, "log", "-1", "--format=%s", sha)


def short(sha: str) -> str:
    return sha[:12]


# ---------------------------------------------------------------- measuring

GOOD_BUILD, STEP_BUILD = ("bisect-good", "-storm-good"), ("bisect", "-storm")
PARENT_BUILD = ("bisect-parent", "-storm-parent")
BUILDS_LOG = "builds.jsonl"


def build_for(state: BisectState, sha: str) -> tuple[pathlib.Path, str]:
    """(build directory, localversion): the good endpoint, and the first
    bad commit's parent in the final check, keep builds of their own, so
    that both sides of a pair of boots exist at once."""
    if sha == state.good:
        name, localversion = GOOD_BUILD
    elif sha == state.parent:
        name, localversion = PARENT_BUILD
    else:
        name, localversion = STEP_BUILD
    return source.build_dir(kbuild.arch_named(name, state.arch)), localversion


def ensure_built(state: BisectState, sha: str) -> pathlib.Path:
    """Build sha unless its build dir already has it. The revision is
    written to build/kernel/src and built from there (source.py): the
    tree's checkout is not needed, and every tree of the same source
    shares the compiler cache and the build directories."""
    tree = pathlib.Path(state.tree)
    out, localversion = build_for(state, sha)
    fragments = tuple(pathlib.Path(f) for f in state.config)
    try:
        if kbuild.built_as(out, short(sha), fragments, localversion,
                           state.arch):
            guest.build_modules(str(out), state.arch)
            return out
        source.checkout(tree, sha, "storm bisect")
        built = kbuild.build(source.SRC, out, fragments=fragments,
                             localversion=localversion, revision=short(sha),
                             arch=state.arch)
        source.record(out)
    except (kbuild.BuildError, guest.GuestError, source.SourceError) as e:
        raise MeasureError(f"build failed: {e}") from e
    # kbuild.build made the storms against it too
    print(f"storm bisect: built {short(sha)} in {built.seconds:.0f} s",
          file=sys.stderr, flush=True)
    # for the summary's breakdown: the steps build in processes of their own
    with open(pathlib.Path(state.dir) / BUILDS_LOG, "a") as f:
        f.write(json.dumps({"commit": sha, "seconds": built.seconds}) + "\n")
    return out


def build_seconds(state_dir: pathlib.Path) -> tuple[int, float]:
    """(builds, seconds) of the kernel builds this bisect made."""
    try:
        lines = (state_dir / BUILDS_LOG).read_text().splitlines()
    except OSError:
        return 0, 0.0
    seconds = [json.loads(line)["seconds"] for line in lines if line]
    return len(seconds), sum(seconds)


def measure(state: BisectState, requests: list[Request]
            ) -> list[Measured]:
    """Build each requested commit and boot it, interleaved across the
    requests, two at a time: per request, the per-boot samples and the
    run files. The build directories are held (source.lock) from the
    first build to the last boot."""
    with source.lock("storm bisect"):
        return build_and_boot(state, requests)


def build_and_boot(state: BisectState, requests: list[Request]
                   ) -> list[Measured]:
    outs = [ensure_built(state, sha) for sha, _ in requests]
    steps = (guest.Step(state.storm, tuple(state.params)),)
    plan = []
    for (sha, n), out in zip(requests, outs):
        label = "good-" + short(sha) if sha == state.good else short(sha)
        series = guest.new_series_id()
        g = guest.Guest(str(out), state.append, state.cpus, state.memory,
                        state.timeout, no_build=True, insn=state.insn,
                        accel=state.accel, arch=state.arch)
        plan.append([guest.Boot(g, label, series,
                                f"{short(sha)} boot {k + 1}/{n}", steps)
                     for k in range(n)])
    try:
        done = guest.run_boots(guest.interleave(plan), runs=state.runs,
                               warmup=state.warmup,
                               results=pathlib.Path(state.results),
                               jobs=state.jobs)
    except guest.GuestError as e:
        raise MeasureError(str(e)) from e
    out: list[Measured] = []
    for boots in plan:
        mine = [d for d in done if d.boot in boots]
        try:
            samples = [state.reading.samples([runs.load_run(f)
                                              for f in d.files])
                       for d in mine]
        except runs.RunError as e:
            # a kernel whose storm's checks fail has no time to bisect on
            raise MeasureError(str(e)) from e
        out.append((samples, [str(f) for d in mine for f in d.files]))
    return out


def load_measurer(spec: str) -> Callable[..., list[Measured]]:
    module, _, func = spec.partition(":")
    return getattr(importlib.import_module(module), func)


MEASUREMENTS_LOG = "measurements.jsonl"
Measurer = Callable[[BisectState, list[Request]], list[Measured]]


def measurer_for(state: BisectState, phase: str) -> Measurer:
    """state.measurer through the bisect's journal, measurements.jsonl:
    every measurement is appended there as soon as it returns, and a
    request the journal already answers (the same phase, commit and
    number of boots, in the order they were asked) is answered from it
    instead of being measured again. steps.jsonl has a step only once it
    is decided; the journal also has the rounds of a step or of the
    endpoints that a stopped bisect left unfinished, which is what lets
    --resume reuse every boot. phase: "endpoints", "step" or "check"
    (the check measures the first bad commit and its parent again, on
    purpose: their step boots must not answer it)."""
    measurer = load_measurer(state.measurer)
    path = pathlib.Path(state.dir) / MEASUREMENTS_LOG
    recorded: dict[str, list[dict[str, Any]]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue        # a line cut short by the stop: measure it
            if d.get("phase") == phase:
                recorded.setdefault(d["commit"], []).append(d)

    def measure(st: BisectState, requests: list[Request]) -> list[Measured]:
        out: list[Measured | None] = []
        todo = []
        for i, (sha, n) in enumerate(requests):
            queue = recorded.get(sha, [])
            if queue and queue[0]["boots"] == n:
                d = queue.pop(0)
                print(f"storm bisect: {short(sha)}: {n} boots measured "
                      f"before the stop, reused ({MEASUREMENTS_LOG})",
                      file=sys.stderr, flush=True)
                # what the measurer's run files taught the reading
                # (bisect_state.Reading.samples) before the stop
                st.reading.name, st.reading.kind, st.reading.summary = \
                    d.get("metric") or (st.reading.name, st.reading.kind,
                                        st.reading.summary)
                out.append((d["samples"], d["files"]))
            else:
                # asked otherwise than before: measure from here on
                recorded.pop(sha, None)
                out.append(None)
                todo.append(i)
        if todo:
            got = measurer(st, [requests[i] for i in todo])
            with open(path, "a") as f:
                for i, (samples, files) in zip(todo, got):
                    sha, n = requests[i]
                    f.write(json.dumps({
                        "phase": phase, "commit": sha, "boots": n,
                        "samples": samples, "files": files,
                        "metric": [st.reading.name, st.reading.kind,
                                   st.reading.summary]}) + "\n")
                    out[i] = (samples, files)
        return [m for m in out if m is not None]

    return measure


# ---------------------------------------------------------------- state

def steps(state_dir: pathlib.Path) -> list[dict[str, Any]]:
    path = state_dir / "steps.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()
            if line.strip()]


# ---------------------------------------------------------------- one step

def step(state_file: pathlib.Path) -> int:
    """What `git bisect run` calls: 0 good, 1 bad, 125 skip."""
    state = BisectState.load(state_file)
    reading = state.reading
    tree = pathlib.Path(state.tree)
    sha = commit_under_test(tree)
    measurer = measurer_for(state, "step")
    record: dict[str, Any] = {"commit": sha, "subject": subject(tree, sha),
                              "boots": [], "files": []}
    started = time.monotonic()
    print(f"storm bisect: testing {short(sha)} {record['subject']}",
          file=sys.stderr, flush=True)

    def boot(n: int) -> list[float]:
        (samples, files), = measurer(state, [(sha, n)])
        record["boots"] += samples
        record["files"] += files
        got = reading.summaries(samples)
        print(f"storm bisect: {short(sha)}: {len(record['boots'])} "
              f"{reading.unit}: "
              f"{reading.describe(reading.summaries(record['boots']))}",
              file=sys.stderr, flush=True)
        return got

    try:
        if reading.deterministic:
            verdict = failures_verdict(boot(state.boots))
        else:
            verdict, _ = classify.decide(
                boot, state.classify_levels(), log=reading.log_scale,
                first=state.jobs, more=state.jobs, cap=state.max_boots)
    except MeasureError as e:
        record.update(decision="skip", why=str(e))
        code = EXIT_SKIP
    else:
        record.update(decision=verdict.decision)
        if not reading.deterministic:
            # (a failures step has no odds: it is certain either way)
            record.update(odds=verdict.odds, position=verdict.position)
        code = {classify.GOOD: EXIT_GOOD, classify.BAD: EXIT_BAD}.get(
            verdict.decision, EXIT_SKIP)
        if code == EXIT_SKIP:
            record.update(decision="skip", why="ambiguous after "
                          f"{len(record['boots'])} {reading.unit}")
        else:
            # the commit's boots join the level it was called
            state.levels[verdict.decision].append(
                reading.summaries(record["boots"]))
            state.save()
    record["seconds"] = round(time.monotonic() - started, 1)
    state.log_step(record)
    shown = reading.describe(reading.summaries(record["boots"])) \
        if record["boots"] else ""
    why = f" ({record['why']})" if "why" in record else \
        f" ({len(record['boots'])} boots x {state.runs} runs)" \
        if reading.deterministic else \
        f" (odds good:bad {classify.fmt_odds(record['odds'])}, at " \
        f"{record['position']:.2f} of the way from good to bad)"
    print(f"storm bisect: {short(sha)}: {record['decision']}{why} "
          f"{reading.shown}: {shown}", file=sys.stderr, flush=True)
    return code


def failures_line(good: list[float], bad: list[float],
                  state: BisectState) -> str:
    """The endpoints (or the parent and the first bad commit) on
    failures: 'good 0 failures in 0 of 3 boots, bad ...'."""
    describe = state.reading.describe
    return (f"failures: good {describe(good)}, bad {describe(bad)} "
            f"({state.runs} runs a boot)")


def endpoints_line(state: BisectState) -> str:
    """The endpoints' verdict as the summary and the refusal print it."""
    good, bad = state.levels["good"][0], state.levels["bad"][0]
    if state.reading.deterministic:
        return failures_line(good, bad, state)
    return verdict_line(good, bad, state)[0]


# ---------------------------------------------------------------- driver

def boots_of_files(files: list[str]) -> list[list[dict[str, Any]]]:
    """Run files as their boots' run documents (env.boot_id), in the
    order they came."""
    by_boot: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        doc = runs.load_run(pathlib.Path(f))
        by_boot.setdefault(str(doc["env"].get("boot_id") or f), []) \
            .append(doc)
    return list(by_boot.values())


def readable(files: list[str]) -> bool:
    return bool(files) and all(f.endswith(".json")
                               and pathlib.Path(f).is_file() for f in files)


def measure_endpoints(state: BisectState, tree: pathlib.Path) -> bool:
    """Boot both endpoints, interleaved, until their difference is clear
    or the cap (classify.sample_endpoints); whether they differ. The
    state learns their levels, run files and, for instructions, the
    ticks' slope within their boots. Resumed, the rounds come back from
    the journal (measurer_for) and the same rounds decide the same."""
    measurer = measurer_for(state, "endpoints")
    if state.reading.deterministic:
        return failure_endpoints(state, tree, measurer)
    reading = state.reading
    good, bad = state.good, state.bad
    samples: dict[str, list[list[float]]] = {"good": [], "bad": []}
    files: dict[str, list[str]] = {"good": [], "bad": []}

    def numbers() -> tuple[list[float], list[float]]:
        if reading.kind == "insn" and readable(files["good"]) \
                and readable(files["bad"]):
            gd, bd = boots_of_files(files["good"]), \
                boots_of_files(files["bad"])
            both = reading.boot_numbers(gd + bd)
            return both[:len(gd)], both[len(gd):]
        return reading.summaries(samples["good"]), \
            reading.summaries(samples["bad"])

    def measure(n: int, round_: int) -> tuple[list[float], list[float]]:
        print(f"storm bisect: booting the endpoints {short(good)} and "
              f"{short(bad)}, {n} more each", file=sys.stderr, flush=True)
        # the endpoint launched first takes turns (guest.interleave)
        if round_ % 2 == 0:
            (g_s, g_f), (b_s, b_f) = measurer(state, [(good, n), (bad, n)])
        else:
            (b_s, b_f), (g_s, g_f) = measurer(state, [(bad, n), (good, n)])
        samples["good"] += g_s
        samples["bad"] += b_s
        files["good"] += g_f
        files["bad"] += b_f
        gb, bb = numbers()
        print(f"storm bisect: good {short(good)}: {reading.describe(gb)}; "
              f"bad {short(bad)}: {reading.describe(bb)}",
              file=sys.stderr, flush=True)
        return gb, bb

    found = classify.sample_endpoints(
        measure, log=reading.log_scale, first=state.boots,
        cap=state.endpoint_max_boots, confidence=state.confidence,
        floor=lambda: reading.floor)
    state.levels = {"good": [found.good], "bad": [found.bad]}
    state.good_files, state.bad_files = files["good"], files["bad"]
    state.endpoints_p = found.p
    state.endpoints_within = None if found.within is None \
        else [*found.within, 1 - 2 * found.alpha]
    log_endpoints(state, tree, files)
    return found.differ


def log_endpoints(state: BisectState, tree: pathlib.Path,
                  files: dict[str, list[str]]) -> None:
    """Each endpoint's boots and run files into steps.jsonl, once: a
    resumed bisect whose endpoints were done has them there."""
    logged = {s["endpoint"] for s in steps(pathlib.Path(state.dir))
              if "endpoint" in s}
    for which, sha in (("good", state.good), ("bad", state.bad)):
        if which in logged:
            continue
        state.log_step({"commit": sha, "subject": subject(tree, sha),
                        "endpoint": which,
                        "boot_summaries": state.levels[which][0],
                        "files": files[which]})


def failure_endpoints(state: BisectState, tree: pathlib.Path,
                      measurer: Measurer) -> bool:
    """--metric failures: both endpoints booted --boots times each,
    interleaved, once (no rounds: the checks need no odds); whether the
    good endpoint had no failure and the bad one some."""
    good, bad = state.good, state.bad
    print(f"storm bisect: booting the endpoints {short(good)} and "
          f"{short(bad)}, {state.boots} each", file=sys.stderr, flush=True)
    (g_s, g_f), (b_s, b_f) = measurer(state, [(good, state.boots),
                                              (bad, state.boots)])
    reading = state.reading
    gb, bb = reading.summaries(g_s), reading.summaries(b_s)
    print(f"storm bisect: good {short(good)}: {reading.describe(gb)}; "
          f"bad {short(bad)}: {reading.describe(bb)}",
          file=sys.stderr, flush=True)
    state.levels = {"good": [gb], "bad": [bb]}
    state.good_files, state.bad_files = g_f, b_f
    log_endpoints(state, tree, {"good": g_f, "bad": b_f})
    return failures_differ(gb, bb)


def verdict_line(base: list[float], new: list[float],
                 state: BisectState) -> tuple[str, stats.Estimate]:
    est = stats.boot_change(base, new, log=state.reading.log_scale,
                            confidence=state.confidence)
    if est.testable:
        size = f"{est.n_base}+{est.n_new} boots x {state.runs} runs"
        change = (f"{est.pct:+.1f}% [{est.lo:+.1f}%, {est.hi:+.1f}%] "
                  f"(p={est.p:.3g}, {size})")
    else:
        change = f"{est.pct:+.1f}% (too few boots for an interval)"
    return change, est


def confirm(state: BisectState, tree: pathlib.Path, first_bad: str,
            state_dir: pathlib.Path) -> tuple[str, bool]:
    """0-day's check: the first bad commit against its parent, measured
    again side by side. (report, confirmed)."""
    parent = git(tree, "rev-parse", f"{first_bad}^")
    state.parent = parent
    print(f"storm bisect: measuring {short(first_bad)} against its parent "
          f"{short(parent)} again ({state.boots} boots each)",
          file=sys.stderr, flush=True)
    measurer = measurer_for(state, "check")
    try:
        (p_s, p_f), (b_s, b_f) = measurer(
            state, [(parent, state.boots), (first_bad, state.boots)])
    except MeasureError as e:
        return f"could not measure it against its parent: {e}\n", False
    if state.reading.deterministic:
        return confirm_failures(state, parent, p_s, b_s)
    line, est = verdict_line(state.reading.summaries(p_s),
                             state.reading.summaries(b_s), state)
    direction = np.sign(np.median(state.levels["bad"][0])
                        - np.median(state.levels["good"][0]))
    confirmed = est.excludes_zero and np.sign(est.pct) == direction
    report = (f"re-measured against its parent {short(parent)}: "
              f"{state.reading.shown} {line}: "
              + ("confirmed" if confirmed else
                 "NOT confirmed: the change does not reproduce between "
                 "these two commits; treat the culprit as a suspect") + "\n")
    if all(str(f).endswith(".json") for f in p_f + b_f) and p_f and b_f:
        sides = [[runs.load_files([pathlib.Path(f) for f in p_f],
                                  f"parent-{short(parent)}")],
                 [runs.load_files([pathlib.Path(f) for f in b_f],
                                  f"bad-{short(first_bad)}")]]
        for group in compare.pair(sides):
            try:
                cmp = verdict.build(group, confidence=state.confidence)
            except verdict.CompareError as e:
                report += f"(no table: {e})\n"
                continue
            table = compare.render(cmp)
            compare.write_outputs(cmp, table, state_dir)
            report += "\n" + table
    return report, confirmed


def confirm_failures(state: BisectState, parent: str,
                     parent_boots: list[list[float]],
                     bad_boots: list[list[float]]) -> tuple[str, bool]:
    """The check of a failures bisect: the parent again without a
    failure, the first bad commit again with some."""
    reading = state.reading
    pb, bb = reading.summaries(parent_boots), reading.summaries(bad_boots)
    confirmed = failures_differ(pb, bb)
    line = (f"parent {reading.describe(pb)}, first bad "
            f"{reading.describe(bb)} ({state.runs} runs a boot)")
    return (f"re-measured against its parent {short(parent)}: {FAILURES}: "
            f"{line}: " + ("confirmed" if confirmed else
                           "NOT confirmed: the failures do not begin "
                           "between these two commits; treat the culprit "
                           "as a suspect") + "\n"), confirmed


def first_bad_commit(tree: pathlib.Path) -> str | None:
    """refs/bisect/bad once git has named the first bad commit."""
    log = git(tree, "bisect", "log", check=False)
    for line in log.splitlines():
        if line.startswith("# first bad commit: ["):
            return line.split("[", 1)[1].split("]", 1)[0]
    return None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm bisect",
        description="Bisect a kernel tree for the commit that changed a "
        "storm's metric, boots as the unit: boots both endpoints, "
        "interleaved, until their difference is clear (refusing when they "
        "do not differ), then runs git bisect, each step building the "
        "commit and booting it (two guests at a time) until the odds of "
        "'like good' against 'like bad' are clear; then measures the first "
        "bad commit against its parent again and prints both with the "
        "change and its interval. Skips commits that fail to build or "
        "boot. Leaves the tree on the branch it was on; logs everything "
        "under results/bisect/. --resume carries on a bisect that was "
        "stopped, from its directory there.",
        epilog="example: storm bisect --tree ~/linux --good v6.1 --bad HEAD "
        "ipistorm numipi=2000 single=1 wait=1 cpulist=0 offset=1 latency=0; "
        "after a Ctrl-C or a reboot: storm bisect --resume "
        "results/bisect/linux-20250101T120000Z")
    # --tree, --good, --bad and the storm are required unless --resume
    # (main checks): a resumed bisect takes them from its state.json
    p.add_argument("--tree", type=pathlib.Path,
                   help="the kernel git work tree (left as it is: the "
                   "bisect runs in a worktree of it)")
    p.add_argument("--good", help="a revision without the change")
    p.add_argument("--bad", help="a revision with it")
    p.add_argument("--resume", type=pathlib.Path, metavar="STATE_DIR",
                   help="carry on the stopped bisect whose directory "
                   "(results/bisect/<tree>-<time>/, with its state.json) "
                   "this is, writing into it: its recorded steps are "
                   "replayed and its endpoint, step and check boots are "
                   "reused, not booted again. Every other argument is "
                   "taken from its state.json; one given must agree with "
                   "it (refused otherwise)")
    options.add_guest_options(p, "endpoint, first", boots=3,
                              runs_=DEFAULT_RUNS)
    options.add_arch_option(p)
    p.add_argument("--max-boots", type=int, default=MAX_BOOTS,
                   help="boots of one commit before the odds as they "
                   f"stand decide (default {MAX_BOOTS})")
    p.add_argument("--endpoint-max-boots", type=int,
                   default=ENDPOINT_MAX_BOOTS,
                   help="boots of each endpoint before bisecting on "
                   f"what is known (default {ENDPOINT_MAX_BOOTS})")
    p.add_argument("--metric", default="auto",
                   help="insn (instructions per call, flush or op on the "
                   "storm's CPUs, counted under TCG; boots the unit, as "
                   "for every metric), "
                   "time (the storm's time per call, flush or op), "
                   "runtime, a /proc/interrupts row such as CAL, or any "
                   "metric name storm compare prints; default auto: insn "
                   "where instructions are counted, else time. "
                   "failures: the storm's checks, no statistics: a commit "
                   "is bad if any run of its --boots boots x --runs runs "
                   "failed them, good if none did (the good endpoint must "
                   "have none, the bad one some)")
    p.add_argument("--append", default="",
                   help="boot arguments for every kernel, e.g. idle=poll")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level the endpoints must differ at, "
                   "and of the final interval (default 0.95)")
    p.add_argument("--config", action="append", default=[],
                   type=pathlib.Path, metavar="FRAGMENT",
                   help="config fragment for every build (repeatable)"
                   "; a whole .config (a bot's, as 0-day attaches) is the base instead, under configs/guest.config")
    options.add_box_options(p)
    p.add_argument("--kconfig", type=pathlib.Path,
                   help="with --box: the configuration every commit starts "
                   "from (default: the box's running kernel's); the bisect "
                   "is then ktest.pl's, each commit judged against the "
                   "endpoints' boots (docs/box.md)")
    p.add_argument("--measurer", default=DEFAULT_MEASURER,
                   help=argparse.SUPPRESS)
    # options.add_storm_arguments's two, the storm optional for --resume
    p.add_argument("storm", nargs="?",
                   help=", ".join(storms.NAMES))
    p.add_argument("params", nargs="*", metavar="PARAM=VALUE")
    return p


class Refused(ValueError):
    """The tree or revisions cannot be bisected as asked (exit 2)."""


def check_options(p: argparse.ArgumentParser,
                  args: argparse.Namespace) -> None:
    missing = [name for name, value in (
        ("--tree", args.tree), ("--good", args.good), ("--bad", args.bad),
        ("STORM", args.storm)) if value is None]
    if missing:
        p.error("the following arguments are required (unless --resume): "
                + ", ".join(missing))
    options.check_guest_options(p, args)
    if args.max_boots < args.jobs or args.endpoint_max_boots < args.boots:
        p.error("--max-boots must be at least --jobs, and "
                "--endpoint-max-boots at least --boots")
    if not 0 < args.confidence < 1:
        p.error("--confidence must be between 0 and 1")


def plan(args: argparse.Namespace, tree: pathlib.Path, good: str,
         bad: str) -> str:
    """--dry-run: the commits, the builds and boots, and their time from
    matrix's estimate."""
    est = matrix.estimate
    per = args.runs + args.warmup
    commits = int(git(tree, "rev-list", "--count", f"{good}..{bad}"))
    # git bisect halves the commits left each step, down to the first bad
    steps = max(commits - 1, 0).bit_length()
    if args.metric == FAILURES:
        # no odds: every commit gets its --boots boots once, and decides
        return (f"storm bisect: {commits} commits from {short(good)} to "
                f"{short(bad)}: about {steps} steps, {steps + 3} kernel "
                "builds (the endpoints, a build a step, the first bad's "
                "parent)\n"
                f"storm bisect: --metric {FAILURES}, no statistics: every "
                f"kernel {args.boots} boots once, bad if any of its "
                f"{args.boots} x {args.runs} runs failed the storm's "
                "checks, good if none did (the good endpoint must have "
                "none, the bad one some); then the first bad's parent "
                f"again. About {est(2 * args.boots, per, args.jobs) / 60:.0f}"
                f" min for the endpoints and "
                f"{est(args.boots, per, args.jobs) / 60:.0f} min a step, "
                "plus the builds (a few minutes each with a warm ccache)")
    return (f"storm bisect: {commits} commits from {short(good)} to "
            f"{short(bad)}: about {steps} steps, {steps + 3} kernel builds "
            "(the endpoints, a build a step, the first bad's parent)\n"
            f"storm bisect: endpoints {args.boots} to "
            f"{args.endpoint_max_boots} boots each, then about "
            "log2(commits) steps of 2 to "
            f"{args.max_boots} boots, then 2 x {args.boots} boots for the "
            f"check; {args.runs} runs a boot. About "
            f"{est(2 * args.boots, per, args.jobs) / 60:.0f} min for the "
            f"endpoints and {est(4, per, args.jobs) / 60:.0f} to "
            f"{est(args.max_boots, per, args.jobs) / 60:.0f} min a step, "
            "plus the builds (a few minutes each with a warm ccache)")


def check_tree(tree: pathlib.Path, good_rev: str,
               bad_rev: str) -> tuple[str, str]:
    """The endpoints' commits; Refused for a tree that is not a git
    repository, or a good that is not bad's ancestor. The tree's own work
    tree is never touched (the bisect runs in a worktree of its own:
    bisect_worktree), so it may be dirty, busy or bisecting itself."""
    try:
        git(tree, "rev-parse", "--git-dir")
        good, bad = (git(tree, "rev-parse", "--verify", f"{r}^{{commit}}")
                     for r in (good_rev, bad_rev))
    except RuntimeError as e:
        raise Refused(f"{tree}: {e}") from e
    if subprocess.run(["git", "-C", str(tree), "merge-base",
                       "--is-ancestor", good, bad]).returncode != 0:
        raise Refused(f"--good {good_rev} is not an ancestor of --bad "
                      f"{bad_rev}")
    return good, bad


def bisect_worktree(tree: pathlib.Path, state_dir: pathlib.Path,
                    bad: str) -> pathlib.Path:
    """A worktree of TREE's repository in the bisect's directory, at bad:
    git bisect and its steps run there, with bisect refs of its own, so
    the user's work tree stays as it was, free to be used meanwhile. No
    file is checked out, there or by the bisect (git bisect start
    --no-checkout: the commit to test is BISECT_HEAD): builds read the
    commits from the object store (source.sync)."""
    wt = state_dir / "worktree"
    git(tree, "worktree", "add", "-q", "--no-checkout", "--detach", str(wt),
        bad)
    return wt


def commit_under_test(tree: pathlib.Path) -> str:
    """The commit git bisect picked: BISECT_HEAD in a --no-checkout
    bisect, else HEAD."""
    return git(tree, "rev-parse", "--verify", "-q", "BISECT_HEAD",
               check=False) or git(tree, "rev-parse", "HEAD")


def remove_worktree(tree: pathlib.Path, wt: pathlib.Path) -> None:
    git(tree, "worktree", "remove", "--force", str(wt), check=False)
    git(tree, "worktree", "prune", check=False)


def new_state(args: argparse.Namespace, tree: pathlib.Path, good: str,
              bad: str) -> BisectState:
    """The bisect's parameters, in a new directory of its own under the
    results: what every step (a process of its own) reads."""
    stamp = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y%m%dT%H%M%SZ")
    state_dir = args.results.resolve() / "bisect" / f"{tree.name}-{stamp}"
    state_dir.mkdir(parents=True)
    return BisectState(
        dir=str(state_dir), tree=str(tree), user_tree=str(tree),
        good=good, bad=bad,
        reading=Reading(storm=args.storm, asked=args.metric),
        params=args.params, boots=args.boots, runs=args.runs,
        warmup=args.warmup, max_boots=args.max_boots, jobs=args.jobs,
        endpoint_max_boots=args.endpoint_max_boots,
        confidence=args.confidence, append=args.append,
        config=[str(f.resolve()) for f in args.config],
        cpus=args.cpus, memory=args.memory, timeout=args.timeout,
        insn=getattr(args, "insn", True),
        accel=getattr(args, "accel", "tcg"),
        arch=getattr(args, "arch", "x86_64"),
        build_dir=str(source.BUILD_ROOT / kbuild.arch_named(
            STEP_BUILD[0], getattr(args, "arch", "x86_64"))),
        localversion="-storm", results=str(state_dir / "runs"),
        measurer=args.measurer)


def git_bisect_run(tree: pathlib.Path, state_dir: pathlib.Path) -> int:
    """git bisect run with bisect-step on every commit it picks, its
    output shown and logged (appended: a resumed bisect keeps the
    stopped one's); its exit status."""
    with open(state_dir / "git-bisect-run.log", "a") as logf:
        proc = subprocess.Popen(
            ["git", "-C", str(tree), "bisect", "run",
             str(guest.STORM), "bisect-step",
             str(state_dir / "state.json")], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert proc.stdout is not None
        line = "\n"
        for line in proc.stdout:
            logf.write(line)
            sys.stdout.write(line)
            sys.stdout.flush()
        # git ends with "bisect found first bad commit" and no newline
        if not line.endswith("\n"):
            logf.write("\n")
            print(flush=True)
        return proc.wait()


def not_found(tree: pathlib.Path, state_dir: pathlib.Path,
              returncode: int) -> str:
    """Why no first bad commit came out: the suspects skipped commits
    hide it among, or git bisect run's exit status."""
    run_log = (state_dir / "git-bisect-run.log").read_text()
    # the last run's list: the log has every run of a resumed bisect
    _, found, rest = run_log.rpartition("The first bad commit could be "
                                        "any of:\n")
    if not found:
        return (f"no first bad commit found (git bisect run exited "
                f"{returncode})")
    suspects = [ln.split()[0] for ln in rest.splitlines()
                if ln[:40].strip() and all(
                    c in "0123456789abcdef" for c in ln.split()[0])]
    return ("inconclusive: skipped commits hide the first bad one; it is "
            "one of:\n" + "\n".join(f"  {s} {subject(tree, s)}"
                                     for s in suspects))


def summary_text(state: BisectState, tree: pathlib.Path,
                 first_bad: str, endpoints: str, check: str,
                 elapsed: float) -> str:
    """The bisect's result: the commit, the endpoints' verdict, what the
    steps took, and the check against the commit's parent."""
    state_dir = pathlib.Path(state.dir)
    unit = state.reading.unit
    tested = [s for s in steps(state_dir) if "endpoint" not in s]
    good_b, bad_b = state.levels["good"][0], state.levels["bad"][0]
    nboots = sum(len(s.get("boots", [])) for s in tested)
    nbuilds, built_s = build_seconds(state_dir)
    return (f"\nfirst bad commit: {first_bad} {subject(tree, first_bad)}\n"
            f"endpoints: {endpoints}\n"
            f"{len(tested)} bisect steps "
            f"({sum(1 for s in tested if s['decision'] == 'skip')} "
            f"skipped, {nboots} {unit}) after the endpoints "
            f"({len(good_b)}+{len(bad_b)} {unit}), "
            f"{elapsed / 60:.1f} min"
            + (f" ({nbuilds} kernel builds {built_s / 60:.1f} min, "
               f"boots, runs and the rest {(elapsed - built_s) / 60:.1f} "
               "min)" if nbuilds else "") + "; "
            f"metric {state.reading.name or state.reading.asked}\n"
            + check)


def replay(tree: pathlib.Path, state_dir: pathlib.Path,
           recorded: list[dict[str, Any]]) -> int | None:
    """git bisect good, bad or skip for every step steps.jsonl has, in
    the order they were decided: git's next pick depends only on these,
    so it is the commit the stopped bisect would have tested next. None
    while commits are left to test; else git's exit status, when the
    recorded steps end the bisect (a first bad commit named, or only
    skipped commits left, which a `git bisect run` would then test
    wrongly). Output shown and appended to git-bisect-run.log, where
    not_found reads the suspects."""
    if recorded:
        print(f"storm bisect: replaying the {len(recorded)} step"
              f"{'' if len(recorded) == 1 else 's'} recorded",
              file=sys.stderr, flush=True)
    with open(state_dir / "git-bisect-run.log", "a") as logf:
        for r in recorded:
            res = subprocess.run(
                ["git", "-C", str(tree), "bisect", r["decision"],
                 r["commit"]], stdin=subprocess.DEVNULL, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = res.stdout if res.stdout.endswith("\n") \
                else res.stdout + "\n"
            logf.write(out)
            sys.stdout.write(out)
            sys.stdout.flush()
            if res.returncode != 0:
                return res.returncode
    return 0 if first_bad_commit(tree) else None


def relearn(state: BisectState, recorded: list[dict[str, Any]]) -> None:
    """The levels as the recorded steps left them: the endpoints' (just
    measured, or replayed), then each called commit's boots in the order
    called, as step() appends them. From steps.jsonl, not state.json's
    levels: a step stopped between its two writes leaves state.json one
    commit ahead, and that commit is tested again."""
    for r in recorded:
        if r["decision"] in ("good", "bad"):
            state.levels[r["decision"]].append(
                state.reading.summaries(r["boots"]))


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


def bisect_in(state: BisectState, user_tree: pathlib.Path) -> int:
    """The bisect of a new state, or of a resumed one (the steps it
    recorded replayed, its measurements reused through the journal), in
    a worktree of its own; the exit status."""
    state_dir = pathlib.Path(state.dir)
    started = time.monotonic()
    good, bad = state.good, state.bad
    # a stopped bisect may have left its worktree (a reboot, a kill):
    # made again from the recorded steps, never reused half-way
    stale = state_dir / "worktree"
    if stale.exists():
        remove_worktree(user_tree, stale)
        shutil.rmtree(stale, ignore_errors=True)
    tree = bisect_worktree(user_tree, state_dir, bad)
    state.tree = str(tree)
    state.save()
    try:
        try:
            differ = measure_endpoints(state, tree)
        except (MeasureError, ValueError) as e:
            print(f"storm bisect: cannot measure an endpoint: {e}",
                  file=sys.stderr)
            return 1
        recorded = [s for s in steps(state_dir) if "endpoint" not in s]
        relearn(state, recorded)
        state.save()
        line = endpoints_line(state)
        if not differ and state.reading.deterministic:
            print("storm bisect: refusing to bisect: the endpoints do not "
                  f"differ on {FAILURES} (the good one must have none in "
                  f"{state.boots} boots x {state.runs} runs, the bad one "
                  f"some): {line}", file=sys.stderr)
            return 1
        if not differ:
            within = state.endpoints_within
            why = (f"differ by {state.reading.floor:g}% or more (the "
                   "smallest change the verdicts call): "
                   f"[{within[0]:+.3f}%, {within[1]:+.3f}%] at "
                   f"{within[2]:g} confidence"
                   if within else
                   f"differ at {state.confidence:g} confidence")
            print(f"storm bisect: refusing to bisect: the endpoints do not "
                  f"{why} on {state.reading.name or state.reading.asked}: "
                  f"{line}", file=sys.stderr)
            return 1
        print(f"storm bisect: endpoints: {line}; bisecting", file=sys.stderr,
              flush=True)
        git(tree, "bisect", "start", "--no-checkout", bad, good)
        returncode = replay(tree, state_dir, recorded)
        if returncode is None:
            returncode = git_bisect_run(tree, state_dir)
        first_bad = first_bad_commit(tree)
        # appended: a resumed bisect's log (from its start: the replayed
        # steps, then the new ones) after the stopped one's
        with open(state_dir / "git-bisect.log", "a") as f:
            f.write(git(tree, "bisect", "log", check=False) + "\n")
        if git(tree, "bisect", "log", check=False):
            git(tree, "bisect", "reset", check=False)
        if first_bad is not None:
            # the steps learnt the levels: read them back
            state = BisectState.load(state.path)
            check, confirmed = confirm(state, tree, first_bad, state_dir)
            state.save()
    finally:
        remove_worktree(user_tree, tree)
    tree = user_tree

    if first_bad is None:
        print(f"storm bisect: {not_found(tree, state_dir, returncode)}",
              file=sys.stderr)
        print(f"storm bisect: log in {state_dir}", file=sys.stderr)
        return 1
    summary = summary_text(state, tree, first_bad, line, check,
                           time.monotonic() - started)
    (state_dir / "summary.txt").write_text(summary)
    print(summary)
    print(f"storm bisect: log in {state_dir}", file=sys.stderr)
    return 0 if confirmed else EXIT_UNCONFIRMED


# ---------------------------------------------------------------- --resume

def given_arguments(argv: list[str]) -> dict[str, Any]:
    """The arguments on the command line, by dest: parsed again with
    every default suppressed, so that one not given is absent rather
    than at its default (which may differ from what the bisect stored:
    --jobs's depends on the host)."""
    p = parser()
    for action in p._actions:
        action.default = argparse.SUPPRESS
    return vars(p.parse_args(argv))


def stored_state(state_dir: pathlib.Path) -> BisectState:
    """STATE_DIR/state.json, or Refused saying why it cannot be resumed
    from."""
    path = state_dir / "state.json"
    if not path.is_file():
        raise Refused(f"{path} does not exist: --resume takes the "
                      "directory of a storm bisect "
                      "(results/bisect/<tree>-<time>/)")
    try:
        state = BisectState.load(path)
        if not (state.good and state.bad and state.storm):
            raise ValueError("it names no endpoints or storm")
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise Refused(f"{path} is unreadable as a bisect's state ({e})") \
            from e
    if (state_dir / "summary.txt").exists():
        raise Refused(f"{state_dir} holds a finished bisect (its result is "
                      "in summary.txt): there is nothing to resume")
    return state


def check_commits(tree: pathlib.Path, state: BisectState,
                  recorded: list[dict[str, Any]]) -> None:
    """Refused unless every commit the state and its steps name is still
    in tree's repository: the steps are replayed by their ids."""
    named = [state.good, state.bad, *(r["commit"] for r in recorded)]
    if state.parent:
        named.append(state.parent)
    gone = [sha for sha in dict.fromkeys(named)
            if subprocess.run(["git", "-C", str(tree), "cat-file", "-e",
                               f"{sha}^{{commit}}"],
                              capture_output=True).returncode != 0]
    if gone:
        raise Refused(f"{tree} no longer has the commit"
                      f"{'s' if len(gone) > 1 else ''} "
                      f"{', '.join(short(g) for g in gone)} that the bisect "
                      "recorded (rewritten or garbage-collected?), so its "
                      "steps cannot be replayed")


def contradictions(given: dict[str, Any], state: BisectState,
                   tree: pathlib.Path, state_dir: pathlib.Path) -> list[str]:
    """Each argument given with --resume that differs from what the
    bisect stored, as 'GIVEN, the bisect's is STORED'."""
    diffs = []
    for opt, dest in (("--good", "good"), ("--bad", "bad")):
        if dest in given:
            sha = git(tree, "rev-parse", "--verify", "-q",
                      f"{given[dest]}^{{commit}}", check=False)
            if sha != getattr(state, dest):
                diffs.append(f"{opt} {given[dest]} is "
                             f"{short(sha) if sha else 'no commit'}, the "
                             f"bisect's is {short(getattr(state, dest))}")
    if "metric" in given and given["metric"] != state.reading.asked:
        diffs.append(f"--metric {given['metric']}, the bisect's is "
                     f"{state.reading.asked}")
    if "storm" in given and (given["storm"], sorted(given.get("params", []))
                             ) != (state.storm, sorted(state.params)):
        diffs.append(f"{' '.join([given['storm'], *given.get('params', [])])}"
                     f", the bisect's is "
                     f"{' '.join([state.storm, *state.params])}")
    # the options stored as they were given (new_state)
    # (not --timeout: it bounds a hung guest, and a guest timeout may be
    # what stopped the bisect; a resume may raise it)
    for dest in ("boots", "runs", "warmup", "max_boots", "jobs",
                 "endpoint_max_boots", "confidence", "append", "cpus",
                 "memory", "accel", "arch", "measurer"):
        if dest in given and given[dest] != getattr(state, dest):
            diffs.append(f"--{dest.replace('_', '-')} {given[dest]}, the "
                         f"bisect's is {getattr(state, dest)}")
    if "insn" in given and given["insn"] != state.insn:
        diffs.append("--no-insn, the bisect counts instructions")
    if "config" in given and [str(f.resolve()) for f in given["config"]] \
            != state.config:
        diffs.append(f"--config {' '.join(map(str, given['config']))}, the "
                     f"bisect's is {' '.join(state.config) or 'none'}")
    if "results" in given and \
            given["results"].resolve() / "bisect" != state_dir.parent:
        diffs.append(f"--results {given['results']}, the bisect's is "
                     f"{state_dir.parent.parent}")
    return diffs


def resume(argv: list[str], args: argparse.Namespace) -> int:
    """storm bisect --resume STATE_DIR: the stored bisect, checked
    against the tree and the arguments given, carried on in STATE_DIR."""
    state_dir = args.resume.resolve()
    if state_dir.name == "state.json":
        state_dir = state_dir.parent
    try:
        state = stored_state(state_dir)
        lock = hold(state_dir)      # noqa: F841 (held until we return)
        stored_tree = pathlib.Path(state.user_tree) if state.user_tree \
            else None
        tree = args.tree.resolve() if args.tree else stored_tree
        if tree is None:
            raise Refused(f"{state_dir / 'state.json'} does not name the "
                          "tree it bisects (it predates --resume): give "
                          "--tree")
        if stored_tree is not None and tree != stored_tree:
            raise Refused(f"--tree {tree} is a different tree from the "
                          f"bisect's, {stored_tree}")
        try:
            git(tree, "rev-parse", "--git-dir")
        except RuntimeError as e:
            raise Refused(f"the bisect's tree {tree} is not a git "
                          f"repository any more ({e})") from e
        recorded = [s for s in steps(state_dir) if "endpoint" not in s]
        check_commits(tree, state, recorded)
        diffs = contradictions(given_arguments(argv), state, tree,
                               state_dir)
        if diffs:
            raise Refused("the arguments given contradict the bisect's "
                          f"({'; '.join(diffs)}): leave them out to take "
                          "its own")
    except Refused as e:
        print(f"storm bisect: cannot resume {state_dir}: {e}",
              file=sys.stderr)
        return 2
    # where this run's files go, should the directory have moved
    state.dir, state.user_tree = str(state_dir), str(tree)
    if "timeout" in given_arguments(argv):
        state.timeout = args.timeout
    decided = {d: sum(1 for r in recorded if r["decision"] == d)
               for d in ("good", "bad", "skip")}
    journal = state_dir / MEASUREMENTS_LOG
    reused = len(journal.read_text().splitlines()) if journal.is_file() \
        else 0
    what = (f"storm bisect: {tree.name}: good {short(state.good)}, bad "
            f"{short(state.bad)}; {state.storm} {' '.join(state.params)}; "
            f"metric {state.reading.asked}; resuming {state_dir}: "
            f"{len(recorded)} step{'' if len(recorded) == 1 else 's'} "
            f"recorded ({decided['good']} good, "
            f"{decided['bad']} bad, {decided['skip']} skipped), "
            f"{reused} measurements to reuse")
    if args.dry_run:
        print(what)
        return 0
    print(what, file=sys.stderr, flush=True)
    return bisect_in(state, tree)


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.resume is not None:
        if args.box:
            p.error("--resume: a bisect on a box is ktest.pl's, which "
                    "keeps no state.json to resume from")
        return resume(argv, args)
    check_options(p, args)
    if args.box and args.arch != "x86_64":
        p.error("--arch: a box is the architecture it is (--box)")
    if args.box:
        return box_main(p, args)
    if args.kconfig:
        p.error("--kconfig: the start of a box's builds (--box)")
    tree = args.tree.resolve()
    try:
        good, bad = check_tree(tree, args.good, args.bad)
    except Refused as e:
        print(f"storm bisect: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(plan(args, tree, good, bad))
        return 0
    state = new_state(args, tree, good, bad)
    print(f"storm bisect: {tree.name}: good {short(good)}, bad {short(bad)}; "
          f"{args.storm} {' '.join(args.params)}; metric {args.metric}; "
          f"log in {state.dir}", file=sys.stderr, flush=True)
    lock = hold(pathlib.Path(state.dir))    # noqa: F841 (held until return)
    return bisect_in(state, tree)


def box_main(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """--box: ktest.pl's bisect on the box, storm's verdict its test
    (boxbisect.py)."""
    for flag, given in (("--append", args.append), ("--config", args.config),
                        ("--dry-run", args.dry_run)):
        if given:
            p.error(f"{flag}: not with --box (docs/box.md)")
    return boxbisect.bisect_box(
        args.box, args.ktest, args.tree, args.good, args.bad, args.kconfig,
        box.Design(args.storm, tuple(args.params), args.runs, args.warmup,
                   args.timeout), args.boots, args.metric, args.results,
        "storm bisect --box")


def step_main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: storm bisect-step STATE.json  (run by git bisect run "
              "for storm bisect)", file=sys.stderr)
        return 2 if not argv or argv[0] not in ("-h", "--help") else 0
    try:
        return step(pathlib.Path(argv[0]))
    except Exception as e:
        # not the commit's fault: stop the bisect rather than skip them all
        print(f"storm bisect-step: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ABORT
