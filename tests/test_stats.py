"""stormsuite.stats: known inputs, known outputs."""

import math

import pytest

from stormsuite import stats


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
