"""stormsuite.runfiles.dmesg: what fails a guest run."""

import pathlib

import pytest

from stormsuite.runfiles import dmesg

DATA = pathlib.Path(__file__).parent / "data"


def test_real_interrupted_storm_log():
    log = (DATA / "dmesg-6.1-signal.txt").read_text()
    # an interrupted storm is not a kernel problem
    assert "ipistorm: End of test: FAILURE (interrupted)" in log
    assert dmesg.problems(log) == []


@pytest.mark.parametrize("line", [
    "[   12.1] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[   12.1] WARNING: CPU: 1 PID: 345 at kernel/smp.c:912 smp_call_function_many_cond+0x1/0x2",
    "[   12.1] Oops: 0002 [#1] PREEMPT SMP NOPTI",
    "[   12.1] Call Trace:",
    "[   12.1] watchdog: BUG: soft lockup - CPU#2 stuck for 26s! [ipistorm/0:77]",
    "[   12.1] INFO: task insmod:88 blocked for more than 120 seconds.",
    '[   12.1] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
    "[   12.1] hung task detected",
])
def test_problem_lines_are_caught(line):
    assert dmesg.problems("ok line\n" + line + "\nanother\n") == [line]


def test_debug_is_not_a_bug():
    # a debug kernel's trace_printk banner, and a driver's DEBUG lines
    log = ("[ 1.0] **   trace_printk() being used. Allocating extra memory.  **\n"
           "[ 1.1] NOTICE: this is a DEBUG kernel\n"
           "[ 1.2] DEBUG_LOCKS_WARN_ON counts\n")
    assert dmesg.problems(log) == []
    assert dmesg.problems("[ 2.0] BUG: kernel NULL pointer dereference\n")
    assert dmesg.problems("[ 2.0] kernel BUG at mm/slub.c:42!\n")


INJECTED_BLOCK = """\
[ 5.0] FAULT_INJECTION: forcing a failure.
[ 5.0] name failslab, interval 1, probability 0, space 0, times 1
[ 5.1] kmem_cache_create_usercopy(slabstorm-remote) failed with error -12
[ 5.1] CPU: 0 PID: 91 Comm: python3 Not tainted 6.1.192-storm-debug #1
[ 5.1] Call Trace:
[ 5.1]  <TASK>
[ 5.1]  dump_stack_lvl+0x45/0x5e
[ 5.1]  kmem_cache_create_usercopy+0x1c2/0x2c0
[ 5.1]  </TASK>
"""


def test_an_injected_allocation_failure_report_is_not_a_problem():
    """The stack dump the kernel prints for an allocation that fault
    injection failed on purpose is excused; the same report without the
    injection line before it, a stack after the block, or a WARNING in
    it are problems."""
    assert dmesg.problems(INJECTED_BLOCK) == []
    uninjected = INJECTED_BLOCK.split("\n", 2)[2]
    assert dmesg.problems(uninjected) == ["[ 5.1] Call Trace:"]
    assert dmesg.problems(INJECTED_BLOCK + "[ 6.0] Call Trace:\n") == \
        ["[ 6.0] Call Trace:"]
    warned = INJECTED_BLOCK.replace(
        "[ 5.1] CPU: 0", "[ 5.1] WARNING: CPU: 0 at mm/slab.c:1\n[ 5.1] CPU: 0")
    assert dmesg.problems(warned) == ["[ 5.1] WARNING: CPU: 0 at mm/slab.c:1"]
    # 6.12 names the function that failed otherwise
    assert dmesg.problems(INJECTED_BLOCK.replace(
        "kmem_cache_create_usercopy(", "__kmem_cache_create_args(")) == []
    # an injection line alone excuses nothing that is not such a report
    assert dmesg.problems("[ 5.0] FAULT_INJECTION: forcing a failure.\n"
                          "[ 5.2] Call Trace:\n") == ["[ 5.2] Call Trace:"]


START_END_LOG = """\
[   20.101] ipistorm: Start of test: numipi=1000 timeout=30 wait=1 single=1 async=0 offset=1 mask=0x0 delay=0 handler_ns=0 handler_loops=0 latency=64 background=0 cpulist=0,2-3 targets=1,3 kind=single busy_budget=0 count_sent=0 pmu=1
[   20.202] ipistorm: cpu 0 -> 1: calls=1000 errors=0 time=1 ns per_call=0 ns sampled_min=1 sampled_max=1 ns timed=15 CAL=1000
[   20.203] ipistorm: End of test: SUCCESS: numipi=1000 timeout=30 wait=1 single=1 async=0 offset=1 mask=0x0 delay=0 handler_ns=0 handler_loops=0 latency=64 background=0 cpulist=0,2-3 targets=1,3 kind=single busy_budget=0 count_sent=0 pmu=1
[   21.000] tlbstorm: Start of test: numflush=10 timeout=30 pages=1 mode=user delay=0 latency=1 background=0 cpulist=0 targets=1-3 counted_in=TLB flush_kind=single count_sent=0 pmu=1
[   22.000] tlbstorm: End of test: FAILURE (interrupted): numflush=10 timeout=30 pages=1 mode=user delay=0 latency=1 background=0 cpulist=0 targets=1-3 counted_in=TLB flush_kind=single count_sent=0 pmu=1
[   23.000] slabstorm: End of test: FAILURE: mode=remote numcache=0 numobj=0 timeout=1 objsize=64 fill=1 shrink=0 cpu=-1 latency=1 background=0 cpulist=0-1 count_sent=0 pmu=0
"""


def test_start_and_end_lines_with_their_parameters():
    lines = dmesg.storm_lines(START_END_LOG)
    assert [(x.module, x.tag) for x in lines] == [
        ("ipistorm", "Start of test"),
        ("ipistorm", "End of test: SUCCESS"),
        ("tlbstorm", "Start of test"),
        ("tlbstorm", "End of test: FAILURE (interrupted)"),
        ("slabstorm", "End of test: FAILURE")]
    start, end = lines[:2]
    assert start.params == end.params
    assert start.params["cpulist"] == "0,2-3"
    assert start.params["mask"] == "0x0"
    assert start.params["pmu"] == "1"
    assert len(start.params) == 18
    assert lines[4].params["cpu"] == "-1"
    # the kernel's timestamps, and none where the log has none
    assert [x.seconds for x in lines] == [20.101, 20.203, 21.0, 22.0, 23.0]
    assert dmesg.storm_lines(
        "tlbstorm: End of test: FAILURE: a=1\n")[0].seconds is None


def test_start_and_end_lines_of_one_module():
    assert [x.tag for x in dmesg.storm_lines(START_END_LOG, "tlbstorm")] \
        == ["Start of test", "End of test: FAILURE (interrupted)"]
    # the summary and per-sender lines are not theirs
    assert dmesg.storm_lines("ipistorm: summary: senders=1 calls=5\n") == []


def test_a_failed_check_is_a_problem_unless_injected():
    failed = "[ 9.1] ipistorm: check failed: CPU 2 ran 99 calls, 100 were sent to it"
    assert dmesg.problems(failed) == [failed]
    assert dmesg.problems("[ 9.1] tlbstorm: check failed: x\n") != []
    injected = "[ 9.0] ipistorm: check: injected: CPU 0's count one too many\n"
    assert dmesg.problems(injected + failed) == []
    # the excuse covers one report, not the next
    assert dmesg.problems(injected + failed + "\n" + failed) == [failed]
