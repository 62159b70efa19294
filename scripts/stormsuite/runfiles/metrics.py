"""The numbers compared between kernels, named the way lkp-tests names them.

Each storm declares two primary metrics, the ones its verdict lines state
(PRIMARY): the time per operation (what the storm costs) and the IPIs per
operation (from the module's own irq_stat deltas over the storm window):

  ipistorm.time_per_call_ns, ipistorm.ipis_per_call     per smp_call_*
  tlbstorm.time_per_flush_ns, tlbstorm.ipis_per_flush   per shootdown
  slabstorm.time_per_op_ns, slabstorm.ipis_per_op       per cache/round/free

ipistorm's time per call is the median of the calls it timed (latency=N,
one call in 64 by default), interpolated within its histogram bucket;
when it timed none (latency=0), ipistorm.runtime_per_call_ns, the storm's
runtime over its calls, takes its place (a different number: it also
counts the loop around the calls, 15-25% more). The median
because a TCG guest now and then loses its host CPU for milliseconds: a
run with a few such stalls takes twice as long while its median call
does not move: in an A/A of 16 boots (tests/e2e/noise-levers) the CV
between boots was a quarter to a half of that of the trimmed mean of
runtime per call (docs/measured.md). The runtime is then a secondary row.

Every other row is secondary. Rows that restate another row (runtime of a
fixed-count storm, throughput, /proc's IPI rows next to the module's own)
are derived: shown, never tested.

From one run file:
  <storm>.runtime_ns                        the storm's wall time (time)
  <storm>.latency.p50_ns ... p99.9_ns       per-call latency percentiles from
                                            the module's histogram (time)
  <storm>.calls_per_sec / flushes_per_sec   throughput (rate)
  interrupts.CAL:Function_call_interrupts   a /proc/interrupts row, summed
                                            over CPUs (count)
  interrupts.CPU1.CAL:Function_call_interrupts
                                            the IPI rows (CAL, TLB, RES) on each
                                            CPU the storm sends from or to
  <storm>.irq.CAL, <storm>.irq.CPU1.CAL     the module's own irq_stat deltas
                                            (irq.<cpu>.<ROW> result fields):
                                            the storm's window only, without
                                            module load and unload (count)
  <storm>.handled                           handler runs (ipistorm) (count)
  <storm>.ipis_sent_per_call (_flush, _op)   primary with count_sent=1:
                                            IPIs sent per operation
  <storm>.ipis_sent                         call-function IPIs the kernel
                                            sent in the storm window, from
                                            the module's probes on the send
                                            functions (sent.<cpu>.CAL)
  <storm>.sent.CPU1.CAL, <storm>.sent.RES   the same per target CPU, and
                                            reschedule IPIs sent
  <storm>.ipis_received                     call-function interrupts received
                                            (restates <storm>.irq.CAL)
  <storm>.ipis_sent_per_received            sent / received: how many sends
                                            the APIC merged into one interrupt
                                            (1 when every send arrived)

/proc/interrupts is read right before insmod and right after it returns
(for a background storm, after the storm ended), so it also counts what
loading the module and setting up the storm cost; the module's irq.*
fields cover exactly the storm window.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import storms
from . import interrupts, result

PERCENTILES = (50, 90, 99, 99.9)
IPI_ROWS = ("CAL", "TLB", "RES")
MAX_PER_CPU = 16        # more storm CPUs than this: totals only


# storm: (time per operation, IPIs per operation, what an operation is)
PRIMARY = {s.name: (s.time_metric, s.ipi_metric, s.op)
           for s in storms.STORMS.values()}
# With count_sent=1 the module also counts the IPIs the kernel sent: a
# third primary metric, since a patch can change the sends and leave the
# interrupts taken unchanged (IPIs that arrive while one of the same
# vector is pending merge in the APIC; docs/ipis-sent.md).
SENT_PRIMARY = {s.name: s.sent_metric for s in storms.STORMS.values()}
# the time per operation of a storm that times operations but timed none
UNTIMED = {s.name: s.untimed_metric for s in storms.STORMS.values()}
SECONDARY, DERIVED = "secondary", "derived"


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    kind: str           # "time" (lower is better), "rate" (higher), "count",
                        # "insn" (instructions per operation, read
                        # through bootmodel.py),
                        # "ratio" (of two counts; only shown)
    unit: str           # "ns", "/s", ""
    role: str = dataclasses.field(default=SECONDARY, compare=False)

    def __hash__(self) -> int:
        # what the generated hash would be, kept: a comparison looks its
        # metrics up by the hundred thousand (storm simulate, thousands
        # of comparisons)
        try:
            return self._hash       # type: ignore[has-type]
        except AttributeError:
            h = hash((self.name, self.kind, self.unit))
            object.__setattr__(self, "_hash", h)
            return h

    @property
    def stat(self) -> str:
        """mmtests: Hmean for rates, Amean for the rest."""
        return "Hmean" if self.kind == "rate" else "Amean"

    @property
    def primary(self) -> bool:
        return self.role == "primary"

    @property
    def derived(self) -> bool:
        return self.role == DERIVED


@dataclasses.dataclass(frozen=True)
class Operation:
    """What a run's operation is, from its result's op.* keys
    (include/storm.h, storm_show_op())."""
    name: str
    count: float | None
    ipi_rows: tuple[str, ...]
    senders: frozenset[int] | None
    targets: frozenset[int] | None
    timed: str | None       # the histogram that times single operations


def _cpus(value: Any) -> frozenset[int] | None:
    if value is None:
        return None
    try:
        return frozenset(result.cpulist(str(value)))
    except ValueError:
        return None


def operation(storm: str, res: dict[str, Any]) -> Operation:
    """The run's operation as its module said it; for results written
    before the op.* keys, as those modules' keys said it."""
    if "op" not in res:
        return _operation_before_op_keys(storm, res)
    count = res.get("op.count")
    return Operation(
        name=str(res["op"]),
        count=float(count) if isinstance(count, (int, float)) else None,
        ipi_rows=tuple(str(res.get("op.ipi_rows", "CAL")).split()),
        senders=_cpus(res.get("op.senders")),
        targets=_cpus(res.get("op.targets")),
        timed=str(res["op.timed"]) if "op.timed" in res else None)


