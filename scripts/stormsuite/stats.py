"""Statistics for comparing result sets: means, spread, change, significance.

mmtests conventions: the arithmetic mean (Amean) for times and counts, the
harmonic mean (Hmean) for rates, the coefficient of variation (CV, sample
standard deviation over the mean), and the change in percent against the
baseline. Significance is a two-sided test at a given confidence level:
Welch's t-test (unequal variances; the default) or the Mann-Whitney U test
(no normality assumption; needs a handful of runs per side to ever reach
95%).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import warnings
from typing import Sequence

TESTS = {
    "welch": "Welch's t-test",
    "mannwhitney": "Mann-Whitney U test",
}


def amean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else math.nan


def hmean(xs: Sequence[float]) -> float:
    """Harmonic mean; nan when a value is not positive (undefined)."""
    if not xs or any(x <= 0 for x in xs):
        return math.nan
    return len(xs) / sum(1 / x for x in xs)


def stddev(xs: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single value."""
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def cv(xs: Sequence[float]) -> float:
    """Coefficient of variation in percent; nan when the mean is 0."""
    m = amean(xs)
    if not xs or m == 0 or math.isnan(m):
        return math.nan
    return 100 * stddev(xs) / abs(m)


def pct_change(base: float, new: float) -> float:
    """(new - base) / base in percent; nan when base is 0."""
    if base == 0 or math.isnan(base) or math.isnan(new):
        return math.nan
    return 100 * (new - base) / abs(base)


def p_value(a: Sequence[float], b: Sequence[float],
            test: str = "welch") -> float:
    """Two-sided p-value of "a and b come from the same distribution".

    Degenerate samples are decided without the test: both constant and
    equal gives 1, both constant and different gives 0 (the counts of a
    deterministic storm). Fewer than two values on a side gives nan.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r} (one of {', '.join(TESTS)})")
    if len(a) < 2 or len(b) < 2:
        return math.nan
    if stddev(a) == 0 and stddev(b) == 0:
        return 1.0 if amean(a) == amean(b) else 0.0
    from scipy import stats as sst   # imported late: the CLI starts faster
    with warnings.catch_warnings():
        # nearly identical samples: scipy warns of precision loss, and
        # its answer (a large p) is the right one here
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "welch":
            res = sst.ttest_ind(a, b, equal_var=False)
        else:
            res = sst.mannwhitneyu(a, b, alternative="two-sided")
    return float(res.pvalue)


@dataclasses.dataclass
class Summary:
    n: int
    mean: float         # Amean or Hmean, as asked
    amean: float
    stddev: float
    cv: float
    min: float
    max: float


def summarize(xs: Sequence[float], harmonic: bool = False) -> Summary:
    xs = list(xs)
    return Summary(n=len(xs), mean=hmean(xs) if harmonic else amean(xs),
                   amean=amean(xs), stddev=stddev(xs), cv=cv(xs),
                   min=min(xs) if xs else math.nan,
                   max=max(xs) if xs else math.nan)


@dataclasses.dataclass
class Change:
    pct: float              # (candidate - baseline) / baseline, percent
    p: float                # two-sided p-value (nan: no test possible)
    significant: bool       # p < 1 - confidence
    reported: bool          # False: below the floor, not a change


def change(base: Sequence[float], new: Sequence[float], *,
           harmonic: bool = False, test: str = "welch",
           confidence: float = 0.95, floor: float = 0.0) -> Change:
    """The change from base to new. When both means are below floor (tiny
    counts) the change is not reported and never significant."""
    mb = hmean(base) if harmonic else amean(base)
    mn = hmean(new) if harmonic else amean(new)
    pct = pct_change(mb, mn)
    reported = max(abs(amean(base)), abs(amean(new))) >= floor
    p = p_value(base, new, test)
    significant = reported and not math.isnan(p) and p < 1 - confidence
    return Change(pct=pct, p=p, significant=significant, reported=reported)
