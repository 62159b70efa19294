"""The instruction counter (qemu-plugin/storm-insn.c) in real guests.

tests/guest/check-insn.sh runs in the full boot of 6.1 and 6.12, which
load the plugin (storm vm's default under TCG), and in the "possible"
boot, which does not (storm vm --no-insn). Its sets of one boot (an A/A
and a known change) run in the first kernel's full boot only
(conftest.ONCE_KERNELS): the verdict on them is the drivers', and the
plugin's exactness, a kernel's own, is the known loop's on each.
"""

from __future__ import annotations

import json

import pytest

from conftest import KERNELS, ONCE_KERNELS, assert_clean, boot
from stormsuite.analysis import verdict
from stormsuite.runfiles import insn, metrics, runs
# the one CPU a single=1 case calls, by ipistorm's rule
from test_ipistorm_guest import target

LOOPS = (1000, 2000, 1000, 101000)   # check-insn.sh's loads, in order
LOOP_CPU = 1                        # taskset -c 1 insmod
INSNS_PER_LOOP = 2                  # dec, jnz


def loop_counts(guest) -> list[dict[int, int]]:
    case = guest.case("insn")
    out = []
    for i, n in enumerate(LOOPS, 1):
        assert case.file(f"loop-{i}.rc").strip() == "0", \
            case.file(f"loop-{i}.err")
        sec = insn.section(case.file(f"loop-{i}-{n}"))
        assert sec["marks"]["begin"]["vcpu"] == LOOP_CPU
        assert sec["marks"]["end"]["vcpu"] == LOOP_CPU
        out.append({int(c): v for c, v in sec["cpu"].items()})
    return out


def test_known_loop_is_counted_exactly(guest):
    """2 instructions an iteration, nothing else on that CPU between the
    markers (interrupts are off): the same load counts the same, and
    loads differ by exactly 2 x the difference in iterations."""
    c = [x[LOOP_CPU] for x in loop_counts(guest)]
    assert c[0] == c[2], c
    assert c[1] - c[0] == INSNS_PER_LOOP * (LOOPS[1] - LOOPS[0]), c
    assert c[3] - c[0] == INSNS_PER_LOOP * (LOOPS[3] - LOOPS[0]), c
    # the constant is the marker blocks' own length: small
    assert 0 < c[0] - INSNS_PER_LOOP * LOOPS[0] < 100, c


def test_other_vcpus_are_snapshotted_not_counted(guest):
    """With one TCG thread, no other vCPU runs while a CPU's interrupts
    are off and it spins: the window is exact on every vCPU, and the
    others run at most what they ran before it opened."""
    for counts in loop_counts(guest):
        assert sorted(counts) == [0, 1, 2, 3]
        assert counts[LOOP_CPU] >= INSNS_PER_LOOP * 1000


def test_refused_load_runs_no_window(guest):
    case = guest.case("insn")
    assert case.file("loop-refused.rc").strip() != "0"
    assert "must be 1 to" in guest.dmesg
    assert insn.parse_marks(case.file("loop-refused")) == []


# each set of check-insn.sh: 2 rounds of 5 runs in the boot that runs its
# sets once (conftest.ONCE_KERNELS); one set of 3 runs in the others
RUNS, RUNS_NOT_ONCE = 10, 3
CALLS = 20000


def run_files(guest, label="a0") -> list[dict]:
    case = guest.case("insn")
    assert case.file(f"ab-{label}.rc").strip() == "0", \
        case.file(f"ab-{label}.out")
    files = sorted((case.dir / "ab" / label).rglob("run-*.json"))
    runs_made = RUNS if guest.kernel in ONCE_KERNELS else RUNS_NOT_ONCE
    assert len(files) == runs_made, files
    docs = [json.loads(f.read_text()) for f in files]
    assert {d["run"]["series"] for d in docs} == {f"insn-{label}"}
    return docs