def _operation_before_op_keys(storm: str, res: dict[str, Any]) -> Operation:
    """The op.* keys of a result from before modules wrote them: the
    three storms of then, from their own keys."""
    def number(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) else None

    if storm == "ipistorm":
        calls = [float(v) for k, v in res.items()
                 if k.startswith("sender.") and k.endswith(".calls")]
        targets = {int(v) for k, v in res.items()
                   if k.startswith("sender.") and k.endswith(".target")}
        return Operation(
            "call", sum(calls) if calls else None, ("CAL",),
            frozenset(_cpus_with(res, "sender")),
            frozenset(targets) or _cpus(res.get("param.targets")),
            "latency")
    if storm == "tlbstorm":
        return Operation("flush", number(res.get("flushes")), ("CAL",),
                         frozenset(_cpus_with(res, "flusher")), None, None)
    count = next((res[k] for k in ("caches", "rounds", "frees")
                  if k in res), None)
    return Operation("op", number(count), ("CAL", "RES"), None, None, None)


def ops_of(storm: str, res: dict[str, Any]) -> float | None:
    """How many operations the storm made (op.count)."""
    return operation(storm, res).count


def _row_sum(res: dict[str, Any], section: str,
             rows: tuple[str, ...]) -> float | None:
    """The sum of <section>.<cpu>.<ROW> over CPUs and the given rows."""
    found = [float(v) for k, v in res.items()
             if k.startswith(section + ".") and k.count(".") == 2
             and k.split(".")[1].isdigit() and k.rsplit(".", 1)[1] in rows
             and isinstance(v, (int, float))]
    return sum(found) if found else None


def ipis_of(storm: str, res: dict[str, Any],
            op: Operation | None = None) -> float | None:
    """The IPIs the operations took over the storm window: the module's
    irq.<cpu>.<ROW> for the rows op.ipi_rows names (call-function
    interrupts, which on x86 also count TLB shootdown IPIs; slabstorm's
    reschedule IPIs too)."""
    return _row_sum(res, "irq", (op or operation(storm, res)).ipi_rows)


def sent_of(storm: str, res: dict[str, Any],
            op: Operation | None = None) -> float | None:
    """IPIs sent over the storm window (count_sent=1), of the rows the
    IPIs taken are counted in; None without the counts."""
    return _row_sum(res, "sent", (op or operation(storm, res)).ipi_rows)


