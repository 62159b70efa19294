"""The tracer summaries of a traced storm run: who sent the IPIs.

Two sources, one parser each:

  trace_report()     `trace-cmd report` of the run: events counted in total
                     and per CPU between storm-run's trace markers, and the
                     IPI senders from the kernel stacks that follow each
                     send (-T on ipi:ipi_send_* or on storm-run's kprobe
                     events on the x86 send functions; the function tracer
                     with --func-stack is understood too)
  bpftrace_report()  the maps bpftrace printed at the end (the probes
                     storm-run writes): @send[<kernel stack>] counts,
                     @handler_ns[<vector>] histograms, @handled[<vector>,
                     <cpu>] counts

Each gives the run file's "trace" / "bpftrace" section and a text summary.
A stack is reduced to "function via api": the IPI plumbing (arch send
functions, kernel/smp.c, on_each_cpu*, the x86 TLB-flush IPI path) is
walked over; "via" is its outermost frame (the API the caller used),
"function" the first frame beyond it, the kernel function that asked for
the IPI. Standard library only (runs in guests, like runfile.py).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable

SENDERS_SHOWN = 20          # in the run file
SENDERS_TOLD = 10           # in the text summary

_TRACER_FRAME = re.compile(
    r"(bpf_|__bpf_|perf_|trace_event_|__traceiter_|__trace_|trace_call_bpf"
    r"|kprobe_|__kprobes|kprobe_ftrace_handler|ftrace_|__ftrace|arch_ftrace"
    r"|function_trace_call|function_stack_trace_call|0x[0-9a-f]+$|$)")
_PLUMBING = re.compile(
    r"(native_send_call_func|native_smp_send_reschedule"
    r"|native_send_call_func_single_ipi|x2apic_|__x2apic_|default_send_IPI"
    r"|__default_send_IPI|apic_send_IPI|flat_send_IPI|_flat_send_IPI"
    r"|physflat_send_IPI|kvm_send_ipi|kvm_smp_send_call_func|__send_ipi_mask"
    r"|xen_send_IPI|__xen_send_IPI|xen_smp_send|hv_send_ipi"
    r"|send_call_function|arch_send_call_function|smp_send_reschedule"
    r"|__smp_call_single_queue|generic_exec_single|smp_call_function"
    # 7.x: smp_call_function_single() tail-calls it, off the stack
    r"|__smp_call_function"
    r"|on_each_cpu|__on_each_cpu|ipi_send_|__ipi_send_|native_flush_tlb_multi"
    r"|flush_tlb_multi|__flush_tlb_multi)")
_COMPILER_SUFFIX = re.compile(r"\.(cold|isra|constprop|part|llvm)[.0-9]*$")


def frame_name(frame: str) -> str:
    """'=> generic_exec_single (ffffffff8116c3f0)', '  ipistorm_sender_fn+154',
    'smp_call_function_single+0x5e/0x90 [ipistorm]' -> the function."""
    s = re.sub(r"^[ \t]*(=>[ \t]*)?", "", frame)
    s = re.split(r"[ \t]", s, maxsplit=1)[0]
    s = s.split("+", 1)[0]
    return _COMPILER_SUFFIX.sub("", s)


@dataclasses.dataclass
class _Sender:
    function: str
    via: str
    stack: list[str]
    count: int = 0


class Senders:
    """Send stacks (innermost frame first) counted by function and via."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], _Sender] = {}
        self.total = 0

    def add(self, stack: Iterable[str], count: int) -> None:
        clean = [f for f in map(frame_name, stack)
                 if not _TRACER_FRAME.match(f)]
        if not clean:
            fn = via = "?"
        else:
            i = next((k for k, f in enumerate(clean)
                      if not _PLUMBING.match(f)), None)
            if i is None:           # all plumbing: the outermost frames
                fn = clean[-1]
                via = clean[-2] if len(clean) > 1 else clean[-1]
            else:
                fn = clean[i]
                via = clean[i - 1] if i > 0 else "-"
        s = self.by_key.setdefault((fn, via), _Sender(fn, via, clean[:8]))
        s.count += count
        self.total += count

    def ranked(self) -> list[_Sender]:
        """Largest count first; equal counts in the order first seen."""
        return sorted(self.by_key.values(), key=lambda s: -s.count)

    def section(self, limit: int = SENDERS_SHOWN) -> list[dict[str, Any]]:
        return [{"function": s.function, "via": s.via, "count": s.count,
                 "stack": s.stack} for s in self.ranked()[:limit]]

    def text(self, title: str, limit: int = SENDERS_TOLD) -> str:
        ranked = self.ranked()
        out = title + "\n"
        if not ranked:
            out += "  (no IPI sends seen)\n"
        for s in ranked[:limit]:
            out += f"  {s.count:8d}  {s.function}" + (
                "" if s.via == "-" else f"  via {s.via}") + "\n"
        if len(ranked) > limit:
            out += f"  ({len(ranked) - limit} more call sites)\n"
        return out


