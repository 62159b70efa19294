"""stormsuite.report.compare, metrics, runs and matrix on real run files.

tests/data/runs/ holds run files captured in guests by `storm run`:
ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50, 4 vCPUs
under TCG, on Debian 6.12 with the default HLT idle and with idle=poll
(the first five runs of each side of the committed comparison under
results/) and on 6.1 (tests/test_drivers_guest.py's boot).
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import REPO
from stormsuite.analysis import stats, verdict
from stormsuite.designs import matrix
from stormsuite.report import compare
from stormsuite.runfiles import metrics, result, runs

RUNS = pathlib.Path(__file__).parent / "data" / "runs"
TARGET_CAL = "interrupts.CPU1.CAL:Function_call_interrupts"


def labels() -> dict[str, str]:
    """{"base": 6.12, "poll": 6.12 idle=poll, "old": 6.1} from the data."""
    out = {}
    for d in sorted(p.name for p in RUNS.iterdir() if p.is_dir()):
        if d.endswith("_idle=poll"):
            out["poll"] = d
        elif d.startswith("6.12."):
            out["base"] = d
        elif d.startswith("6.1."):
            out["old"] = d
    assert set(out) == {"base", "poll", "old"}, out
    return out


L = labels()


def load(key: str) -> runs.Series:
    [series] = runs.resolve(L[key], RUNS)
    return series


def booted(key: str) -> runs.Series:
    """The captured runs, each standing for a boot of its own: the data
    predate boot ids, and a test of the verdicts needs boots."""
    s = load(key)
    for i, r in enumerate(s.runs):
        r["env"]["boot_id"] = f"{key}-{i}"
    return s


def test_compare_computes_and_show_prints_and_writes(capsys, tmp_path):
    # compare.compare is the computation alone: its callers (compare,
    # matrix, report, the seeds) print and write with show, or not at all
    results = compare.compare([[booted("base")], [booted("poll")]],
                              compare.Settings(show_all=True))
    assert capsys.readouterr() == ("", "")
    [r] = results
    assert r.table == compare.render(r.comparison, show_all=True)
    compare.show(results, tmp_path, write=False)
    assert capsys.readouterr().out == r.table + "\n"
    assert not list(tmp_path.iterdir())
    compare.show(results, tmp_path, write=True, plot=False)
    written = sorted(p.suffix for p in tmp_path.iterdir())
    assert written == [".json", ".txt"]
    assert "wrote " in capsys.readouterr().err


def test_settings_of_a_command_line():
    p = compare.parser()
    args = p.parse_args(["a", "b", "--confidence", "0.9", "--all"])
    assert compare.Settings.of(args) == compare.Settings(
        confidence=0.9, show_all=True)


def test_series_load():
    s = load("base")
    assert s.storm == "ipistorm" and s.label == L["base"]
    assert s.params == {"numipi": "500", "single": "1", "wait": "1",
                        "cpulist": "0", "offset": "1", "delay": "50"}
    assert len(s.runs) == 5 and not s.traced
    assert s.env("virtualization") == {"tcg"}


def test_metrics_of_a_run():
    run = load("base").runs[0]
    m = {k.name: v for k, v in metrics.of_run(run).items()}
    res = run["result"]
    assert m["ipistorm.runtime_ns"] == res["runtime_ns"]
    assert m["ipistorm.calls_per_sec"] == pytest.approx(
        500 * 1e9 / res["runtime_ns"])
    assert m["ipistorm.handled"] == 500
    assert m["ipistorm.irq.CPU1.CAL"] == res["irq.1.CAL"]
    assert m["ipistorm.irq.CAL"] == sum(res[f"irq.{c}.CAL"] for c in range(4))
    cal = run["interrupts"]["rows"]["CAL"]
    assert m["interrupts.CAL:Function_call_interrupts"] == cal["total"]
    assert m[TARGET_CAL] == cal["delta"][1]
    assert m["interrupts.CPU0.CAL:Function_call_interrupts"] == cal["delta"][0]
    # per CPU only where the storm runs: sender 0 and target 1
    assert "interrupts.CPU2.CAL:Function_call_interrupts" not in m
    p = [m[f"ipistorm.latency.p{q}_ns"] for q in ("50", "90", "99", "99.9")]
    assert p == sorted(p) and p[0] >= res["latency.min_ns"]
    # the primary time: the median timed call, interpolated in its bucket
    # (within the bucket whose middle p50 is); the runtime is then tested
    # as a secondary row, the bucket-middle p50 only shown
    hist = result.histogram({k: str(v) for k, v in res.items()})
    assert m["ipistorm.time_per_call_ns"] == hist.median()
    assert abs(hist.median() - p[0]) <= result.bucket_width(
        int(p[0])) / 2 + 1
    roles = {k.name: k.role for k in metrics.of_run(run)}
    assert roles["ipistorm.time_per_call_ns"] == "primary"
    assert roles["ipistorm.runtime_ns"] == metrics.SECONDARY
    assert roles["ipistorm.latency.p50_ns"] == metrics.DERIVED
    assert roles["ipistorm.latency.p99_ns"] == metrics.SECONDARY
    # latency=0: nothing timed, the runtime over the calls
    untimed = {k: v for k, v in res.items() if "latency" not in k}
    m0 = {k.name: (k.role, v) for k, v in metrics.of_run(
        dict(run, result=untimed)).items()}
    # under a name of its own: a different number from the median call
    assert "ipistorm.time_per_call_ns" not in m0
    assert m0["ipistorm.runtime_per_call_ns"] == ("primary",
                                                  res["runtime_ns"] / 500)
    assert m0["ipistorm.runtime_ns"][0] == metrics.DERIVED
    kinds = {k.name: k.kind for k in metrics.of_run(run)}
    assert kinds["ipistorm.runtime_ns"] == "time"
    assert kinds["ipistorm.calls_per_sec"] == "rate"
    assert kinds[TARGET_CAL] == "count"


def test_sent_rows_next_to_received():
    """count_sent=1 runs: IPIs sent, received and their ratio, by lkp-style
    names; the per-CPU sent rows only for the storm's CPUs."""
    run = json.loads(json.dumps(load("base").runs[0]))
    res = run["result"]
    assert not any(k.startswith("sent.") for k in res)
    assert not any(m.name.endswith("ipis_sent")
                   for m in metrics.of_run(run))
    # each CPU sent three IPIs for every one it took, and one RES
    for c in range(4):
        res[f"sent.{c}.CAL"] = 3 * res[f"irq.{c}.CAL"]
        res[f"sent.{c}.RES"] = 1
        res[f"sent_by.{c}.CAL"] = 0
    res["sent.source"] = "kprobe native_send_call_func_ipi"
    rows = {m.name: (m, v) for m, v in metrics.of_run(run).items()}
    received = sum(res[f"irq.{c}.CAL"] for c in range(4))
    # the primary: IPIs sent per call (500 calls); the total restates it
    per_call = rows["ipistorm.ipis_sent_per_call"]
    assert per_call[0].primary and per_call[1] == 3 * received / 500
    sent, sent_row = rows["ipistorm.ipis_sent"][1], rows["ipistorm.ipis_sent"][0]
    assert sent == 3 * received and sent_row.derived
    assert rows["ipistorm.ipis_received"][1] == received
    assert rows["ipistorm.ipis_received"][0].derived
    assert rows["ipistorm.ipis_sent_per_received"][1] == 3
    assert rows["ipistorm.ipis_sent_per_received"][0].derived
    assert rows["ipistorm.ipis_sent_per_received"][0].kind == "ratio"
    assert rows["ipistorm.sent.RES"][1] == 4
    assert rows["ipistorm.sent.CPU1.CAL"][1] == 3 * res["irq.1.CAL"]
    # the storm sends from 0 to 1: no per-CPU rows for 2 and 3
    assert "ipistorm.sent.CPU2.CAL" not in rows
    assert "ipistorm.sent_by.CPU0.CAL" not in rows


