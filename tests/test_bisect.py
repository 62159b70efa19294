"""storm bisect: the classification, and real git bisects driven over
synthetic repositories with a fake measurer (tests/bisect_fake.py)."""

from __future__ import annotations

import fcntl
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import REPO
from stormsuite.analysis import classify
from stormsuite.designs import (
    bisect, bisect_measure, bisect_state, bisect_step)

import numpy as np

GOOD = [10.0, 10.4, 9.8, 10.1, 10.3]
BAD = [20.0, 19.5, 20.6, 20.2, 19.9]


def levels(good=GOOD, bad=BAD) -> classify.Levels:
    return classify.Levels([np.log(good)], [np.log(bad)])


def verdict(boots, **kw) -> classify.Verdict:
    return classify.classify(np.log(boots), levels(), **kw)


def test_clear_good():
    v = verdict([10.2, 9.9, 10.0, 10.5])
    assert v.decision == classify.GOOD and v.odds > classify.ODDS
    assert abs(v.position) < 0.1


def test_clear_bad():
    v = verdict([19.8, 20.3, 20.1])
    assert v.decision == classify.BAD and v.odds < 1 / classify.ODDS
    assert abs(v.position - 1) < 0.1


def test_half_way_is_ambiguous_until_the_cap():
    half = float(np.exp((np.log(10.1) + np.log(20.0)) / 2))
    boots = [half * 0.99, half * 1.01]
    assert verdict(boots).decision == classify.AMBIGUOUS
    assert 0.4 < verdict(boots).position < 0.6


def test_one_boot_is_not_enough_for_a_near_call():
    # one boot a little nearer bad: not 99:1 yet
    v = verdict([15.5])
    assert v.decision == classify.AMBIGUOUS
    # nearer bad, but at odds far from 99:1: never decided by the cap
    assert 1 / classify.ODDS < v.odds < 1


def test_decide_boots_until_clear():
    asked = []

    def measure(n):
        asked.append(n)
        return [19.9] * n if len(asked) > 1 else [14.0, 14.3]
    v, boots = classify.decide(measure, levels(), log=True, first=2, more=2,
                               cap=8)
    assert v.decision == classify.BAD
    assert asked[0] == 2 and len(asked) >= 2 and len(boots) == sum(asked)


def test_decide_stops_at_the_cap():
    half = float(np.exp((np.log(10.1) + np.log(20.0)) / 2))
    asked = []

    def measure(n):
        asked.append(n)
        return [half * (1 + 0.05 * (-1) ** len(asked))] * n
    v, boots = classify.decide(measure, levels(), log=True, first=2, more=3,
                               cap=7)
    assert len(boots) == 7 and asked == [2, 3, 2]
    # at the cap a commit still between the levels is ambiguous (a skip),
    # not decided at the odds as they stand
    assert v.decision == classify.AMBIGUOUS


def test_learnt_levels_take_the_called_commits():
    lv = levels()
    v = classify.classify(np.log([10.0, 10.1]), lv)
    classify.learn(lv, v, np.log([10.0, 10.1]))
    assert len(lv.good) == 2 and len(lv.bad) == 1
    assert lv.good_mean[1] == 7


def test_endpoints_not_different():
    differ, p = classify.endpoints_differ(GOOD, [10.1, 10.2, 9.9, 10.3],
                                          log=True)
    assert not differ and p > 0.05
    differ, p = classify.endpoints_differ(GOOD, BAD, log=True)
    assert differ and p < 0.001
    assert classify.endpoints_clear(GOOD, BAD, log=True)


def test_counts_are_compared_as_they_are():
    # a count that may be 0 cannot go on a log scale
    with pytest.raises(ValueError):
        classify.to_scale([0, 1], log=True)
    differ, _ = classify.endpoints_differ([0, 1, 0, 1], [50, 52, 49, 51],
                                          log=False)
    assert differ


