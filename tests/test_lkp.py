"""The storms as lkp-tests programs, without a guest: the stats parse
prints from captured run files, what lkp's own dump-stat makes of them,
storm lkp install into the vendored lkp-tests, the programs' PKGBUILD
built and packed by lkp's own makepkg against installed kernel headers,
`lkp split-job` of the storms' jobs (arrays fanned out, each job's
parameters reaching insmod through the program's run), lkp's compare and
stats.rb on result roots made from the fixtures, and storm compare on lkp
result roots that hold stats only. lkp's Ruby is scripts/setup's."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
import tempfile

import pytest

from conftest import REPO
from stormsuite import storms
from stormsuite.analysis import verdict
from stormsuite.lkp import install as lkp, programs, modparams
from stormsuite.runfiles import lkproot, lkpstats, metrics, runs, sets

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


@functools.cache
def ipistorm_parse() -> pathlib.Path:
    """ipistorm's lkp program's parse, as storm lkp install writes it."""
    f = pathlib.Path(tempfile.mkdtemp(prefix="lkp-program-")) / "parse"
    f.write_text(programs.program("ipistorm")["parse"])
    f.chmod(0o755)
    return f


def parse_output(files: list[pathlib.Path]) -> str:
    """What the program's parse prints for its output (the run files'
    paths, as storm run prints them)."""
    p = subprocess.run([str(ipistorm_parse())], input="".join(f"{f}\n" for f in files)
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


def test_parse_fails_without_a_run():
    p = subprocess.run([str(ipistorm_parse())], input="nothing\n", capture_output=True,
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
    for storm in storms.NAMES:
        for f in ("run", "parse", "meta.yaml"):
            assert (lkp_src / "programs" / storm / f).is_file()
        assert os.access(lkp_src / "programs" / storm / "run", os.X_OK)
        # the program declares the module's parameters, as modinfo -p
        # lists them, after storm run's own
        opts = subprocess.run(
            [str(lkp_src / "bin" / "program-options"),
             str(lkp_src / "programs" / storm / "run")],
            capture_output=True, text=True, check=True)
        declared = [line.split()[1] for line in opts.stdout.splitlines()]
        ko = modparams.module_file(storm)
        listed = subprocess.run(["modinfo", "-p", str(ko)],
                                capture_output=True, text=True, check=True)
        assert declared == ["runs", "warmup"] + [
            line.partition(":")[0] for line in listed.stdout.splitlines()]
        meta = (lkp_src / "programs" / storm / "meta.yaml").read_text()
        params = meta.split("\nparameters:\n")[1].split("\n\n")[0]
        assert [line.split(":")[0].strip()
                for line in params.splitlines()] == declared
        assert f"\n  {storms.STORMS[storm].time_metric}: " in meta
    for storm in storms.NAMES:
        pkg = lkp_src / "programs" / storm / "pkg"
        build = (pkg / "PKGBUILD").read_text()
        assert f"pkgname={storm}\n" in build and "@" not in build
        assert (f'source=("$pkgname::git+file://{REPO.resolve()}#commit='
                f'{lkp.suite_commit()}")') in build
        assert "make" in (pkg / "depends-dev").read_text().split()
        # lkp install builds a program's pkg/ only where adaptation-pkg
        # lists it
        assert f"{storm}::" in (lkp_src / "distro" / "adaptation-pkg" /
                                "debian").read_text().splitlines()
    host = (lkp_src / "hosts" / "box1").read_text()
    assert "nr_cpu: " in host and "memory: " in host and "nr_node: " in host
    assert (tmp_path / "benchmarks" / "storm").resolve() == REPO.resolve()
    assert "hosts/box1" in done
    cases = (lkp_src / "etc" / "linux-perf-test-cases").read_text().split()
    assert set(storms.NAMES) <= set(cases)
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
                "etc/index-perf.yaml", "etc/index-perf-all.yaml",
                "distro/adaptation-pkg/debian"} & set(again)
    assert (lkp_src / "etc" / "linux-perf-test-cases").read_text() \
        .split().count("ipistorm") == 1
    with pytest.raises(lkp.InstallError):
        lkp.install(tmp_path, tmp_path / "benchmarks")


@pytest.mark.parametrize("storm", storms.NAMES)
def test_lkp_splits_the_storms_jobs(lkp_src, tmp_path, storm):
    """lkp reads the programs' parameters from their run headers: each
    job parameter becomes part of the split job (and of its result
    path)."""
    lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    split_job(lkp_src, tmp_path, f"jobs/{storm}.yaml")
    split = list(tmp_path.glob(f"{storm}-*.yaml"))
    assert len(split) == 1, p.stdout + p.stderr
    opts = subprocess.run([str(lkp_src / "bin" / "program-options"),
                           str(lkp_src / "programs" / storm / "run")],
                          capture_output=True, text=True, check=True)
    declared = {line.split()[1] for line in opts.stdout.splitlines()}
    job = (lkp_src / "jobs" / f"{storm}.yaml").read_text()
    given = {line.split(":")[0].strip() for line in job.splitlines()
             if line.startswith("  ")}
    assert given <= declared and {"runs", "warmup"} <= declared


def kernel_headers() -> tuple[str, pathlib.Path]:
    """An installed kernel's headers to build the package against, 6.1's
    where they are (scripts/setup installs them): (release, KDIR)."""
    found = []
    for kdir in sorted(pathlib.Path("/lib/modules").glob("*/build")):
        uts = kdir / "include" / "generated" / "utsrelease.h"
        m = re.search(r'UTS_RELEASE "(.*)"', uts.read_text()) \
            if uts.is_file() else None
        if m:
            found.append((m.group(1), kdir))
    assert found, "no kernel headers in /lib/modules: run scripts/setup"
    return next((f for f in found if f[0].startswith("6.1.")), found[0])


@pytest.fixture(scope="module")
def package(lkp_src, tmp_path_factory) -> dict:
    """programs/ipistorm/pkg built and packed by lkp's own makepkg, as
    `lkp install` runs it (less -s -i: installing is dpkg -i on this
    host), against installed headers: KDIR, as the suite's make takes it,
    stands for the box's running kernel."""
    top = tmp_path_factory.mktemp("pkg")
    lkp.install(lkp_src, top / "benchmarks", hostname="box1")
    release, kdir = kernel_headers()
    (top / "srcdest").mkdir()
    pkg = lkp_src / "programs" / "ipistorm" / "pkg"
    p = subprocess.run(
        [str(lkp_src / "sbin" / "makepkg"), "--config",
         str(lkp_src / "etc" / "makepkg.conf"), "--skippgpcheck"],
        cwd=pkg, capture_output=True, text=True, timeout=1200,
        env=dict(os.environ, LKP_SRC=str(lkp_src), CARCH="x86_64",
                 PACMAN=str(lkp_src / "sbin" / "pacman-LKP"),
                 BUILDDIR=str(top / "build"), SRCDEST=str(top / "srcdest"),
                 KDIR=str(kdir)))
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return {"release": release, "file": next(pkg.glob("ipistorm-*.pkg.tar.*")),
            # what dpkg -i of the package installs under /
            "root": top / "build" / "ipistorm" / "pkg" / "ipistorm",
            # the suite's tree as the package's build() left it
            "built": top / "build" / "ipistorm" / "src" / "ipistorm"}