def test_means_match_the_samples():
    cmp = verdict.build([load("base"), load("poll")])
    rows = {r.metric.name: r for r in cmp.rows}
    rt = rows["ipistorm.runtime_ns"]
    samples = [r["result"]["runtime_ns"] for r in load("base").runs]
    assert rt.values[0] == samples
    assert rt.summaries[0].mean == pytest.approx(sum(samples) / 5)
    assert rt.summaries[0].cv == pytest.approx(stats.cv(samples))
    assert rt.metric.stat == "Amean"
    rate = rows["ipistorm.calls_per_sec"]
    assert rate.metric.stat == "Hmean"
    assert rate.summaries[0].mean == pytest.approx(
        5 / sum(r / (500 * 1e9) for r in samples))


def test_idle_poll_drops_the_target_cal_significantly():
    cmp = verdict.build([booted("base"), booted("poll")])
    rows = {r.metric.name: r for r in cmp.rows}
    # the primary count carries the verdict; the module's own row and
    # /proc's per-CPU row (derived: it restates the module's) follow it
    ipis = rows["ipistorm.ipis_per_call"].changes[1]
    assert ipis.significant and ipis.pct < -90
    assert ipis.estimate.hi < 0 and ipis.p_adjusted < 0.05
    c = rows["ipistorm.irq.CPU1.CAL"].changes[1]
    assert c.significant and c.pct < -90 and c.p_adjusted < 0.05
    assert rows[TARGET_CAL].derived
    assert not rows[TARGET_CAL].changes[1].significant
    # every call still ran on the target
    assert rows["ipistorm.handled"].summaries[1].mean == 500


def test_one_boot_a_side_is_never_a_change():
    cmp = verdict.build([load("base"), load("poll")])
    assert not any(c is not None and c.significant
                   for r in cmp.rows for c in r.changes)
    assert any("one boot: no test is possible" in w for w in cmp.warnings)
    line = next(x for x in compare.render(cmp).splitlines()
                if x.startswith("IPIs per call"))
    assert "~" in line and "fewer than 2 boots a side" in line


def test_table():
    cmp = verdict.build([booted("base"), booted("poll")])
    table = compare.render(cmp)
    lines = table.splitlines()
    assert lines[0].startswith("ipistorm  cpulist=0 delay=50 numipi=500")
    assert lines[1] == (f"sets: {L['base']} 5 boots x 1 runs, "
                        f"{L['poll']} 5 boots x 1 runs")
    # the verdict lines first, benchstat style
    assert lines[3].startswith("time per call")
    ipis = lines[4]
    assert ipis.startswith("IPIs per call")
    assert "->" in ipis and "[" in ipis and "5+5 boots x 1 runs" in ipis
    row = next(x for x in lines if x.startswith("Amean ipistorm.irq.CPU1.CAL"))
    assert row.rstrip().endswith("*")
    assert next(x for x in lines if "ipistorm.runtime_ns" in x) \
        .startswith("Gmean")
    assert "± " in row and "%" in row
    assert next(x for x in lines if "ipistorm.calls_per_sec" in x) \
        .startswith("(der)")
    assert "taken under emulation (TCG)" in table
    # one line of legend; --explain gives all of it
    assert "--explain" in table and "Welch's t-test" not in table
    full = compare.render(cmp, explain=True)
    assert len(full.splitlines()) > len(lines) + 3
    full = " ".join(full.split())       # its paragraphs, unwrapped
    assert "Welch's t-test" in full and "95% confidence" in full
    assert "below 10 counts" in full and "graphical multiple test" in full
    # rows with tiny counts everywhere are hidden, --all shows them
    hidden = [r for r in cmp.rows if not r.shown]
    assert hidden and f"{len(hidden)} interrupt rows" in table
    full = compare.render(cmp, show_all=True)

    def named(text: str) -> int:
        return len([x for x in text.splitlines()
                    if x.startswith(("Amean ", "Gmean ", "(der) "))])
    assert named(full) == named(table) + len(hidden)
    assert f"{len(hidden)} interrupt rows" not in full


