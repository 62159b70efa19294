"""The instruction counter on the host: the plugin's refusals and its
output's parser (stormsuite/runfiles/insn.py). The counts themselves are tested
in guests (test_insn_guest.py)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from conftest import REPO
from stormsuite.runfiles import insn

SOURCE = REPO / "qemu-plugin" / "storm-insn.c"
QEMU = shutil.which("qemu-system-x86_64")

LINES = """storm-insn 1 vcpus 4
mark 5 1 2 5650252705 416744346 654319808 1188324851
mark 6 2 2 5659409379 425906502 663658563 1197446849
"""


def test_section_is_the_window():
    sec = insn.section(LINES)
    assert sec["source"] == "tcg-plugin"
    assert sec["cpu"] == {"0": 9156674, "1": 9162156, "2": 9338755,
                          "3": 9121998}
    assert sec["marks"] == {"begin": {"seq": 5, "vcpu": 2},
                            "end": {"seq": 6, "vcpu": 2}}


@pytest.mark.parametrize("text", [
    "",                                         # the storm ran no window
    "mark 1 1 0 5 5\n",                         # never closed
    "mark 1 2 0 5 5\nmark 2 1 0 6 6\n",         # closed before opened
    "mark 1 1 0 5 5\nmark 2 2 0 6 6\nmark 3 1 0 7 7\nmark 4 2 0 8 8\n",
    "mark 1 1 0 5 5\nmark 2 2 0 6\n",           # vCPUs differ
])
def test_no_single_window_is_refused(text):
    with pytest.raises(insn.InsnError):
        insn.section(text)


def test_garbage_mark_line_is_refused():
    with pytest.raises(insn.InsnError):
        insn.parse_marks("mark 1 one 0 5\n")


def build(tmp_path: pathlib.Path, *defines: str) -> pathlib.Path:
    out = tmp_path / "storm-insn.so"
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                    "-Werror", "-fPIC", "-shared", "-fvisibility=hidden",
                    *defines, "-o", str(out), str(SOURCE), "-lpthread"],
                   check=True)
    return out


def qemu_with(plugin: str, seconds: float = 15
              ) -> subprocess.CompletedProcess | None:
    """QEMU with the plugin and nothing to run; None when it was still
    running (the plugin loaded) at the end."""
    try:
        return subprocess.run(
            [QEMU, "-M", "none", "-display", "none", "-monitor", "none",
             "-serial", "none", "-plugin", plugin],
            capture_output=True, text=True, timeout=seconds,
            stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


needs_qemu = pytest.mark.skipif(QEMU is None, reason="no qemu-system-x86_64")


@needs_qemu
def test_plugin_loads_and_writes_its_header(tmp_path):
    out = tmp_path / "insn.log"
    assert qemu_with(f"{build(tmp_path)},out={out}", seconds=5) is None
    assert out.read_text().split("\n")[0].startswith("storm-insn 1 vcpus ")


@needs_qemu
def test_unknown_plugin_api_version_is_refused(tmp_path):
    """A plugin built to expect another API version stands for a QEMU
    whose version this one does not know."""
    so = build(tmp_path, "-DSTORM_INSN_KNOWN_ABI=2")
    res = qemu_with(f"{so},out={tmp_path / 'x'}")
    assert res is not None and res.returncode != 0
    assert "plugin API is version 1; storm-insn knows version 2 only" \
        in res.stderr + res.stdout


@needs_qemu
@pytest.mark.parametrize("args,says", [
    ("", "give out=FILE"),
    (",bogus=1", "unknown argument 'bogus=1'"),
    (",out=/nonexistent/dir/f", "/nonexistent/dir/f: No such file"),
])
def test_bad_plugin_arguments_are_refused(tmp_path, args, says):
    res = qemu_with(f"{build(tmp_path)}{args}")
    assert res is not None and res.returncode != 0
    assert says in res.stderr + res.stdout


def test_pmu_counts_make_the_section():
    res = {"insn.source": "pmu", "insn.0": 100, "cycles.0": 300,
           "insn.1": 50, "cycles.1": 90, "irq.0.CAL": 3}
    assert insn.of_run(None, res) == {
        "source": "pmu", "cpu": {"0": 100, "1": 50},
        "cycles": {"0": 300, "1": 90}}


def test_no_pmu_says_off_not_zero():
    sec = insn.of_run(None, {"insn.source": "off (no PMU counter: -2)"})
    assert sec == {"source": "off", "why": "no PMU counter: -2"}
    assert "cpu" not in sec


def test_a_counter_that_ran_part_of_the_window_is_not_a_count():
    """include/storm_pmu.c: a counter whose running time fell short of
    its enabled time in the window (multiplexed, or in error state) makes
    the module say off, with the times, and no counts."""
    why = ("PMU counter insn on CPU 1 ran 1200 of the 5000000 ns it was "
           "enabled in the window")
    sec = insn.of_run(None, {"insn.source": f"off ({why})"})
    assert sec == {"source": "off", "why": why}


def test_plugin_window_wins_over_the_module():
    sec = insn.of_run(LINES, {"insn.source": "off (no PMU counter: -2)"})
    assert sec["source"] == "tcg-plugin"


def run_with(storm: str, result: dict, cpu: dict, source="tcg-plugin"):
    return {"storm": storm, "result": result,
            "insn": {"source": source, "cpu": cpu},
            "interrupts": {"cpus": [], "rows": {}}}


def names(run) -> dict[str, tuple[float, str]]:
    from stormsuite.runfiles import metrics
    return {m.name: (v, m.role) for m, v in metrics.of_run(run).items()}


def test_ipistorm_sides_and_total():
    res = {"runtime_ns": 10**8, "sender.0.calls": 100, "sender.0.target": 1,
           "param.cpulist": "0", "param.targets": "1",
           "irq.0.LOC": 3, "irq.1.LOC": 4}
    m = names(run_with("ipistorm", res, {"0": 20000, "1": 100000,
                                         "2": 7, "3": 9}))
    assert m["ipistorm.insn_per_call.sender"] == (200, "primary")
    assert m["ipistorm.insn_per_call.target"] == (1000, "primary")
    assert m["ipistorm.insn_per_call"] == (1200, "derived")
    assert m["ipistorm.ticks_per_call.target"] == (0.04, "derived")
    assert m["ipistorm.ticks_per_call"] == (0.07, "derived")
    # no call timed: the runtime per call, under its own name
    assert m["ipistorm.runtime_per_call_ns"][1] == "secondary"
    assert "ipistorm.insn.CPU2" not in m     # not a storm CPU


def test_every_cpu_sending_is_one_total():
    res = {"runtime_ns": 10**8, "param.cpulist": "0-1",
           "sender.0.calls": 10, "sender.0.target": 1,
           "sender.1.calls": 10, "sender.1.target": 0}
    m = names(run_with("ipistorm", res, {"0": 3000, "1": 5000}))
    assert m["ipistorm.insn_per_call"] == (400, "primary")
    assert "ipistorm.insn_per_call.sender" not in m


def test_tlbstorm_counts_the_flusher_only():
    res = {"runtime_ns": 10**8, "flushes": 100, "flusher.0.flushes": 100,
           "param.cpulist": "0", "param.targets": "1-2",
           "worker.1.touches": 5, "worker.2.touches": 5}
    m = names(run_with("tlbstorm", res, {"0": 50000, "1": 10**7,
                                         "2": 10**7}))
    assert m["tlbstorm.insn_per_flush.sender"] == (500, "primary")
    # the workers' counts follow time: shown per CPU, never in a primary
    assert m["tlbstorm.insn.CPU1"] == (10**7, "secondary")


def test_pmu_counts_leave_time_primary():
    res = {"runtime_ns": 10**8, "caches": 10, "run.ipis": 0}
    m = names(run_with("slabstorm", res, {"0": 1000, "1": 3000}, "pmu"))
    assert m["slabstorm.insn_per_op"] == (400, "primary")
    assert m["slabstorm.time_per_op_ns"][1] == "primary"


def test_no_counts_no_rows():
    res = {"runtime_ns": 10**8, "caches": 10, "run.ipis": 0}
    run = run_with("slabstorm", res, {})
    run["insn"] = {"source": "off", "why": "pmu=0"}
    assert not [n for n in names(run) if "insn" in n]
