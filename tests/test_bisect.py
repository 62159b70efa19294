"""storm bisect: the classification, and real git bisects driven over
synthetic repositories with a fake measurer (tests/bisect_fake.py)."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest

from conftest import REPO
from stormsuite import bisect, bisect_state, classify

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


def run_bisect(repo: pathlib.Path, results: pathlib.Path, good: str,
               bad: str, *extra: str) -> tuple[int, str, str]:
    res = subprocess.run(
        [str(REPO / "scripts" / "storm"), "bisect", "--tree",
         str(repo), "--good", good, "--bad", bad, "--runs", "5",
         "--boots", "3", "--max-boots", "6", "--jobs", "2",
         "--results", str(results), "--measurer", "bisect_fake:measure",
         *extra, "ipistorm", "numipi=100"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pathlib.Path(
            __file__).parent)}, timeout=300)
    return res.returncode, res.stdout, res.stderr


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
    steps = bisect.steps(d)
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
    tested = {s["commit"]: s for s in bisect.steps(d) if "endpoint" not in s}
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


def test_refuses_a_dirty_tree(tmp_path):
    shas = make_repo(tmp_path / "tree", ["10", "20"])
    (tmp_path / "tree" / "value").write_text("edited\n")
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    assert rc == 2 and "uncommitted changes" in err


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
        assert bisect.step(state_file) == code, sha
    decisions = [s["decision"] for s in bisect.steps(tmp_path)]
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


def test_refuses_a_tree_already_bisecting(tmp_path):
    shas = make_repo(tmp_path / "tree", ["10", "20", "20"])
    git(tmp_path / "tree", "bisect", "start", shas[-1], shas[0])
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    assert rc == 2 and "already bisecting" in err
    # the user's bisect is left alone
    assert (tmp_path / "tree" / ".git" / "BISECT_LOG").exists()


def test_the_summary_counts_every_build_of_every_step(tmp_path):
    """Steps build in processes of their own (git bisect run): each
    appends its build, and the summary adds them up."""
    assert bisect.build_seconds(tmp_path) == (0, 0.0)
    (tmp_path / bisect.BUILDS_LOG).write_text(
        '{"commit": "a", "seconds": 108.0}\n{"commit": "b", "seconds": 24.5}\n')
    assert bisect.build_seconds(tmp_path) == (2, 132.5)