MATRIX = REPO / "tests" / "data" / "boots" / "matrix-6.1-6.12"


def matrix_fixture() -> verdict.Comparison:
    """The committed 6.1-vs-6.12 boots, 3+3 x 5 (docs/measured.md)."""
    return verdict.build([runs.load_series(d) for d in (
        next((MATRIX / "6.1.0-56-amd64").iterdir()),
        next((MATRIX / "6.12.117+deb12-amd64").iterdir()))])


def test_the_matrix_fixture_fits_in_100_columns_and_agrees_with_itself():
    """Every line of compare's output fits in 100 columns, and
    no row's numbers contradict its %: the columns are the means of the
    per-boot numbers the test compares, the % the test's change."""
    cmp = matrix_fixture()
    for text in (compare.render(cmp), compare.render(cmp, explain=True),
                 compare.render(cmp, show_all=True)):
        too_long = [x for x in text.splitlines() if len(x) > compare.WIDTH]
        assert not too_long, too_long
    lines = compare.render(cmp).splitlines()
    rows = {r.metric.name: r for r in cmp.rows}
    checked = 0
    for line in lines:
        words = line.split()
        if len(words) < 2 or words[1] not in rows:
            continue
        r = rows[words[1]]
        shown = [compare.fmt_value(compare.centre(r, i), r.metric,
                                   compare.centre(r, 0)) for i in (0, 1)]
        assert shown[0] in line and shown[1] in line, (line, shown)
        # the centre of the per-boot numbers: a geometric mean where the
        # test is on the log scale (times), else arithmetic
        boots = r.boots[0]
        assert compare.centre(r, 0) == pytest.approx(
            math.exp(sum(map(math.log, boots)) / len(boots))
            if words[0] == "Gmean" or (words[0] == "(der)"
                                       and r.log_scale)
            else sum(boots) / len(boots))
        # the sides' numbers differ by the change the row states
        a, b = compare.centre(r, 0), compare.centre(r, 1)
        assert 100 * (b - a) / a == pytest.approx(r.changes[1].pct,
                                                  abs=1e-6), line
        checked += 1
    assert checked == len([r for r in cmp.rows if r.shown])
    # the verdict line's numbers are the table's
    time = rows["ipistorm.time_per_call_ns"]
    verdict_line = next(x for x in lines if x.startswith("time per call"))
    assert verdict_line.startswith(
        f"time per call  {compare.fmt_value(compare.centre(time, 0), time.metric)}"
        f" -> {compare.fmt_value(compare.centre(time, 1), time.metric)}   -2")


