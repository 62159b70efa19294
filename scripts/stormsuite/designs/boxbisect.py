"""storm box bisect and bisect-test: ktest.pl's bisect on the box, with
storm's verdict as its test.

    storm box bisect --config BOX --tree LINUX --good REV --bad REV STORM
    storm box bisect-test --config BOX --kernel TREE --good SET --bad SET STORM

`bisect` builds and installs the two endpoints (storm box build), boots
each `--boots` times alternating (matrix.measure on the box), refuses
when they do not differ, then hands ktest.pl a bisect (TEST_TYPE =
bisect) of a worktree of LINUX: ktest.pl checks out each commit, builds
it, installs it, boots it and runs `bisect-test` as its TEST, which runs
the storm there and answers from storm's classifier (classify.py, as
storm bisect asks it) whether the boot looks like the good endpoint's
boots or the bad one's: exit 0 good, 1 bad, 125 undecided. ktest.pl
stops the bisect on an undecided commit (its BISECT_RET_SKIP would call
it good). ktest.pl does git bisect's bookkeeping; storm reads its log
for the commits it judged and the first bad one.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import shlex
import subprocess
import sys
import traceback
from typing import Any

from .. import machines
from ..analysis import classify
from ..machines import guest, ktest
from ..runfiles import runs
from . import matrix, options
from ..machines.box import (
    FRAGMENT, LOGS, STORM, WORKTREE_OUT, Box, BoxError, Design, Kernel,
    add_design_options, box_kconfig, build_modules, build_worktree,
    check_design, checkout, resolve_kernel, step, suite_identity)
from .bisect_state import Reading, failures_differ, failures_verdict
from ..kernel.git import git

# bisect-test's answers; undecided is git bisect run's "skip", and ktest.pl
# is told to stop the bisect on it (bisect_run)
EXIT_GOOD, EXIT_BAD, EXIT_UNDECIDED = 0, 1, 125
# what the bisect's own kernel is called: its LOCALVERSION, and what the
# box config's REBOOT_SCRIPT or GRUB_MENU finds the installed kernel by
# (every commit builds the same release, bar git's "+")
BISECT_NAME = "bisect"


def reference_boots(spec: str, storm: str, results: pathlib.Path
                    ) -> list[list[dict[str, Any]]]:
    """The boots (each its runs) of an endpoint's result set, from
    storm matrix --box."""
    sets = [s for s in runs.resolve(spec, results) if s.storm == storm]
    if len(sets) != 1:
        raise BoxError(f"{spec}: {len(sets)} {storm} series there, want one")
    return sets[0].boots


def decide(boot: list[dict[str, Any]], good: list[list[dict[str, Any]]],
           bad: list[list[dict[str, Any]]], storm: str, metric: str):
    """Which endpoint one boot's runs look like (classify.py, as storm
    bisect asks it): a classify.Verdict, and the metric's name."""
    reading = Reading(storm=storm, asked=metric)
    samples = reading.samples(boot)
    if reading.deterministic:
        # --metric failures: the boot's runs decide, no levels
        return failures_verdict([sum(samples)]), reading.name
    if reading.kind == "insn":
        # the ticks' slope, fitted within the endpoints' boots
        reading.fit_boots(good + bad)
        samples = reading.samples(boot)
    log = reading.log_scale

    def level(boots: list[list[dict[str, Any]]]):
        return classify.to_scale(reading.summaries(
            [reading.samples(b) for b in boots]), log)
    levels = classify.Levels([level(good)], [level(bad)],
                             min_spread=reading.min_spread)
    # the boot is the sample (bootmodel.py)
    mine = reading.summaries([samples])
    return classify.classify(classify.to_scale(mine, log), levels), \
        reading.name


def endpoints_differ(good: list[list[dict[str, Any]]],
                     bad: list[list[dict[str, Any]]], storm: str,
                     metric: str) -> tuple[bool, str]:
    """Whether the endpoints' boots differ on the metric (classify's
    test, as storm bisect asks it before it bisects), and what they are."""
    reading = Reading(storm=storm, asked=metric)
    numbers = reading.boot_numbers(good + bad)
    gb, bb = numbers[:len(good)], numbers[len(good):]
    if reading.deterministic:
        return failures_differ(gb, bb), (
            f"{reading.name}: good {reading.describe(gb)}, bad "
            f"{reading.describe(bb)}")
    differ, p = classify.endpoints_differ(gb, bb, log=reading.log_scale)
    return differ, (f"{reading.name}: good {reading.describe(gb)}, bad "
                    f"{reading.describe(bb)} (p={p:.3g})")


