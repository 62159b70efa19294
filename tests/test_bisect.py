"""storm bisect: the classification, and real git bisects driven over
synthetic repositories with a fake measurer (tests/bisect_fake.py)."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from stormsuite import bisect, classify

GOOD = [10.0, 10.4, 9.8, 10.1, 10.3]
BAD = [20.0, 19.5, 20.6, 20.2, 19.9]


def test_clear_good():
    v = classify.classify([10.2, 9.9, 10.0, 10.5, 10.1], GOOD, BAD)
    assert v.decision == classify.GOOD
    assert v.p_bad < 0.05 <= v.p_good


def test_clear_bad():
    v = classify.classify([19.8, 20.3, 20.1, 20.4, 19.7], GOOD, BAD)
    assert v.decision == classify.BAD
    assert v.p_good < 0.05 <= v.p_bad


def test_half_way_is_ambiguous():
    v = classify.classify([15.0, 15.2, 14.9, 15.1, 15.3], GOOD, BAD)
    assert v.decision == classify.AMBIGUOUS


def test_like_neither_takes_the_side_it_is_near():
    """Under TCG a guest booted later can drift: the samples differ from
    both endpoints, yet lie clearly on one side."""
    near_bad = [18.0, 18.2, 17.9, 18.1, 18.3]       # 80% of the way
    v = classify.classify(near_bad, GOOD, BAD)
    assert v.p_good < 0.05 and v.p_bad < 0.05
    assert v.decision == classify.BAD
    assert classify.classify([23.0, 23.4, 22.8, 23.1, 23.2],
                             GOOD, BAD).decision == classify.BAD
    near_good = [11.6, 11.8, 11.7, 11.9, 11.5]      # 17% of the way
    assert classify.classify(near_good, GOOD, BAD).decision == classify.GOOD
    assert classify.classify([13.5, 13.6, 13.4, 13.7, 13.3],
                             GOOD, BAD).decision == classify.AMBIGUOUS


def test_the_e2e_culprit_is_bad():
    """The samples of tests/e2e/bisect-linux-6.1 on 2026-11-22 (ms): the
    planted commit was skipped as ambiguous after 15 runs, because the bad
    endpoint had read 12% slower. 87% of the way from good to bad is bad."""
    good = [19.4, 87.2, 34.3, 26.2, 27.4]
    bad = [144.3, 144.4, 137.3, 183.2, 141.0]
    culprit = [143.4, 134.8, 125.2, 119.8, 120.4, 133.5, 130.4, 123.2,
               122.5, 139.9, 125.2, 125.9, 122.4, 124.4, 132.1]
    v = classify.classify(culprit, good, bad)
    assert v.p_bad < 0.05 and v.decision == classify.BAD
    assert classify.position(culprit, good, bad) > 0.8


def test_noise_like_both_is_ambiguous():
    wide = [5.0, 25.0, 12.0, 18.0, 15.0]
    assert classify.classify(wide, GOOD, BAD).decision == classify.AMBIGUOUS


def test_one_sample_is_ambiguous():
    assert classify.classify([10.0], GOOD, BAD).decision == classify.AMBIGUOUS


def test_constant_counts_are_decided():
    """A deterministic count (CAL of a fixed storm) has no variance."""
    good, bad = [500.0] * 5, [1000.0] * 5
    assert classify.classify([500.0] * 5, good, bad).decision == classify.GOOD
    assert classify.classify([1000.0] * 3, good, bad).decision == classify.BAD


def test_endpoints_not_different():
    differ, p = classify.endpoints_differ(GOOD, [10.2, 9.9, 10.0, 10.5, 10.1])
    assert not differ and p > 0.05
    differ, p = classify.endpoints_differ(GOOD, BAD)
    assert differ and p < 0.05


def test_welch_test_works_too():
    v = classify.classify([19.8, 20.3, 20.1, 20.4, 19.7], GOOD, BAD,
                          test="welch")
    assert v.decision == classify.BAD


@pytest.mark.parametrize("name,want", [
    ("runtime", "ipistorm.runtime_ns"),
    ("CAL", "interrupts.CAL:Function_call_interrupts"),
    ("irq.CAL", "ipistorm.irq.CAL"),
    ("ipistorm.irq.CAL", "ipistorm.irq.CAL"),
])
def test_metric_names(name, want):
    available = ["ipistorm.runtime_ns", "ipistorm.irq.CAL",
                 "interrupts.CAL:Function_call_interrupts",
                 "interrupts.CPU1.CAL:Function_call_interrupts",
                 "interrupts.RES:Rescheduling_interrupts"]
    assert bisect.resolve_metric(name, "ipistorm", available) == want


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(ValueError, match="ipistorm.runtime_ns"):
        bisect.resolve_metric("nope", "ipistorm", ["ipistorm.runtime_ns"])


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
        [str(bisect.REPO / "scripts" / "storm"), "bisect", "--tree",
         str(repo), "--good", good, "--bad", bad, "--runs", "5",
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
    # 3 ambiguous and 4 failing to build: both skipped; 6 is the culprit
    values = ["10", "10", "10", "15", "broken", "10", "20", "20", "20"]
    shas = make_repo(tmp_path / "tree", values)
    repo = tmp_path / "tree"
    rc, out, err = run_bisect(repo, tmp_path / "res", shas[0], shas[-1])
    assert rc == 0, err
    assert f"first bad commit: {shas[6]} commit 6: value 20" in out
    # the tree is back where it was, with no bisect in progress
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert git(repo, "rev-parse", "HEAD") == shas[-1]
    assert not (repo / ".git" / "BISECT_LOG").exists()
    d = bisect_dir(tmp_path / "res")
    steps = bisect.steps(d)
    endpoints = [s for s in steps if "endpoint" in s]
    tested = {s["commit"]: s for s in steps if "endpoint" not in s}
    assert [e["endpoint"] for e in endpoints] == ["good", "bad"]
    assert tested[shas[6]]["decision"] == "bad"
    assert tested[shas[5]]["decision"] == "good"
    skipped = [s for s in tested.values() if s["decision"] == "skip"]
    for s in skipped:
        assert s["commit"] in (shas[3], shas[4])
        if s["commit"] == shas[3]:
            assert "ambiguous" in s["why"] and len(s["samples"]) == 15
        else:
            assert "build failed" in s["why"]
    assert "first bad commit" in (d / "summary.txt").read_text()
    assert (d / "git-bisect.log").read_text().strip()
    state = json.loads((d / "state.json").read_text())
    assert state["good"] == shas[0] and state["bad"] == shas[-1]


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
             "measurer": "bisect_fake:measure", "runs": 5, "max_runs": 10,
             "good_samples": [10 + 0.1 * i for i in range(5)],
             "bad_samples": [20 + 0.1 * i for i in range(5)],
             "test": "mannwhitney", "confidence": 0.95, "metric": "runtime"}
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    want = {shas[0]: 0, shas[1]: 1, shas[2]: 125, shas[3]: 125}
    for sha, code in want.items():
        git(tmp_path / "tree", "checkout", "-q", sha)
        assert bisect.step(state_file) == code, sha
    decisions = [s["decision"] for s in bisect.steps(tmp_path)]
    assert decisions == ["good", "bad", "skip", "skip"]


def test_bisect_on_an_interrupt_row_prints_the_convicting_table(tmp_path):
    """Real run files (6.12, default vs idle=poll) as the commits' runs:
    the metric is the target's CAL row, and the summary has compare's
    table of the good endpoint against the first bad commit."""
    default, poll = "6.12.117+deb12-amd64", "6.12.117+deb12-amd64_idle=poll"
    shas = make_repo(tmp_path / "tree", [default, default, poll, poll])
    rc, out, err = run_bisect(
        tmp_path / "tree", tmp_path / "res", shas[0], shas[-1],
        "--metric", "interrupts.CPU1.CAL:Function_call_interrupts",
        "--measurer", "bisect_fake:measure_captured")
    assert rc == 0, err
    assert f"first bad commit: {shas[2]}" in out
    row = next(line for line in out.splitlines()
               if line.startswith(
                   "Amean interrupts.CPU1.CAL:Function_call_interrupts"))
    assert row.rstrip().endswith("*"), row
    d = bisect_dir(tmp_path / "res")
    assert list(d.glob("compare-*.png")) and list(d.glob("compare-*.json"))
    assert out.count("Amean ipistorm.runtime_ns") == 1


def test_refuses_a_tree_already_bisecting(tmp_path):
    shas = make_repo(tmp_path / "tree", ["10", "20", "20"])
    git(tmp_path / "tree", "bisect", "start", shas[-1], shas[0])
    rc, out, err = run_bisect(tmp_path / "tree", tmp_path / "res",
                              shas[0], shas[-1])
    assert rc == 2 and "already bisecting" in err
    # the user's bisect is left alone
    assert (tmp_path / "tree" / ".git" / "BISECT_LOG").exists()
