"""storm bisect: find the commit that changed a storm's numbers.

    storm bisect --tree TREE --good REV --bad REV [--runs N] [--metric M]
                 STORM [PARAM=VALUE ...]

1. Measures both endpoints (build, boot, N runs each) and refuses to go
   on unless they differ significantly on the metric.
2. `git bisect run storm bisect-step STATE`: each step builds the commit
   (incrementally, in one build directory), boots it, runs the storm N
   times and says good (0) or bad (1) by which endpoint the samples look
   like (classify.py). Ambiguous: N more runs, then skip. A failed build
   or boot: skip (125).
3. Prints the first bad commit, its subject, and the comparison of its
   runs against the good endpoint's; leaves the tree where it was (git
   bisect reset). Everything (state, every step, every run file, git's
   bisect log) is kept under results/bisect/<tree>-<time>/.

Measuring is one function, `measure_commit(state, sha, runs)`; --measurer
MODULE:FUNCTION replaces it (the tests drive real git bisects with a fake).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any, Callable

from . import REPO, classify, compare, kbuild, matrix, metrics, runs, stats
from .kbuild import git

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125
EXIT_ABORT = 128            # git bisect run stops on this
DEFAULT_MEASURER = "stormsuite.bisect:measure_commit"


class MeasureError(Exception):
    """The commit could not be measured (build or boot failed)."""


# ---------------------------------------------------------------- git

def subject(tree: pathlib.Path, sha: str) -> str:
    return git(tree, "log", "-1", "--format=%s", sha)


def short(sha: str) -> str:
    return sha[:12]


# ---------------------------------------------------------------- metric

def metric_names(run_docs: list[dict[str, Any]]) -> list[str]:
    return sorted(m.name for m in metrics.of_runs(run_docs))


def resolve_metric(name: str, storm: str, available: list[str]) -> str:
    """'runtime', a /proc/interrupts row ('CAL'), a name after '<storm>.'
    ('irq.CAL', 'latency.p99_ns') or a full metric name."""
    candidates = [name, f"{storm}.{name}"]
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


def samples_of(run_docs: list[dict[str, Any]], state: dict[str, Any]) -> list[float]:
    by_name = {m.name: v for m, v in metrics.of_runs(run_docs).items()}
    name = resolve_metric(state["metric"], state["storm"], sorted(by_name))
    state["metric_name"] = name
    return by_name[name]


# ---------------------------------------------------------------- measuring

def build_dir(state: dict[str, Any]) -> pathlib.Path:
    return pathlib.Path(state["build_dir"])


def ensure_built(state: dict[str, Any], sha: str) -> pathlib.Path:
    """Build the tree's checkout (sha) unless the build dir already has it."""
    out = build_dir(state)
    stamp = out / kbuild.STAMP
    if stamp.is_file():
        done = json.loads(stamp.read_text())
        if done.get("revision", "").startswith(short(sha)) \
                and not done["revision"].endswith("-dirty"):
            return out
    try:
        built = kbuild.build(pathlib.Path(state["tree"]), out,
                             fragments=tuple(pathlib.Path(f) for f in
                                             state["config"]),
                             localversion=state["localversion"])
    except kbuild.BuildError as e:
        raise MeasureError(f"build failed: {e}") from e
    print(f"storm bisect: built {short(sha)} in {built.seconds:.0f} s",
          file=sys.stderr, flush=True)
    return out


def measure_commit(state: dict[str, Any], sha: str, nruns: int
                   ) -> tuple[list[float], list[pathlib.Path]]:
    """Build, boot and run the storm nruns times: (samples, run files)."""
    out = ensure_built(state, sha)
    cmd = [str(REPO / "scripts" / "storm"), "vm", "--kernel", str(out),
           "--cpus", str(state["cpus"]), "--memory", state["memory"],
           "--timeout", str(state["timeout"]), "--",
           "scripts/storm", "run", "--runs", str(nruns),
           "--warmup", str(state["warmup"]),
           "--results", state["results"], "--label", short(sha),
           state["storm"], *state["params"]]
    rc, files = matrix.run_guest(cmd)
    files = [f for f in files if f.is_file()]
    if rc != 0 or not files:
        raise MeasureError(f"the guest failed (exit {rc}, "
                           f"{len(files)} run files)")
    docs = [runs.load_run(f) for f in files]
    return samples_of(docs, state), files


def load_measurer(spec: str) -> Callable[..., tuple[list[float], list[Any]]]:
    module, _, func = spec.partition(":")
    return getattr(importlib.import_module(module), func)