def median_call(storm: str, res: dict[str, Any],
                op: Operation | None = None) -> float | None:
    """The median timed operation (see the module docstring); None where
    the module times none (no op.timed) or timed none. OP: the run's
    operation(), where the caller has it."""
    timed = (op or operation(storm, res)).timed
    if timed is None:
        return None
    hist = result.histogram(_as_str_result(res), timed)
    return hist.median() if hist is not None and hist.count else None


def primary_of_run(storm: str, res: dict[str, Any],
                   op: Operation | None = None) -> dict[Metric, float]:
    op = op or operation(storm, res)
    out: dict[Metric, float] = {}
    runtime = res.get("runtime_ns")
    if not op.count or not isinstance(runtime, (int, float)):
        return out
    name = f"{storm}.%s_per_{op.name}"
    timed = median_call(storm, res, op)
    if timed is not None:
        out[Metric(name % "time" + "_ns", "time", "ns", "primary")] = timed
    else:
        # no operation timed: the runtime over the count; where the
        # module times operations (latency=0 here), under a name of its
        # own, since it also counts the loop around them
        out[Metric(name % ("runtime" if op.timed else "time") + "_ns",
                   "time", "ns", "primary")] = float(runtime) / op.count
    ipis = ipis_of(storm, res, op)
    if ipis is not None:
        out[Metric(name % "ipis", "count", "", "primary")] = ipis / op.count
    sent = sent_of(storm, res, op)
    if sent is not None:
        out[Metric(name % "ipis_sent", "count", "", "primary")] = \
            sent / op.count
    return out


def _cpus_with(res: dict[str, Any], prefix: str) -> set[int]:
    """CPUs that have result fields <prefix>.<cpu>.*"""
    return {int(k.split(".")[1]) for k in res
            if k.startswith(prefix + ".") and k.count(".") >= 2
            and k.split(".")[1].isdigit()}


def TICKS_OF(insn_name: str) -> str:
    """The ticks per operation on the CPUs of an insn_per_<op> row: what
    the verdict corrects that row by (verdict.tick_corrected)."""
    return insn_name.replace(".insn_per_", ".ticks_per_", 1)


def insn_sides(storm: str, res: dict[str, Any],
               op: Operation | None = None) -> dict[str, set[int]]:
    """The CPUs whose instructions make each insn_per_<op> row: "sender"
    and "target" where op.senders and op.targets are apart; "sender"
    alone where the module names no targets (tlbstorm's workers touch
    memory for as long as the storm lasts: their count follows time, not
    flushes, and is only shown per CPU); else "" for every CPU the
    operation uses, or every CPU where the module names none (slabstorm's
    work moves between CPUs)."""
    op = op or operation(storm, res)
    senders, targets = set(op.senders or ()), set(op.targets or ())
    if senders and targets and not senders & targets:
        return {"sender": senders, "target": targets}
    if senders and op.targets is None:
        return {"sender": senders}
    return {"": senders | targets}


def insn_rows(storm: str, run: dict[str, Any],
              op: Operation | None = None) -> dict[Metric, float]:
    """Instructions per operation (primary, under the plugin or a PMU)
    and per CPU over the storm's window (the run file's insn section)."""
    section = run.get("insn")
    if not section or not section.get("cpu"):
        return {}
    res = run["result"]
    operation_ = op or operation(storm, res)
    ops, op_name = operation_.count, operation_.name
    if not ops:
        return {}
    by_cpu = {int(c): float(n) for c, n in section["cpu"].items()}
    out: dict[Metric, float] = {}
    sides = insn_sides(storm, res, operation_)
    if "" not in sides:
        # the sides' total, what storm bisect --metric insn follows
        sides = {**sides, "": set().union(*sides.values())}
    for side, cpus in sides.items():
        cpus = cpus or set(by_cpu)
        if not cpus <= set(by_cpu):
            continue
        suffix = f".{side}" if side else ""
        role = "primary" if side or len(sides) == 1 else DERIVED
        name = f"{storm}.insn_per_{op_name}{suffix}"
        out[Metric(name, "insn", "", role)] = \
            sum(by_cpu[c] for c in cpus) / ops
        ticks = [res.get(f"irq.{c}.LOC") for c in cpus]
        if all(isinstance(t, (int, float)) for t in ticks):
            out[Metric(TICKS_OF(name), "count", "", DERIVED)] = \
                sum(ticks) / ops
    shown = storm_cpus(res) or sorted(by_cpu)
    if len(shown) <= MAX_PER_CPU:
        for cpu in shown:
            if cpu in by_cpu:
                out[Metric(f"{storm}.insn.CPU{cpu}", "insn", "")] = \
                    by_cpu[cpu]
    return out