@pytest.mark.parametrize("name,want", [
    ("time", "ipistorm.time_per_call_ns"),
    ("runtime", "ipistorm.runtime_ns"),
    ("CAL", "interrupts.CAL:Function_call_interrupts"),
    ("irq.CAL", "ipistorm.irq.CAL"),
    ("ipistorm.irq.CAL", "ipistorm.irq.CAL"),
])
def test_metric_names(name, want):
    available = ["ipistorm.runtime_ns", "ipistorm.irq.CAL",
                 "ipistorm.time_per_call_ns",
                 "interrupts.CAL:Function_call_interrupts",
                 "interrupts.CPU1.CAL:Function_call_interrupts",
                 "interrupts.RES:Rescheduling_interrupts"]
    assert bisect_state.resolve_metric(name, "ipistorm", available) == want


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(ValueError, match="ipistorm.runtime_ns"):
        bisect_state.resolve_metric("nope", "ipistorm", ["ipistorm.runtime_ns"])


# ------------------------------------------------------------ real git bisects

def git(repo: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def make_repo(path: pathlib.Path, values: list[str]) -> list[str]:
    """A repository with one commit per value; returns the commit ids."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "t")
    shas = []
    for i, value in enumerate(values):
        (path / "value").write_text(value + "\n")
        git(path, "add", "value")
        git(path, "commit", "-q", "--allow-empty", "-m", f"commit {i}: value {value}")
        shas.append(git(path, "rev-parse", "HEAD"))
    return shas


def storm_bisect(*args: str, env: dict[str, str] | None = None
                 ) -> tuple[int, str, str]:
    """scripts/storm bisect ARGS, the stand-in measurers importable (and
    env's PYTHONPATH before them)."""
    env = dict(env or {})
    path = [env.pop("PYTHONPATH")] if "PYTHONPATH" in env else []
    res = subprocess.run(
        [str(REPO / "scripts" / "storm"), "bisect", *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", **env, "PYTHONPATH": ":".join(
            [*path, str(pathlib.Path(__file__).parent)])}, timeout=300)
    return res.returncode, res.stdout, res.stderr


def run_bisect(repo: pathlib.Path, results: pathlib.Path, good: str,
               bad: str, *extra: str, env: dict[str, str] | None = None
               ) -> tuple[int, str, str]:
    return storm_bisect(
        "--tree", str(repo), "--good", good, "--bad", bad, "--runs", "5",
        "--boots", "3", "--max-boots", "6", "--jobs", "2",
        "--results", str(results), "--measurer", "bisect_fake:measure",
        *extra, "ipistorm", "numipi=100", env=env)


def bisect_dir(results: pathlib.Path) -> pathlib.Path:
    dirs = list((results / "bisect").iterdir())
    assert len(dirs) == 1
    return dirs[0]


def test_bisect_names_the_first_bad_commit_and_skips(tmp_path):
    # 4 fails to build: skipped; 6 is the culprit
    values = ["10", "10", "10", "10", "broken", "10", "20", "20", "20"]
    shas = make_repo(tmp_path / "tree", values)
    repo = tmp_path / "tree"
    rc, out, err = run_bisect(repo, tmp_path / "res", shas[0], shas[-1])
    assert rc == 0, err
    assert f"first bad commit: {shas[6]} commit 6: value 20" in out
    # re-measured against its parent, and confirmed, with the interval
    assert f"re-measured against its parent {shas[5][:12]}" in out
    assert "confirmed" in out and "NOT confirmed" not in out
    assert re.search(r": time \+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\] "
                     r"\(p=[0-9.e-]+, 3\+3 boots x 5 runs\): confirmed", out)
    # the summary's endpoints line is their verdict (it once showed the
    # last line git bisect run printed)
    assert re.search(r"\nendpoints: \+\d+\.\d% \[.*\(p=[0-9.e-]+, 3\+3 "
                     r"boots x 5 runs\)\n", out), out
    # the tree is back where it was, with no bisect in progress
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(repo, "rev-parse", "HEAD") == shas[-1]
    assert not (repo / ".git" / "BISECT_LOG").exists()
    d = bisect_dir(tmp_path / "res")
    steps = bisect_state.steps(d)
    endpoints = [s for s in steps if "endpoint" in s]
    tested = {s["commit"]: s for s in steps if "endpoint" not in s}
    assert [e["endpoint"] for e in endpoints] == ["good", "bad"]
    # 3 + 3 boots were clear at once: no more endpoint boots
    assert [len(e["boot_summaries"]) for e in endpoints] == [3, 3]
    assert tested[shas[6]]["decision"] == "bad"
    assert tested[shas[5]]["decision"] == "good"
    for s in tested.values():
        if s["decision"] == "skip":
            assert s["commit"] == shas[4] and "build failed" in s["why"]
        else:
            # two boots at a time, clear after the first two
            assert len(s["boots"]) == 2, s
    assert "first bad commit" in (d / "summary.txt").read_text()
    assert (d / "git-bisect.log").read_text().strip()
    state = json.loads((d / "state.json").read_text())
    assert state["good"] == shas[0] and state["bad"] == shas[-1]
    # the called commits joined the levels
    assert len(state["levels"]["good"]) + len(state["levels"]["bad"]) \
        == 2 + len([s for s in tested.values() if s["decision"] != "skip"])


def test_a_half_way_commit_is_never_decided_by_the_cap(tmp_path):
    """A commit at neither level (half way on the log scale) is called
    only at odds of 99:1 either way; at its boot cap it is skipped, and
    the bisect then names the commits it could not tell apart."""
    values = ["10", "10", "14.14", "20", "20"]
    shas = make_repo(tmp_path / "tree", values)
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    d = bisect_dir(tmp_path / "res")
    tested = {s["commit"]: s for s in bisect_state.steps(d) if "endpoint" not in s}
    for s in tested.values():
        if s["decision"] == "skip":
            assert len(s["boots"]) == 6 and "ambiguous" in s["why"]
        else:
            assert max(s["odds"], 1 / s["odds"]) >= classify.ODDS, s
    if tested[shas[2]]["decision"] == "skip":
        assert rc == 1 and "inconclusive" in err
        assert shas[2] in err.split("it is one of:")[1]
    else:
        assert rc == 0, err


def test_bisect_through_an_unbuildable_midpoint(tmp_path):
    values = ["10", "10", "10", "broken", "20", "20", "20"]
    shas = make_repo(tmp_path / "tree", values)
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    # 3 cannot be built and 4 is bad: the culprit is 3 or 4, and we say so
    assert rc == 1, err
    assert "inconclusive" in err
    suspects = err.split("it is one of:")[1]
    assert shas[3] in suspects and shas[4] in suspects
    assert shas[2] not in suspects and shas[5] not in suspects


def test_refuses_endpoints_that_do_not_differ(tmp_path):
    shas = make_repo(tmp_path / "tree", ["10", "10", "10"])
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    assert rc == 1
    assert "refusing to bisect" in err
    assert not (tmp_path / "tree" / ".git" / "BISECT_LOG").exists()
    assert git(tmp_path / "tree", "symbolic-ref", "--short", "HEAD") == "main"


def test_a_dirty_tree_bisects_in_a_worktree_and_stays_as_it_was(tmp_path):
    """The bisect runs in a worktree of its own: the user's tree may have
    uncommitted changes and another branch checked out, and keeps both."""
    tree = tmp_path / "tree"
    shas = make_repo(tree, ["10", "10", "20", "20"])
    git(tree, "checkout", "-q", "-b", "work", shas[1])
    (tree / "value").write_text("edited\n")
    rc, out, err = run_bisect(tree, tmp_path / "res", shas[0], shas[-1])
    assert rc == 0, err
    assert f"first bad commit: {shas[2]}" in out
    assert (tree / "value").read_text() == "edited\n"
    assert git(tree, "symbolic-ref", "--short", "HEAD") == "work"
    assert not (tree / ".git" / "BISECT_LOG").exists()
    # the worktree is gone, and git forgot it
    assert git(tree, "worktree", "list").count("\n") == 0
    assert not (bisect_dir(tmp_path / "res") / "worktree").exists()


def test_refuses_good_after_bad(tmp_path):
    shas = make_repo(tmp_path / "tree", ["10", "20", "20"])
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[-1], shas[0])
    assert rc == 2 and "not an ancestor" in err


