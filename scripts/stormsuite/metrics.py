"""The numbers compared between kernels, named the way lkp-tests names them.

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

/proc/interrupts is read before insmod and after the result, so it also
counts what loading and unloading the module cost; the module's irq.*
fields cover exactly the storm.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import result

PERCENTILES = (50, 90, 99, 99.9)
IPI_ROWS = ("CAL", "TLB", "RES")
MAX_PER_CPU = 16        # more storm CPUs than this: totals only


@dataclasses.dataclass(frozen=True)
class Metric:
    name: str
    kind: str           # "time" (lower is better), "rate" (higher), "count"
    unit: str           # "ns", "/s", ""

    @property
    def stat(self) -> str:
        """mmtests: Hmean for rates, Amean for the rest."""
        return "Hmean" if self.kind == "rate" else "Amean"


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


def _rate(res: dict[str, Any]) -> tuple[str, float] | None:
    runtime = float(res.get("runtime_ns") or 0)
    if runtime <= 0:
        return None
    calls = [float(v) for k, v in res.items()
             if k.startswith("sender.") and k.endswith(".calls")]
    if calls:
        return "calls_per_sec", sum(calls) * 1e9 / runtime
    if isinstance(res.get("flushes"), (int, float)):
        return "flushes_per_sec", float(res["flushes"]) * 1e9 / runtime
    return None


def lkp_row_name(name: str, description: str, cpu: int | None = None) -> str:
    desc = "_".join(description.split())
    tag = f"{name}:{desc}" if desc else name
    return f"interrupts.CPU{cpu}.{tag}" if cpu is not None \
        else f"interrupts.{tag}"


def of_run(run: dict[str, Any]) -> dict[Metric, float]:
    """Every metric of one run file."""
    storm = run["storm"]
    res = run["result"]
    out: dict[Metric, float] = {}
    if "runtime_ns" in res:
        out[Metric(f"{storm}.runtime_ns", "time", "ns")] = \
            float(res["runtime_ns"])
    hist = result.histogram(_as_str_result(res), "latency")
    if hist is not None and hist.count:
        for p in PERCENTILES:
            out[Metric(f"{storm}.latency.p{p:g}_ns", "time", "ns")] = \
                hist.percentile(p)
    rate = _rate(res)
    if rate:
        out[Metric(f"{storm}.{rate[0]}", "rate", "/s")] = rate[1]

    cpus_of_storm = storm_cpus(res)
    module_irq: dict[str, dict[int, float]] = {}
    handled = []
    for key, value in res.items():
        parts = key.split(".")
        if len(parts) == 3 and parts[0] == "irq" and parts[1].isdigit() \
                and isinstance(value, (int, float)):
            module_irq.setdefault(parts[2], {})[int(parts[1])] = float(value)
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

    irq = run["interrupts"]
    cpus: list[int] = irq["cpus"]
    per_cpu = [c for c in cpus_of_storm if c in cpus]
    if len(per_cpu) > MAX_PER_CPU:
        per_cpu = []
    for name, row in irq["rows"].items():
        desc = row.get("description", "")
        out[Metric(lkp_row_name(name, desc), "count", "")] = \
            float(row["total"])
        if name in IPI_ROWS and len(row["delta"]) == len(cpus):
            for cpu in per_cpu:
                out[Metric(lkp_row_name(name, desc, cpu), "count", "")] = \
                    float(row["delta"][cpus.index(cpu)])
    return out


def of_runs(runs: list[dict[str, Any]]) -> dict[Metric, list[float]]:
    """metric -> one value per run (metrics every run has)."""
    per_run = [of_run(r) for r in runs]
    if not per_run:
        return {}
    common = [m for m in per_run[0] if all(m in p for p in per_run[1:])]
    return {m: [p[m] for p in per_run] for m in common}
