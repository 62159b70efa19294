"""stormsuite.analysis.stats: known inputs, known outputs."""

import math

import numpy as np
import pytest

from stormsuite.analysis import stats


def test_means():
    assert stats.amean([1, 2, 3, 4]) == 2.5
    assert stats.hmean([1, 2, 4]) == pytest.approx(3 / 1.75)
    # the harmonic mean of rates is the rate of the total work
    assert stats.hmean([100, 50]) == pytest.approx(200 / 3)
    assert math.isnan(stats.hmean([1, 0, 2]))
    assert math.isnan(stats.amean([]))


def test_stddev_and_cv():
    xs = [2, 4, 4, 4, 5, 5, 7, 9]          # mean 5, sum of squares 32
    assert stats.stddev(xs) == pytest.approx(math.sqrt(32 / 7))
    assert stats.cv(xs) == pytest.approx(100 * math.sqrt(32 / 7) / 5)
    assert stats.stddev([3]) == 0
    assert stats.cv([5, 5, 5]) == 0
    assert math.isnan(stats.cv([0, 0]))


def test_pct_change():
    assert stats.pct_change(200, 150) == -25
    assert stats.pct_change(40, 50) == 25
    assert math.isnan(stats.pct_change(0, 5))


def test_welch_known_value():
    # t = -2 with 8 degrees of freedom: two-sided p = 0.080516
    p = stats.p_value([1, 2, 3, 4, 5], [3, 4, 5, 6, 7], "welch")
    assert p == pytest.approx(0.080516, abs=1e-5)


def test_welch_unequal_variances():
    # variances 0.145 and 2.5: t = -2 / sqrt(0.029 + 0.5) = -2.7498,
    # Welch-Satterthwaite df = 0.529^2 / (0.029^2/4 + 0.5^2/4) = 4.462,
    # p = 0.04558 (Student's pooled test, df 8, would say 0.02507)
    a = [10, 10.5, 9.5, 10.2, 9.8]
    b = [11, 13, 12, 14, 10]
    p = stats.p_value(a, b, "welch")
    assert p == pytest.approx(0.04558, abs=1e-4)


def test_mann_whitney_known_value():
    # complete separation of 5 and 5: exact two-sided p = 2 / C(10, 5)
    p = stats.p_value([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], "mannwhitney")
    assert p == pytest.approx(2 / 252)


def test_degenerate_samples():
    assert stats.p_value([7, 7, 7], [7, 7, 7]) == 1.0
    assert stats.p_value([7, 7, 7], [8, 8, 8]) == 0.0
    assert math.isnan(stats.p_value([1], [2, 3]))
    with pytest.raises(ValueError):
        stats.p_value([1, 2], [3, 4], "ttest")


def test_summary():
    s = stats.summarize([100, 50], harmonic=True)
    assert s.n == 2 and s.mean == pytest.approx(200 / 3)
    assert s.amean == 75 and s.min == 50 and s.max == 100


def test_change_significant_drop():
    # the idle=poll effect: ~500 CAL on the target against ~20
    base = [503, 498, 510, 501, 499]
    new = [21, 18, 25, 19, 22]
    c = stats.change(base, new, floor=10)
    assert c.reported and c.significant
    assert c.pct == pytest.approx(100 * (21 - 502.2) / 502.2)
    assert c.p < 1e-6


def test_change_noise_is_not_significant():
    c = stats.change([10.0, 12.0, 11.0, 9.0], [11.0, 10.0, 12.0, 10.5])
    assert c.reported and not c.significant


def test_tiny_counts_are_not_changes():
    c = stats.change([1, 2, 1, 2], [7, 8, 7, 8], floor=10)
    assert not c.reported and not c.significant
    assert c.pct > 0      # still computed, just not a change
    c = stats.change([1, 2, 1, 2], [17, 18, 17, 18], floor=10)
    assert c.reported and c.significant


def test_confidence_level_is_honoured():
    a, b = [1, 2, 3, 4, 5], [3, 4, 5, 6, 7]      # p = 0.0805
    assert not stats.change(a, b, confidence=0.95).significant
    assert stats.change(a, b, confidence=0.90).significant


# ---------------------------------------------------------------------
# Boots as the unit: the functions the verdict uses


