"""storm bisect on instructions: the metric it follows, the tick
correction, and a run as the sample (one boot a step)."""

from __future__ import annotations

import json

import pytest

from stormsuite.bisect_state import Reading

CALLS = 1000


def run(insn0: int, insn1: int, ticks: int) -> dict:
    return {"storm": "ipistorm",
            "result": {"runtime_ns": 10**8, "sender.0.calls": CALLS,
                       "sender.0.target": 1, "param.cpulist": "0",
                       "irq.0.LOC": ticks, "irq.1.LOC": ticks,
                       "irq.0.CAL": 0, "irq.1.CAL": CALLS},
            "insn": {"source": "tcg-plugin",
                     "cpu": {"0": insn0, "1": insn1}},
            "interrupts": {"cpus": [], "rows": {}}}


TICK = 3000         # instructions a tick, on each of the two CPUs


def runs_of(level: float, ticks: list[int]) -> list[dict]:
    return [run(int(200 * CALLS * level) + TICK * t,
                int(1000 * CALLS * level) + TICK * t, t) for t in ticks]


def state() -> Reading:
    return Reading(storm="ipistorm", asked="auto")


def test_auto_follows_instructions_where_counted():
    st = state()
    st.samples(runs_of(1, [10, 12]))
    assert st.name == "ipistorm.insn_per_call"
    assert st.kind == "insn" and st.by_run


def test_auto_is_time_without_counts():
    docs = runs_of(1, [10])
    del docs[0]["insn"]
    st = state()
    st.samples(docs)
    # the run timed no call: its time is the runtime per call
    assert st.name == "ipistorm.runtime_per_call_ns"
    assert st.kind == "time" and not st.by_run


def test_ticks_are_taken_out_with_the_endpoints_slope(tmp_path):
    """Two endpoints 1% apart whose runs took different numbers of ticks:
    the slope fitted within them takes the ticks out exactly, so every
    run of a side reads the same."""
    good, bad = runs_of(1, [10, 20, 30]), runs_of(1.01, [50, 60, 70])
    files = []
    for name, docs in (("good", good), ("bad", bad)):
        paths = []
        for i, d in enumerate(docs):
            p = tmp_path / f"{name}-{i}.json"
            p.write_text(json.dumps({"schema": 1, "kind": "storm-run",
                                     "label": name, "params": {}, "env": {},
                                     "run": {}, **d}))
            paths.append(str(p))
        files.append(paths)
    st = state()
    st.samples(good)
    st.fit_ticks(files)
    # per call against ticks per call: instructions a tick
    assert st.tick_slope == pytest.approx(TICK)
    g = st.samples(good)
    b = st.samples(bad)
    assert max(g) - min(g) == pytest.approx(0, abs=1e-6)
    assert max(b) - min(b) == pytest.approx(0, abs=1e-6)
    # the endpoints' difference is the planted 1%, at the common ticks
    assert b[0] - g[0] == pytest.approx(0.01 * 1200, abs=0.01)
