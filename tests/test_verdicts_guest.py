"""The verdicts in real guests: an A/A comparison. The same stock 6.12
kernel on both sides, one boot each (storm matrix --kernel 6.12 --kernel
6.12 --boots 1), the storm's parameters those of its calibration on 6.12:
the instruction rows are tested against the calibrated boot spread, and
nothing may be marked a change; the rows one boot a side cannot test say
so. It also checks what every matrix run must hold: the run files it
compared are the ones its boots wrote (series ids, boot ids, the guest
that wrote them), and the environment is recorded.

A single A/A run can only fail to show a false alarm; the rate of false
alarms at one boot a side is measured by simulation with spreads above
and below the calibration's (tests/test_insn_verdict.py). What this one
catches is a pipeline that treats the runs of one boot as independent
samples across boots, ignores the calibration, pools series, or
mislabels sides: those mark the boot-to-boot drift as a change far more
often than 5%. The two-boot designs are simulated
(tests/test_verdicts_sim.py) and run in the box's matrix
(tests/test_box_guest.py).
"""

from __future__ import annotations

import json

import pytest

import conftest

pytestmark = pytest.mark.guest


@pytest.fixture(scope="module")
def aa() -> conftest.MatrixRun:
    return conftest.start_aa().result()


def test_aa_comparison_runs(aa):
    # storm vm scanned each boot's dmesg: a splat fails the matrix
    assert aa.rc == 0, aa.stdout[-3000:] + aa.stderr[-3000:]
    boots = 2 * conftest.AA_BOOTS
    assert f"{boots}/{boots} boots done" in aa.stdout


def test_aa_marks_nothing(aa):
    assert aa.rc == 0, aa.stderr[-3000:]
    table = aa.stdout
    lines = table.splitlines()
    # the guests counted instructions: the verdict lines are the IPIs and
    # the instructions per call of the sender and the target (time is a
    # secondary row under TCG, marked only behind a primary change)
    insn_lines = [x for x in lines if x.startswith("insn per call")]
    assert len(insn_lines) == 2, table
    size = f"1+1 boots x {conftest.AA_RUNS} runs"
    for line in insn_lines:
        assert "  ~  (p=" in line, line
        assert size in line and "boot spread" in line, line
    # the calibration each is tested against (the wrapped line's rest)
    assert table.count(f"calibrated on {conftest.AA_KERNEL}") == 2, table
    # no test of the other rows at one boot a side: ~ without a p-value
    ipis_line = next(x for x in lines if x.startswith("IPIs per call"))
    assert "  ~  (" in ipis_line and "p=" not in ipis_line, ipis_line
    assert size in ipis_line, ipis_line
    marked = [x for x in lines if x.rstrip().endswith(" *")]
    assert not marked, "\n".join(marked)
    doc = json.loads(next(aa.out.glob("compare-*.json")).read_text())
    assert not any(c["significant"] for m in doc["metrics"].values()
                   for c in m["changes"].values())


def test_aa_sides_and_boots(aa):
    assert aa.rc == 0, aa.stderr[-3000:]
    doc = json.loads(next(aa.out.glob("compare-*.json")).read_text())
    labels = [s["label"] for s in doc["sets"]]
    assert labels[0].endswith(".a") and labels[1].endswith(".b")
    assert [s["boots"] for s in doc["sets"]] == [conftest.AA_BOOTS] * 2
    assert [s["runs"] for s in doc["sets"]] == \
        [conftest.AA_BOOTS * conftest.AA_RUNS] * 2
    # one series a side, a boot of its own each
    assert all(len(s["series"]) == 1 for s in doc["sets"])
    boots = set()
    for s in doc["sets"]:
        for name in s["files"]:
            f = next((aa.out / "results" / s["label"]).glob(f"*/{name}"))
            run = json.loads(f.read_text())
            boots.add(run["env"]["boot_id"])
            assert run["env"]["guest_name"].startswith(s["label"])
            assert run["env"]["accel"] == "tcg,thread=single"
            assert run["run"]["series"] == s["series"][0]
    assert len(boots) == 2 * conftest.AA_BOOTS
