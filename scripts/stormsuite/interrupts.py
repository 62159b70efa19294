"""/proc/interrupts: every row, per CPU, and the difference of two snapshots.

Row names follow LKP: numbered IRQs by number ("24"), per-CPU vectors by
their tag ("CAL", "TLB", "RES", "LOC", ...). The description is kept so
stats can be named like `interrupts.CAL:Function_call_interrupts`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Row:
    name: str
    counts: list[int]       # per CPU column
    description: str


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
        if len(counts) == 1 and len(cpus) > 1 and name in ("ERR", "MIS"):
            # ERR and MIS are one system-wide number, not per CPU
            rows[name] = Row(name, counts, description)
            continue
        counts += [0] * (len(cpus) - len(counts))
        rows[name] = Row(name, counts, description)
    return Snapshot(cpus=cpus, rows=rows)


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    """after - before, per row and CPU. CPUs are matched by number, so a
    CPU that came online in between counts from zero."""
    rows = {}
    for name, row in after.rows.items():
        old = before.rows.get(name)
        counts = []
        for i, cpu in enumerate(after.cpus):
            prev = 0
            if old is not None and cpu in before.cpus:
                j = before.cpus.index(cpu)
                if j < len(old.counts):
                    prev = old.counts[j]
            now = row.counts[i] if i < len(row.counts) else 0
            counts.append(now - prev)
        rows[name] = Row(name, counts, row.description)
    return Snapshot(cpus=list(after.cpus), rows=rows)


def per_cpu(snap: Snapshot, row: str) -> dict[int, int]:
    r = snap.rows.get(row)
    if r is None:
        return {}
    return dict(zip(snap.cpus, r.counts))


def lkp_name(row: Row) -> str:
    """interrupts.CAL:Function_call_interrupts, as lkp-tests names it."""
    desc = "_".join(row.description.split())
    return f"interrupts.{row.name}:{desc}" if desc else f"interrupts.{row.name}"