def bisect_test(box: Box, kernel: Kernel, design: Design, good: str,
                bad: str, metric: str, results: pathlib.Path) -> int:
    """One commit's boot (ktest.pl built, installed and booted it): the
    storm's runs there, then which endpoint they look like: EXIT_GOOD,
    EXIT_BAD, or EXIT_UNDECIDED when the boot does not decide."""
    good_boots = reference_boots(good, design.storm, results)
    bad_boots = reference_boots(bad, design.storm, results)
    build_modules(kernel)
    logdir = LOGS / "bisect" / guest.new_series_id()
    logdir.mkdir(parents=True)
    done = step({
        "ssh": box.ssh, "box_dir": box.dir, "release": kernel.release,
        "storm": design.storm, "params": list(design.params),
        "runs": design.runs, "warmup": design.warmup,
        "label": f"bisect-{kernel.release}",
        "series": guest.new_series_id(),
        "name": f"bisect {kernel.release}", "results": str(results),
        "out": str(logdir / "step-result.json"), "env": suite_identity()})
    docs = [runs.load_run(pathlib.Path(f)) for f in done["files"]]
    v, name = decide(docs, good_boots, bad_boots, design.storm, metric)
    print(f"storm box bisect-test: {kernel.release}: {v} on {name}",
          file=sys.stderr)
    return {classify.GOOD: EXIT_GOOD, classify.BAD: EXIT_BAD}.get(
        v.decision, EXIT_UNDECIDED)