def _title(tool: str, source: str) -> str:
    return (f"IPI senders in the traced run ({tool}: {source}), sends by "
            "kernel function:")


# ---------------------------------------------------------------- trace-cmd

_SEND_EVENT = re.compile(
    r"(storm_run:send_|ipi:ipi_send_cpu|function:native_send_call_func"
    r"|function:native_smp_send_reschedule)")
_SEND_STACK_TOP = re.compile(
    r"=> (trace_event_raw_event_ipi_send_cpu|native_send_call_func"
    r"|native_smp_send_reschedule)")
_CPU = re.compile(r"\[([0-9]+)\] ")


def trace_report(text: str, *, tool: str, version: str, source: str,
                 events: list[str], window: bool = True
                 ) -> tuple[dict[str, Any], str]:
    """A `trace-cmd report`: (the run file's "trace" section, the text
    summary). events: the events that were enabled; window: count only
    between the "storm-run: begin" and "storm-run: end" markers."""
    fullname = {e.split(":", 1)[-1]: e for e in events}
    counts: dict[str, dict[int, int]] = {}
    senders = Senders()
    sends = 0
    stack: list[str] = []
    collecting = inside = marked = False

    def finish_stack() -> None:
        # a stack is a send's when one of its first frames is the send
        # function (function tracer) or the send tracepoint's handler
        # (-T): decided from the frames, since other CPUs' lines may come
        # between event and stack
        if collecting and stack and any(
                _SEND_STACK_TOP.match(f) for f in stack[:5]):
            senders.add(stack, 1)

    for line in text.splitlines():
        if line.startswith("=> "):
            if collecting:
                stack.append(line)
            continue
        finish_stack()
        collecting, stack = False, []
        if window:
            if "storm-run: begin" in line:
                inside = marked = True
                continue
            if "storm-run: end" in line:
                inside = False
                continue
            if not inside:
                continue
        m = _CPU.search(line)
        if not m:
            continue
        cpu = int(m.group(1))
        # skip the flags and timestamp: "d..2. 192.741763: "
        rest = line[m.end():]
        k = rest.find(": ")
        if k < 0:
            continue
        rest = rest[k + 2:].lstrip(" \t")
        ev, sep, fields = rest.partition(":")
        if not sep:
            continue
        if ev == "kernel_stack":
            collecting, stack = True, []
            continue
        if ev == "function":
            ev = "function:" + re.split(r"[ \t]", fields.lstrip(" \t"), 1)[0]
        else:
            ev = fullname.get(ev, ev)
        per_cpu = counts.setdefault(ev, {})
        per_cpu[cpu] = per_cpu.get(cpu, 0) + 1
        if _SEND_EVENT.match(ev):
            sends += 1
    finish_stack()

    doc = {
        "tool": tool, "version": version, "source": source,
        "events": list(events),
        "counts": {ev: {"total": sum(pc.values()),
                        "per_cpu": {str(c): pc[c] for c in sorted(pc)}}
                   for ev, pc in counts.items()},
        "window": ("whole trace" if not window else
                   "storm-run markers" if marked else "markers not seen"),
        "sends": sends,
        "sends_with_stack": senders.total,
        "senders": senders.section(),
    }
    summary = senders.text(_title(tool, source))
    summary += "  events in the window, by CPU:\n"
    for ev, pc in sorted(counts.items(), key=lambda kv: -sum(kv[1].values())):
        where = " ".join(f"cpu{c}:{pc[c]}" for c in sorted(pc))
        summary += f"  {sum(pc.values()):8d}  {ev}  ({where})\n"
    return doc, summary


