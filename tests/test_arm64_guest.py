"""The storms in an arm64 guest (storm vm --arch arm64): Debian's arm64
6.12 under emulation, a virt machine with GICv3, the instruction counter
on. One boot runs tests/guest/arm64.sh; then an A/A storm matrix --arch
arm64 of 6.12 against itself on instructions, two boots a side.

Under single-threaded TCG with nohz=off (storm vm's counting boot), an
idle target takes exactly one function-call IPI (arm64's IPI1, the
suite's CAL) per call, as on x86. arm64 flushes other CPUs' TLBs by
broadcast TLBI: tlbstorm's flushes take no IPI, and its result says so.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

import conftest
import test_insn_guest
from conftest import Case, GuestRun, assert_clean, assert_start_and_end
from stormsuite import REPO
from stormsuite.runfiles import metrics, result, runs
# what a case ran is read from arm64.sh (Case.params), and its CPUs by
# ipistorm's own rules, not written again here
from test_ipistorm_guest import CPUS, sender_cpus, target

pytestmark = pytest.mark.guest

KERNEL = "6.12"
OUT = REPO / "build" / "test" / f"arm64-{KERNEL}"
AA_OUT = REPO / "build" / "test" / "arm64-aa"
AA_BOOTS, AA_RUNS = 2, 4
STORM = ["ipistorm", "numipi=2000", "single=1", "wait=1", "cpulist=0",
         "offset=1"]


def arm64_job() -> tuple[int, str, int, str]:
    """The check boot, then the A/A matrix (conftest.GUEST_JOB): storm
    vm's and storm matrix's exit status and output."""
    if conftest.REUSE:
        return (int((OUT / "vm.rc").read_text()),
                (OUT / "vm.log").read_text(),
                int((AA_OUT / "matrix.rc").read_text()),
                (AA_OUT / "matrix.log").read_text())
    for d in (OUT, AA_OUT):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    storm = str(REPO / "scripts" / "storm")
    cmd = [storm, "vm", "--arch", "arm64", "--kernel", KERNEL,
           "--timeout", "900", "--rwdir", str(OUT), "--",
           "env", f"OUT={OUT}", "sh", "tests/guest/arm64.sh"]
    with conftest._guest_slots:
        vm = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                            capture_output=True, timeout=1020)
    (OUT / "vm.log").write_text(vm.stdout + vm.stderr)
    (OUT / "vm.rc").write_text(f"{vm.returncode}\n")
    cmd = [storm, "matrix", "--arch", "arm64", "--kernel", KERNEL,
           "--kernel", KERNEL, "--boots", str(AA_BOOTS), "--runs",
           str(AA_RUNS), "--jobs", "1", "--no-plot", "--results",
           str(AA_OUT / "results"), "--out", str(AA_OUT), *STORM]
    with conftest._guest_slots:
        aa = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                            capture_output=True, timeout=1800)
    (AA_OUT / "matrix.log").write_text(aa.stdout + aa.stderr)
    (AA_OUT / "matrix.rc").write_text(f"{aa.returncode}\n")
    return vm.returncode, vm.stdout + vm.stderr, aa.returncode, aa.stdout


GUEST_JOB = arm64_job


@pytest.fixture(scope="module")
def arm64_run() -> tuple[int, str, int, str]:
    return conftest.start_job(arm64_job).result()


@pytest.fixture(scope="module")
def booted(arm64_run) -> pathlib.Path:
    rc, log, _, _ = arm64_run
    # storm vm scanned the guest's whole dmesg: a splat is exit 3
    assert rc == 0, log[-4000:]
    return OUT


def case(out: pathlib.Path, name: str) -> Case:
    d = out / name
    assert d.is_dir(), f"case {name} did not run"
    return Case(name, d)


def ok(c: Case, storm: str) -> dict[str, str]:
    assert c.rc == 0, f"{c.name}: insmod failed: {c.stderr}"
    res = c.result
    assert res["storm"] == storm and res["status"] == "done", res
    assert res["failures"] == "0"
    assert_clean(c.dmesg)
    assert_start_and_end(c, storm)
    return res


def cal(res: dict[str, str], cpu: int) -> int:
    return int(res[f"irq.{cpu}.CAL"])


def test_the_guest_is_arm64(booted):
    assert (booted / "uname-m").read_text().strip() == "aarch64"


def test_one_ipi_per_call_to_an_idle_target(booted):
    c = case(booted, "a64_single")
    res = ok(c, "ipistorm")
    numipi, to = c.param("numipi"), target(c, res)
    assert res["op"] == "call" and res["op.count"] == c.params["numipi"]
    assert cal(res, to) == numipi
    # /proc/interrupts' IPI1 row counts them too, with what loading and
    # unloading the module sent that CPU (on arm64 a few dozen: the
    # instruction cache maintenance of the module's text)
    moved = c.irq_delta
    assert moved.rows["CAL"].kernel_name == "IPI1"
    assert numipi <= moved.rows["CAL"].counts[to] <= numipi * 1.05


def test_many_all_and_async(booted):
    c = case(booted, "a64_many")
    res = ok(c, "ipistorm")
    # every sender calls every target numipi times
    calls = c.param("numipi") * len(sender_cpus(c))
    for cpu in result.cpulist(c.params["targets"]):
        assert cal(res, cpu) - calls in range(conftest.STRAY_CAL + 1), res
    c = case(booted, "a64_all")
    res = ok(c, "ipistorm")
    # every sender calls every other CPU numipi times
    senders = sender_cpus(c)
    calls = c.param("numipi") * len(senders)
    for cpu in CPUS - senders:
        assert cal(res, cpu) - calls in range(conftest.STRAY_CAL + 1), res
    c = case(booted, "a64_async")
    res = ok(c, "ipistorm")
    # async=1: a call may find the previous one's IPI still pending
    assert 0 < cal(res, target(c, res)) <= c.param("numipi")


def test_sent_counts_match_received(booted):
    """Every call's IPI sent through arm64's send functions (the probes
    say which), and taken: a few more may be sent than taken, as on x86
    (a send to a CPU with one pending merges; another sender's)."""
    c = case(booted, "a64_sent")
    res = ok(c, "ipistorm")
    assert res["sent.source"].split()[1:3] == [
        "arch_send_call_function_ipi_mask",
        "arch_send_call_function_single_ipi"]
    numipi, to = c.param("numipi"), target(c, res)
    assert cal(res, to) == numipi
    assert int(res[f"sent.{to}.CAL"]) - numipi in \
        range(conftest.STRAY_CAL + 1)


def test_handler_loops(booted):
    c = case(booted, "a64_loops")
    res = ok(c, "ipistorm")
    assert cal(res, target(c, res)) == c.param("numipi")


def test_rcustorm_one_ipi_per_busy_cpu_per_grace_period(booted):
    c = case(booted, "a64_rcu")
    res = ok(c, "rcustorm")
    assert res["op"] == "gp"
    numgp = c.param("numgp")
    for cpu in result.cpulist(c.params["busy"]):
        assert cal(res, cpu) - numgp in range(0, conftest.STRAY_CAL), res


def test_slabstorm(booted):
    ok(case(booted, "a64_slab_touched"), "slabstorm")
    ok(case(booted, "a64_slab_remote"), "slabstorm")


@pytest.mark.parametrize("name, param, reason", [
    ("a64_bad_cpu", "cpulist", "not a valid CPU list below 4"),
    ("a64_tlb_inject", "inject_miscount", "this arch flushes by broadcast "
     "TLBI, with no TLB interrupt to check"),
])
def test_a_bad_parameter_is_refused(booted, name, param, reason):
    """As on x86 (conftest.assert_refused), in busybox insmod's words."""
    c = case(booted, name)
    assert c.rc != 0
    assert "can't insert" in c.stderr and "Invalid argument" in c.stderr
    # the log names the parameter refused, as the script gave it
    assert f"{param}={c.params[param]}: {reason}" in c.dmesg
    assert not c.has_result and "End of test" not in c.dmesg
    assert_clean(c.dmesg)


def test_storm_run_writes_run_files_with_instructions(booted):
    assert (booted / "storm-run.rc").read_text().strip() == "0", \
        (booted / "storm-run.log").read_text()
    files = sorted((booted / "results").rglob("run-*.json"))
    assert len(files) == 3
    series = runs.load_files(files, "arm64")
    for run in series.runs:
        assert run["env"]["machine"] == "aarch64"
        assert run["interrupts"]["rows"]["CAL"]["description"] == \
            "Function call interrupts"
        assert run["interrupts"]["rows"]["CAL"]["kernel_name"] == "IPI1"
        assert run["insn"]["source"] == "tcg-plugin"
        assert metrics.ops_of("ipistorm", run["result"]) == 2000
        rows = {m.name: v for m, v in metrics.insn_rows("ipistorm",
                                                        run).items()
                if m.kind == "insn"}
        # the sender's and the target's instructions per call
        assert {"ipistorm.insn_per_call.sender",
                "ipistorm.insn_per_call.target"} <= rows.keys()
        assert all(v > 0 for v in rows.values()), rows


def test_tlbstorm_flushes_take_no_ipi(booted):
    """arm64 invalidates other CPUs' TLBs by broadcast TLBI: the flushes
    are done and counted, the result says no IPI is expected, and the
    flusher (CPU 0, the default cpulist) and the CPUs running the mm
    (a64_tlb_user's targets) take no function-call IPI at all (the idle
    CPU left takes the guest's others)."""
    user = case(booted, "a64_tlb_user")
    quiet = [0, *result.cpulist(user.params["targets"])]
    for name in ("a64_tlb_user", "a64_tlb_kernel"):
        c = case(booted, name)
        res = ok(c, "tlbstorm")
        assert res["flushes"] == res["op.count"] == c.params["numflush"]
        assert res["flush_ipi"] == "none (broadcast TLBI)"
        assert res["counted_in"] == "none" and res["op.ipi_rows"] == "CAL"
        assert res["targets.TLB"] == "0"
        assert [cal(res, cpu) for cpu in quiet] == [0] * len(quiet), res
    # the user-mode check of held flushes says why it is not done
    assert "broadcast TLBI: no IPI" in user.dmesg


def test_the_instruction_counter_counts_a_known_loop_exactly(booted):
    """The arm64 marker (movz xzr) read by the plugin in
    qemu-system-aarch64: a loop of subs, b.ne between two markers counts
    2 an iteration, exactly, as dec, jnz does on x86."""
    run = GuestRun(f"arm64 {KERNEL}", "", booted, 0, "", "")
    counts = [c[test_insn_guest.LOOP_CPU]
              for c in test_insn_guest.loop_counts(run)]
    loops, per = test_insn_guest.LOOPS, test_insn_guest.INSNS_PER_LOOP
    assert counts[0] == counts[2], counts
    assert counts[1] - counts[0] == per * (loops[1] - loops[0]), counts
    assert counts[3] - counts[0] == per * (loops[3] - loops[0]), counts
    # blocks count whole at their entry: the begin marker's block holds
    # the loop's first iteration (counted before the window opens), the
    # end marker's block is counted in it; on arm64 the two cancel (0)
    assert 0 <= counts[0] - per * loops[0] < 100, counts
    assert (booted / "insn" / "loop-refused").read_text() == ""
