"""The verdicts' error rates, measured on simulated noise through the real
compare and bisect code (stormsuite/simulate.py): lognormal per-run noise
with a CV of 10%, lognormal per-boot drift of 6% (the figures measured on
this suite's default path), the default design of each command.

The figures are printed (pytest -s shows them) and recorded in
docs/drivers.md by `storm simulate`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stormsuite import simulate, verdict

NOISE = simulate.Noise(run_cv=0.10, boot_cv=0.06)


def test_aa_false_alarms_at_most_5_percent():
    rng = np.random.default_rng(20261123)
    marked, called = simulate.comparisons(rng, NOISE, 0.0, trials=1000,
                                          boots=3, nruns=5)
    print(f"A/A, 1000 comparisons of 3+3 boots x 5 runs: {100 * marked:.1f}% "
          f"marked anything, {100 * called:.1f}% called the primary time")
    assert marked <= 0.05


def test_aa_with_sent_counts_false_alarms_at_most_5_percent():
    """count_sent=1 adds a third primary metric (IPIs sent per call) to
    the Holm family; A/A still marks anything at most 5% of the time."""
    rng = np.random.default_rng(15)
    noise = simulate.Noise(run_cv=0.10, boot_cv=0.06, sent_per_call=1.0)
    marked, _ = simulate.comparisons(rng, noise, 0.0, trials=500,
                                     boots=3, nruns=5)
    print(f"A/A with sent counts, 500 comparisons: {100 * marked:.1f}% "
          "marked anything")
    assert marked <= 0.05


def test_tripled_sends_are_called_and_nothing_else():
    """Seed 000 reverted: the kernel sends 3 IPIs per call and the target
    takes one. Only the sent rows change: the verdict calls IPIs sent per
    call every time, and the time and received IPIs never."""
    rng = np.random.default_rng(0)
    once = simulate.Noise(run_cv=0.10, boot_cv=0.06, sent_per_call=1.0)
    thrice = dataclasses.replace(once, sent_per_call=3.0)
    trials = 100
    called = other = 0
    for _ in range(trials):
        cmp = verdict.build([simulate.side(rng, once, 1.0, 3, 5, "A"),
                             simulate.side(rng, thrice, 1.0, 3, 5, "B")])
        by_name = {r.metric.name: r.changes[1] for r in cmp.primary}
        called += by_name["ipistorm.ipis_sent_per_call"].significant
        other += by_name["ipistorm.ipis_per_call"].significant
    assert called == trials
    # the time may be called by chance (5% at most in A/A); the received
    # IPIs are exactly equal
    assert other == 0


def test_runs_as_samples_would_fail_the_same_bound():
    """The control: the same A/A data with every run taken for a boot of
    its own (what the suite did before boots were the unit) marks far
    more than 5%. The bound above can fail."""
    rng = np.random.default_rng(7)
    marked = 0
    trials = 200
    for _ in range(trials):
        a = simulate.side(rng, NOISE, 1.0, 3, 5, "A")
        b = simulate.side(rng, NOISE, 1.0, 3, 5, "B")
        for s in (a, b):
            for i, r in enumerate(s.runs):
                r["env"]["boot_id"] = f"{s.label}-{i}"
        marked += simulate.any_marked(verdict.build([a, b]))
    assert marked / trials > 0.10


@pytest.mark.parametrize("change", [0.10, 0.20])
def test_power_is_measured(change):
    rng = np.random.default_rng(int(change * 100))
    _, called = simulate.comparisons(rng, NOISE, change, trials=300,
                                     boots=3, nruns=5)
    print(f"power, 3+3 boots x 5 runs: a {100 * change:g}% change called in "
          f"{100 * called:.1f}%")
    # the design tells a change of this size from none: it is called
    # more often than the A/A bound of 5%, by more than three binomial
    # standard errors of 300 trials (a verdict blind to it would not be)
    assert called > 0.05 + 3 * (0.05 * 0.95 / 300) ** 0.5


@pytest.mark.parametrize("effect,want", [(0.20, 0.95), (0.10, 0.90)])
def test_bisect_names_the_right_commit(effect, want):
    rng = np.random.default_rng(int(effect * 1000))
    right, boots = simulate.bisect_accuracy(rng, NOISE, effect, trials=1000,
                                            ncommits=5,
                                            plan=simulate.BisectPlan())
    print(f"bisect, 5 commits, {100 * effect:g}% regression: right in "
          f"{100 * right:.1f}% of 1000, {boots:.1f} boots each")
    assert right >= want