def test_metrics_filters_the_rows():
    cmp = matrix_fixture()
    text = compare.render(cmp, metrics_re="CAL")
    table = [x for x in text.splitlines()
             if x.startswith(("Amean", "Gmean", "(der)"))]
    assert table and all("CAL" in x for x in table)
    assert "rows not matching --metrics 'CAL' not shown" in text
    # the verdict is the verdict, whatever the rows shown
    assert "time per call" in text
    none = compare.render(cmp, metrics_re="no-such-row")
    assert "no row matches --metrics 'no-such-row'" in none
    proc = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare", "--metrics", "latency",
         "--explain", str(MATRIX / "6.1.0-56-amd64"),
         str(MATRIX / "6.12.117+deb12-amd64")], capture_output=True,
        text=True)
    assert proc.returncode == 0, proc.stderr
    table = [x for x in proc.stdout.splitlines()
             if x.startswith(("Amean", "Gmean", "(der)"))]
    assert len(table) == 4 and all("latency" in x for x in table)
    assert "Welch's t-test" in proc.stdout
    bad = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare", "--metrics", "(",
         "a", "b"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--metrics" in bad.stderr


def test_tiny_counts_are_marked_not_changed():
    cmp = verdict.build([booted("base"), booted("poll")], floor=1e9)
    table = compare.render(cmp, show_all=True)
    row = next(x for x in table.splitlines()
               if x.startswith("Amean ipistorm.irq.CPU1.CAL"))
    assert row.rstrip().endswith("~")
    rows = {r.metric.name: r for r in cmp.rows}
    assert not rows["ipistorm.irq.CPU1.CAL"].changes[1].significant


def test_per_call_counts_one_apart_are_a_change(tmp_path):
    """IPIs per call of exactly 1 against exactly 0 (idle=poll) are
    integers 1 apart, but a ratio: the whole of a change, not lkp's
    off-by-one of a raw count."""
    def ipis(per_call: int):
        def fn(doc):
            res = doc["result"]
            for k in [k for k in res if k.startswith("irq.")
                      and k.endswith(".CAL")]:
                res[k] = 0
            res["irq.1.CAL"] = per_call * res["sender.0.calls"]
        return fn
    sides = []
    for label, per_call in (("one", 1), ("zero", 0)):
        d = copy_series("base", tmp_path / label)
        edit_runs(d, ipis(per_call))
        s = runs.load_series(d)
        for i, r in enumerate(s.runs):
            r["env"]["boot_id"] = f"{label}-{i}"
        sides.append(s)
    cmp = verdict.build(sides)
    row = {r.metric.name: r for r in cmp.rows}["ipistorm.ipis_per_call"]
    assert [m.mean for m in row.summaries] == [1.0, 0.0]
    assert row.changes[1].why_not != "1 apart", row.changes[1]


def test_counts_one_apart_are_equal(tmp_path):
    """lkp-tests' changed_stat: integer counts whose ranges lie exactly 1
    apart are not a change."""
    d = copy_series("base", tmp_path)
    edit_runs(d, lambda doc: doc["result"].update(
        {"handled.1": doc["result"]["handled.1"] + 1}))
    other = runs.load_series(d)
    for i, r in enumerate(other.runs):
        r["env"]["boot_id"] = f"x{i}"
    cmp = verdict.build([booted("base"), other])
    c = {r.metric.name: r for r in cmp.rows}["ipistorm.handled"].changes[1]
    assert not c.significant and c.why_not == "1 apart"


def test_json_output():
    cmp = verdict.build([booted("base"), booted("poll"), booted("old")],
                        force=True)
    doc = compare.to_json(cmp)
    text = json.dumps(doc, allow_nan=False)      # strict JSON, no NaN
    doc = json.loads(text)
    assert doc["kind"] == "storm-compare"
    assert doc["baseline"] == L["base"]
    assert doc["candidates"] == [L["poll"], L["old"]]
    assert doc["test_name"] == "Welch's t-test on per-boot summaries"
    assert doc["confidence"] == 0.95
    for name in ("ipistorm.runtime_ns", "interrupts.CAL:Function_call_interrupts",
                 TARGET_CAL, "ipistorm.latency.p99_ns",
                 "ipistorm.time_per_call_ns", "ipistorm.ipis_per_call"):
        assert name in doc["metrics"], name
        assert name in doc["stats"][L["poll"]]
        # lkp's matrix.json: one value per run, whose mean is the stat
        per_run = doc["matrix"][L["poll"]][name]
        assert len(per_run) == doc["sets"][1]["runs"]
        assert sum(per_run) / len(per_run) == pytest.approx(
            doc["stats"][L["poll"]][name])
    m = doc["metrics"]["ipistorm.irq.CPU1.CAL"]
    assert set(m["values"]) == {L["base"], L["poll"], L["old"]}
    assert set(m["changes"]) == {L["poll"], L["old"]}
    assert len(m["values"][L["base"]]["samples"]) == 5
    assert len(m["values"][L["base"]]["boots"]) == 5
    assert m["changes"][L["poll"]]["significant"] is True
    v = doc["verdict"]["ipistorm.ipis_per_call"][L["poll"]]
    assert v["ci_low"] < v["pct"] < v["ci_high"] < 0
    assert [s["runs"] for s in doc["sets"]] == [5, 5, len(load("old").runs)]
    assert [s["boots"] for s in doc["sets"]] == [5, 5, len(load("old").runs)]


def test_outputs_written(tmp_path):
    cmp = verdict.build([load("base"), load("poll")])
    files = compare.write_outputs(cmp, compare.render(cmp), tmp_path)
    names = sorted(f.name for f in files)
    stem = "compare-ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"
    assert names == [f"{stem}.json", f"{stem}.png", f"{stem}.txt"]
    assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.loads((tmp_path / f"{stem}.json").read_text())


def test_plot_draws_the_primary_metrics_per_boot_with_intervals(tmp_path):
    """The plot shows what the verdict tests, the primary
    metrics' per-boot numbers, each set's mean and its interval."""
    from scipy import stats as sst
    from stormsuite.report import plot
    cmp = matrix_fixture()
    drawn = plot.panels(cmp)
    assert [r.metric.name for r, _ in drawn] == [
        "ipistorm.time_per_call_ns", "ipistorm.ipis_per_call"]
    time, sides = drawn[0]
    for i, (boots, (c, lo, hi)) in enumerate(sides):
        assert boots == time.boots[i] and len(boots) == 3
        # the centre compare prints; the t interval on the log scale
        assert c == pytest.approx(compare.centre(time, i))
        logs = [math.log(x) for x in boots]
        half = sst.t.ppf(0.975, 2) * stats.stddev(logs) / math.sqrt(3)
        assert lo == pytest.approx(c * math.exp(-half))
        assert hi == pytest.approx(c * math.exp(half))
    c, lo, hi = plot.interval([5.0], False, 0.95)
    assert c == 5 and math.isnan(lo) and math.isnan(hi)
    assert plot.interval([1.0, 3.0], False, 0.95)[0] == 2
    png = tmp_path / "p.png"
    plot.plot(cmp, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def copy_series(key: str, dest: pathlib.Path) -> pathlib.Path:
    src = load(key).dir
    d = dest / L[key] / src.name
    shutil.copytree(src, d)
    return d


def slower(doc: dict, factor: float) -> None:
    """Every call of the run FACTOR times as long: its runtime and the
    calls it timed (ipistorm's primary time is their median)."""
    res = doc["result"]
    for k in list(res):
        if k == "runtime_ns" or k.endswith((".runtime_ns", "latency.min_ns",
                                            "latency.mean_ns",
                                            "latency.max_ns")):
            res[k] = round(res[k] * factor)
        elif k.endswith("latency.hist"):
            res[k] = " ".join(f"{round(int(low) * factor)}:{c}" for low, c in
                              (b.split(":") for b in res[k].split()))


def edit_runs(d: pathlib.Path, fn) -> None:
    for f in d.glob("run-*.json"):
        doc = json.loads(f.read_text())
        fn(doc)
        f.write_text(json.dumps(doc))


def test_refuses_different_parameters(tmp_path):
    d = copy_series("poll", tmp_path)
    edit_runs(d, lambda doc: doc["params"].update(numipi="1000"))
    with pytest.raises(verdict.CompareError, match="refusing"):
        verdict.build([load("base"), runs.load_series(d)])
    proc = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare",
         str(load("base").dir), str(d)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "refusing to compare different storms or parameters" in proc.stderr
    assert "numipi=1000" in proc.stderr


def test_refuses_different_storms(tmp_path):
    d = copy_series("poll", tmp_path)
    edit_runs(d, lambda doc: doc.update(storm="tlbstorm"))
    with pytest.raises(verdict.CompareError, match="tlbstorm"):
        verdict.build([load("base"), runs.load_series(d)])


def test_labels_with_nothing_in_common_are_refused(tmp_path):
    d = copy_series("poll", tmp_path)
    edit_runs(d, lambda doc: doc["params"].update(delay="0"))
    sides = [runs.resolve(L["base"], RUNS), runs.resolve(L["poll"], tmp_path)]
    assert compare.pair(sides)          # one series each: paired as given
    other = d.parent / "ipistorm-more"
    shutil.copytree(d, other)
    sides[1] = runs.resolve(L["poll"], tmp_path)
    with pytest.raises(verdict.CompareError, match="no storm with the same"):
        compare.pair(sides)


def test_mixed_directory_is_refused(tmp_path):
    d = copy_series("poll", tmp_path)
    f = sorted(d.glob("run-*.json"))[0]
    doc = json.loads(f.read_text())
    doc["params"]["numipi"] = "7"
    f.write_text(json.dumps(doc))
    with pytest.raises(runs.RunError, match="different storms or parameters"):
        runs.load_series(d)


def test_environments_that_move_the_numbers_are_refused(tmp_path):
    d = copy_series("poll", tmp_path)
    edit_runs(d, lambda doc: doc["env"].update(cpu_count=8,
                                                accel="tcg,thread=multi"))
    with pytest.raises(verdict.CompareError) as e:
        verdict.build([load("base"), runs.load_series(d)])
    assert "cpu_count" in str(e.value) and "accel" in str(e.value)
    assert "--force" in str(e.value)
    cmp = verdict.build([load("base"), runs.load_series(d)], force=True)
    text = compare.render(cmp)
    assert "warning: compared although cpu_count" in text
    proc = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare",
         str(load("base").dir), str(d)], capture_output=True, text=True)
    assert proc.returncode == 2 and "accel: " in proc.stderr