def bisect_test_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm box bisect-test",
        description="ktest.pl's TEST in a bisect on the box (TEST_TYPE = "
        "bisect, BISECT_TYPE = test): run the storm on the kernel the box "
        "booted, then say which endpoint its runs look like against the "
        "endpoints' boots measured before (storm matrix --box of the good "
        "and the bad kernel): exit 0 good, 1 bad, 125 when this boot does "
        "not decide or the storm could not run (storm box bisect has "
        "ktest.pl stop there: BISECT_RET_ABORT = 125). storm box bisect "
        "writes ktest.pl's config with it.")
    p.add_argument("--config", type=pathlib.Path, required=True,
                   help="the box's ktest.pl config")
    p.add_argument("--kernel", required=True,
                   help="the tree ktest.pl built (its OUTPUT_DIR): the "
                   "storms are built against it")
    p.add_argument("--good", required=True,
                   help="the good endpoint's result set (a label under "
                   "results/, LABEL@SERIES, or a directory)")
    p.add_argument("--bad", required=True, help="the bad endpoint's")
    p.add_argument("--metric", default="auto",
                   help="what decides, as storm bisect --metric (default "
                   "auto: instructions where counted, else time)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS)
    options.add_storm_arguments(p)
    return p


def bisect_test_main(argv: list[str]) -> int:
    p = bisect_test_parser()
    args = p.parse_args(argv)
    try:
        cfg = ktest.read_config(args.config)
        box = Box(args.config.resolve(), cfg.ssh, cfg.box_dir,
                  pathlib.Path("ktest.pl"))
        return bisect_test(box, resolve_kernel(args.kernel),
                           Design(args.storm, tuple(args.params), args.runs,
                                  args.warmup),
                           args.good, args.bad, args.metric,
                           args.results.resolve())
    except (BoxError, ktest.ConfigError, runs.RunError, ValueError,
            OSError, subprocess.SubprocessError) as e:
        print(f"storm box bisect-test: {e}", file=sys.stderr)
        return EXIT_UNDECIDED
    except Exception:  # noqa: BLE001 - any other exit would say "bad"
        traceback.print_exc()
        return EXIT_UNDECIDED


# --------------------------------------------------------------------
# storm box bisect: the endpoints, then ktest.pl's bisect


def sha_of(tree: pathlib.Path, rev: str) -> str:
    try:
        return git(tree, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    except RuntimeError:
        raise BoxError(f"{rev}: not a commit in {tree}") from None


def check_revisions(tree: pathlib.Path, good: str, bad: str
                    ) -> tuple[str, str]:
    """The endpoints' commits; good must be an ancestor of bad, with a
    commit between them to bisect."""
    g, b = sha_of(tree, good), sha_of(tree, bad)
    anc = subprocess.run(["git", "-C", str(tree), "merge-base",
                          "--is-ancestor", g, b])
    if anc.returncode != 0 or g == b:
        raise BoxError(f"{good} is not an ancestor of {bad}: nothing to "
                       "bisect")
    return g, b


def bisect_run(box: Box, src: pathlib.Path, good: str, bad: str,
               sets: tuple[str, str], kconfig: pathlib.Path, design: Design,
               metric: str, results: pathlib.Path) -> ktest.Run:
    """What ktest.pl is told for the bisect of src (a worktree; ktest.pl
    runs git bisect there) from good to bad: each commit built as the
    endpoints were, `storm box bisect-test` against the endpoints' result
    sets its TEST. Every commit builds LOCALVERSION -storm-bisect: the
    box config boots the installed release that ends in -storm-bisect+
    (the + is setlocalversion's for a commit that is not a tag)."""
    out = src / WORKTREE_OUT
    test = [str(STORM), "box", "bisect-test", "--config", str(box.config),
            "--kernel", str(out), "--good", sets[0], "--bad",
            sets[1], "--metric", metric, "--runs", str(design.runs),
            "--warmup", str(design.warmup), "--results", str(results),
            design.storm, *design.params]
    return ktest.Run(f"-storm-{BISECT_NAME}+", src, out,
                     f"-storm-{BISECT_NAME}", (
                         ("TEST_TYPE", "bisect"),
                         ("BISECT_TYPE", "test"),
                         ("BISECT_GOOD", good),
                         ("BISECT_BAD", bad),
                         # a bisect builds every commit from MIN_CONFIG
                         # (ktest.pl's run_bisect: useconfig of it; it
                         # has no use for BUILD_TYPE), ADD_CONFIG on top
                         ("MIN_CONFIG", str(kconfig)),
                         ("ADD_CONFIG", str(FRAGMENT)),
                         ("BISECT_RET_GOOD", str(EXIT_GOOD)),
                         # not BISECT_RET_SKIP: ktest.pl's run_bisect_test
                         # takes do_run_test's skip (-1) for a pass, so an
                         # undecided boot would be called good
                         ("BISECT_RET_ABORT", str(EXIT_UNDECIDED)),
                         ("BISECT_SKIP", "1"),
                         ("REBOOT_ON_SUCCESS", "0"),
                         ("TEST", shlex.join(test))))


def bisect_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm box bisect",
        description="Bisect a change on the box with ktest.pl: build and "
        "install the good and the bad commit (as storm box build), boot "
        "each --boots times alternating and refuse unless they differ, "
        "then ktest.pl's bisect (TEST_TYPE = bisect) of a worktree of "
        "--tree, each commit built, installed and booted by ktest.pl and "
        "judged by storm box bisect-test against the endpoints' boots. "
        "Prints the commits judged and the first bad one.",
        epilog="example: storm box bisect --config ~/mybox.conf --tree "
        "~/linux --good v6.1 --bad HEAD ipistorm numipi=100000 single=1 "
        "offset=8 cpulist=8 wait=1")
    add_design_options(p, boots=3)
    p.add_argument("--tree", type=pathlib.Path, required=True,
                   help="the kernel git tree (left alone: the endpoints "
                   "and the bisect build from worktrees of it under "
                   "build/box/src/)")
    p.add_argument("--good", required=True, help="a commit without the "
                   "change")
    p.add_argument("--bad", required=True, help="a later commit with it")
    p.add_argument("--kconfig", type=pathlib.Path,
                   help="the configuration every commit starts from "
                   "(default: the box's running kernel's)")
    p.add_argument("--metric", default="auto",
                   help="what decides, as storm bisect --metric (default "
                   "auto: instructions where counted, else time)")
    options.add_storm_arguments(p)
    return p


@dataclasses.dataclass
class Outcome:
    first_bad: str | None           # ktest.pl's "Bad commit was [...]"
    judged: list[tuple[str, str]]   # (good|bad|skip, sha): the endpoints,
    #                                 then each commit ktest.pl tested
    stopped_at: str | None          # the commit it was testing when it
    #                                 stopped without a verdict


# ktest.pl's own lines (doprint) around git bisect's commands
MARKED = re.compile(r"^git bisect (good|bad|skip) ([0-9a-f]{40}) \.\.\. ")
NEXT = re.compile(r"^Bisecting: .*\[([0-9a-f]{40})\]$")
VERDICT = re.compile(r"^git bisect (good|bad|skip) \.\.\. ")
BAD_COMMIT = re.compile(r"^Bad commit was \[([0-9a-f]{40})\]")


def outcome(log: pathlib.Path) -> Outcome:
    """What ktest.pl's log says of its bisect: the endpoints it was given,
    every commit it tested with what it told git bisect, and the first
    bad commit it names."""
    judged: list[tuple[str, str]] = []
    first_bad = current = None
    for line in log.read_text(errors="replace").splitlines():
        if m := MARKED.match(line):
            judged.append((m.group(1), m.group(2)))
        elif m := NEXT.match(line):
            current = m.group(1)
        elif (m := VERDICT.match(line)) and current is not None:
            judged.append((m.group(1), current))
            current = None
        elif m := BAD_COMMIT.match(line):
            first_bad = m.group(1)
    return Outcome(first_bad, judged, current)


def subject(tree: pathlib.Path, sha: str) -> str:
    return git(tree, "log", "-1", "--format=%s", sha, check=False)


def bisect_main(argv: list[str]) -> int:
    p = bisect_parser()
    args = p.parse_args(argv)
    design = check_design(p, args, 2)
    return bisect_box(args.config, args.ktest, args.tree, args.good,
                      args.bad, args.kconfig, design, args.boots,
                      args.metric, args.results, "storm box bisect")


def bisect_box(config: pathlib.Path, ktest_pl: str | None,
               tree: pathlib.Path, good_rev: str, bad_rev: str,
               kconfig: pathlib.Path | None, design: Design, boots: int,
               metric: str, results: pathlib.Path, who: str) -> int:
    """ktest.pl's bisect of good_rev..bad_rev on the box: the endpoints
    built, installed and booted (refused unless they differ), then every
    commit judged by bisect-test against them."""
    logdir = LOGS / f"bisect-{guest.new_series_id()}"
    results = results.resolve()
    try:
        machine = machines.Box(config, ktest_pl)
        box = machine.box
        tree = tree.resolve()
        good, bad = check_revisions(tree, good_rev, bad_rev)
        logdir.mkdir(parents=True)
        kconfig = (kconfig or box_kconfig(box, logdir)).resolve()
        built = []
        for name, sha in (("good", good), ("bad", bad)):
            print(f"{who}: building {name} ({sha[:12]})", file=sys.stderr,
                  flush=True)
            built.append(build_worktree(box, tree, name, sha, None,
                                        kconfig))
        labels = matrix.unique_labels([k.release for k in built])
        sets, _, _ = matrix.measure(
            [matrix.Side(k.spec, "", lb) for k, lb in zip(built, labels)],
            matrix.Design(design.storm, design.params, boots=boots,
                          runs=design.runs, warmup=design.warmup,
                          timeout=design.timeout, jobs=1),
            results, machine)
        differ, what = endpoints_differ(sets[0].boots, sets[1].boots,
                                        design.storm, metric)
        print(f"{who}: endpoints {what}", file=sys.stderr, flush=True)
        if not differ:
            print(f"{who}: the endpoints do not differ: nothing to bisect "
                  "(more --boots or --runs, or another metric)",
                  file=sys.stderr)
            return 1
        specs = (f"{labels[0]}@{sets[0].series_ids[0]}",
                 f"{labels[1]}@{sets[1].series_ids[0]}")
        src = checkout(tree, BISECT_NAME, bad, None)
        (src / WORKTREE_OUT).mkdir()
        run = bisect_run(box, src, good, bad, specs, kconfig, design,
                         metric, results)
    except (machines.MachineError, BoxError, ktest.ConfigError,
            runs.RunError) as e:
        print(f"{who}: {e}", file=sys.stderr)
        return 1
    conf = logdir / "ktest.conf"
    conf.write_text(ktest.config_text(
        box.config, run, f"bisect {good[:12]}..{bad[:12]} of {tree} on "
        f"{design.storm} {' '.join(design.params)}"))
    log = logdir / "ktest.log"
    rc = ktest.run(box.ktest, conf, log, echo=sys.stderr)
    found = outcome(log)
    for verdict_, sha in found.judged:
        print(f"{verdict_:4}  {sha[:12]}  {subject(tree, sha)}")
    if found.stopped_at is not None:
        print(f"stop  {found.stopped_at[:12]}  "
              f"{subject(tree, found.stopped_at)}")
    if rc != 0 or found.first_bad is None:
        why = ktest.failure(log) or f"ktest.pl exit {rc}"
        print(f"{who}: no first bad commit: {why} (log: {log})",
              file=sys.stderr)
        return 1
    print(f"first bad commit: {found.first_bad[:12]}  "
          f"{subject(tree, found.first_bad)}")
    print(f"{who}: ktest.pl's log: {log}", file=sys.stderr)
    return 0