def _as_str_result(res: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in res.items()}


def storm_cpus(res: dict[str, Any]) -> list[int]:
    """CPUs the storm sends from or to: where per-CPU counts matter."""
    cpus: set[int] = set()
    for key in ("param.cpulist", "param.targets"):
        if key in res:
            try:
                cpus.update(result.cpulist(str(res[key])))
            except ValueError:
                pass
    for key, value in res.items():
        if key.startswith("sender.") and key.endswith(".target"):
            cpus.add(int(value))
    return sorted(cpus)


def _rate(storm: str, res: dict[str, Any],
          op: Operation) -> tuple[str, float] | None:
    """Operations per second."""
    runtime = float(res.get("runtime_ns") or 0)
    if runtime <= 0 or not op.count:
        return None
    return f"{op.name}s_per_sec", op.count * 1e9 / runtime


def of_stats(storm: str, values: dict[str, float]) -> dict[Metric, float]:
    """The metrics of a run known only by their names and values (an lkp
    result root's stats, lkproot.py): kinds from the names, primary as
    of_run makes them where the instruction counts are the TCG plugin's
    (the time per operation secondary beside an insn_per_<op> row), the
    rows that restate another derived."""
    if storm not in PRIMARY:
        return {}
    time_name, ipi_name, op = PRIMARY[storm]
    insn_primary = {n for n in values
                    if n.startswith(f"{storm}.insn_per_{op}")}
    if {f"{storm}.insn_per_{op}.sender", f"{storm}.insn_per_{op}.target"} \
            & insn_primary:
        insn_primary.discard(f"{storm}.insn_per_{op}")
    primary = {ipi_name, SENT_PRIMARY[storm]} | insn_primary
    if not insn_primary:
        primary |= {time_name, UNTIMED.get(storm, time_name)}
    out = {}
    for name, value in values.items():
        if name.endswith("_per_sec"):
            kind, unit = "rate", "/s"
        elif name.endswith("_ns"):
            kind, unit = "time", "ns"
        elif ".insn_per_" in name or ".insn.CPU" in name:
            kind, unit = "insn", ""
        elif name.endswith("_per_received"):
            kind, unit = "ratio", ""
        else:
            kind, unit = "count", ""
        if name in primary:
            role = "primary"
        elif kind in ("rate", "ratio") or ".ticks_per_" in name \
                or name.startswith(f"{storm}.insn_per_") \
                or name == f"{storm}.ipis_received":
            role = DERIVED
        else:
            role = SECONDARY
        out[Metric(name, kind, unit, role)] = float(value)
    return out