def test_a_directory_is_read_one_series_at_a_time(tmp_path):
    d = copy_series("poll", tmp_path)
    files = sorted(d.glob("run-*.json"))
    for i, f in enumerate(files):
        doc = json.loads(f.read_text())
        doc["run"]["series"] = "old-series" if i < 2 else "new-series"
        doc["run"]["started"] = f"2026-11-2{i}T00:00:00Z"
        f.write_text(json.dumps(doc))
    s = runs.load_series(d)
    assert len(s.runs) == 3 and s.series_ids == ["new-series"]
    assert s.left_out == ["old-series"]
    assert len(runs.load_series(d, series="old").runs) == 2
    assert len(runs.load_series(d, pool=True).runs) == 5
    [picked] = runs.resolve(f"{d}@old", tmp_path)
    assert picked.series_ids == ["old-series"]
    cmp = verdict.build([load("base"), s])
    assert any("1 older series left out" in w for w in cmp.warnings)


def with_boot_ids(d: pathlib.Path, prefix: str) -> None:
    for i, f in enumerate(sorted(d.glob("run-*.json"))):
        doc = json.loads(f.read_text())
        doc["env"]["boot_id"] = f"{prefix}{i}"
        f.write_text(json.dumps(doc))


def test_fail_above_gates_on_the_primary_time(tmp_path):
    d = copy_series("base", tmp_path)
    # x4: bucket lows times 4 are those two octaves up, widths times 4
    edit_runs(d, lambda doc: slower(doc, 4))
    with_boot_ids(d, "slow")
    base = copy_series("base", tmp_path / "b")
    with_boot_ids(base, "base")
    storm = [str(REPO / "scripts" / "storm"), "compare"]
    ok = subprocess.run(storm + ["--fail-above", "350", str(base), str(d)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(storm + ["--fail-above", "10", str(base), str(d)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and \
        "ipistorm.time_per_call_ns got worse by +300.0%, more than 10%" \
        in bad.stderr
    line = next(x for x in bad.stdout.splitlines()
                if x.startswith("time per call"))
    assert "+300.0% [" in line


def test_fail_above_gates_on_every_primary_metric(tmp_path):
    """Twice the IPIs per call, at the same time per call: --fail-above
    fails on the count as it does on the time."""
    d = copy_series("base", tmp_path)

    def twice(doc: dict) -> None:
        for k, v in list(doc["result"].items()):
            if k.startswith("irq.") and k.endswith(".CAL"):
                doc["result"][k] = 2 * v
    edit_runs(d, twice)
    with_boot_ids(d, "twice")
    base = copy_series("base", tmp_path / "b")
    with_boot_ids(base, "base")
    rc = compare.exit_status([verdict.build([runs.load_series(base),
                                             runs.load_series(d)])], 50)
    assert rc == compare.EXIT_REGRESSION
    cmp = verdict.build([runs.load_series(base), runs.load_series(d)])
    assert [(m, round(p)) for _, m, p in cmp.regressed(50)] == \
        [("ipistorm.ipis_per_call", 100)]


def test_traced_runs_are_left_out(tmp_path):
    d = copy_series("poll", tmp_path)
    f = sorted(d.glob("run-*.json"))[0]
    doc = json.loads(f.read_text())
    doc["run"].update(traced=True, kind="trace")
    doc["result"]["runtime_ns"] *= 10
    (d / "run-99991231T000000Z-9.json").write_text(json.dumps(doc))
    s = runs.load_series(d)
    assert len(s.runs) == 5 and len(s.traced) == 1


def test_not_a_run_file(tmp_path):
    f = tmp_path / "run-x.json"
    f.write_text('{"kind": "something else"}')
    with pytest.raises(runs.RunError, match="not a storm run file"):
        runs.load_run(f)
    f.write_text("{")
    with pytest.raises(runs.RunError, match="not a readable run"):
        runs.load_run(f)


def test_unknown_label():
    with pytest.raises(runs.RunError, match="no such label"):
        runs.resolve("no-such-label", RUNS)


def test_compare_cli(tmp_path):
    proc = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare", "--results", str(RUNS),
         "--out", str(tmp_path), L["base"], L["poll"]],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert TARGET_CAL in proc.stdout
    assert len(list(tmp_path.iterdir())) == 3
    assert "wrote" in proc.stderr


@pytest.mark.parametrize("sub", ["compare", "matrix", "run", "report", "simulate"])
def test_help(sub):
    proc = subprocess.run([str(REPO / "scripts" / "storm"), sub, "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and f"storm {sub}" in proc.stdout


def test_bad_confidence():
    proc = subprocess.run([str(REPO / "scripts" / "storm"), "compare",
                           "--confidence", "95", "a", "b"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--confidence" in proc.stderr


# ---------------------------------------------------------------------
# matrix, with a stand-in for the guests

def test_matrix_labels():
    assert matrix.label_for("6.1.0-56-amd64", "") == "6.1.0-56-amd64"
    assert matrix.label_for("6.1.0-56-amd64", "idle=poll") == \
        "6.1.0-56-amd64_idle=poll"
    assert matrix.label_for("6.12.1", "idle=poll  nohz_full=1-3") == \
        "6.12.1_idle=poll,nohz_full=1-3"
    assert matrix.label_for("6.12.1", "a/b") == "6.12.1_a_b"


def fake_guests(monkeypatch, tmp_path, edit) -> tuple[list, str]:
    """storm matrix with its guests replaced: each boot returns copies of
    the captured runs of EDIT(boot, doc)'s choosing (it edits the run
    file's document and names the captured set: "base" or "poll"), with
    the boot's id and series. ([(boot, concurrent_with)], the release.)"""
    made = []

    class K:
        def __init__(self, release):
            self.release = release

    release = L["base"]
    monkeypatch.setattr(matrix.machines.kernels, "resolve", lambda spec, **kw: K(release))
    monkeypatch.setattr(matrix.guest, "build_modules", lambda k, arch="x86_64": None)

    def fake_run_storm(boot, *, runs, warmup, results,
                       concurrent_with="", extra=(), prefix=""):
        made.append((boot, concurrent_with))
        key = edit(boot, None)
        files = []
        for i, f in enumerate(sorted(load(key).dir.glob("run-*.json"))):
            doc = json.loads(f.read_text())
            edit(boot, doc)
            doc["env"]["boot_id"] = boot.name
            doc["run"]["series"] = boot.series
            out = (tmp_path / "res" / boot.label
                   / f"run-{boot.name[-3]}-{i}.json")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(doc))
            files.append(out)
        return matrix.guest.BootResult(boot, files, 1.0, concurrent_with)

    monkeypatch.setattr(matrix.guest, "run_storm", fake_run_storm)
    return made, release


def test_matrix_end_to_end(monkeypatch, tmp_path, capsys):
    """Two combinations, two boots each, interleaved; the guests are
    replaced by copies of the captured runs with boot ids."""
    def edit(boot, doc):
        assert boot.steps == (matrix.guest.Step("ipistorm", (
            "numipi=500", "single=1", "wait=1", "cpulist=0", "offset=1",
            "delay=50")),)
        return "poll" if boot.guest.append else "base"

    made, release = fake_guests(monkeypatch, tmp_path, edit)
    rc = matrix.main(["--append", "", "--append", "idle=poll", "--runs", "5",
                      "--boots", "2", "--cpus", "4", "--out", str(tmp_path),
                      "ipistorm", "numipi=500", "single=1", "wait=1",
                      "cpulist=0", "offset=1", "delay=50"])
    assert rc == 0
    names = [b.name for b, _ in made]
    # interleaved, each concurrent pair holds one boot of each side, and
    # the side launched first takes turns
    assert names == [f"{release} boot 1/2", f"{release}_idle=poll boot 1/2",
                     f"{release}_idle=poll boot 2/2", f"{release} boot 2/2"]
    assert made[0][1] == names[1] and made[1][1] == names[0]
    assert made[0][0].guest.no_build
    out = capsys.readouterr()
    assert "2+2 boots x 5 runs" in out.out
    assert "total" in out.err
    assert len(list(tmp_path.glob("compare-*"))) == 3


def test_interleave_takes_turns_launching_first():
    """Over rounds, every side is launched first equally often (up to one
    round), so a cost of the first slot lands on all sides."""
    sides = [[f"{side}{i}" for i in range(1, 7)] for side in "ABC"]
    order = matrix.guest.interleave(sides)
    assert order[:9] == ["A1", "B1", "C1", "B2", "C2", "A2", "C3", "A3",
                         "B3"]
    firsts = [order[k] for k in range(0, len(order), 3)]
    assert sorted(f[0] for f in firsts) == sorted("AABBCC")
    pairs = matrix.guest.interleave([["A1", "A2", "A3"], ["B1", "B2"]])
    assert pairs == ["A1", "B1", "B2", "A2", "A3"]


def test_matrix_dry_run(monkeypatch, capsys):
    class K:
        release = "6.1.0-56-amd64"
    monkeypatch.setattr(matrix.machines.kernels, "resolve", lambda spec, **kw: K())
    assert matrix.main(["--kernel", "6.1", "--kernel", "6.12", "--dry-run",
                        "ipistorm"]) == 0
    out = capsys.readouterr().out
    assert "2 sides x 3 boots = 6 boots (2 at a time)" in out
    assert "about" in out and "min" in out


def test_matrix_aa_labels():
    assert matrix.unique_labels(["a", "a", "b"]) == ["a.a", "a.b", "b"]


def test_hmean_is_nan_safe_in_json():
    assert compare._num(math.nan) is None


def test_outputs_are_never_overwritten(tmp_path):
    cmp = verdict.build([booted("base"), booted("poll")])
    first = compare.write_outputs(cmp, "one\n", tmp_path, plot=False)
    second = compare.write_outputs(cmp, "two\n", tmp_path, plot=False)
    assert first[0].read_text() == "one\n" and second[0].read_text() == "two\n"
    assert second[0].name.endswith(".1.txt")


def test_a_busy_host_is_reported(tmp_path):
    d = copy_series("poll", tmp_path)
    edit_runs(d, lambda doc: (doc["env"].update(host_cpus="2"),
                              doc["run"].update(host_load_start="1.5",
                                                host_load_end="5.9")))
    cmp = verdict.build([load("base"), runs.load_series(d)])
    assert any("the host's load reached 5.9 on 2 cores" in w
               for w in cmp.warnings)
    edit_runs(d, lambda doc: doc["run"].update(host_load_end="3.1"))
    cmp = verdict.build([load("base"), runs.load_series(d)])
    assert not any("host's load" in w for w in cmp.warnings)


def test_report_styles():
    """storm report on the captured 6.12 runs, HLT idle against idle=poll:
    the 0-day table and the mmtests table carry compare's numbers (the
    means of the per-boot numbers, its estimate and marker), its verdict
    lines and its warnings."""
    from stormsuite.report import report
    cmp = verdict.build([booted("base"), booted("poll")])
    rows = {r.metric.name: r for r in cmp.rows}
    time = rows["ipistorm.time_per_call_ns"]
    ipis = rows["ipistorm.ipis_per_call"]
    text = report.zeroday(cmp)
    lines = text.splitlines()
    assert lines[0] == ("ipistorm  cpulist=0 delay=50 numipi=500 offset=1 "
                        "single=1 wait=1")
    # compare's verdict lines, as compare prints them
    for v in compare.verdict_block(cmp):
        assert v in lines
    assert any(x.strip() == "%stddev     %change         %stddev"
               for x in lines)
    line = next(x for x in lines if x.endswith("ipistorm.time_per_call_ns"))
    assert f"{time.changes[1].pct:+.2f}%" in line
    assert f"{compare.centre(time, 0):.0f}" in line
    assert f"{compare.centre(time, 1):.0f}" in line
    # the IPIs drop with idle=poll: compare's change, marked
    line = next(x for x in lines if x.endswith("ipistorm.ipis_per_call"))
    assert ipis.changes[1].significant
    assert f"{ipis.changes[1].pct:+.2f}% *" in line
    # and compare's warnings
    flat = " ".join(text.split())
    for w in cmp.warnings:
        assert f"warning: {' '.join(w.split())}" in flat
    assert any("emulation" in w for w in cmp.warnings)
    assert max(len(x) for x in lines) <= compare.WIDTH


def test_report_mmtests_is_compare_kernels_layout():
    """mmtests' compare-kernels: the kernel names split at their first
    '-' over two header lines, a column of 23 per kernel (%12.2f and
    ' (%7.2f%%)', or ' *%7.2f%%*' for a change), stat and name first,
    the comparison positive when better; CoeffVar rows after the means."""
    from stormsuite.report import report
    cmp = verdict.build([booted("base"), booted("poll")])
    rows = {r.metric.name: r for r in cmp.rows}
    time = rows["ipistorm.time_per_call_ns"]
    ipis = rows["ipistorm.ipis_per_call"]
    mm = report.mmtests(cmp)
    lines = mm.splitlines()
    assert compare.verdict_block(cmp)[0] in lines
    head = lines.index("") + len(compare.verdict_block(cmp)) + 2
    first, second = lines[head], lines[head + 1]
    assert first.rstrip().endswith("6.12.117+deb12" + " " * 9 + "6.12.117+deb12")
    assert second.rstrip().endswith("amd64" + " " * 8 + "amd64_idle=poll")
    line = next(x for x in lines
                if x.startswith("Gmean    ipistorm.time_per_call_ns "))
    pct = time.changes[1].pct
    cells = line[len("Gmean    ipistorm.time_per_call_ns "):].lstrip(" ")
    base = f"{compare.centre(time, 0):.2f} (   0.00%)"
    assert cells.startswith(base)
    mark = "*" if time.changes[1].significant else None
    cell = f"{compare.centre(time, 1):12.2f} " + (
        f"*{-pct:7.2f}%*" if mark else f"({-pct:7.2f}%)")
    assert line.endswith(cell), (line, cell)
    # fewer IPIs is better: a positive comparison, between stars
    line = next(x for x in lines
                if x.startswith("Amean    ipistorm.ipis_per_call "))
    assert line.endswith(f"{compare.centre(ipis, 1):12.2f} "
                         f"*{-ipis.changes[1].pct:7.2f}%*")
    assert any(x.startswith("CoeffVar ipistorm.ipis_per_call ")
               for x in lines)
    assert report._mm_head("5.10.0-rc1-vanilla") == ("5.10.0-rc1", "vanilla")
    assert report._mm_head("6.1.0-56-amd64") == ("6.1.0", "56-amd64")
    assert report._mm_head("base") == ("base", "")
    assert "warning: " in mm


@pytest.mark.parametrize("style", ["0day", "mmtests"])
def test_report_command_runs_on_the_matrix_fixture(style, capsys):
    """`storm report` itself, argv to exit status, on the committed
    6.1-vs-6.12 boots: it prints the comparison in the style asked for
    (its main once crashed on every input, and no test ran it)."""
    from stormsuite.report import report
    data = REPO / "tests" / "data" / "boots" / "matrix-6.1-6.12"
    rc = report.main(["--style", style, str(data / "6.1.0-56-amd64"),
                      str(data / "6.12.117+deb12-amd64")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ipistorm.ipis_per_call" in out or "IPIs per call" in out
    assert ("%stddev" in out) == (style == "0day")
    assert ("CoeffVar" in out) == (style == "mmtests")
    assert max(len(x) for x in out.splitlines()) <= compare.WIDTH
    rc = report.main(["--style", style, "--metrics", "ipis_per",
                      str(data / "6.1.0-56-amd64"),
                      str(data / "6.12.117+deb12-amd64")])
    out = capsys.readouterr().out
    assert rc == 0 and "ipistorm.ipis_per_call" in out
    assert "ipistorm.time_per_call_ns " not in out


def test_report_of_one_boot_a_side_says_so():
    """A box workflow's sets (one boot each): the report carries compare's
    ~ and its warning, not a bare number."""
    from stormsuite.report import report
    cmp = verdict.build([load("base"), load("poll")])
    text = report.zeroday(cmp)
    assert "fewer than 2 boots a side" in text
    assert "one boot: no test is possible" in text


def test_the_box_workflow_gives_a_verdict(tmp_path):
    """On a test box: `storm run --series ID` once per boot of each
    kernel, into one label, then compare. The runs of one series group
    by boot, and the verdict is tested (no "fewer than 2 boots")."""
    sides = []
    for key, name in (("base", "box-a"), ("poll", "box-b")):
        d = copy_series(key, tmp_path / name)
        files = sorted(d.glob("run-*.json"))
        for i, f in enumerate(files[:4]):
            doc = json.loads(f.read_text())
            doc["run"]["series"] = f"{name}-series"
            doc["env"]["boot_id"] = f"{name}-boot{i // 2}"
            f.write_text(json.dumps(doc))
        for f in files[4:]:
            f.unlink()
        sides.append(runs.load_series(d))
    assert [len(s.boots) for s in sides] == [2, 2]
    cmp = verdict.build(sides)
    c = {r.metric.name: r for r in cmp.rows}["ipistorm.ipis_per_call"]
    assert c.changes[1].significant
    assert not any("one boot" in w for w in cmp.warnings)


def test_matrix_vary_a_parameter(monkeypatch, tmp_path, capsys):
    """--vary handler_ns=0,250: one kernel, two sides that differ in the
    module parameter only; compare takes them (they differ by design)
    and calls what the parameter costs."""
    def edit(boot, doc):
        [step] = boot.steps
        params = dict(p.split("=", 1) for p in step.params)
        if doc is not None:
            doc["params"] = params
            doc["result"]["param.handler_ns"] = int(params["handler_ns"])
            # the handler's 250 ns on every call, and some boot noise
            slower(doc, (1.5 if params["handler_ns"] == "250" else 1.0)
                   * (1 + 0.01 * (int(boot.name[-3]) % 3)))
        return "base"

    made_with, release = fake_guests(monkeypatch, tmp_path, edit)
    rc = matrix.main(["--vary", "handler_ns=0,250", "--runs", "5",
                      "--boots", "3", "--out", str(tmp_path),
                      "ipistorm", "numipi=500", "single=1", "wait=1"])
    assert rc == 0
    made = [b for b, _ in made_with]
    assert {b.label for b in made} == {f"{release}_handler_ns=0",
                                       f"{release}_handler_ns=250"}
    assert {b.steps[0].params for b in made} == {
        ("numipi=500", "single=1", "wait=1", "handler_ns=0"),
        ("numipi=500", "single=1", "wait=1", "handler_ns=250")}
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("time per call"))
    assert re.search(r"\+(4[5-9]|5[0-5])\.\d% \[", line), line
    assert "3+3 boots x 5 runs" in line
    assert "differ in handler_ns (0, 250) by design" in out
    assert "resolved parameters differently" not in out


def test_matrix_vary_needs_two_values():
    with pytest.raises(ValueError):
        matrix.parse_vary("handler_ns=0")
    with pytest.raises(ValueError):
        matrix.parse_vary("handler_ns")
    assert matrix.parse_vary("handler_ns=0,250") == ("handler_ns",
                                                     ["0", "250"])


def test_a_boots_number_is_its_fastest_run_only_under_emulation(tmp_path):
    """Under TCG noise only slows a run down (the fastest run is the
    primary time's per-boot number, its median the twin row); on KVM or
    hardware that is not shown, and the median run is the number, the
    fastest the twin."""
    def time_rows(cmp):
        return {r.metric.name: r for r in cmp.rows
                if r.metric.name.startswith("ipistorm.time_per_call_ns")}
    tcg = time_rows(matrix_fixture())
    assert tcg["ipistorm.time_per_call_ns"].summary == "min"
    assert tcg["ipistorm.time_per_call_ns.median_of_runs"].summary == "median"
    assert "ipistorm.time_per_call_ns.fastest_of_runs" not in tcg
    sides = []
    for kernel in ("6.1.0-56-amd64", "6.12.117+deb12-amd64"):
        src = next((MATRIX / kernel).iterdir())
        d = tmp_path / kernel / src.name
        shutil.copytree(src, d)
        edit_runs(d, lambda doc: doc["env"].update(virtualization="kvm"))
        sides.append(runs.load_series(d))
    kvm = time_rows(verdict.build(sides))
    primary = kvm["ipistorm.time_per_call_ns"]
    twin = kvm["ipistorm.time_per_call_ns.fastest_of_runs"]
    assert primary.summary == "median" and twin.summary == "min"
    assert primary.metric.primary and not twin.metric.primary
    assert "ipistorm.time_per_call_ns.median_of_runs" not in kvm
    for side in range(2):
        groups = primary.run_groups[side]
        assert primary.boots[side] == [stats.boot_summary(g, "median")
                                       for g in groups]
        assert twin.boots[side] == [min(g) for g in groups]
        # the TCG verdict's numbers are the fastest runs of the same boots
        assert tcg["ipistorm.time_per_call_ns"].boots[side] == twin.boots[side]
