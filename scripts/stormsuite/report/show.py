"""storm show: a storm result file, or the result in a run file,
summarised for people.

Percentiles come from the module's log-linear histogram buckets (within
about 6% of the true value), computed here rather than in the kernel. A
run file of a guest with the instruction counter (storm vm's default
under TCG) also gives the instructions per operation on the storm's
CPUs, the primary numbers under emulation.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from ..runfiles import metrics, result, runs

PERCENTILES = (50, 90, 99, 99.9)


def fmt_ns(ns: float) -> str:
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def summary(res: dict[str, str]) -> str:
    lines = [f"{res['storm']} on {res.get('kernel', '?')}: "
             f"{res['status']}, runtime {fmt_ns(int(res['runtime_ns']))}"]
    params = " ".join(f"{k[6:]}={v}" for k, v in res.items()
                      if k.startswith("param."))
    lines.append(f"  params: {params}")
    cal = result.per_cpu(res, "CAL")
    for cpu, s in sorted(result.senders(res).items()):
        calls = int(s.get("calls", 0))
        ns = int(s.get("runtime_ns", 0))
        to = s.get("target", s.get("targets", "?"))
        line = (f"  cpu {cpu} -> {to}: {calls} calls, "
                f"{fmt_ns(ns / calls) if calls else '-'} per call")
        if "target" in s and int(s["target"]) in cal:
            line += f", target CAL +{cal[int(s['target'])]}"
        lines.append(line)
    hist = result.histogram(res, "latency")
    if hist and hist.count:
        pct = "  ".join(f"p{p:g} {fmt_ns(hist.percentile(p))}"
                        for p in PERCENTILES)
        lines.append(f"  latency: min {fmt_ns(hist.min_ns)}  {pct}  "
                     f"max {fmt_ns(hist.max_ns)}  (n={hist.count})")
    for row in ("CAL", "RES", "TLB"):
        per = result.per_cpu(res, row)
        if per:
            cells = " ".join(f"{c}:{v}" for c, v in sorted(per.items()))
            lines.append(f"  {row} by cpu: {cells}  (total {sum(per.values())})")
    for key in ("irq.source", "flush_ipi"):
        # where arm64's counts come from, and why its flushes take none
        if key in res:
            lines.append(f"  {key}: {res[key]}")
    for row in ("CAL", "RES"):
        for source, what in (("sent", "sent to"), ("sent_by", "sent by")):
            per = result.per_cpu(res, row, source)
            if per:
                cells = " ".join(f"{c}:{v}" for c, v in sorted(per.items()))
                lines.append(f"  {row} {what} cpu: {cells}  "
                             f"(total {sum(per.values())})")
    if "sent.probe_ns" in res:
        lines.append(f"  sent: {res['sent.hits']} probe hits at "
                     f"{res['sent.probe_ns']} ns, {res['sent.missed']} missed")
    return "\n".join(lines)


def insn_line(doc: dict) -> str:
    """A run file's instructions per operation, sender and target (or on
    every CPU the storm ran on), as compare names them; '' without them."""
    rows = {m.name: v[0] for m, v in metrics.of_runs([doc]).items()
            if m.kind == "insn" and ".insn_per_" in m.name}
    if not rows:
        return ""
    storm = doc.get("storm", "")
    op = metrics.PRIMARY[storm][2] if storm in metrics.PRIMARY else "op"
    base = f"{storm}.insn_per_{op}"
    parts = [f"{name[len(base) + 1:] or 'together'} {value:,.1f}"
             for name, value in sorted(rows.items(),
                                       key=lambda kv: (kv[0] == base, kv[0]))
             if name.startswith(base)]
    source = doc.get("insn", {}).get("source", "")
    return (f"  instructions per {op}: " + ", ".join(parts)
            + (f"  ({source}: exact per vCPU)" if source else ""))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm show",
        description="Summarise storm result files (the module's "
        "/sys/kernel/debug/<storm>/result) or the results in run files "
        "(storm run's run-*.json): senders, latency percentiles, "
        "interrupt deltas per CPU.")
    p.add_argument("files", nargs="+", type=pathlib.Path)
    return p


def load(path: pathlib.Path) -> tuple[dict[str, str], dict | None]:
    """The storm's result lines: a result file as the module wrote it, or
    the result section of a run file (storm run's JSON, or its capture
    directory), with its values as the result file spells them; and the
    run file's document (None for a result file)."""
    if path.is_dir() or path.suffix == ".json":
        doc = runs.load_run(path)
        return {k: str(v) for k, v in doc["result"].items()}, doc
    return result.parse(path.read_text()), None


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    rc = 0
    for f in args.files:
        try:
            res, doc = load(f)
            print(summary(res))
            line = insn_line(doc) if doc else ""
            if line:
                print(line)
        except (OSError, result.ResultError, runs.RunError) as e:
            print(f"storm show: {f}: {e}", file=sys.stderr)
            rc = 1
    return rc
