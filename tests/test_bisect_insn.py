"""storm bisect on instructions: the metric it follows, the tick
correction within the boots, the boot as the sample, and the endpoint
test over many simulated bisects between two builds of one kernel."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sst

from stormsuite.analysis import classify
from stormsuite.designs import bisect, bisect_measure
from stormsuite.designs.bisect_state import Reading

CALLS = 1000


def run(insn0: int, insn1: int, ticks: int, boot: str = "b0") -> dict:
    return {"storm": "ipistorm",
            "result": {"runtime_ns": 10**8, "sender.0.calls": CALLS,
                       "sender.0.target": 1, "param.cpulist": "0",
                       "irq.0.LOC": ticks, "irq.1.LOC": ticks,
                       "irq.0.CAL": 0, "irq.1.CAL": CALLS},
            "insn": {"source": "tcg-plugin",
                     "cpu": {"0": insn0, "1": insn1}},
            "interrupts": {"cpus": [], "rows": {}},
            "env": {"boot_id": boot}}


TICK = 3000         # instructions a tick, on each of the two CPUs


def runs_of(level: float, ticks: list[int], boot: str = "b0") -> list[dict]:
    return [run(int(200 * CALLS * level) + TICK * t,
                int(1000 * CALLS * level) + TICK * t, t, boot)
            for t in ticks]


def state() -> Reading:
    return Reading(storm="ipistorm", asked="auto")


def test_auto_follows_instructions_where_counted():
    st = state()
    st.samples(runs_of(1, [10, 12]))
    assert st.name == "ipistorm.insn_per_call"
    assert st.kind == "insn" and st.unit == "boots" and st.log_scale
    # the boots' own spread, no floor borrowed from times
    assert st.min_spread == 0.0


def test_auto_is_time_without_counts():
    docs = runs_of(1, [10])
    del docs[0]["insn"]
    st = state()
    st.samples(docs)
    # the run timed no call: its time is the runtime per call
    assert st.name == "ipistorm.runtime_per_call_ns"
    assert st.kind == "time" and st.min_spread == classify.MIN_SPREAD


def test_ticks_are_taken_out_within_the_boots(tmp_path):
    """Two endpoints 1% apart, two boots each, whose runs took different
    numbers of ticks: the slope fitted within the boots takes the ticks
    out exactly, so every boot of a side reads the same; run files are
    grouped into their boots by env.boot_id."""
    good = runs_of(1, [10, 20, 30], "g0") + runs_of(1, [15, 25, 35], "g1")
    bad = runs_of(1.01, [50, 60, 70], "b0") + runs_of(1.01, [40, 45, 80],
                                                        "b1")
    files = []
    for i, d in enumerate(good + bad):
        p = tmp_path / f"run-{i}.json"
        p.write_text(json.dumps({"schema": 1, "kind": "storm-run",
                                 "label": "x", "params": {}, "run": {},
                                 **d}))
        files.append(str(p))
    boots = bisect_measure.boots_of_files(files)
    assert [len(b) for b in boots] == [3, 3, 3, 3]
    st = state()
    numbers = st.boot_numbers(boots)
    # per call against ticks per call: instructions a tick
    assert st.tick_slope == pytest.approx(TICK)
    g, b = numbers[:2], numbers[2:]
    assert g[0] == pytest.approx(g[1]) and b[0] == pytest.approx(b[1])
    # the endpoints' difference is the planted 1%, at the common ticks
    assert b[0] - g[0] == pytest.approx(0.01 * 1200, abs=0.01)


# Realistic noise of ipistorm's instructions per call on sender and
# target together (docs/insn.md): a boot's level moves by boot_sd, runs
# within a boot far less; every run's window holds ticks in proportion
# to its wall time (HZ=250, 5 us a call), which whole boots and single
# runs stretch, each tick 3000 instructions on each of the two CPUs.
INSN, RUN_SD, HZ, CALL_S = 1300.0, 0.0005, 250, 5e-6


def boots(rng, n: int, boot_sd: float, runs: int = 10
          ) -> tuple[list[list[float]], list[list[float]]]:
    """n boots of one kernel: per boot its runs' instructions and ticks
    per call."""
    values, ticks = [], []
    for _ in range(n):
        level = INSN * (1 + rng.normal(0, boot_sd))
        slow = np.exp(abs(rng.normal(0, 0.3)))
        t = CALL_S * HZ * slow * np.exp(np.abs(rng.normal(0, 0.2, runs)))
        values.append(list(level * (1 + rng.normal(0, RUN_SD, runs))
                           + 2 * TICK * t))
        ticks.append(list(t))
    return values, ticks


def aa_endpoints(rng, boot_sd: float) -> classify.Endpoints:
    """storm bisect's endpoint rounds (classify.sample_endpoints, at its
    defaults) between two builds of one kernel, each round's boot
    numbers made by the bisect's reading (the slope within every boot so
    far)."""
    reading = Reading(storm="ipistorm", asked="insn",
                      name="ipistorm.insn_per_call", kind="insn",
                      summary="mean")
    have = {"good": ([], []), "bad": ([], [])}

    def measure(n: int, round_: int):
        for side in have.values():
            v, t = boots(rng, n, boot_sd)
            side[0].extend(v)
            side[1].extend(t)
        numbers = reading.numbers_of(have["good"][0] + have["bad"][0],
                                     have["good"][1] + have["bad"][1])
        k = len(have["good"][0])
        return numbers[:k], numbers[k:]
    return classify.sample_endpoints(
        measure, log=reading.log_scale, first=3,
        cap=bisect.ENDPOINT_MAX_BOOTS, confidence=0.95,
        floor=lambda: reading.floor)


@pytest.mark.parametrize("boot_sd,trials", [(0.001, 200), (0.002, 400),
                                            (0.003, 200)])
def test_a_bisect_between_the_same_kernel_refuses_to_start(boot_sd, trials):
    """Two commits whose kernels are the same (a comment changed): the
    endpoints do not differ, and the bisect refuses to start, in at
    least 95% of bisects, whatever the boots' spread (0.1-0.3%, runs
    within a boot 0.05%). Asserted with a one-sided binomial test at
    the 1% level, so that it fails when the data say the rate is
    below."""
    rng = np.random.default_rng(int(boot_sd * 1e4))
    started = sum(aa_endpoints(rng, boot_sd).differ for _ in range(trials))
    refused = trials - started
    print(f"boot spread {boot_sd:.1%}: refused {refused}/{trials}")
    assert sst.binomtest(refused, trials, 0.95,
                         alternative="less").pvalue > 0.01, refused


def test_runs_as_samples_would_start_it():
    """The control: the same endpoints with every run taken as a sample
    (what the bisect did before boots were its unit) start a bisect far
    more often than 5%."""
    rng = np.random.default_rng(5)
    trials = 100
    started = 0
    for _ in range(trials):
        g, _ = boots(rng, 3, 0.002)
        b, _ = boots(rng, 3, 0.002)
        started += classify.endpoints_differ(
            [x for v in g for x in v], [x for v in b for x in v],
            log=True)[0]
    assert started > 25, started


def plain_endpoints(rng, boot_sd: float, change: float,
                    floor: float) -> classify.Endpoints:
    """storm bisect's endpoint rounds at its defaults on boot numbers of
    instructions per call: good at INSN, bad `change` (a fraction) above,
    each boot's level off by boot_sd; the floor in percent."""
    have: dict[str, list[float]] = {"good": [], "bad": []}

    def measure(n: int, round_: int):
        for side, level in (("good", INSN), ("bad", INSN * (1 + change))):
            have[side] += list(level * (1 + rng.normal(0, boot_sd, n)))
        return list(have["good"]), list(have["bad"])
    return classify.sample_endpoints(
        measure, log=True, first=3, cap=bisect.ENDPOINT_MAX_BOOTS,
        confidence=0.95, floor=lambda: floor)


