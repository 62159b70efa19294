"""stormsuite.dmesg: what fails a guest run."""

import pathlib

import pytest

from stormsuite import dmesg

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
