"""Kernel log: the problems that fail a run."""

from __future__ import annotations

import re

# What rcutorture's kvm.sh and this suite treat as a broken kernel. The
# hung-task detector says "blocked for more than N seconds" and names
# hung_task_timeout_secs, so both spellings are caught.
PROBLEM = re.compile(r"\bBUG\b|WARNING:|Oops|Call Trace|soft lockup|"
                     r"hung[ _]task|blocked for more than")


def problems(log: str) -> list[str]:
    """Lines that show a kernel problem (BUG, WARNING, Oops, ...)."""
    return [line for line in log.splitlines() if PROBLEM.search(line)]