def test_step_exit_codes(tmp_path):
    """What git bisect run sees from one step: 0, 1 and 125."""
    shas = make_repo(tmp_path / "tree", ["10", "20", "broken", "15"])
    state = {"dir": str(tmp_path), "tree": str(tmp_path / "tree"),
             "measurer": "bisect_fake:measure", "runs": 5, "max_boots": 4,
             "jobs": 2, "levels": {"good": [[10, 10.2, 9.8]],
                                   "bad": [[20, 20.4, 19.6]]},
             "confidence": 0.95, "metric": "runtime"}
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    want = {shas[0]: 0, shas[1]: 1, shas[2]: 125}
    for sha, code in want.items():
        git(tmp_path / "tree", "checkout", "-q", sha)
        assert bisect_step.step(state_file) == code, sha
    decisions = [s["decision"] for s in bisect_state.steps(tmp_path)]
    assert decisions == ["good", "bad", "skip"]


def test_bisect_on_an_interrupt_row_prints_the_parent_check(tmp_path):
    """Real run files (6.12, default vs idle=poll) as the commits' boots:
    the metric is the target's CAL row, and the summary has compare's
    table of the first bad commit against its parent."""
    default, poll = "6.12.117+deb12-amd64", "6.12.117+deb12-amd64_idle=poll"
    shas = make_repo(tmp_path / "tree", [default, default, poll, poll])
    rc, out, err = run_bisect(
        tmp_path / "tree", tmp_path / "res", shas[0], shas[-1],
        "--metric", "interrupts.CPU1.CAL:Function_call_interrupts",
        "--measurer", "bisect_fake:measure_captured")
    assert rc == 0, err
    assert f"first bad commit: {shas[2]}" in out
    # the parent check: compare's table of parent against first bad
    # (captured files have no boot ids: one boot a side, so no verdict)
    row = next(line for line in out.splitlines()
               if line.startswith("Amean ipistorm.ipis_per_call"))
    assert "-99." in row, row
    d = bisect_dir(tmp_path / "res")
    assert list(d.glob("compare-*.png")) and list(d.glob("compare-*.json"))
    assert out.count("ipistorm.runtime_ns") == 1


