"""The storms as lkp-tests programs, without a guest: the stats parse
prints from captured run files, what lkp's own dump-stat makes of them,
storm lkp install into the vendored lkp-tests, `lkp split-job` of the
storms' jobs, and storm compare on lkp result roots that hold stats
only."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

from conftest import REPO
from stormsuite import lkp, lkproot, lkpstats, metrics, runs, sets, verdict

DATA = pathlib.Path(__file__).parent / "data" / "runs"
TARBALL = "lkp-tests-bbbc29c49.tar.gz"
SERIES = "ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"


def lkp_tarball() -> pathlib.Path:
    """lkp-tests' source, vendored: $STORM_LKP_TARBALL, else beside the
    repository (../shared/vendor/), else /work/shared/vendor/. CI has no
    network: without it the tests fail, never skip."""
    candidates = [pathlib.Path(os.environ["STORM_LKP_TARBALL"])] \
        if os.environ.get("STORM_LKP_TARBALL") else []
    candidates += [REPO.parent / "shared" / "vendor" / TARBALL,
                   pathlib.Path("/work/shared/vendor") / TARBALL]
    for c in candidates:
        if c.is_file():
            return c
    pytest.fail(f"no lkp-tests tarball: set STORM_LKP_TARBALL, or put {TARBALL} "
                f"in {candidates[-2].parent} or {candidates[-1].parent}")


def run_files(release: str) -> list[pathlib.Path]:
    return sorted((DATA / release / SERIES).glob("run-*.json"))


@pytest.fixture(scope="module")
def lkp_src(tmp_path_factory) -> pathlib.Path:
    top = tmp_path_factory.mktemp("lkp")
    with tarfile.open(lkp_tarball()) as tar:
        tar.extractall(top)
    src = top / "lkp-tests"
    assert (src / "bin" / "lkp").is_file()
    return src


def parse_output(files: list[pathlib.Path]) -> str:
    """What the program's parse prints for its output (the run files'
    paths, as storm run prints them)."""
    p = subprocess.run([str(REPO / "lkp" / "programs" / "ipistorm" /
                            "parse")], input="".join(f"{f}\n" for f in files)
                       + "storm run: progress on stderr, not a path\n",
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, STORM_SRC=str(REPO)))
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_parse_prints_one_sample_per_run_under_lkp_names():
    files = run_files("6.1.0-56-amd64")
    text = parse_output(files)
    lines = text.splitlines()
    names = [line.partition(": ")[0] for line in lines]
    per_run = len(names) // len(files)
    assert per_run * len(files) == len(names)
    # the same names in every run's block, none with blanks, none under
    # the program's name (lkp adds it)
    assert all(names[i:i + per_run] == names[:per_run]
               for i in range(0, len(names), per_run))
    assert not any(" " in n or n.startswith("ipistorm.") for n in names)
    for line in lines:
        float(line.partition(": ")[2])
    doc = json.loads(files[0].read_text())
    want = {m.name: v for m, v in metrics.of_run(doc).items()}
    got = dict(line.split(": ") for line in lines[:per_run])
    # the suite's own names: <storm>.X as X, /proc's rows as they are
    assert {lkpstats.suite_name("ipistorm", "ipistorm." + n)
            for n in got} == set(want)
    assert float(got["ipis_per_call"]) == want["ipistorm.ipis_per_call"]
    assert "interrupts.CAL:Function_call_interrupts" in got


def test_parse_fails_without_a_run(tmp_path):
    p = subprocess.run([str(REPO / "lkp" / "programs" / "ipistorm" /
                            "parse")], input="nothing\n", capture_output=True,
                       text=True, timeout=60,
                       env=dict(os.environ, STORM_SRC=str(REPO)))
    assert p.returncode == 1 and "no run file" in p.stderr


def test_lkp_names_round_trip():
    for name in ("ipistorm.time_per_call_ns",
                 "interrupts.CAL:Function_call_interrupts",
                 "interrupts.CPU1.CAL:Function_call_interrupts",
                 "ipistorm.irq.CPU1.CAL"):
        assert lkpstats.suite_name(
            "ipistorm", lkpstats.lkp_name("ipistorm", name)) == name
    assert lkpstats.lkp_name("ipistorm", "interrupts.CAL:X") == \
        "ipistorm.interrupts.CAL:X"


def dump_stat(lkp_src: pathlib.Path, root: pathlib.Path, text: str) -> None:
    """lkp's own sbin/dump-stat: the parse's output into <storm>.json."""
    root.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([str(lkp_src / "sbin" / "dump-stat"), "ipistorm"],
                       input=text, capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, LKP_SRC=str(lkp_src),
                                             RESULT_ROOT=str(root)))
    assert p.returncode == 0, p.stderr


def stats_root(lkp_src: pathlib.Path, root: pathlib.Path,
               files: list[pathlib.Path]) -> pathlib.Path:
    """A result root as lkp leaves one, stats only: <storm>.json from
    dump-stat, stats.json their means, job.yaml."""
    dump_stat(lkp_src, root, parse_output(files))
    per_run = json.loads((root / "ipistorm.json").read_text())
    (root / "stats.json").write_text(json.dumps(
        {k: sum(v) / len(v) for k, v in per_run.items()}))
    (root / "job.yaml").write_text(
        "---\nsuite: ipistorm\nipistorm:\n  runs: 5\n  numipi: 500\n"
        "  single: 1\n  wait: 1\n  cpulist: 0\n  offset: 1\n  delay: 50\n"
        "testbox: vm\n")
    return root


def test_dump_stat_takes_every_line(lkp_src, tmp_path):
    files = run_files("6.1.0-56-amd64")
    dump_stat(lkp_src, tmp_path, parse_output(files))
    per_run = json.loads((tmp_path / "ipistorm.json").read_text())
    assert per_run and all(len(v) == len(files) for v in per_run.values())
    assert "ipistorm.time_per_call_ns" in per_run
    assert "ipistorm.interrupts.CAL:Function_call_interrupts" in per_run


def test_compare_reads_stats_only_result_roots(lkp_src, tmp_path):
    """Two kernels' runs as lkp result roots (<commit>/<n>/, stats only):
    storm compare reads them as series, a root a boot."""
    a, b = run_files("6.1.0-56-amd64"), run_files("6.12.117+deb12-amd64")
    for name, files in (("base", a), ("new", b)):
        stats_root(lkp_src, tmp_path / name / "0", files[:3])
        stats_root(lkp_src, tmp_path / name / "1", files[3:])
    base = sets.resolve(str(tmp_path / "base"))
    assert len(base) == 1 and base[0].label == "base"
    s = base[0]
    assert len(s.boots) == 2 and len(s.runs) == len(a)
    assert s.params == {"numipi": "500", "single": "1", "wait": "1",
                        "cpulist": "0", "offset": "1", "delay": "50"}
    new = sets.resolve(str(tmp_path / "new"))[0]
    cmp = verdict.build([s, new], force=True)
    primary = {r.metric.name for r in cmp.primary}
    assert "ipistorm.ipis_per_call" in primary
    # the same numbers as the run files themselves give
    own = runs.load_files(a)
    row = next(r for r in cmp.rows if r.metric.name ==
               "ipistorm.ipis_per_call")
    want = metrics.of_runs(own.runs)[metrics.Metric(
        "ipistorm.ipis_per_call", "count", "")]
    assert row.values[0] == pytest.approx(want)


def test_a_root_with_the_storms_run_files_reads_them(tmp_path):
    root = tmp_path / "0"
    (root / "storm" / "lab" / SERIES).mkdir(parents=True)
    for f in run_files("6.1.0-56-amd64"):
        shutil.copy(f, root / "storm" / "lab" / SERIES / f.name)
    (root / "stats.json").write_text("{}")
    s = lkproot.load_series(root)
    assert len(s.runs) == 5 and "lkp_stats" not in s.runs[0]
    assert s.runs[0]["interrupts"]["rows"]


def test_storm_run_writes_lkp_stats_beside_each_run(tmp_path):
    """runfile.py's stats.json of a run is the parse's stats, named as
    lkp names them."""
    doc = json.loads(run_files("6.1.0-56-amd64")[0].read_text())
    lkpstats.write_stats(tmp_path, doc)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats == lkpstats.stats_of_run(doc)
    assert all(k.startswith("ipistorm.") for k in stats)
    assert lkproot.is_root(tmp_path)


def test_install_into_an_lkp_checkout(lkp_src, tmp_path):
    done = lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    for storm in ("ipistorm", "tlbstorm", "slabstorm"):
        for f in ("run", "parse", "meta.yaml"):
            assert (lkp_src / "programs" / storm / f).is_file()
        assert os.access(lkp_src / "programs" / storm / "run", os.X_OK)
        assert (lkp_src / "jobs" / f"{storm}.yaml").is_file()
    host = (lkp_src / "hosts" / "box1").read_text()
    assert "nr_cpu: " in host and "memory: " in host and "nr_node: " in host
    assert (tmp_path / "benchmarks" / "storm").resolve() == REPO.resolve()
    assert "hosts/box1" in done
    cases = (lkp_src / "etc" / "linux-perf-test-cases").read_text().split()
    assert {"ipistorm", "tlbstorm", "slabstorm"} <= set(cases)
    # what lkp's compare, stats, matrix and bisect KPIs read the
    # direction of a stat from is index-perf-all.yaml
    for name in ("index-perf-all.yaml", "index-perf.yaml"):
        index = (lkp_src / "etc" / name).read_text()
        assert "ipistorm\\.time_per_call_ns: -1\n" in index
        assert "tlbstorm\\.ipis_per_flush: -1\n" in index
    readers = [f for f in ("lib/stats.rb", "sbin/compare", "lib/matrix.rb",
                           "lib/bisect_kpi.rb")
               if (lkp_src / f).is_file()
               and "index-perf-all.yaml" in (lkp_src / f).read_text()]
    assert readers, "lkp-tests no longer reads index-perf-all.yaml"
    # again: nothing breaks, nothing is added twice
    again = lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    assert not {"hosts/box1", "etc/linux-perf-test-cases",
                "etc/index-perf.yaml", "etc/index-perf-all.yaml"} & set(again)
    assert (lkp_src / "etc" / "linux-perf-test-cases").read_text() \
        .split().count("ipistorm") == 1
    with pytest.raises(lkp.InstallError):
        lkp.install(tmp_path, tmp_path / "benchmarks")


@pytest.mark.parametrize("storm", ["ipistorm", "tlbstorm", "slabstorm"])
def test_lkp_splits_the_storms_jobs(lkp_src, tmp_path, storm):
    """lkp reads the programs' parameters from their run headers: each
    job parameter becomes part of the split job (and of its result
    path)."""
    lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    p = subprocess.run([str(lkp_src / "bin" / "lkp"), "split-job", "-o",
                        str(tmp_path), f"jobs/{storm}.yaml"], cwd=lkp_src,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LKP_SRC=str(lkp_src),
                                HOSTNAME="box1"))
    assert p.returncode == 0, p.stderr
    split = list(tmp_path.glob(f"{storm}-*.yaml"))
    assert len(split) == 1, p.stdout + p.stderr
    opts = subprocess.run([str(lkp_src / "bin" / "program-options"),
                           str(lkp_src / "programs" / storm / "run")],
                          capture_output=True, text=True, check=True)
    declared = {line.split()[1] for line in opts.stdout.splitlines()}
    job = (REPO / "lkp" / "jobs" / f"{storm}.yaml").read_text()
    given = {line.split(":")[0].strip() for line in job.splitlines()
             if line.startswith("  ")}
    assert given <= declared and {"runs", "warmup"} <= declared