def of_run(run: dict[str, Any]) -> dict[Metric, float]:
    """Every metric of one run file."""
    storm = run["storm"]
    if "lkp_stats" in run:
        # an lkp result root's run: its stats are all there is
        return of_stats(storm, run["lkp_stats"])
    res = run["result"]
    op = operation(storm, res)
    out: dict[Metric, float] = primary_of_run(storm, res, op)
    derived = SECONDARY if not out else DERIVED
    insn = insn_rows(storm, run, op)
    if insn and run["insn"].get("source") == "tcg-plugin":
        # under emulation the time of a call is the host's time to switch
        # vCPUs: the instructions decide, time is shown and tested beside
        out = {dataclasses.replace(m, role=SECONDARY)
               if m.kind == "time" and m.primary else m: v
               for m, v in out.items()}
    out.update(insn)
    # the primary time restates the runtime (runtime / operations) or,
    # for ipistorm, the median call
    by_median = median_call(storm, res, op) is not None
    if "runtime_ns" in res:
        out[Metric(f"{storm}.runtime_ns", "time", "ns",
                   SECONDARY if by_median else derived)] = \
            float(res["runtime_ns"])
    hist = result.histogram(_as_str_result(res), "latency")
    if hist is not None and hist.count:
        for p in PERCENTILES:
            role = DERIVED if by_median and p == 50 else SECONDARY
            out[Metric(f"{storm}.latency.p{p:g}_ns", "time", "ns", role)] = \
                hist.percentile(p)
    rate = _rate(storm, res, op)
    if rate:
        out[Metric(f"{storm}.{rate[0]}", "rate", "/s", DERIVED)] = rate[1]

    cpus_of_storm = storm_cpus(res)
    module_irq: dict[str, dict[int, float]] = {}
    sent: dict[str, dict[int, float]] = {}
    handled = []
    for key, value in res.items():
        parts = key.split(".")
        if len(parts) == 3 and parts[0] in ("irq", "sent") \
                and parts[1].isdigit() and isinstance(value, (int, float)):
            into = module_irq if parts[0] == "irq" else sent
            into.setdefault(parts[2], {})[int(parts[1])] = float(value)
        elif len(parts) == 2 and parts[0] == "handled" \
                and parts[1].isdigit() and isinstance(value, (int, float)):
            handled.append(float(value))
    for row, by_cpu in sorted(module_irq.items()):
        out[Metric(f"{storm}.irq.{row}", "count", "")] = sum(by_cpu.values())
        if len(cpus_of_storm) <= MAX_PER_CPU:
            for cpu in cpus_of_storm:
                if cpu in by_cpu:
                    out[Metric(f"{storm}.irq.CPU{cpu}.{row}", "count", "")] \
                        = by_cpu[cpu]
    if handled:
        out[Metric(f"{storm}.handled", "count", "")] = sum(handled)
    out.update(_sent_rows(storm, sent, module_irq, cpus_of_storm, derived))

    irq = run["interrupts"]
    # the module's own rows cover the storm window exactly; /proc's rows
    # of the same vectors restate them (plus load and unload)
    proc_role = DERIVED if module_irq else SECONDARY
    cpus: list[int] = irq["cpus"]
    per_cpu = [c for c in cpus_of_storm if c in cpus]
    if len(per_cpu) > MAX_PER_CPU:
        per_cpu = []
    for name, row in irq["rows"].items():
        desc = row.get("description", "")
        role = proc_role if name in module_irq else SECONDARY
        out[Metric(interrupts.lkp_name(name, desc), "count", "", role)] = \
            float(row["total"])
        if name in IPI_ROWS and len(row["delta"]) == len(cpus):
            for cpu in per_cpu:
                out[Metric(interrupts.lkp_name(name, desc, cpu), "count", "",
                           role)] = float(row["delta"][cpus.index(cpu)])
    return out


def _sent_rows(storm: str, sent: dict[str, dict[int, float]],
               received: dict[str, dict[int, float]],
               cpus_of_storm: list[int], role: str) -> dict[Metric, float]:
    """The send side next to the receive side: totals (derived from the
    primary IPIs sent per operation when there is one), their ratio, and
    the per-CPU IPIs sent to each CPU the storm sends from or to."""
    out: dict[Metric, float] = {}
    if "CAL" not in sent:
        return out
    n_sent = sum(sent["CAL"].values())
    out[Metric(f"{storm}.ipis_sent", "count", "", role)] = n_sent
    if "CAL" in received:
        n_received = sum(received["CAL"].values())
        out[Metric(f"{storm}.ipis_received", "count", "", DERIVED)] = \
            n_received
        if n_received:
            out[Metric(f"{storm}.ipis_sent_per_received", "ratio", "",
                       DERIVED)] = n_sent / n_received
    if "RES" in sent:
        out[Metric(f"{storm}.sent.RES", "count", "")] = \
            sum(sent["RES"].values())
    if len(cpus_of_storm) <= MAX_PER_CPU:
        for cpu in cpus_of_storm:
            if cpu in sent["CAL"]:
                out[Metric(f"{storm}.sent.CPU{cpu}.CAL", "count", "")] = \
                    sent["CAL"][cpu]
    return out


def of_runs(runs: list[dict[str, Any]]) -> dict[Metric, list[float]]:
    """metric -> one value per run (metrics every run has)."""
    per_run = [of_run(r) for r in runs]
    if not per_run:
        return {}
    common = [m for m in per_run[0] if all(m in p for p in per_run[1:])]
    return {m: [p[m] for p in per_run] for m in common}


def primary_title(m: Metric, op: str) -> str:
    """A primary row's name in verdict lines and plots."""
    if m.name in UNTIMED.values():
        return f"runtime per {op}"
    if m.kind == "time":
        return f"time per {op}"
    if m.kind == "insn":
        side = m.name.rpartition(f"insn_per_{op}")[2].lstrip(".")
        return f"insn per {op}" + (f" ({side})" if side else "")
    if m.name in SENT_PRIMARY.values():
        return f"IPIs sent per {op}"
    return f"IPIs per {op}"