def test_a_tree_bisecting_itself_is_left_alone(tmp_path):
    """The user's own git bisect goes on: the storm's runs in a worktree
    with bisect refs of its own."""
    shas = make_repo(tmp_path / "tree", ["10", "20", "20"])
    git(tmp_path / "tree", "bisect", "start", shas[-1], shas[0])
    log = (tmp_path / "tree" / ".git" / "BISECT_LOG").read_text()
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    assert rc == 0, err
    assert f"first bad commit: {shas[1]}" in out
    assert (tmp_path / "tree" / ".git" / "BISECT_LOG").read_text() == log


def test_the_summary_counts_every_build_of_every_step(tmp_path):
    """Steps build in processes of their own (git bisect run): each
    appends its build, and the summary adds them up."""
    assert bisect_measure.build_seconds(tmp_path) == (0, 0.0)
    (tmp_path / bisect_measure.BUILDS_LOG).write_text(
        '{"commit": "a", "seconds": 108.0}\n{"commit": "b", "seconds": 24.5}\n')
    assert bisect_measure.build_seconds(tmp_path) == (2, 132.5)


@pytest.mark.parametrize("virt,how", [("tcg", "min"), ("kvm", "median"),
                                      ("none", "median")])
def test_a_bisect_boots_number_is_compares(virt, how):
    """The bisect reads a boot as compare does (verdict.summary_of): the
    fastest run of the primary time only where noise only slows runs
    down (TCG), the median run on KVM and hardware."""
    d = next((REPO / "tests" / "data" / "boots" / "matrix-6.1-6.12"
              / "6.1.0-56-amd64").iterdir())
    docs = [json.loads(f.read_text()) for f in sorted(d.glob("run-*.json"))]
    for doc in docs:
        doc["env"]["virtualization"] = virt
    reading = bisect_state.Reading(storm="ipistorm", asked="time")
    values = reading.samples(docs)
    assert reading.name == "ipistorm.time_per_call_ns"
    assert reading.summary == how
    expected = min(values) if how == "min" else float(np.median(values))
    assert reading.summaries([values]) == [pytest.approx(expected)]


# ------------------------------------------------------------ --resume

