"""A seed's job file run whole in real guests: seed 003
(seeds/003-broadcast-time-by-vcpu-count.toml), the one that builds no
kernel, at its smallest: Debian's 6.1 in 2-vCPU guests, two boots of one
run. job.py loads it, matrix boots it, answers.py writes the answer, its
JSON and its plot; every broadcast the runs timed is in the answer."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import conftest
from stormsuite import REPO
from stormsuite.runfiles import runs

pytestmark = pytest.mark.guest

OUT = REPO / "build" / "test" / "seed-003"
KERNEL, SIZE, BOOTS, RUNS, NUMIPI = "6.1", 2, 2, 1, 200


def seed_job() -> tuple[int, str]:
    """storm seed 003, one guest at a time in a guest slot
    (conftest.GUEST_JOB): its exit status and output."""
    if conftest.REUSE:
        return int((OUT / "seed.rc").read_text()), \
            (OUT / "seed.log").read_text()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    cmd = [str(REPO / "scripts" / "storm"), "seed", "003", "--sizes",
           str(SIZE), "--kernel", KERNEL, "--boots", str(BOOTS), "--runs",
           str(RUNS), "--numipi", str(NUMIPI), "--jobs", "1", "--results",
           str(OUT / "results")]
    with conftest._guest_slots:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                              capture_output=True,
                              timeout=2 * conftest.GUEST_TIMEOUT)
    (OUT / "seed.log").write_text(proc.stdout + proc.stderr)
    (OUT / "seed.rc").write_text(f"{proc.returncode}\n")
    return proc.returncode, proc.stdout + proc.stderr


GUEST_JOB = seed_job


@pytest.fixture(scope="module")
def seed():
    return conftest.start_job(seed_job).result()


def test_the_job_runs_and_answers(seed):
    rc, log = seed
    assert rc == 0, log[-3000:]
    answers = sorted((OUT / "results").glob("answer-*.txt"))
    assert len(answers) == 1, log[-3000:]
    text = answers[0].read_text()
    assert text.startswith("seed 003: broadcast (smp_call_function_many "
                           f"from CPU 0 to all others, wait=1), ipistorm "
                           f"numipi={NUMIPI} wait=1 cpulist=0 latency=1")
    assert "The seed (64-vCPU Windows guest on Xen" in text
    assert answers[0].with_suffix(".png").stat().st_size > 1000
    doc = json.loads(answers[0].with_suffix(".json").read_text())
    assert doc["seed"] == "003"
    assert doc["job"] == "seeds/003-broadcast-time-by-vcpu-count.toml"
    (cell,) = doc["cells"]
    assert (cell["kernel"], cell["cpus"]) == (KERNEL, SIZE)
    # latency=1: every broadcast of every measured run is timed
    assert cell["broadcasts"] == NUMIPI * RUNS * BOOTS
    assert 0 < cell["mean_us"] <= cell["max_us"]
    assert "boots and runs" in text and "builds" not in text


def test_the_runs_are_the_boots_it_planned(seed):
    """One series, two boots of 2 vCPUs, one measured run each (the
    warm-up keeps no run file), labelled by release and size."""
    assert seed[0] == 0, seed[1][-3000:]
    (side,) = [d for d in (OUT / "results").iterdir() if d.is_dir()]
    assert side.name.endswith(f"_{SIZE}vcpu")
    files = [f for d in side.iterdir() for f in runs.run_files(d)]
    measured = [runs.load_run(f) for f in files]
    assert len(runs.group_boots(measured)) == BOOTS
    assert len(measured) == BOOTS * RUNS
    assert len({d["run"]["series"] for d in measured}) == 1
    for d in measured:
        assert d["run"]["warmup"] == 1
        assert d["params"] == {"numipi": str(NUMIPI), "wait": "1",
                               "cpulist": "0", "latency": "1"}
        assert d["result"]["cpus_online"] == f"0-{SIZE - 1}"
