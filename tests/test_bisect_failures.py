"""storm bisect --metric failures: the storm's checks decide a commit
without statistics (bad if any run of its boots failed them), over real
git bisects of synthetic histories with a fake measurer (measure_failures
below, which `storm bisect --measurer` imports from this file); and runs
whose checks failed kept out of every time and count statistic."""

from __future__ import annotations

import copy
import json
import pathlib
import shutil
import subprocess

import pytest

from conftest import REPO
from stormsuite.designs import bisect, bisect_measure, bisect_state
from stormsuite.runfiles import runs
from test_bisect import bisect_dir, make_repo, storm_bisect

DATA = pathlib.Path(__file__).parent / "data" / "runs"
SERIES = DATA / "6.1.0-56-amd64" / \
    "ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"


def measure_failures(state, requests):
    """Each commit's `value` file: the failures in each of its runs
    ("0": a good kernel), "once" (one failure, in the last run of its
    last boot only: an intermittent bug the whole boots must catch) or
    "broken" (does not build)."""
    out = []
    for sha, n in requests:
        value = subprocess.run(
            ["git", "-C", state.tree, "show", f"{sha}:value"], check=True,
            capture_output=True, text=True).stdout.strip()
        if value == "broken":
            raise bisect_measure.MeasureError("build failed: synthetic")
        if value == "once":
            boots = [[0.0] * state.runs for _ in range(n)]
            boots[-1][-1] = 1.0
        else:
            boots = [[float(value)] * state.runs for _ in range(n)]
        out.append((boots, []))
    return out


def failures_bisect(repo, results, good, bad, *extra):
    return storm_bisect(
        "--tree", str(repo), "--good", good, "--bad", bad, "--runs", "4",
        "--boots", "3", "--jobs", "2", "--results", str(results),
        "--measurer", "test_bisect_failures:measure_failures",
        "--metric", "failures", *extra, "ipistorm", "numipi=100")


# ------------------------------------------------------------ the bisect

@pytest.mark.parametrize("values,culprit", [
    (["0", "0", "0", "0", "0", "2", "2", "2"], 5),
    # intermittent: one failing run in 3 boots x 4 runs is enough
    (["0", "0", "once", "1", "1"], 2),
    # a commit that does not build is skipped, the culprit still named
    (["0", "0", "broken", "0", "3", "3"], 4),
])
def test_names_the_first_commit_whose_checks_fail(tmp_path, values,
                                                  culprit):
    shas = make_repo(tmp_path / "tree", values)
    rc, out, err = failures_bisect(tmp_path / "tree", tmp_path / "res",
                                   shas[0], shas[-1])
    assert rc == 0, err
    assert f"first bad commit: {shas[culprit]} " in out
    assert f"re-measured against its parent {shas[culprit - 1][:12]}: " \
        "failures: parent 0 failures in 0 of 3 boots" in out
    assert "confirmed" in out and "NOT confirmed" not in out
    assert "metric failures" in out
    d = bisect_dir(tmp_path / "res")
    tested = [s for s in bisect_state.steps(d) if "endpoint" not in s]
    for s in tested:
        if s["decision"] == "skip":
            assert values[shas.index(s["commit"])] == "broken"
            continue
        # every step: --boots boots, once, no odds
        assert len(s["boots"]) == 3 and "odds" not in s
        failing = values[shas.index(s["commit"])] not in ("0",)
        assert s["decision"] == ("bad" if failing else "good"), s
    state = json.loads((d / "state.json").read_text())
    assert state["metric"] == "failures"


def test_refuses_a_good_endpoint_with_failures(tmp_path):
    shas = make_repo(tmp_path / "tree", ["once", "0", "2", "2"])
    rc, out, err = failures_bisect(tmp_path / "tree", tmp_path / "res",
                                   shas[0], shas[-1])
    assert rc == 1
    assert "refusing to bisect: the endpoints do not differ on failures" \
        in err
    assert "good 1 failure in 1 of 3 boots" in err
    assert "first bad commit" not in out


