"""The storm-insn plugin's marker lines -> a run file's insn section.

The plugin (qemu-plugin/storm-insn.c) writes, each time a guest runs a
storm marker (include/storm_mark.h), every vCPU's count of executed
instructions; storm run copies the lines one load wrote into its capture
(the file `insn`):

  mark 5 1 2 5650252705 416744346 654319808 1188324851
  mark 6 2 2 5659409379 425906502 663658563 1197446849

"mark SEQ ID VCPU COUNT0 ... COUNTn-1": ID 1 opens the storm's window
(right after the module's before-snapshot of the interrupt counters),
ID 2 closes it (right before the after-snapshot). The section holds each
CPU's instructions over the window:

  {"source": "tcg-plugin", "cpu": {"0": 9156674, "1": 9161880, ...},
   "marks": {"begin": {"seq": 5, "vcpu": 2}, "end": {"seq": 6, "vcpu": 2}}}

On hardware the module counts with the PMU instead (include/
storm_pmu.h) and writes "insn.source: pmu", "insn.<cpu>: N" and
"cycles.<cpu>: N" into its result; without either, "insn.source: off
(<why>)". of_run() makes the same section from whichever counted:

  {"source": "pmu", "cpu": {...}, "cycles": {...}}
  {"source": "off", "why": "no PMU counter: -2"}

Standard library only: it runs in guests (stormsuite/runfiles/runfile.py).
"""

from __future__ import annotations

from typing import Any

BEGIN, END = 1, 2
SOURCE = "tcg-plugin"
PMU, OFF = "pmu", "off"


class InsnError(ValueError):
    """The lines do not hold exactly one storm window."""


def parse_marks(text: str) -> list[tuple[int, int, int, list[int]]]:
    """(seq, id, vcpu, counts) of every mark line; other lines (the
    plugin's header) are skipped."""
    marks = []
    for line in text.splitlines():
        f = line.split()
        if not f or f[0] != "mark":
            continue
        if len(f) < 5 or not all(x.isdigit() for x in f[1:]):
            raise InsnError(f"not a mark line: {line!r}")
        marks.append((int(f[1]), int(f[2]), int(f[3]),
                      [int(x) for x in f[4:]]))
    return marks


def section(text: str) -> dict[str, Any]:
    """The insn section of a run whose load wrote these lines: one
    window, a begin mark then an end mark."""
    marks = parse_marks(text)
    ids = [m[1] for m in marks]
    if ids != [BEGIN, END]:
        raise InsnError(f"expected one begin and one end mark, got ids "
                        f"{ids} (a storm that ran no window, or another "
                        "storm's marks in the same load)")
    (seq0, _, vcpu0, c0), (seq1, _, vcpu1, c1) = marks
    if len(c0) != len(c1):
        raise InsnError("the two marks count different vCPUs")
    return {"source": SOURCE,
            "cpu": {str(i): b - a for i, (a, b) in enumerate(zip(c0, c1))},
            "marks": {"begin": {"seq": seq0, "vcpu": vcpu0},
                      "end": {"seq": seq1, "vcpu": vcpu1}}}


def _per_cpu(res: dict[str, Any], what: str) -> dict[str, int]:
    out = {}
    for key, value in res.items():
        head, _, cpu = key.partition(".")
        if head == what and cpu.isdigit():
            out[cpu] = int(value)
    return out


def of_run(plugin_text: str | None, res: dict[str, Any]) -> dict[str, Any]:
    """The run file's insn section: the plugin's window when it ran
    (plugin_text: the capture's marker lines), else the module's PMU
    counts, else why nothing counted."""
    if plugin_text is not None:
        return section(plugin_text)
    source = str(res.get("insn.source", ""))
    if source == PMU:
        return {"source": PMU, "cpu": _per_cpu(res, "insn"),
                "cycles": _per_cpu(res, "cycles")}
    why = source.partition("(")[2].rstrip(")") if source else \
        "the module does not count (older module)"
    return {"source": OFF, "why": why}