def test_boot_summary():
    runs = [5.0, 1.0, 3.0, 9.0, 2.0]
    assert stats.boot_summary(runs, "min") == 1.0
    assert stats.boot_summary(runs, "median") == 3.0
    assert stats.boot_summary(runs, "mean") == 4.0
    # the fastest run ignores every slow one, the median up to half
    assert stats.boot_summary([4.5, 9.1, 9.3, 8.8, 4.6], "min") == 4.5
    assert stats.boot_summary([4.5, 9.1, 9.3, 8.8, 4.6], "median") == 8.8
    assert math.isnan(stats.boot_summary([], "min"))
    with pytest.raises(ValueError):
        stats.boot_summary(runs, "trimmed")


def test_boot_change_times_on_the_log_scale():
    # log boots 0, .1, .2 against .1, .2, .3: difference 0.1, each side's
    # variance 0.01, standard error sqrt(0.02/3) = 0.08165, t = 1.2247
    # with 4 degrees of freedom (equal variances and sizes): p = 0.28786;
    # the interval 0.1 -+ t(0.975, 4) 0.08165 = 0.1 -+ 0.22670, as ratios
    # exp(x) - 1: +10.517% [-11.900%, +38.638%]
    e = stats.boot_change([math.exp(x) for x in (0, 0.1, 0.2)],
                          [math.exp(x) for x in (0.1, 0.2, 0.3)], log=True)
    assert e.pct == pytest.approx(10.51709, abs=1e-4)
    assert e.lo == pytest.approx(-11.89984, abs=1e-4)
    assert e.hi == pytest.approx(38.63797, abs=1e-4)
    assert e.p == pytest.approx(0.287864, abs=1e-5)
    assert (e.n_base, e.n_new) == (3, 3)
    assert e.testable and not e.excludes_zero


def test_boot_change_counts_as_differences():
    # 10, 12, 14 against 20, 22, 24: difference 10 = 83.33% of 12;
    # standard error sqrt(4/3 + 4/3) = 1.63299, t = 6.1237, 4 df:
    # p = 0.0036022, interval 10 -+ 2.77645 x 1.63299 = [5.4661, 14.5339]
    e = stats.boot_change([10, 12, 14], [20, 22, 24], log=False)
    assert e.pct == pytest.approx(250 / 3)
    assert e.p == pytest.approx(0.0036022, abs=1e-6)
    assert e.lo == pytest.approx(100 * 5.46607 / 12, abs=1e-3)
    assert e.hi == pytest.approx(100 * 14.53393 / 12, abs=1e-3)
    assert e.excludes_zero


def test_boot_change_welch_unequal_sizes_and_variances():
    # variances 4 (3 boots) and 0.625 (5 boots): standard error
    # sqrt(4/3 + 0.625/5) = 1.20761, t = 9 / 1.20761 = 7.4527,
    # Welch-Satterthwaite df = 1.45833^2 / ((4/3)^2/2 + 0.125^2/4) = 2.382,
    # p = 0.010550
    e = stats.boot_change([10, 12, 14], [20, 20.5, 21, 21.5, 22], log=False)
    assert e.pct == pytest.approx(75.0)
    assert e.p == pytest.approx(0.010550, abs=1e-5)
    assert (e.n_base, e.n_new) == (3, 5)


def test_boot_change_degenerate():
    # constant counts: equal is p = 1, different is p = 0, no test needed
    assert stats.boot_change([7, 7, 7], [7, 7], log=False).p == 1.0
    e = stats.boot_change([7, 7, 7], [8, 8], log=False)
    assert e.p == 0.0 and e.pct == pytest.approx(100 / 7)
    # a count of 0 cannot go on the log scale: compared as it is
    e = stats.boot_change([0, 1, 0], [1, 2, 1], log=True)
    assert e.pct == pytest.approx(300.0)
    # one boot on a side: the point estimate only
    e = stats.boot_change([10.0], [11.0, 12.0], log=True)
    assert e.pct == pytest.approx(100 * (math.exp(
        (math.log(11) + math.log(12)) / 2) / 10 - 1))
    assert not e.testable and math.isnan(e.lo) and math.isnan(e.p)


def test_boot_changes_is_boot_change_row_by_row():
    pairs = [([1.0, 1.1, 1.2], [1.3, 1.2, 1.4]), ([5, 5, 5], [5, 5, 5]),
             ([10, 12, 14], [20, 20.5, 21, 21.5, 22]), ([3.0], [4.0, 5.0])]
    logs = [True, False, False, True]
    many = stats.boot_changes(pairs, logs)
    one = [stats.boot_change(a, b, log=g) for (a, b), g in zip(pairs, logs)]
    assert len(many) == len(one) == 4
    for m, o in zip(many, one):
        for f in ("pct", "lo", "hi", "p"):
            x, y = getattr(m, f), getattr(o, f)
            assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y)