@pytest.mark.parametrize("boot_sd,boots", [(0.0002, 4), (0.0005, 12)])
def test_same_kernel_endpoints_stop_once_closer_than_the_floor(boot_sd,
                                                               boots):
    """Instructions a boot vary by about 0.02-0.1% between boots of one
    kernel (docs/insn.md): an A/A bisect is refused once the endpoints'
    interval lies inside +-0.1% (what the verdicts never call), in a
    median of `boots` boots a side or fewer instead of the cap's 20, and
    never starts more often than 5% of the time."""
    rng = np.random.default_rng(int(boot_sd * 1e5))
    trials = 200
    found = [plain_endpoints(rng, boot_sd, 0.0, 0.1) for _ in range(trials)]
    started = sum(f.differ for f in found)
    assert sst.binomtest(trials - started, trials, 0.95,
                         alternative="less").pvalue > 0.01, started
    stopped = [f for f in found if f.within is not None]
    assert len(stopped) > 0.9 * trials
    assert all(-0.1 < f.within[0] and f.within[1] < 0.1 for f in stopped)
    assert np.median([len(f.good) for f in stopped]) <= boots


@pytest.mark.parametrize("boot_sd", [0.0005, 0.001, 0.002])
def test_a_change_at_the_floor_is_not_taken_for_no_change(boot_sd):
    """The equivalence stop's own error: endpoints a floor apart (+0.1%)
    are shown closer than the floor in at most 5% of bisects, whatever
    the boots' spread (one-sided binomial test at the 1% level)."""
    rng = np.random.default_rng(int(boot_sd * 1e5))
    trials = 200
    wrong = sum(plain_endpoints(rng, boot_sd, 0.001, 0.1).within is not None
                for _ in range(trials))
    assert sst.binomtest(wrong, trials, 0.05,
                         alternative="greater").pvalue > 0.01, wrong


def test_no_floor_no_equivalence_stop():
    """Time and counts keep their floor; a floor of 0 never stops."""
    rng = np.random.default_rng(4)
    f = plain_endpoints(rng, 0.0005, 0.0, 0.0)
    assert f.within is None and len(f.good) == bisect.ENDPOINT_MAX_BOOTS
