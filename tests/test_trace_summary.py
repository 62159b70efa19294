"""The tracer summaries (stormsuite/runfiles/tracesum.py) on raw output captured in guests with `storm run --trace
--bpftrace --keep-trace` (ipistorm numipi=200 single=1 wait=1 cpulist=0
offset=1 delay=50, 4 vCPUs, TCG): 6.1 has no ipi:* tracepoints (function
kprobe events and kprobes on the x86 send functions), 6.12 has them.
Files: <storm>-<release>.{trace-report.txt,trace-events,bpftrace.out,
probes.bt}.gz, the probes.bt being the bpftrace program that ran.
"""

from __future__ import annotations

import gzip
import pathlib
import re

import pytest

from stormsuite.runfiles import tracesum

TRACE = pathlib.Path(__file__).parent / "data" / "trace"


def captured(kind: str) -> dict[str, pathlib.Path]:
    """{"6.1": path, "6.12": path} of the captures of one kind."""
    out = {}
    for f in sorted(TRACE.glob(f"ipistorm-*.{kind}.gz")):
        m = re.match(r"ipistorm-(\d+\.\d+)\.", f.name)
        assert m, f.name
        out[m.group(1)] = f
    return out


def summarize(tracer: str, text: str, tmp_path: pathlib.Path,
              **variables: str) -> tuple[dict, str]:
    """tracesum's (section, summary) of a trace-cmd report ("trace") or
    of bpftrace's maps ("bpftrace"); variables as storm-run gives them."""
    meta = {k: variables.get(k, "") for k in ("tool", "version", "source")}
    if tracer == "trace":
        events = pathlib.Path(variables["events_file"]).read_text().split()
        return tracesum.trace_report(text, events=events,
                                     window=variables.get("window") != "0",
                                     **meta)
    return tracesum.bpftrace_report(text, **meta)


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_trace_cmd_report(kernel, tmp_path):
    report = gzip.decompress(captured("trace-report.txt")[kernel]
                             .read_bytes()).decode("utf-8", "replace")
    events = gzip.decompress(captured("trace-events")[kernel]
                             .read_bytes()).decode()
    ev_file = tmp_path / "events"
    ev_file.write_text(events)
    doc, text = summarize("trace", report, tmp_path,
                          tool="trace-cmd", source="captured", window="1",
                          events_file=str(ev_file))
    assert doc["window"] == "storm-run markers"
    assert doc["events"] == events.split()
    # a stack comes after its event (other CPUs' lines between), so at
    # the window's edges a send and its stack can fall on either side
    assert doc["sends"] > 0
    assert abs(doc["sends"] - doc["sends_with_stack"]) <= 0.05 * doc["sends"]
    top = {s["function"]: s for s in doc["senders"]}
    sender = top["ipistorm_sender_fn"]
    assert sender["via"] == "smp_call_function_single"
    assert 100 <= sender["count"] <= 200
    assert sender["stack"][0] in ("native_send_call_func_single_ipi",
                                  "__smp_call_single_queue",
                                  "generic_exec_single")
    # every send counted once, in one of the sender groups
    assert sum(s["count"] for s in doc["senders"]) <= doc["sends_with_stack"]
    entry = doc["counts"]["irq_vectors:call_function_single_entry"]
    assert entry["total"] == sum(entry["per_cpu"].values())
    # the target, CPU 1, took most of the single-call interrupts
    assert max(entry["per_cpu"], key=entry["per_cpu"].get) == "1"
    if kernel == "6.12":
        assert "ipi:ipi_send_cpu" in doc["counts"]
    else:
        assert "storm_run:send_call_func_single_ipi" in doc["counts"]
    assert "ipistorm_sender_fn  via smp_call_function_single" in text