def test_refuses_a_bad_endpoint_without_failures(tmp_path):
    shas = make_repo(tmp_path / "tree", ["0", "2", "0"])
    rc, _, err = failures_bisect(tmp_path / "tree", tmp_path / "res",
                                 shas[0], shas[-1])
    assert rc == 1
    assert "do not differ on failures" in err
    assert "bad 0 failures in 0 of 3 boots" in err


def test_help_documents_the_failures_metric():
    rc, out, _ = storm_bisect("--help")
    assert rc == 0
    assert "failures: the storm's checks" in " ".join(out.split())


def test_a_step_is_bad_on_any_failure():
    assert bisect_state.failures_verdict([0, 0, 1]).decision == "bad"
    assert bisect_state.failures_verdict([0, 0, 0]).decision == "good"
    assert bisect_state.failures_differ([0, 0], [0, 4])
    assert not bisect_state.failures_differ([1, 0], [0, 4])
    assert not bisect_state.failures_differ([0, 0], [0, 0])


# ------------------------------------------------------------ run documents

def real_runs() -> list[dict]:
    return [runs.load_run(f) for f in sorted(SERIES.glob("run-*.json"))]


def failing(doc: dict, n: int = 2) -> dict:
    """The run as the storm reports a check failure: status failed and
    its failures counted."""
    doc = copy.deepcopy(doc)
    doc["result"].update(status="failed", failures=n)
    return doc


def test_the_failures_reading_counts_each_run():
    docs = real_runs()[:3]
    docs[1] = failing(docs[1], 2)
    reading = bisect_state.Reading(storm="ipistorm", asked="failures")
    assert reading.samples(docs) == [0.0, 2.0, 0.0]
    assert reading.summaries([[0, 2, 0], [0, 0, 0]]) == [2.0, 0.0]
    assert reading.describe([2.0, 0.0]) == "2 failures in 1 of 2 boots"
    assert not reading.log_scale


def test_a_statistical_metric_refuses_failed_runs():
    docs = real_runs()[:3]
    docs[2] = failing(docs[2], 1)
    name = pathlib.Path(docs[2]["_path"]).name
    reading = bisect_state.Reading(storm="ipistorm", asked="time")
    with pytest.raises(runs.RunError, match=rf"{name} \(1 failure\)"):
        reading.samples(docs)
    # without the failed run it reads as before
    assert len(reading.samples(docs[:2])) == 2


def failed_series_dir(tmp_path: pathlib.Path, fail: list[int]
                      ) -> pathlib.Path:
    """A copy of a real series whose runs at the indexes in fail say
    their storm's checks failed."""
    d = tmp_path / "lab" / SERIES.name
    d.mkdir(parents=True)
    for i, f in enumerate(sorted(SERIES.glob("run-*.json"))):
        doc = json.loads(f.read_text())
        if i in fail:
            doc["result"].update(status="failed", failures=3)
        (d / f.name).write_text(json.dumps(doc))
    return d


def test_compare_leaves_failed_runs_out_and_says_so(tmp_path, capsys):
    d = failed_series_dir(tmp_path, [1])
    everything = len(list(d.glob("run-*.json")))
    s, = runs.resolve(str(d))
    assert len(s.runs) + len(s.traced) == everything - 1
    assert [pathlib.Path(r["_path"]).name for r in s.failed] == \
        [sorted(d.glob("run-*.json"))[1].name]
    assert all(not runs.check_failed(r) for r in s.runs)
    err = capsys.readouterr().err
    assert "1 run whose storm's checks failed left out of the " \
        "statistics" in err and "(3 failures)" in err


def test_a_series_whose_every_run_failed_is_refused(tmp_path):
    n = len(list(SERIES.glob("run-*.json")))
    d = failed_series_dir(tmp_path, list(range(n)))
    with pytest.raises(runs.RunError, match="checks failed in every run"):
        runs.resolve(str(d))


def test_storm_compare_runs_without_the_failed_runs(tmp_path):
    """storm compare of a set with a failed run: the table is made of
    the others, and the warning names the failed one."""
    d = failed_series_dir(tmp_path, [0])
    base = tmp_path / "base" / SERIES.name
    shutil.copytree(SERIES, base)
    res = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare",
         str(base.parent), str(d.parent)], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=300)
    assert "checks failed left out of the statistics" in res.stderr
    assert res.returncode == 0, res.stderr
