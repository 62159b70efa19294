"""Kernel log: problems that fail a run, and the storms' own lines."""

from __future__ import annotations

import dataclasses
import re

# What rcutorture's kvm.sh and this suite treat as a broken kernel. The
# hung-task detector says "blocked for more than N seconds" and names
# hung_task_timeout_secs, so both spellings are caught.
PROBLEM = re.compile(r"\bBUG\b|WARNING:|Oops|Call Trace|soft lockup|"
                     r"hung[ _]task|blocked for more than")
VERDICT = re.compile(r"(\w+): End of test: (SUCCESS|FAILURE)(?: \((.*)\))?")
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")


@dataclasses.dataclass
class Verdict:
    module: str
    success: bool
    note: str | None


def strip_timestamp(line: str) -> str:
    return TIMESTAMP.sub("", line)


def problems(log: str) -> list[str]:
    """Lines that show a kernel problem (BUG, WARNING, Oops, ...)."""
    return [line for line in log.splitlines() if PROBLEM.search(line)]


def module_lines(log: str, module: str) -> list[str]:
    """The lines a module printed, without timestamps or its prefix."""
    prefix = module + ": "
    out = []
    for line in log.splitlines():
        line = strip_timestamp(line)
        if line.startswith(prefix):
            out.append(line[len(prefix):])
    return out


def verdicts(log: str) -> list[Verdict]:
    return [Verdict(m.group(1), m.group(2) == "SUCCESS", m.group(3))
            for m in VERDICT.finditer(log)]