# ---------------------------------------------------------------- bpftrace

_POWERS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(s: str) -> int:
    """'4K' -> 4096, '2M' -> 2097152 (bpftrace's powers of 1024)."""
    s = s.strip()
    if s and s[-1] in _POWERS:
        return int(s[:-1]) * _POWERS[s[-1]]
    return int(s)


def _leading_int(s: str) -> int:
    m = re.match(r"\s*(-?[0-9]+)", s)
    return int(m.group(1)) if m else 0


@dataclasses.dataclass
class _Hist:
    count: int = 0
    buckets: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    text: str = ""

    def add_line(self, line: str) -> None:
        """'[4K, 8K)   8 |@@@ |', '[0]   3 |@|', '[2, 4)   1 |  |'"""
        k = line.find("]")
        if k < 0:
            k = line.find(")")
        spec = line[1:k]
        rest = line[k + 1:].lstrip(" \t")
        count = _leading_int(rest)
        if spec.startswith("...") or count == 0:
            return
        if "," in spec:
            lo = spec.split(",", 1)[0]
            hi_text = re.sub(r".*,[ \t]*", "", spec)
            hi = None if hi_text == "..." else _size(hi_text)
        else:
            lo = spec
            hi = _size(spec) + 1
        self.buckets.append({"low": _size(lo), "high": hi, "count": count})
        self.text += f" {lo}:{count}"
        self.count += count


def bpftrace_report(text: str, *, tool: str, version: str, source: str
                    ) -> tuple[dict[str, Any], str]:
    """bpftrace's printed maps: (the run file's "bpftrace" section, the
    text summary)."""
    senders = Senders()
    hists: dict[str, _Hist] = {}
    handled: dict[str, dict[str, int]] = {}
    hist: _Hist | None = None
    stack: list[str] | None = None      # inside an @send[...] key
    for line in text.splitlines():
        if stack is not None:
            if re.match(r"\]: [0-9]+", line):
                senders.add(stack, _leading_int(line[3:]))
                stack = None
            else:
                stack.append(line)
            continue
        if line.startswith("@send["):
            if re.search(r"\]: [0-9]+[ \t]*$", line):
                # no stack: the kernel could not give one
                senders.add([], _leading_int(line.rsplit("]: ", 1)[1]))
            else:
                stack = []
            continue
        if re.match(r"@handler_ns(\[|:)", line):
            name = "all" if line.startswith("@handler_ns:") else \
                line[len("@handler_ns["):].split("]:", 1)[0]
            hist = hists.setdefault(name, _Hist())
            continue
        if line.startswith("@handled["):
            key = line[len("@handled["):]
            count = _leading_int(re.sub(r".*\]: *", "", key))
            key = key.split("]:", 1)[0]
            vec = key.split(",", 1)[0]
            cpu = re.sub(r".*,[ \t]*", "", key)
            handled.setdefault(vec, {})[cpu] = count
            continue
        if line[:1] in ("[", "(") and hist is not None:
            hist.add_line(line)
            continue
        if not line.strip() or line.startswith("@"):
            hist = None
    doc = {
        "tool": tool, "version": version, "source": source,
        "sends": senders.total, "senders": senders.section(),
        "handler_ns": {name: {"count": h.count, "buckets": h.buckets}
                       for name, h in hists.items()},
        "handled": handled,
    }
    summary = senders.text(_title(tool, source))
    for name, h in hists.items():
        summary += (f"  {name} handler time (ns, n={h.count}), "
                    f"low:count:{h.text}\n")
    return doc, summary
