"""stormsuite.runfiles.result: the modules' "name: value" result files."""

import json
import re
import pathlib

import pytest

from stormsuite.report import show
from stormsuite.runfiles import result

DATA = pathlib.Path(__file__).parent / "data"


def load(name):
    return result.parse((DATA / name).read_text())


def test_real_single_result_parses():
    res = load("ipistorm-6.1-single.result")
    assert res["storm"] == "ipistorm"
    assert res["schema"] == "1"
    assert res["status"] == "done"
    assert result.senders(res)[1]["target"] == "3"
    assert result.per_cpu(res, "handled")[3] == 1000
    assert set(result.per_cpu(res, "CAL")) == {0, 1, 2, 3}


def test_histogram_counts_add_up():
    res = load("ipistorm-6.1-single.result")
    h = result.histogram(res, "sender.1.latency")
    assert h.count == sum(c for _, c in h.buckets) == 1000
    assert h.buckets == sorted(h.buckets)


def test_missing_histogram_is_none():
    assert result.histogram({"storm": "x"}, "latency") is None


@pytest.mark.parametrize("low,width", [
    (0, 1), (15, 1), (16, 1), (31, 1), (32, 2), (34, 2), (64, 4),
    (1 << 20, 1 << 16), (31 << 20, 1 << 20)])
def test_bucket_width_mirrors_storm_h(low, width):
    assert result.bucket_width(low) == width


def index(ns):
    """storm_hist_index() from include/storm.h, for cross-checking."""
    if ns < 16:
        return ns
    msb = ns.bit_length() - 1
    shift = msb - 4
    return (shift + 1) * 16 + ((ns >> shift) & 15)


def low(idx):
    if idx < 16:
        return idx
    shift = idx // 16 - 1
    return (16 + idx % 16) << shift


@pytest.mark.parametrize("ns", [0, 1, 15, 16, 17, 31, 32, 33, 1000, 12345,
                                999_999, 2**30 + 12345, 2**40 - 1])
def test_bucket_bounds_contain_the_value(ns):
    lo = low(index(ns))
    assert lo <= ns < lo + result.bucket_width(lo)
    # relative bucket width is what bounds the percentile error: 1/16
    assert result.bucket_width(lo) <= max(1, lo / 16)


def hist(values):
    buckets = {}
    for v in values:
        lo = low(index(v))
        buckets[lo] = buckets.get(lo, 0) + 1
    return result.Histogram(buckets=sorted(buckets.items()),
                            count=len(values), min_ns=min(values),
                            max_ns=max(values),
                            mean_ns=sum(values) // len(values))


def test_percentiles_within_bucket_error_of_exact():
    values = [1000 + 37 * i for i in range(10_000)]   # 1000 .. 370963
    h = hist(values)
    for p in (50, 90, 99, 99.9):
        exact = sorted(values)[int(len(values) * p / 100) - 1]
        assert abs(h.percentile(p) - exact) / exact < 0.07, p


def test_percentiles_are_clamped_and_monotonic():
    h = hist([5000] * 99 + [9_000_000])
    assert h.percentile(0) == 5000 or h.percentile(0) >= h.min_ns
    assert h.percentile(50) <= h.percentile(99) <= h.percentile(100)
    assert h.percentile(100) <= 9_000_000
    assert h.percentile(99) < 6000            # the outlier is the top 1%


def test_percentile_out_of_range_refused():
    with pytest.raises(ValueError):
        hist([1]).percentile(101)


def test_parse_refuses_non_results():
    with pytest.raises(result.ResultError, match="not a storm result"):
        result.parse("hello: world\n")
    with pytest.raises(result.ResultError, match="not 'name: value'"):
        result.parse("storm: x\ngarbage line\n")
    with pytest.raises(result.ResultError, match="given twice"):
        result.parse("storm: x\nschema: 1\nstatus: done\nstorm: y\n")


def test_bad_bucket_refused():
    with pytest.raises(result.ResultError, match="bad bucket"):
        result.histogram({"latency.hist": "12:3 x:1"}, "latency")


@pytest.mark.parametrize("text,cpus", [
    ("", []), ("3", [3]), ("0-3", [0, 1, 2, 3]), ("0-1,8,10-11",
                                                   [0, 1, 8, 10, 11])])
def test_cpulist(text, cpus):
    assert result.cpulist(text) == cpus


SENT_RESULT = """storm: ipistorm
schema: 1
kernel: 6.1.0
status: done
runtime_ns: 1000000
sender.0.target: 1
sender.0.calls: 10
sender.0.runtime_ns: 1000000
irq.1.CAL: 7
sent.source: kprobe native_send_call_func_ipi
sent.missed: 1
sent.hits: 12
sent.probe_ns: 250
sent.0.CAL: 2
sent_by.0.CAL: 10
sent.1.CAL: 10
sent_by.1.CAL: 2
"""


def test_sent_counts_by_target_and_sender():
    res = result.parse(SENT_RESULT)
    assert result.per_cpu(res, "CAL") == {1: 7}
    assert result.per_cpu(res, "CAL", "sent") == {0: 2, 1: 10}
    assert result.per_cpu(res, "CAL", "sent_by") == {0: 10, 1: 2}
    text = show.summary(res)
    assert "CAL sent to cpu: 0:2 1:10  (total 12)" in text
    assert "CAL sent by cpu: 0:10 1:2  (total 12)" in text
    assert "sent: 12 probe hits at 250 ns, 1 missed" in text


def test_show_reads_a_run_file(capsys):
    # storm show takes a run file as well as a result file: the same
    # summary of the result the run file holds
    run = next((DATA / "runs").rglob("run-*.json"))
    doc = json.loads(run.read_text())
    assert show.main([str(run)]) == 0
    out = capsys.readouterr().out
    calls = doc["result"]["sender.0.calls"]
    assert out.startswith(f"{doc['storm']} on {doc['result']['kernel']}: ")
    assert f"cpu 0 -> {doc['result']['sender.0.target']}: {calls} calls" \
        in out
    res, loaded = show.load(run)
    assert res == {k: str(v) for k, v in doc["result"].items()}
    assert loaded["result"] == doc["result"]


def test_show_gives_a_run_files_instructions_per_operation(capsys):
    """A guest with the instruction counter: storm show prints the
    instructions per call on sender and target, as compare reads them
    (sender + target = together)."""
    run = sorted((DATA / "boots" / "insn-aa" / "6.1.0-56-amd64.a")
                 .rglob("run-*.json"))[0]
    doc = json.loads(run.read_text())
    assert show.main([str(run)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    m = re.fullmatch(r"  instructions per call: sender ([\d,.]+), target "
                     r"([\d,.]+), together ([\d,.]+)  \(tcg-plugin: exact "
                     r"per vCPU\)", line)
    assert m, line
    sender, target, together = (float(x.replace(",", "")) for x in m.groups())
    assert together == pytest.approx(sender + target, abs=0.11)
    cpu = doc["insn"]["cpu"]
    calls = int(doc["result"]["sender.0.calls"])
    # the sender's CPU 0 ran at least its calls' share
    assert sender < int(cpu["0"]) / calls


def test_show_of_a_result_file_has_no_instruction_line(capsys):
    res = next((DATA / "runs").rglob("run-*.json"))
    doc = json.loads(res.read_text())
    doc.pop("insn", None)
    assert "instructions per" not in show.insn_line(doc)