def test_holm_known_values():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06,
    # 0.04, made monotone: 0.02, 0.03, 0.06, 0.06
    adj = stats.holm([0.01, 0.04, 0.03, 0.005, math.nan])
    assert adj[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(adj[4])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([]) == []


def complete(m: int) -> list[list[float]]:
    return [[0.0 if i == j else 1 / (m - 1) for j in range(m)]
            for i in range(m)]


def test_graph_test_is_holm_on_the_complete_graph():
    p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.0125]
    adj = stats.graph_test(p, [1 / 6] * 6, complete(6))
    assert adj == pytest.approx(stats.holm(p))


def test_graph_test_known_procedures():
    # no edges: weighted Bonferroni, p / w
    assert stats.graph_test([0.01, 0.03], [0.5, 0.5], [[0, 0], [0, 0]]) \
        == pytest.approx([0.02, 0.06])
    # a fixed sequence A then B: B is tested at alpha only once A is
    # rejected, so B's adjusted p is never below A's
    seq = [[0, 1], [0, 0]]
    assert stats.graph_test([0.01, 0.04], [1, 0], seq) == \
        pytest.approx([0.01, 0.04])
    assert stats.graph_test([0.06, 0.001], [1, 0], seq) == \
        pytest.approx([0.06, 0.06])
    # a gatekeeper: primaries P1, P2 (1/2 each) pass half to the other
    # and half to the secondary S. p = 0.01, 0.5, 0.02: P1 at 0.01 / 0.5
    # = 0.02; then P2 has 3/4, S 1/4: S at 0.02 / 0.25 = 0.08, P2 at
    # 0.5 / (3/4 + 1/4) = 0.5 once S passed its weight on
    g = [[0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
    assert stats.graph_test([0.01, 0.5, 0.02], [0.5, 0.5, 0], g) == \
        pytest.approx([0.02, 0.5, 0.08])
    # no test possible: nan stays nan and uses nothing
    adj = stats.graph_test([0.01, math.nan], [0.5, 0.5], [[0, 1], [1, 0]])
    assert adj[0] == pytest.approx(0.02) and math.isnan(adj[1])
    with pytest.raises(ValueError):
        stats.graph_test([0.1, 0.2], [0.8, 0.8], [[0, 0], [0, 0]])


def test_noise_between_boots_only():
    # every run of a boot alike: nothing within, all of it between;
    # log boots 0 and log 2: variance (log 2)^2 / 2
    n = stats.noise([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], "mean")
    assert n.within_cv == 0 and n.runs_cv == 0
    assert n.tested_cv == pytest.approx(100 * math.log(2) / math.sqrt(2))
    assert n.between_cv == pytest.approx(n.tested_cv)
    assert (n.boots, n.runs) == (2, 6)


def test_noise_within_boots_only_for_the_fastest_run():
    # two boots with the same runs 1, 1, 2, 2, 2: their fastest runs are
    # equal (nothing between), while resampling a boot's runs makes its
    # fastest 2 with probability (3/5)^5 = 0.07776: within is
    # sqrt(0.07776 x 0.92224) x log 2 = 18.562%
    n = stats.noise([[1, 1, 2, 2, 2], [2, 1, 2, 1, 2]], "min")
    assert n.tested_cv == 0 and n.between_cv == 0
    assert n.within_cv == pytest.approx(
        100 * math.sqrt(0.07776 * 0.92224) * math.log(2), rel=1e-4)
    # a slow run changes the mean's number, not the fastest run's
    slow = stats.noise([[1, 1, 1, 1, 3], [1, 1, 1, 1, 1]], "min")
    assert slow.tested_cv == 0
    assert stats.noise([[1, 1, 1, 1, 3], [1, 1, 1, 1, 1]],
                       "mean").tested_cv > 10


def test_noise_splits_the_tested_variance_in_quadrature():
    boots = [[10.0, 10.5, 12.0], [11.0, 11.2, 14.0], [12.5, 12.6, 12.9],
             [9.8, 10.0, 15.0]]
    for how in ("min", "mean", "median"):
        n = stats.noise(boots, how)
        tested = [math.log(stats.boot_summary(b, how)) for b in boots]
        assert n.tested_cv == pytest.approx(
            100 * float(np.std(tested, ddof=1)))
        if n.between_cv > 0:
            assert n.within_cv ** 2 + n.between_cv ** 2 == \
                pytest.approx(n.tested_cv ** 2)
    # one boot: no spread between boots to split
    one = stats.noise([[1.0, 2.0]], "min")
    assert math.isnan(one.tested_cv) and one.runs_cv > 0
