"""A bisect's decisions: the endpoints measured until they differ (or
are refused), one `git bisect run` step (good, bad or skip, from the
commit's boots against the levels learnt), and the first bad commit
measured against its parent again before it is reported.
"""

from __future__ import annotations

import pathlib
import sys
import time
from typing import Any

import numpy as np

from ..analysis import classify, stats, verdict
from ..kernel.git import git
from ..report import compare
from ..runfiles import runs
from .bisect_measure import (
    MeasureError, Measurer, boots_of_files, measurer_for, readable, short,
    subject)
from .bisect_state import (
    FAILURES, BisectState, failures_differ, failures_verdict, steps)

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125


EXIT_ABORT = 128            # git bisect run stops on this


def commit_under_test(tree: pathlib.Path) -> str:
    """The commit git bisect picked: BISECT_HEAD in a --no-checkout
    bisect, else HEAD."""
    return git(tree, "rev-parse", "--verify", "-q", "BISECT_HEAD",
               check=False) or git(tree, "rev-parse", "HEAD")


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