def test_trace_without_markers_counts_nothing(tmp_path):
    report = gzip.decompress(captured("trace-report.txt")["6.1"]
                             .read_bytes()).decode("utf-8", "replace")
    report = report.replace("storm-run: begin", "something else")
    ev_file = tmp_path / "events"
    ev_file.write_bytes(gzip.decompress(
        captured("trace-events")["6.1"].read_bytes()))
    doc, _ = summarize("trace", report, tmp_path,
                       tool="trace-cmd", source="x", window="1",
                       events_file=str(ev_file))
    assert doc["window"] == "markers not seen" and doc["sends"] == 0
    doc, _ = summarize("trace", report, tmp_path,
                       tool="trace-cmd", source="x", window="0",
                       events_file=str(ev_file))
    assert doc["window"] == "whole trace" and doc["sends"] > 0


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_bpftrace_maps(kernel, tmp_path):
    out = gzip.decompress(captured("bpftrace.out")[kernel].read_bytes()) \
        .decode("utf-8", "replace")
    doc, text = summarize("bpftrace", out, tmp_path,
                          tool="bpftrace", source="captured")
    top = {s["function"]: s for s in doc["senders"]}
    assert 100 <= top["ipistorm_sender_fn"]["count"] <= 200
    assert doc["senders"][0]["function"] == "ipistorm_sender_fn"
    assert doc["sends"] == sum(s["count"] for s in doc["senders"]) or \
        len(doc["senders"]) == 20
    hist = doc["handler_ns"]["call_function_single"]
    assert hist["count"] == sum(b["count"] for b in hist["buckets"]) > 0
    lows = [b["low"] for b in hist["buckets"]]
    assert lows == sorted(lows)
    for b in hist["buckets"]:
        assert b["high"] == 2 * b["low"] or b["low"] < 2
    handled = doc["handled"]["call_function_single"]
    assert max(handled, key=handled.get) == "1"     # the target
    assert "call_function_single handler time" in text


def test_bpftrace_units_and_empty_stacks(tmp_path):
    out = ("Attaching 3 probes...\n\n\n"
           "@handler_ns[call_function_single]: \n"
           "[0]                    1 |@                     |\n"
           "[2, 4)                 2 |@@                    |\n"
           "[512, 1K)              3 |@@@                   |\n"
           "[1M, 2M)               4 |@@@@                  |\n"
           "\n"
           "@handled[call_function_single, 3]: 10\n"
           "@send[]: 2\n"
           "@send[\n    native_send_call_func_ipi+1\n"
           "    smp_call_function_many_cond+711\n"
           "    on_each_cpu_cond_mask+32\n    text_poke_bp_batch+183\n"
           "]: 5\n")
    doc, _ = summarize("bpftrace", out, tmp_path,
                       tool="bpftrace", source="x")
    b = doc["handler_ns"]["call_function_single"]["buckets"]
    assert [(x["low"], x["high"], x["count"]) for x in b] == [
        (0, 1, 1), (2, 4, 2), (512, 1024, 3), (1048576, 2097152, 4)]
    assert doc["handled"] == {"call_function_single": {"3": 10}}
    assert doc["sends"] == 7
    assert doc["senders"][0] == {
        "function": "text_poke_bp_batch", "via": "on_each_cpu_cond_mask",
        "count": 5, "stack": ["native_send_call_func_ipi",
                              "smp_call_function_many_cond",
                              "on_each_cpu_cond_mask", "text_poke_bp_batch"]}
    assert doc["senders"][1]["function"] == "?"


def test_a_sender_behind_7x_smp_call_function_single():
    """7.x's smp_call_function_single() tail-calls
    __smp_call_function_single(), which is on the stack in its place: the
    sender is still the storm's function, not the helper (seen on 7.3:
    trace-cmd's stacks of ipistorm_sender_fn's calls)."""
    senders = tracesum.Senders()
    senders.add(["__smp_call_single_queue", "generic_exec_single",
                 "__smp_call_function_single", "ipistorm_sender_fn",
                 "kthread", "ret_from_fork"], 200)
    senders.add(["__smp_call_single_queue", "generic_exec_single",
                 "__smp_call_function_single", "rcu_barrier",
                 "slabstorm_run"], 8)
    by_fn = {s.function: s for s in senders.by_key.values()}
    assert by_fn["ipistorm_sender_fn"].count == 200
    assert by_fn["ipistorm_sender_fn"].via == "__smp_call_function_single"
    assert by_fn["rcu_barrier"].count == 8
