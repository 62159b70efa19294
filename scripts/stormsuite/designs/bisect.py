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

The measuring (bisect_measure.py), the decisions of the endpoints, the
steps and the parent check (bisect_step.py), --resume's checks
(bisect_resume.py) and the state (bisect_state.BisectState: what the
bisect was asked and what it has learnt, in state.json for every step)
have files of their own; this one is the command: its options, the
worktree, `git bisect run`, the summary.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import shutil
import subprocess
import sys
import time
from typing import Any

from .. import storms
from ..kernel import kbuild, source
from ..machines import box, guest
from . import bisect_resume, boxbisect, matrix, options
from .bisect_measure import (
    DEFAULT_MEASURER, STEP_BUILD, MeasureError, build_seconds, short,
    subject)
from .bisect_state import (
    FAILURES, BisectState, Reading, Refused, hold, steps)
from .bisect_step import (
    EXIT_ABORT, confirm, endpoints_line, measure_endpoints, step)
from ..kernel.git import git

EXIT_UNCONFIRMED = 3        # named a commit, but its parent check failed
DEFAULT_RUNS = 10           # a boot's runs, summarized to the boot's number
MAX_BOOTS = 16              # a commit's boots before the odds decide
ENDPOINT_MAX_BOOTS = 20     # each endpoint's boots before bisecting anyway



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


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.resume is not None:
        if args.box:
            p.error("--resume: a bisect on a box is ktest.pl's, which "
                    "keeps no state.json to resume from")
        try:
            state, tree, lock, what = bisect_resume.resumed(
                args, bisect_resume.given_arguments(parser(), argv))
        except Refused as e:
            print(f"storm bisect: {e}", file=sys.stderr)
            return 2
        if args.dry_run:
            print(what)
            return 0
        print(what, file=sys.stderr, flush=True)
        return bisect_in(state, tree)
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