# bisect_fake.measure, counted and stoppable: written into the test's
# directory (put on PYTHONPATH) so that every step, a process of its own,
# counts into one file
COUNTING_FAKE = '''
import json
import os
import pathlib

import bisect_fake


def measure(state, requests):
    """Each call one line in $COUNT_LOG (its phase: "check" once the
    first bad commit's parent is known; its requests); the call numbered
    $FAIL_AT raises instead, as a killed driver stops: not a MeasureError,
    which would skip the commit, but an error that stops the bisect."""
    log = pathlib.Path(os.environ["COUNT_LOG"])
    done = len(log.read_text().splitlines()) if log.exists() else 0
    if os.environ.get("FAIL_AT") == str(done + 1):
        raise RuntimeError("stopped by the test")
    with open(log, "a") as f:
        f.write(json.dumps({"phase": "check" if state.parent else "bisect",
                            "requests": requests}) + "\\n")
    return bisect_fake.measure(state, requests)
'''
# 8 is the first bad commit; 5, git's first pick, fails to build (a
# skip); 12 commits, so that the steps are several
RESUME_VALUES = ["10"] * 5 + ["broken"] + ["10"] * 2 + ["20"] * 4


def counting(tmp_path: pathlib.Path, fail_at: int | None = None
             ) -> dict[str, str]:
    """The environment of a bisect with the counting fake, its calls
    logged in tmp_path/calls.jsonl."""
    (tmp_path / "counting_fake.py").write_text(COUNTING_FAKE)
    env = {"PYTHONPATH": str(tmp_path),
           "COUNT_LOG": str(tmp_path / "calls.jsonl")}
    if fail_at is not None:
        env["FAIL_AT"] = str(fail_at)
    return env


def calls(tmp_path: pathlib.Path) -> list[dict]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] \
        if log.exists() else []


def measured(calls_: list[dict], phase: str, shas: list[str]) -> list[int]:
    """The commits measured in phase, as their numbers in the history
    (two repositories made alike have other ids)."""
    return [shas.index(sha) for c in calls_ if c["phase"] == phase
            for sha, _ in c["requests"]]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The bisect, never stopped: its tree (copied by the tests, so that
    they bisect the same commits: git's pick after a skip depends on
    them), the commits, its output, the commits it measured before the
    check, and its measurer calls in all."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    shas = make_repo(tmp / "tree", RESUME_VALUES)
    rc, out, err = run_bisect(tmp / "tree", tmp / "res", shas[0], shas[-1],
                              "--measurer", "counting_fake:measure",
                              env=counting(tmp))
    assert rc == 0, err
    return (tmp / "tree", shas, out, measured(calls(tmp), "bisect", shas),
            len(calls(tmp)))


@pytest.mark.parametrize("fail_at", [1, 3, "check"])
def test_a_stopped_bisect_resumed_names_the_same_commit(tmp_path, fail_at,
                                                        uninterrupted):
    """Stopped at a measurer call (1: the endpoints; 3: after the first
    step, a skip; or the parent check) and resumed: the same first bad
    commit, and no commit measured twice, not even the one that failed
    to build (the check measures its two again on purpose, once)."""
    ref_tree, shas, ref_out, ref_measured, ref_calls = uninterrupted
    first = f"first bad commit: {shas[8]} commit 8: value 20"
    assert first in ref_out and 5 in ref_measured
    if fail_at == "check":
        fail_at = ref_calls
    shutil.copytree(ref_tree, tmp_path / "tree")
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res", shas[0],
                              shas[-1], "--measurer", "counting_fake:measure",
                              env=counting(tmp_path, fail_at))
    assert rc != 0 and "first bad commit:" not in out
    assert len(calls(tmp_path)) == fail_at - 1
    d = bisect_dir(tmp_path / "res")
    before = {name: (d / name).read_text() for name in
              ("steps.jsonl", "git-bisect-run.log", "git-bisect.log")
              if (d / name).exists()}
    # arguments that agree with the stored ones are taken
    rc, out, err = storm_bisect("--resume", str(d), "--runs", "5",
                                "--good", shas[0], env=counting(tmp_path))
    assert rc == 0, err
    assert first in out and "confirmed" in out
    assert bisect_dir(tmp_path / "res") == d
    got = calls(tmp_path)
    stepped = measured(got, "bisect", shas)
    assert len(stepped) == len(set(stepped)), f"measured twice: {stepped}"
    assert sorted(stepped) == sorted(ref_measured)
    assert measured(got, "check", shas) == [7, 8]
    # one record a commit, the stopped run's kept: appended, not rewritten
    records = bisect_state.steps(d)
    assert len({r["commit"] for r in records}) == len(records)
    for name, text in before.items():
        assert (d / name).read_text().startswith(text), name
    assert not (d / "worktree").exists()
    assert git(tmp_path / "tree", "worktree", "list").count("\n") == 0