# ---------------------------------------------------------------- state

def save_state(state: dict[str, Any]) -> None:
    path = pathlib.Path(state["dir"]) / "state.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    tmp.replace(path)


def log_step(state: dict[str, Any], record: dict[str, Any]) -> None:
    with open(pathlib.Path(state["dir"]) / "steps.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


def steps(state_dir: pathlib.Path) -> list[dict[str, Any]]:
    path = state_dir / "steps.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()
            if line.strip()]


def describe(xs: list[float], state: dict[str, Any]) -> str:
    s = stats.summarize(xs)
    name = state.get("metric_name", "")
    unit = "ns" if name.endswith("_ns") else ""
    mean = compare.fmt_value(s.mean, metrics.Metric(name, "", unit))
    return f"mean {mean} CV {s.cv:.1f}% n={s.n}"


# ---------------------------------------------------------------- one step

def step(state_file: pathlib.Path) -> int:
    """What `git bisect run` calls: 0 good, 1 bad, 125 skip."""
    state = json.loads(state_file.read_text())
    tree = pathlib.Path(state["tree"])
    sha = git(tree, "rev-parse", "HEAD")
    measure = load_measurer(state["measurer"])
    record: dict[str, Any] = {"commit": sha, "subject": subject(tree, sha),
                              "samples": [], "files": []}
    started = time.monotonic()
    n = state["runs"]
    print(f"storm bisect: testing {short(sha)} {record['subject']}",
          file=sys.stderr, flush=True)
    verdict = None
    try:
        while True:
            samples, files = measure(state, sha, n)
            record["samples"] += samples
            record["files"] += [str(f) for f in files]
            verdict = classify.classify(
                record["samples"], state["good_samples"],
                state["bad_samples"], test=state["test"],
                confidence=state["confidence"])
            if verdict.decision != classify.AMBIGUOUS or \
                    len(record["samples"]) + n > state["max_runs"]:
                break
            print(f"storm bisect: {short(sha)}: ambiguous "
                  f"({describe(record['samples'], state)}); {n} more runs",
                  file=sys.stderr, flush=True)
    except MeasureError as e:
        record.update(decision="skip", why=str(e))
        code = EXIT_SKIP
    else:
        assert verdict is not None
        record.update(decision=verdict.decision, p_good=verdict.p_good,
                      p_bad=verdict.p_bad)
        code = {classify.GOOD: EXIT_GOOD, classify.BAD: EXIT_BAD}.get(
            verdict.decision, EXIT_SKIP)
        if code == EXIT_SKIP:
            record["decision"] = "skip"
            record["why"] = "ambiguous after " \
                f"{len(record['samples'])} runs"
    record["seconds"] = round(time.monotonic() - started, 1)
    log_step(state, record)
    shown = describe(record["samples"], state) if record["samples"] else ""
    why = f" ({record['why']})" if "why" in record else \
        f" (p vs good {record['p_good']:.3g}, vs bad {record['p_bad']:.3g})"
    print(f"storm bisect: {short(sha)}: {record['decision']}{why} "
          f"{state['metric']}: {shown}", file=sys.stderr, flush=True)
    return code


# ---------------------------------------------------------------- driver

def measure_endpoint(state: dict[str, Any], tree: pathlib.Path, sha: str,
                     which: str) -> None:
    git(tree, "checkout", "-q", "--detach", sha)
    measure = load_measurer(state["measurer"])
    print(f"storm bisect: measuring the {which} endpoint {short(sha)} "
          f"({state['runs']} runs)", file=sys.stderr, flush=True)
    samples, files = measure(state, sha, state["runs"])
    state[f"{which}_samples"] = samples
    state[f"{which}_files"] = [str(f) for f in files]
    log_step(state, {"commit": sha, "subject": subject(tree, sha),
                     "endpoint": which, "samples": samples,
                     "files": state[f"{which}_files"]})
    print(f"storm bisect: {which} {short(sha)}: {state['metric']}: "
          f"{describe(samples, state)}", file=sys.stderr, flush=True)


