"""/proc/interrupts: every row, per CPU, and the difference of two snapshots.

The suite's one parser of /proc/interrupts: run files get their
"interrupts" section from it (runfile.py), and the guest checks read
their snapshots with it. Standard library only: it also runs inside
guests and on test boxes with nothing but python3.

Row names follow LKP: numbered IRQs by number ("24"), per-CPU vectors by
their tag ("CAL", "TLB", "RES", "LOC", ...). The description is kept so
stats can be named like `interrupts.CAL:Function_call_interrupts`.

arm64 numbers its IPIs (IPI0, IPI1, ...) where x86 tags its vectors;
an IPI that x86 has too takes x86's tag (ARM64_IPI_TAGS), and the
architected timer's per-CPU IRQ is LOC, so that one metric means one
thing on both: IPI1 "Function call interrupts" is CAL. The kernel's own
name stays in Row.kernel_name.
"""

from __future__ import annotations

import dataclasses
import re

# arm64's IPI descriptions (arch/arm64/kernel/smp.c) -> x86's tags
ARM64_IPI_TAGS = {
    "Rescheduling interrupts": "RES",
    "Function call interrupts": "CAL",
    "IRQ work interrupts": "IWI",
}
ARM64_TIMER = "arch_timer"   # the last word of the timer IRQ's row
# one system-wide number, not per CPU: x86's ERR and MIS, arm64's Err
SYSTEM_WIDE = ("ERR", "MIS", "Err")


@dataclasses.dataclass
class Row:
    name: str
    counts: list[int]       # per CPU column
    description: str
    kernel_name: str = ""   # /proc/interrupts' own, where name differs


@dataclasses.dataclass
class Snapshot:
    cpus: list[int]         # CPU numbers of the columns
    rows: dict[str, Row]


def parse(text: str) -> Snapshot:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError("empty /proc/interrupts")
    header = lines[0].split()
    if not header or not all(h.startswith("CPU") for h in header):
        raise ValueError(f"not a /proc/interrupts header: {lines[0]!r}")
    cpus = [int(h[3:]) for h in header]
    rows: dict[str, Row] = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        name = name.strip()
        fields = rest.split()
        counts = []
        for f in fields[:len(cpus)]:
            if not f.isdigit():
                break
            counts.append(int(f))
        description = " ".join(fields[len(counts):])
        if len(counts) == 1 and len(cpus) > 1 and name in SYSTEM_WIDE:
            rows[name] = Row(name, counts, description)
            continue
        counts += [0] * (len(cpus) - len(counts))
        tag = metric_name(name, description)
        rows[tag] = Row(tag, counts, description,
                        name if tag != name else "")
    return Snapshot(cpus=cpus, rows=rows)


def metric_name(name: str, description: str) -> str:
    """The row's name in the suite's metrics: arm64's IPIs by x86's tag
    where x86 has the same IPI, its timer IRQ as LOC; else as is."""
    if re.fullmatch(r"IPI\d+", name):
        return ARM64_IPI_TAGS.get(description, name)
    if name.isdigit() and description.split()[-1:] == [ARM64_TIMER]:
        return "LOC"
    return name


# The kernel's per-CPU interrupt counters are unsigned int: a difference
# is taken modulo 2^32, so a counter that wrapped between the snapshots
# still gives the right count.
COUNTER_MOD = 1 << 32


def _matched(snap: Snapshot, row: Row | None, cpus: list[int]) -> list[int]:
    """row's counts for the CPU numbers cpus (0 where snap has none)."""
    out = []
    for cpu in cpus:
        i = snap.cpus.index(cpu) if cpu in snap.cpus else -1
        out.append(row.counts[i] if row is not None
                   and 0 <= i < len(row.counts) else 0)
    return out


def _columns(snap: Snapshot, row: Row) -> list[int]:
    """The CPU numbers of row's columns: ERR and MIS, one system-wide
    number, have one."""
    if len(row.counts) == 1 and row.name in SYSTEM_WIDE:
        return snap.cpus[:1]
    return list(snap.cpus)


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    """after - before, per row and CPU, modulo 2^32. CPUs are matched by
    number, so a CPU that came online in between counts from zero."""
    rows = {}
    for name, row in after.rows.items():
        cpus = _columns(after, row)
        counts = [(now - prev) % COUNTER_MOD for now, prev in zip(
            _matched(after, row, cpus),
            _matched(before, before.rows.get(name), cpus))]
        rows[name] = Row(name, counts, row.description, row.kernel_name)
    return Snapshot(cpus=list(after.cpus), rows=rows)


def section(before_text: str, after_text: str) -> dict:
    """A run file's "interrupts" section from two snapshots: the CPU
    columns of the second, and per row its description, the counts
    before and after (by CPU number) and their difference, with the
    total. ERR and MIS, one system-wide number, have one column."""
    before, after = parse(before_text), parse(after_text)
    moved = delta(before, after)
    rows = {}
    for name, row in after.rows.items():
        cpus = _columns(after, row)
        rows[name] = {
            "description": row.description,
            "before": _matched(before, before.rows.get(name), cpus),
            "after": _matched(after, row, cpus),
            "delta": moved.rows[name].counts,
            "total": sum(moved.rows[name].counts),
        }
        if row.kernel_name:
            rows[name]["kernel_name"] = row.kernel_name
    return {"cpus": list(after.cpus), "rows": rows}


def per_cpu(snap: Snapshot, row: str) -> dict[int, int]:
    r = snap.rows.get(row)
    if r is None:
        return {}
    return dict(zip(snap.cpus, r.counts))


def lkp_name(name: str, description: str, cpu: int | None = None) -> str:
    """A row's stat name as lkp-tests' stats/interrupts writes it: the
    words of a vector's description joined by "_"
    (interrupts.CAL:Function_call_interrupts), the fields of a numbered
    IRQ's by "." (interrupts.24:PCI-MSI.49152-edge.virtio0-config); with
    cpu, the per-CPU name (interrupts.CPU1.CAL:Function_call_interrupts)."""
    joiner = "." if name.isdigit() else "_"
    desc = joiner.join(description.split())
    tag = f"{name}:{desc}" if desc else name
    return f"interrupts.CPU{cpu}.{tag}" if cpu is not None \
        else f"interrupts.{tag}"