def test_a_step_resumed_keeps_its_first_boots(tmp_path, monkeypatch):
    """Stopped between two rounds of one step, the step resumed boots
    only the rounds it had not: its first boots come from the journal."""
    import bisect_fake
    shas = make_repo(tmp_path / "tree", ["10", "14.14"])
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({
        "dir": str(tmp_path), "tree": str(tmp_path / "tree"),
        "measurer": "counting_fake:measure", "runs": 5, "max_boots": 6,
        "jobs": 2, "levels": {"good": [[10, 10.2, 9.8]],
                              "bad": [[20, 20.4, 19.6]]},
        "confidence": 0.95, "metric": "runtime"}))
    git(tmp_path / "tree", "checkout", "-q", shas[1])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(bisect_fake, "_drawn", 0)
    for k, v in counting(tmp_path, fail_at=2).items():
        monkeypatch.setenv(k, v)
    # half way between the levels: not decided on its first two boots
    with pytest.raises(RuntimeError, match="stopped by the test"):
        bisect_step.step(state_file)
    journal = [json.loads(line) for line in
               (tmp_path / bisect_measure.MEASUREMENTS_LOG).read_text().splitlines()]
    assert [(j["phase"], j["commit"], j["boots"]) for j in journal] \
        == [("step", shas[1], 2)]
    monkeypatch.delenv("FAIL_AT")
    bisect_step.step(state_file)
    record, = bisect_state.steps(tmp_path)
    assert record["boots"][:2] == journal[0]["samples"]
    asked = [c["requests"] for c in calls(tmp_path)]
    # the first call is the stopped run's; the resumed asked for the rest
    assert sum(n for req in asked for _, n in req) == len(record["boots"])


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A bisect stopped at its third measurer call: (tmp dir, commits,
    its directory)."""
    tmp = tmp_path_factory.mktemp("stopped")
    shas = make_repo(tmp / "tree", RESUME_VALUES)
    rc, out, err = run_bisect(tmp / "tree", tmp / "res", shas[0], shas[-1],
                              "--measurer", "counting_fake:measure",
                              env=counting(tmp, fail_at=3))
    assert rc != 0
    return tmp, shas, bisect_dir(tmp / "res")


def refused(*args: str, env=None) -> str:
    """storm bisect ARGS refused: its one line."""
    rc, out, err = storm_bisect(*args, env=env)
    assert rc == 2, (rc, out, err)
    line, = err.strip().splitlines()
    assert line.startswith("storm bisect: cannot resume ")
    return line


@pytest.mark.parametrize("args,says", [
    (["--good", "REV1"], "--good {s1} is {s1}, the bisect's is {s0}"),
    (["--bad", "REV7"], "--bad {s7} is {s7}, the bisect's is {s11}"),
    (["--metric", "insn"], "--metric insn, the bisect's is auto"),
    (["ipistorm", "numipi=200"], "ipistorm numipi=200, the bisect's is "
     "ipistorm numipi=100"),
    (["tlbstorm", "numipi=100"], "tlbstorm numipi=100, the bisect's is "
     "ipistorm numipi=100"),
    (["--runs", "7", "--no-insn"], "--runs 7, the bisect's is 5; --no-insn, "
     "the bisect counts instructions"),
], ids=["good", "bad", "metric", "params", "storm", "options"])
def test_resume_refuses_contradicting_arguments(stopped, args, says):
    tmp, shas, d = stopped
    short = {f"s{k}": sha[:12] for k, sha in enumerate(shas)}
    args = [shas[int(a[3:])][:12] if a.startswith("REV") else a
            for a in args]
    steps_before = (d / "steps.jsonl").read_text()
    line = refused("--resume", str(d), *args, env=counting(tmp))
    assert "the arguments given contradict the bisect's" in line
    assert says.format(**short) in line, line
    # nothing measured or written
    assert (d / "steps.jsonl").read_text() == steps_before
    assert len(calls(tmp)) == 2


def test_resume_refuses_a_missing_or_unreadable_state(tmp_path):
    line = refused("--resume", str(tmp_path / "nowhere"))
    assert "nowhere/state.json does not exist" in line
    (tmp_path / "state.json").write_text('{"dir": "x", "tree"')
    line = refused("--resume", str(tmp_path))
    assert "state.json is unreadable as a bisect's state" in line
    (tmp_path / "state.json").write_text('["not", "a", "state"]')
    assert "is unreadable" in refused("--resume", str(tmp_path))


def test_resume_refuses_another_tree_a_running_or_finished_bisect(
        stopped, tmp_path):
    tmp, shas, d = stopped
    other = tmp_path / "other"
    make_repo(other, ["10", "20"])
    line = refused("--resume", str(d), "--tree", str(other))
    assert f"--tree {other} is a different tree from the bisect's, " \
        f"{tmp / 'tree'}" in line
    # a bisect still running in it (the lock its process holds)
    with open(d / "bisect.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        line = refused("--resume", str(d))
    assert f"a storm bisect is still running in {d}" in line
    finished = tmp_path / "finished"
    shutil.copytree(d, finished)
    (finished / "summary.txt").write_text("first bad commit: ...\n")
    assert "holds a finished bisect" in refused("--resume", str(finished))


def test_resume_refuses_a_tree_whose_commits_are_gone(stopped, tmp_path):
    """The tree rewritten since (a rebase, then git gc): the recorded
    steps name commits it no longer has."""
    tmp, shas, d = stopped
    tree = tmp_path / "tree"
    shutil.copytree(tmp / "tree", tree)
    copy = tmp_path / "state"
    shutil.copytree(d, copy)
    state = json.loads((copy / "state.json").read_text())
    state["user_tree"] = str(tree)
    (copy / "state.json").write_text(json.dumps(state))
    git(tree, "reset", "-q", "--hard", shas[5])
    git(tree, "commit", "-q", "--amend", "-m", "rewritten")
    git(tree, "reflog", "expire", "--expire=now", "--all")
    git(tree, "gc", "-q", "--prune=now")
    line = refused("--resume", str(copy))
    assert f"{tree} no longer has the commits " in line
    assert shas[-1][:12] in line and "cannot be replayed" in line


def test_resume_dry_run_says_what_is_recorded(stopped):
    tmp, shas, d = stopped
    rc, out, err = storm_bisect("--resume", str(d), "--dry-run",
                                env=counting(tmp))
    assert rc == 0, err
    assert f"resuming {d}: 1 step recorded (0 good, 0 bad, 1 skipped), " \
        "2 measurements to reuse" in out
    assert len(calls(tmp)) == 2


def test_help_documents_resume():
    rc, out, err = storm_bisect("--help")
    assert rc == 0
    assert "--resume STATE_DIR" in out
    assert "storm bisect --resume results/bisect/" in " ".join(out.split())


def test_resume_takes_a_longer_timeout(stopped):
    """--timeout bounds a hung guest and may be what stopped the bisect:
    a resume may raise it, where every other option must agree."""
    tmp, shas, d = stopped
    rc, out, err = storm_bisect("--resume", str(d), "--timeout", "3600",
                                "--dry-run", env=counting(tmp))
    assert rc == 0, err
    assert f"resuming {d}: 1 step recorded" in out


def test_a_bisect_started_before_the_layers_resumes_with_its_measurer():
    """state.json of a bisect started before the drivers moved into
    their layers names the default measurer by its old module."""
    assert bisect_measure.load_measurer("stormsuite.bisect:measure") is \
        bisect_measure.measure
    assert bisect_measure.load_measurer(bisect_measure.DEFAULT_MEASURER) \
        is bisect_measure.measure
