"""Kernel log: the problems that fail a run, and a storm's Start of test
and End of test lines."""

from __future__ import annotations

import dataclasses
import re

from .. import storms

# What rcutorture's kvm.sh and this suite treat as a broken kernel. The
# hung-task detector says "blocked for more than N seconds" and names
# hung_task_timeout_secs, so both spellings are caught; a storm's own
# correctness check says "<storm>: check failed: ...".
STORM = "(?:" + "|".join(storms.NAMES) + ")"
CHECK_FAILED = rf"\b{STORM}: check failed:"
PROBLEM = re.compile(r"\bBUG\b|WARNING:|Oops|Call Trace|soft lockup|"
                     r"hung[ _]task|blocked for more than|" + CHECK_FAILED)
# A check failure asked for (ipistorm inject_miscount=1) is announced on
# the line before its report.
CHECK_INJECTED = re.compile(rf"\b{STORM}: check: injected:")
# An allocation failure asked for by fault injection (verbose=1 prints this
# line, without a stack) ...
INJECTED = "FAULT_INJECTION: forcing a failure"
# ... and the kernel's own reports of a failed allocation, which come with
# a stack dump: warn_alloc(), the per-CPU allocator, kmem_cache_create()
# (6.1 names kmem_cache_create_usercopy, 6.12 __kmem_cache_create_args).
ALLOC_FAILURE = re.compile(r"page allocation failure|vmalloc error|"
                           r"allocation failed, size=|"
                           r"kmem_cache_create\w*\(.*\) failed with error")
STACK_END = re.compile(r"</TASK>|---\[ end trace")


def problems(log: str) -> list[str]:
    """Lines that show a kernel problem (BUG, WARNING, Oops, ...). The
    stack dump of an allocation-failure report that follows an injected
    failure is not one: the kernel says it was asked to fail, and says
    where. Every other line of such a block is still scanned. Nor is the
    check failure that follows an injected miscount."""
    out = []
    injected = excused = check_injected = False
    for line in log.splitlines():
        if CHECK_INJECTED.search(line):
            check_injected = True
            continue
        if check_injected and re.search(CHECK_FAILED, line):
            check_injected = False
            continue
        if INJECTED in line:
            injected = True
        elif injected and ALLOC_FAILURE.search(line):
            injected, excused = False, True
        if excused:
            if STACK_END.search(line):
                excused = False
            if "Call Trace" in line and not re.search(
                    r"\bBUG\b|WARNING:|Oops", line):
                continue
        if PROBLEM.search(line):
            out.append(line)
    return out


# A storm's first and last lines, as rcutorture and locktorture print
# theirs: "<module>: Start of test: <param>=<value> ..." once its
# parameters are checked, and "<module>: End of test: SUCCESS: <the same>"
# (or "FAILURE", "FAILURE (<status>)") as the last line of its run.
STORM_LINE = re.compile(r"(\w+): (Start of test|End of test: "
                        r"(?:SUCCESS|FAILURE(?: \(\w+\))?)): (.*)$")


# the kernel's timestamp of a line, in seconds since boot: "[ 6872.152337]"
STAMP = re.compile(r"^\[\s*(\d+\.\d+)\]")


@dataclasses.dataclass(frozen=True)
class StormLine:
    module: str
    tag: str                    # "Start of test", "End of test: SUCCESS"
    params: dict[str, str]
    seconds: float | None = None    # its timestamp, where the log has one


def storm_lines(log: str, module: str | None = None) -> list[StormLine]:
    """Every Start of test and End of test line in the log, in order (of
    @module only, if given), with its parameters."""
    out = []
    for line in log.splitlines():
        m = STORM_LINE.search(line)
        if not m or (module and m.group(1) != module):
            continue
        params = dict(kv.split("=", 1) for kv in m.group(3).split()
                      if "=" in kv)
        stamp = STAMP.match(line)
        out.append(StormLine(m.group(1), m.group(2), params,
                             float(stamp.group(1)) if stamp else None))
    return out