def convicting_table(state: dict[str, Any], first_bad: str,
                     state_dir: pathlib.Path) -> str:
    """compare's table: the good endpoint's runs against first_bad's."""
    bad_files = state["bad_files"] if first_bad == state["bad"] else []
    for rec in steps(state_dir):
        if rec["commit"] == first_bad and rec.get("files"):
            bad_files = rec["files"]
    good_files = state["good_files"]
    if not bad_files or not all(str(f).endswith(".json")
                                for f in good_files + bad_files):
        return ""
    sides = [[runs.load_files([pathlib.Path(f) for f in good_files],
                              f"good-{short(state['good'])}")],
             [runs.load_files([pathlib.Path(f) for f in bad_files],
                              f"bad-{short(first_bad)}")]]
    tables = []
    for group in compare.pair(sides):
        cmp = compare.build(group, test=state["test"],
                            confidence=state["confidence"],
                            floor=compare.FLOOR)
        tables.append(compare.render(cmp))
        compare.write_outputs(cmp, tables[-1], state_dir)
    return "\n".join(tables)


def first_bad_commit(tree: pathlib.Path) -> str | None:
    """refs/bisect/bad once git has named the first bad commit."""
    log = git(tree, "bisect", "log", check=False)
    for line in log.splitlines():
        if line.startswith("# first bad commit: ["):
            return line.split("[", 1)[1].split("]", 1)[0]
    return None


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="storm bisect",
        description="Bisect a kernel tree for the commit that changed a "
        "storm's metric: measures both endpoints (refusing when they do not "
        "differ significantly), then runs git bisect, each step building, "
        "booting (storm vm) and running the storm (storm run) and calling "
        "the commit good or bad by which endpoint its samples match. Skips "
        "commits that fail to build or boot, or stay ambiguous. Leaves the "
        "tree on the branch it was on; logs everything under "
        "results/bisect/.",
        epilog="example: storm bisect --tree ~/linux --good v6.1 --bad HEAD "
        "--runs 5 ipistorm numipi=2000 single=1 wait=1 cpulist=0 offset=1")
    p.add_argument("--tree", type=pathlib.Path, required=True,
                   help="the kernel git work tree (must be clean)")
    p.add_argument("--good", required=True, help="a revision without the "
                   "change")
    p.add_argument("--bad", required=True, help="a revision with it")
    matrix.add_guest_options(p, "commit")
    p.add_argument("--max-runs", type=int,
                   help="runs before an ambiguous commit is skipped "
                   "(default 3 x --runs)")
    p.add_argument("--metric", default="runtime",
                   help="runtime (default), a /proc/interrupts row such as "
                   "CAL, or any metric name storm compare prints")
    p.add_argument("--test", choices=sorted(stats.TESTS),
                   default="mannwhitney",
                   help="significance test (default mannwhitney)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--config", action="append", default=[],
                   type=pathlib.Path, metavar="FRAGMENT",
                   help="config fragment for every build (repeatable)")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where the bisect's directory goes (default "
                   "results/; it is results/bisect/<tree>-<time>/)")
    p.add_argument("--measurer", default=DEFAULT_MEASURER,
                   help=argparse.SUPPRESS)
    p.add_argument("storm", help="ipistorm, tlbstorm or slabstorm")
    p.add_argument("params", nargs="*", metavar="PARAM=VALUE")
    args = p.parse_args(argv)
    if args.runs < 2:
        p.error("--runs must be at least 2 (a test needs two samples)")
    if not 0 < args.confidence < 1:
        p.error("--confidence must be between 0 and 1")
    for prm in args.params:
        if "=" not in prm:
            p.error(f"{prm}: parameters are NAME=VALUE")
    tree = args.tree.resolve()
    try:
        git(tree, "rev-parse", "--git-dir")
        good, bad = (git(tree, "rev-parse", "--verify", f"{r}^{{commit}}")
                     for r in (args.good, args.bad))
    except RuntimeError as e:
        print(f"storm bisect: {tree}: {e}", file=sys.stderr)
        return 2
    if git(tree, "status", "--porcelain", "--untracked-files=no"):
        print(f"storm bisect: {tree} has uncommitted changes; commit or "
              "stash them first", file=sys.stderr)
        return 2
    if git(tree, "bisect", "log", check=False):
        print(f"storm bisect: {tree} is already bisecting; run "
              "'git bisect reset' there first", file=sys.stderr)
        return 2
    if subprocess.run(["git", "-C", str(tree), "merge-base",
                       "--is-ancestor", good, bad]).returncode != 0:
        print(f"storm bisect: --good {args.good} is not an ancestor of "
              f"--bad {args.bad}", file=sys.stderr)
        return 2

    stamp = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y%m%dT%H%M%SZ")
    state_dir = args.results.resolve() / "bisect" / f"{tree.name}-{stamp}"
    state_dir.mkdir(parents=True)
    state: dict[str, Any] = {
        "dir": str(state_dir), "tree": str(tree), "good": good, "bad": bad,
        "storm": args.storm, "params": args.params, "metric": args.metric,
        "runs": args.runs, "max_runs": args.max_runs or 3 * args.runs,
        "warmup": args.warmup, "test": args.test,
        "confidence": args.confidence,
        "config": [str(f.resolve()) for f in args.config],
        "cpus": args.cpus, "memory": args.memory, "timeout": args.timeout,
        "build_dir": str(kbuild.default_out(tree, "bisect")),
        "localversion": "-storm", "results": str(state_dir / "runs"),
        "measurer": args.measurer,
    }
    state_file = state_dir / "state.json"
    head = git(tree, "symbolic-ref", "--quiet", "--short", "HEAD",
               check=False) or git(tree, "rev-parse", "HEAD")
    started = time.monotonic()
    print(f"storm bisect: {tree.name}: good {short(good)}, bad {short(bad)}; "
          f"{args.storm} {' '.join(args.params)}; metric {args.metric}; "
          f"log in {state_dir}", file=sys.stderr, flush=True)
    try:
        try:
            measure_endpoint(state, tree, good, "good")
            measure_endpoint(state, tree, bad, "bad")
        except (MeasureError, ValueError) as e:
            print(f"storm bisect: cannot measure an endpoint: {e}",
                  file=sys.stderr)
            return 1
        differ, p_end = classify.endpoints_differ(
            state["good_samples"], state["bad_samples"], test=args.test,
            confidence=args.confidence)
        state["endpoints_p"] = p_end
        save_state(state)
        if not differ:
            print(f"storm bisect: refusing to bisect: the endpoints do not "
                  f"differ significantly on {args.metric} ({args.test} "
                  f"p={p_end:.3g}, confidence {args.confidence:g}): good "
                  f"{describe(state['good_samples'], state)}, bad "
                  f"{describe(state['bad_samples'], state)}", file=sys.stderr)
            return 1
        print(f"storm bisect: endpoints differ ({args.test} p={p_end:.3g}); "
              "bisecting", file=sys.stderr, flush=True)
        git(tree, "bisect", "start", bad, good)
        with open(state_dir / "git-bisect-run.log", "w") as logf:
            proc = subprocess.Popen(
                ["git", "-C", str(tree), "bisect", "run",
                 str(REPO / "scripts" / "storm"), "bisect-step",
                 str(state_file)], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
            assert proc.stdout is not None
            for line in proc.stdout:
                logf.write(line)
                sys.stdout.write(line)
                sys.stdout.flush()
            proc.wait()
        first_bad = first_bad_commit(tree)
        (state_dir / "git-bisect.log").write_text(
            git(tree, "bisect", "log", check=False) + "\n")
    finally:
        if git(tree, "bisect", "log", check=False):
            git(tree, "bisect", "reset", check=False)
        git(tree, "checkout", "-q", head, check=False)

    tested = [s for s in steps(state_dir) if "endpoint" not in s]
    elapsed = time.monotonic() - started
    if first_bad is None:
        run_log = (state_dir / "git-bisect-run.log").read_text()
        _, found, rest = run_log.partition("The first bad commit could be "
                                           "any of:\n")
        if found:
            suspects = [ln.split()[0] for ln in rest.splitlines()
                        if ln[:40].strip() and all(
                            c in "0123456789abcdef" for c in ln.split()[0])]
            print("storm bisect: inconclusive: skipped commits hide the "
                  "first bad one; it is one of:\n" + "\n".join(
                      f"  {s} {subject(tree, s)}" for s in suspects),
                  file=sys.stderr)
        else:
            print(f"storm bisect: no first bad commit found (git bisect "
                  f"run exited {proc.returncode})", file=sys.stderr)
        print(f"storm bisect: log in {state_dir}", file=sys.stderr)
        return 1
    table = convicting_table(state, first_bad, state_dir)
    summary = (f"\nfirst bad commit: {first_bad} {subject(tree, first_bad)}\n"
               f"{len(tested)} bisect steps "
               f"({sum(1 for s in tested if s['decision'] == 'skip')} "
               f"skipped) after 2 endpoints, {elapsed / 60:.1f} min; "
               f"metric {state.get('metric_name', args.metric)}\n")
    (state_dir / "summary.txt").write_text(summary + table)
    print(summary + table)
    print(f"storm bisect: log in {state_dir}", file=sys.stderr)
    return 0


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