def shims(tmp: pathlib.Path, release: str) -> dict[str, str]:
    """The environment of a program's run that stops at insmod: uname -r
    says the package's kernel, and insmod (storm run's STORM_RUN_INSMOD)
    records what it was asked to load, loads nothing and fails."""
    bin_dir = tmp / "shim"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "uname").write_text(
        f'#!/bin/sh\n[ "$1" = -r ] && {{ echo {release}; exit 0; }}\n'
        'exec /bin/uname "$@"\n')
    (bin_dir / "insmod").write_text(
        f'#!/bin/sh\necho "$*" >>{tmp}/insmod.log\nexit 1\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "STORM_SRC"}
    return dict(env, PATH=f"{bin_dir}:{env['PATH']}",
                STORM_RUN_INSMOD=str(bin_dir / "insmod"),
                RESULT_ROOT=str(tmp / "result"))


def insmods(tmp: pathlib.Path) -> list[tuple[str, dict[str, str]]]:
    """What the insmod shim was asked: (module, parameters) each."""
    log = tmp / "insmod.log"
    out = []
    for line in (log.read_text().splitlines() if log.is_file() else []):
        ko, *params = line.split()
        out.append((ko, dict(p.split("=", 1) for p in params)))
    return out


def test_makepkg_packs_the_module_where_the_run_finds_it(lkp_src, package,
                                                         tmp_path):
    release, root = package["release"], package["root"]
    ko = f"lkp/benchmarks/ipistorm/build/{release}/ipistorm.ko"
    with tarfile.open(package["file"]) as tar:
        names = set(tar.getnames())
    assert {ko, "lkp/benchmarks/ipistorm/lkp/run-storm",
            "lkp/benchmarks/ipistorm/scripts/storm-run",
            "lkp/benchmarks/ipistorm/scripts/stormsuite/runfiles/lkpstats.py"} <= names
    # one module a package: the three install side by side
    assert not [n for n in names if n.endswith(".ko") and n != ko]
    vermagic = subprocess.run(["modinfo", "-F", "vermagic", str(root / ko)],
                              capture_output=True, text=True, check=True)
    assert vermagic.stdout.split()[0] == release
    # the program's run, as lkp runs it (the job's parameters in its
    # environment), takes the suite from the package and storm run loads
    # the package's module
    env = dict(shims(tmp_path, release),
               BENCHMARK_ROOT=str(root / "lkp" / "benchmarks"),
               numipi="200", single="1", wait="1", runs="1", warmup="0")
    p = subprocess.run([str(lkp_src / "programs" / "ipistorm" / "run")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "insmod" in p.stderr
    assert insmods(tmp_path) == [(str(root / ko), {
        "numipi": "200", "single": "1", "wait": "1"})]
    # and its parse too
    out = subprocess.run(
        [str(lkp_src / "programs" / "ipistorm" / "parse")],
        input=f"{run_files('6.1.0-56-amd64')[0]}\n", capture_output=True,
        text=True, timeout=60, env=dict(
            os.environ, BENCHMARK_ROOT=str(root / "lkp" / "benchmarks")))
    assert out.returncode == 0 and "ipis_per_call: " in out.stdout


# What lkp split-job makes of lkp/jobs/<storm>-modes.yaml: one job per
# combination of its arrays, each document's on its own: every job has
# COMMON's parameters and exactly one of SPLITS' sets besides.
COMMON = {"ipistorm": dict(runs="5", cpulist="0", wait="1"),
          "tlbstorm": dict(runs="5", numflush="200"),
          "slabstorm": dict(runs="5")}
SPLITS = {
    "ipistorm": [dict(single="1", offset="1", numipi=n) for n in
                 ("2000", "20000")]
    + [dict(single="0", targets="1", numipi=n) for n in ("2000", "20000")]
    + [dict(single="0", numipi=n) for n in ("2000", "20000")],
    "tlbstorm": [dict(mode=m, pages=n) for m in ("user", "kernel")
                 for n in ("1", "16")],
    "slabstorm": [dict(mode=m, numcache=n) for m in ("create", "rcu", "shrink")
                  for n in ("500", "2000")]
    + [dict(mode="remote", numobj="20000")],
}


@pytest.mark.parametrize("storm", sorted(SPLITS))
def test_split_job_fans_out_and_each_job_reaches_insmod(lkp_src, package,
                                                        tmp_path, storm):
    lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    out = tmp_path / "jobs"
    out.mkdir()
    split_job(lkp_src, out, f"jobs/{storm}-modes.yaml")
    jobs = [lkproot.job_section(f, storm) for f in sorted(out.glob("*.yaml"))]
    common = COMMON[storm]
    assert all(common.items() <= job.items() for job in jobs), jobs
    own = [{k: v for k, v in job.items() if k not in common} for job in jobs]
    key = lambda d: sorted(d.items())  # noqa: E731
    assert sorted(own, key=key) == sorted(SPLITS[storm], key=key), p.stdout
    opts = subprocess.run([str(lkp_src / "bin" / "program-options"),
                           str(lkp_src / "programs" / storm / "run")],
                          capture_output=True, text=True, check=True)
    declared = {line.split()[1] for line in opts.stdout.splitlines()}
    # each split job through the program's run, as lkp runs it: the
    # module's parameters are the job's, runs and warmup storm run's
    release = package["release"]
    env = shims(tmp_path, release)
    if storm == "ipistorm":
        env["BENCHMARK_ROOT"] = str(package["root"] / "lkp" / "benchmarks")
        ko = package["root"] / "lkp/benchmarks/ipistorm/build" / release
    else:
        # the package's build() made every module: its tree stands in for
        # the other two packages
        env["STORM_SRC"] = str(package["built"])
        ko = package["built"] / "build" / release
    for job in jobs:
        assert set(job) <= declared
        subprocess.run([str(lkp_src / "programs" / storm / "run")],
                       env=dict(env, **job, warmup="0"), capture_output=True,
                       text=True, timeout=120)
    assert insmods(tmp_path) == [
        (str(ko / f"{storm}.ko"),
         {k: v for k, v in job.items() if k not in ("runs", "warmup")})
        for job in jobs]


def lkp_results(lkp_src: pathlib.Path, top: pathlib.Path) -> list[pathlib.Path]:
    """Two kernels' fixture runs as lkp leaves them, through lkp's own
    steps: each run a job's result root (the program's parse, dump-stat,
    job.yaml), each commit's roots united (sbin/unite-stats) into its
    matrix.json. The two _result_roots: 6.1, 6.12."""
    out = []
    for release, commit in (("6.1.0-56-amd64", "a" * 40),
                            ("6.12.117+deb12-amd64", "b" * 40)):
        _rt = (top / "lkp" / "result" / "ipistorm" / "0-50-500-1-1-1" / "vm" /
               "debian-12" / "defconfig" / "gcc-12" / commit)
        for i, f in enumerate(run_files(release)):
            root = _rt / str(i)
            dump_stat(lkp_src, root, parse_output([f]))
            (root / "job.yaml").write_text(
                "suite: ipistorm\ntestcase: ipistorm\nipistorm:\n"
                "  numipi: 500\n")
            p = subprocess.run(["ruby", "-W0", str(lkp_src / "sbin" /
                                                   "unite-stats"), str(root)],
                               capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, LKP_SRC=str(lkp_src)))
            assert p.returncode == 0, p.stdout + p.stderr
        out.append(_rt)
    return out


# sbin/compare on _result_roots outside /lkp/result: lkp's constant.rb
# fixes RESULT_ROOT_DIR, which compare strips from a root's path to read
# its axes
COMPARE = """
require "#{ENV['LKP_SRC']}/lib/constant"
Object.send(:remove_const, :RESULT_ROOT_DIR)
RESULT_ROOT_DIR = ENV['RESULT_ROOT_DIR']
load "#{ENV['LKP_SRC']}/sbin/compare"
"""

# lkp's own verdict on two _result_roots (lib/stats.rb, as compare,
# bisect and the reports make it): each changed stat, its change, and the
# direction and KPI-ness index-perf-all.yaml gives it
DIRECTION = """
require "#{ENV['LKP_SRC']}/lib/stats"
base, head = ARGV.map { |d| load_json("#{d}/matrix.json") }
(_get_changed_stats(head, base, { 'perf-profile' => 5 }) || {}).each do |k, c|
  pct = 100.0 * (c['mean_a'] - c['mean_b']) / c['mean_b']
  puts format('%s %+.1f%% %s%s', k, pct, kpi_stat_direction(k, pct),
              strict_kpi_stat?(k, nil) ? ' kpi' : '')
end
"""


def test_lkp_compare_reads_the_storms_stats_and_their_direction(lkp_src,
                                                               tmp_path):
    lkp.install(lkp_src, tmp_path / "benchmarks", hostname="box1")
    base, head = lkp_results(lkp_src, tmp_path)
    env = dict(os.environ, LKP_SRC=str(lkp_src),
               RESULT_ROOT_DIR=str(tmp_path / "lkp" / "result"))
    want = {}
    for rt in (base, head):
        m = json.loads((rt / "matrix.json").read_text())
        want[rt] = sum(m["ipistorm.time_per_call_ns"]) / len(
            m["ipistorm.time_per_call_ns"])
        assert len(m["ipistorm.time_per_call_ns"]) == 5
    p = subprocess.run(["ruby", "-W0", "-e", COMPARE, "--", "-f",
                        "ipistorm.time_per_call_ns", str(base), str(head)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    geo = next(line for line in p.stdout.splitlines()
               if line.endswith("GEO-MEAN ipistorm.time_per_call_ns"))
    numbers = [float(x) for x in re.findall(r"\d+\.\d+", geo)]
    assert numbers == [pytest.approx(want[base], abs=0.01),
                       pytest.approx(want[head], abs=0.01)]
    change = round(100 * (want[head] - want[base]) / want[base])
    assert f"{change}%" in geo
    p = subprocess.run(["ruby", "-W0", "-e", DIRECTION, str(base), str(head)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    verdicts = {line.split()[0]: line.split()[2:]
                for line in p.stdout.splitlines()}
    # 6.12's calls were slower in these runs: lower is better, a
    # regression, and a KPI; a stat the index does not list has none
    assert verdicts["ipistorm.time_per_call_ns"] == ["regression", "kpi"]
    assert verdicts["ipistorm.latency.p50_ns"] == ["undefined"]
    p = subprocess.run(["ruby", "-W0", "-e", DIRECTION, str(head), str(base)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert "ipistorm.time_per_call_ns -" in p.stdout
    assert any(line.startswith("ipistorm.time_per_call_ns ")
               and line.endswith(" improvement kpi")
               for line in p.stdout.splitlines())


def split_job(lkp_src: pathlib.Path, out: pathlib.Path, job: str) -> None:
    """lkp's own split-job of JOB into OUT, as on the box (HOSTNAME box1)."""
    p = subprocess.run([str(lkp_src / "bin" / "lkp"), "split-job", "-o",
                        str(out), job], cwd=lkp_src,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, LKP_SRC=str(lkp_src),
                                HOSTNAME="box1"))
    assert p.returncode == 0, p.stderr
