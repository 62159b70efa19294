"""storm bisect --resume STATE_DIR: a stopped bisect's state read back
and checked against its tree and the arguments given, before it is
carried on (bisect.bisect_in replays its steps and reuses its
measurements).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
from typing import Any

from ..kernel.git import git
from .bisect_measure import MEASUREMENTS_LOG, short
from .bisect_state import BisectState, Refused, hold, steps

def given_arguments(p: argparse.ArgumentParser,
                    argv: list[str]) -> dict[str, Any]:
    """The arguments on the command line, by dest: parsed again (by P,
    storm bisect's parser, changed) with every default suppressed, so
    that one not given is absent rather than at its default (which may
    differ from what the bisect stored: --jobs's depends on the host)."""
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


def resumed(args: argparse.Namespace, given: dict[str, Any]
            ) -> tuple[BisectState, pathlib.Path, Any, str]:
    """storm bisect --resume STATE_DIR: the stored bisect, checked
    against the tree and the arguments GIVEN (given_arguments), ready to
    carry on in STATE_DIR: its state, the user's tree, the directory's
    lock (held until the bisect ends) and a line saying what is
    resumed. Refused says why it cannot be."""
    state_dir = args.resume.resolve()
    if state_dir.name == "state.json":
        state_dir = state_dir.parent
    try:
        state = stored_state(state_dir)
        lock = hold(state_dir)
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
        diffs = contradictions(given, state, tree, state_dir)
        if diffs:
            raise Refused("the arguments given contradict the bisect's "
                          f"({'; '.join(diffs)}): leave them out to take "
                          "its own")
    except Refused as e:
        raise Refused(f"cannot resume {state_dir}: {e}") from e
    # where this run's files go, should the directory have moved
    state.dir, state.user_tree = str(state_dir), str(tree)
    if "timeout" in given:
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
    return state, tree, lock, what