def test_run_files_carry_the_window(guest):
    for run in run_files(guest):
        assert run["env"]["insn_source"] == "tcg-plugin"
        assert "nohz=off" in run["env"]["cmdline"]
        sec = run["insn"]
        assert sec["source"] == "tcg-plugin"
        assert sorted(int(c) for c in sec["cpu"]) == [0, 1, 2, 3]
        m = {k.name: v for k, v in metrics.of_run(run).items()}
        # calls from CPU 0 to CPU 1, each waited for: the sender
        # runs the call path, the target the interrupt and the handler;
        # both take at least tens of instructions a call, and a call
        # with its interrupt takes far fewer than a tick's thousands
        sender = m["ipistorm.insn_per_call.sender"]
        target = m["ipistorm.insn_per_call.target"]
        assert 20 < sender < 2000, m
        assert 20 < target < 5000, m
        assert m["ipistorm.insn.CPU0"] == pytest.approx(sender * CALLS)
        assert m["ipistorm.insn_per_call"] == pytest.approx(sender + target)
        # the ticks on the row's CPUs, for the verdict's correction
        assert m["ipistorm.ticks_per_call.sender"] == \
            int(run["result"]["irq.0.LOC"]) / CALLS


def test_instructions_are_primary_time_secondary(guest):
    run = run_files(guest)[0]
    roles = {k.name: k.role for k in metrics.of_run(run)}
    assert roles["ipistorm.insn_per_call.sender"] == "primary"
    assert roles["ipistorm.insn_per_call.target"] == "primary"
    assert roles["ipistorm.time_per_call_ns"] == "secondary"
    assert roles["ipistorm.ipis_per_call"] == "primary"


@pytest.mark.boots("possible")
@pytest.mark.parametrize("kernel", KERNELS)
def test_markers_are_harmless_without_the_plugin(kernel):
    g = boot(kernel, "maxcpus=2", "possible", 3)
    assert g.case("insn").file("log").strip() == ""
    case = g.case("insn_off")
    assert case.rc == 0, case.stderr
    assert case.result["status"] == "done"
    to = target(case, case.result)
    assert int(case.result[f"irq.{to}.CAL"]) >= case.param("numipi") * 0.99
    # TCG emulates no PMU: the module says so instead of counting zeros
    assert case.result["insn.source"].startswith("off (no PMU counter: ")
    assert not any(k.startswith(("insn.", "cycles.")) and k[-1].isdigit()
                   for k in case.result)
    assert_clean(case.dmesg)


def series(guest, label):
    run_files(guest, label)
    files = sorted((guest.case("insn").dir / "ab" / label).rglob("run-*.json"))
    return runs.load_files(files, label)


def insn_changes(cmp) -> dict[str, object]:
    return {r.metric.name: r.changes[1] for r in cmp.primary
            if r.metric.kind == "insn"}


def test_aa_in_one_boot_calls_nothing(guest_once):
    """Two sets of the same storm, their runs interleaved in one boot,
    tested as sets of one boot (no boot-to-boot spread between them): no
    row is called, at 99.9% (a test that must not fail by chance: the
    false-alarm rate at 95% is bounded in test_insn_verdict.py)."""
    cmp = verdict.build([series(guest_once, "a0"),
                         series(guest_once, "b0")], confidence=0.999)
    assert any(w.startswith("measured in the baseline's boot: b0;")
               for w in cmp.warnings), cmp.warnings
    changes = insn_changes(cmp)
    assert set(changes) == {"ipistorm.insn_per_call.sender",
                            "ipistorm.insn_per_call.target"}
    assert not any(c.significant for c in changes.values()), changes
    assert not any(c is not None and c.significant
                   for r in cmp.rows for c in r.changes)


LOOPS_CHANGE = 3        # check-insn.sh's set c3: handler_loops=3


def test_known_instruction_change_is_called(guest_once):
    """handler_loops=3 adds 6 instructions a call on the target (0.55% on
    6.1, 0.7% on 6.12), nothing on the sender: in one boot the target's
    row is called at 99% and its 99.9% interval holds the true change;
    the sender's is not called at 99.9% (the A/A's level above)."""
    sets = [series(guest_once, "a0"), series(guest_once, f"c{LOOPS_CHANGE}")]
    called = verdict.build(sets, confidence=0.99, vary=("handler_loops",))
    cmp = verdict.build(sets, confidence=0.999, vary=("handler_loops",))
    changes = insn_changes(cmp)
    target = changes["ipistorm.insn_per_call.target"]
    base_target = cmp.rows[[r.metric.name for r in cmp.rows].index(
        "ipistorm.insn_per_call.target")].summaries[0].mean
    true_pct = 100 * 2 * LOOPS_CHANGE / base_target
    assert insn_changes(called)["ipistorm.insn_per_call.target"] \
        .significant, insn_changes(called)
    assert target.estimate.lo <= true_pct <= target.estimate.hi, \
        (true_pct, target)
    assert not changes["ipistorm.insn_per_call.sender"].significant
