"""A storm job through lkp-tests in a guest: lkp-tests installed from its
vendored tarball, the storms installed into it (storm lkp install), one
short ipistorm job split and run with `lkp run` (tests/guest/lkp-job.sh),
and its result root read back: lkp's stats.json, the storm's per-run
stats, and storm compare on the result roots. One boot of Debian 6.1."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import tarfile

import pytest

import conftest
from conftest import REPO
from test_lkp import lkp_tarball

RUNS, NUMIPI = 2, 2000
# No category: lkp adds no monitors (each a process sampling for the whole
# job, and a Ruby parse of its samples after it; Ruby under TCG takes a
# minute a start), and reports the program's stats with its defaults
# (time, dmesg, kmsg, last_state, stderr).
JOB = f"""suite: ipistorm
testcase: ipistorm

ipistorm:
  runs: {RUNS}
  warmup: 0
  numipi: {NUMIPI}
  single: 1
  wait: 1
  cpulist: 0
  offset: 1
"""


def lkp_job() -> tuple[pathlib.Path, subprocess.CompletedProcess]:
    """The guest's work, started at collection (conftest.GUEST_JOB)."""
    tarball = lkp_tarball()
    out = REPO / "build" / "test" / "lkp"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(out)
    (out / "ipistorm-short.yaml").write_text(JOB)
    cmd = [str(REPO / "scripts" / "storm"), "vm", "--kernel", "6.1",
           "--cpus", "2", "--no-insn", "--timeout", "1200", "--rwdir",
           str(out), "--",
           "sh", "tests/guest/lkp-job.sh", str(out),
           str(out / "ipistorm-short.yaml")]
    with conftest._guest_slots:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                              capture_output=True, timeout=1500)
    (out / "vm.log").write_text(proc.stdout + proc.stderr)
    return out, proc


GUEST_JOB = lkp_job


@pytest.fixture(scope="module")
def lkp_run() -> tuple[pathlib.Path, subprocess.CompletedProcess]:
    return conftest.start_job(lkp_job).result()


def result_roots(out: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p.parent for p in (out / "result").rglob("stats.json")
                  if p.parent.name.isdigit())


def test_lkp_run_of_a_storm_job(lkp_run):
    out, proc = lkp_run
    # storm vm fails on a non-zero exit and on a splat in the guest's dmesg
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    roots = result_roots(out)
    assert len(roots) == 1, roots
    root = roots[0]
    # lkp's layout: /lkp/result/<suite>/<params>/<host>/.../<commit>/<n>/
    rel = root.relative_to(out / "result").parts
    assert rel[0] == "ipistorm" and rel[-1] == "0"
    stats = json.loads((root / "stats.json").read_text())
    # one sample per measured run in the program's stats
    per_run = json.loads((root / "ipistorm.json").read_text())
    assert len(per_run["ipistorm.ipis_per_call"]) == RUNS
    # one call from CPU 0 to CPU 1 and back: one IPI each, but for the
    # rare call that finds its target polling (conftest.HLT_IDLE_MISS),
    # and the guest's own stray call-function IPIs to CPU 1 during the
    # storm (conftest.STRAY_CAL)
    assert 1 - conftest.HLT_IDLE_MISS <= stats["ipistorm.ipis_per_call"] \
        <= 1 + conftest.STRAY_CAL / NUMIPI
    cal = stats["ipistorm.interrupts.CAL:Function_call_interrupts"]
    assert cal >= NUMIPI * (1 - conftest.HLT_IDLE_MISS)
    assert stats["ipistorm.time_per_call_ns"] > 0


def test_lkp_stats_are_the_storms_own(lkp_run):
    """What lkp made of the program's output (parse, dump-stat) is, run
    by run, the stats.json storm run wrote beside each run file."""
    out, _ = lkp_run
    root = result_roots(out)[0]
    per_run = json.loads((root / "ipistorm.json").read_text())
    own = [json.loads(f.read_text()) for f in
           sorted((root / "storm").glob("*/*/run-*.raw/stats.json"))]
    assert len(own) == RUNS
    # lkp's dump-stat drops the stats that are 0 in every sample
    zero = {name for name in own[0] if all(s[name] == 0 for s in own)}
    assert set(per_run) == set(own[0]) - zero
    assert "ipistorm.ipis_per_call" in per_run
    for name, samples in per_run.items():
        assert samples == pytest.approx([s[name] for s in own]), name


def test_compare_reads_lkp_result_roots(lkp_run):
    out, _ = lkp_run
    root = result_roots(out)[0]
    proc = subprocess.run(
        [str(REPO / "scripts" / "storm"), "compare", str(root), str(root)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "IPIs per call" in proc.stdout
    assert f"1 boot x {RUNS} runs" in proc.stdout
