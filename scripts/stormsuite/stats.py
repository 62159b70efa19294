"""Statistics for comparing result sets: means, spread, change, significance.

Two layers. The descriptive one (amean, hmean, cv, summarize) follows
mmtests conventions: the arithmetic mean (Amean) for times and counts, the
harmonic mean (Hmean) for rates, the coefficient of variation (CV, sample
standard deviation over the mean), and the change in percent against the
baseline. Significance is a two-sided test at a given confidence level:
Welch's t-test (unequal variances; the default) or the Mann-Whitney U test
(no normality assumption; needs a handful of runs per side to ever reach
95%).

The inferential one (boot_change, holm, noise) treats the boot as the unit
of replication: runs inside one boot share that boot's memory placement,
host load and timer alignment, so they are not independent samples of "this
kernel". Each boot is first reduced to one number (boot_summary: the median
of its runs for times, the mean for counts), and the test compares those
per-boot numbers between the sides: Welch's t-test, on the logarithm for
times (emulation drift is multiplicative), with its confidence interval for
the change. holm() corrects a family of such tests; noise() splits the
spread into its within-boot and between-boot parts.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import warnings
from typing import Sequence

import numpy as np

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


# ---------------------------------------------------------------------
# Boots as the unit of replication

TRIM = 0.2                  # cut from each end of a boot's runs (times)


def boot_summary(runs: Sequence[float], robust: bool) -> float:
    """One number per boot: for times (robust) the 20% trimmed mean of
    its runs (one emulator hiccup in a run does not move it, and it wastes
    less of the runs than the median: with 10 runs it averages the middle
    six), for counts their mean."""
    if not runs:
        return math.nan
    if not robust:
        return statistics.fmean(runs)
    from scipy import stats as sst
    return float(sst.trim_mean(np.asarray(runs, dtype=float), TRIM))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A change between two sides, boots as the unit."""
    pct: float              # point estimate, percent of the baseline
    lo: float               # confidence interval of pct (nan: untestable)
    hi: float
    p: float                # two-sided p-value (nan: untestable)
    n_base: int             # boots per side behind it
    n_new: int

    @property
    def testable(self) -> bool:
        return not math.isnan(self.p)

    @property
    def excludes_zero(self) -> bool:
        return self.testable and (self.lo > 0 or self.hi < 0)


def _ttest(x: np.ndarray, y: np.ndarray, confidence: float
           ) -> tuple[float, float, float, float]:
    """Welch: (mean(y) - mean(x), its CI low and high, two-sided p)."""
    from scipy import stats as sst   # imported late: the CLI starts faster
    diff = float(y.mean() - x.mean())
    if x.var() == 0 and y.var() == 0:
        # both sides constant over boots (deterministic counts)
        return diff, diff, diff, 1.0 if diff == 0 else 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sst.ttest_ind(y, x, equal_var=False)
        ci = res.confidence_interval(confidence_level=confidence)
    return diff, float(ci.low), float(ci.high), float(res.pvalue)


def boot_change(base: Sequence[float], new: Sequence[float], *,
                log: bool, confidence: float = 0.95) -> Estimate:
    """The change from base to new, given one summary per boot on each
    side. log: test and bound the ratio new/base on the log scale (times,
    always positive); otherwise the difference, in percent of the
    baseline's mean (counts, which may be 0). Fewer than two boots on a
    side: the point estimate only."""
    x = np.asarray(base, dtype=float)
    y = np.asarray(new, dtype=float)
    nb, nn = len(x), len(y)
    nan = math.nan
    if nb == 0 or nn == 0:
        return Estimate(nan, nan, nan, nan, nb, nn)
    if log:
        if (x <= 0).any() or (y <= 0).any():
            return boot_change(base, new, log=False, confidence=confidence)
        x, y = np.log(x), np.log(y)

        def to_pct(d: float) -> float:
            return 100 * math.expm1(d)
    else:
        ref = abs(float(x.mean()))

        def to_pct(d: float) -> float:
            return 100 * d / ref if ref else nan
    point = to_pct(float(y.mean() - x.mean()))
    if nb < 2 or nn < 2:
        return Estimate(point, nan, nan, nan, nb, nn)
    d, lo, hi, p = _ttest(x, y, confidence)
    return Estimate(to_pct(d), to_pct(lo), to_pct(hi), p, nb, nn)


def common_slope(xs: Sequence[Sequence[float]],
                 ys: Sequence[Sequence[float]]) -> float | None:
    """The least-squares slope of y on x shared by several groups, each
    with its own mean (the within-group slope of an analysis of
    covariance); None when x does not vary within any group."""
    sxy = sxx = 0.0
    for x, y in zip(xs, ys):
        if len(x) < 2:
            continue
        xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        dx = xa - xa.mean()
        sxy += float((dx * (ya - ya.mean())).sum())
        sxx += float((dx * dx).sum())
    return sxy / sxx if sxx > 0 else None


def covariate_change(base: Sequence[float], base_x: Sequence[float],
                     new: Sequence[float], new_x: Sequence[float], *,
                     confidence: float = 0.95,
                     boot_cv: float = 0.0) -> Estimate:
    """The change from base to new, runs of one boot a side as the unit,
    adjusted for a covariate x that adds to every value (analysis of
    covariance: y = a + change * [new] + slope * x, one slope for both
    sides). The interval and the p-value carry the slope's own
    uncertainty, and boot_cv (percent): the spread of a boot's mean that
    its runs cannot show, known from boots measured before. Without
    variation of x within the sides, Welch on y."""
    from scipy import stats as sst
    y = np.asarray(list(base) + list(new), dtype=float)
    x = np.asarray(list(base_x) + list(new_x), dtype=float)
    side = np.r_[np.zeros(len(base)), np.ones(len(new))]
    nb, nn = len(base), len(new)
    nan = math.nan
    ref = float(np.mean(base)) if nb else nan
    within_x = [x[side == s] for s in (0, 1)]
    if nb < 2 or nn < 2 or not ref or \
            sum(float(((g - g.mean()) ** 2).sum()) for g in within_x) == 0:
        return boot_change(base, new, log=True, confidence=confidence)
    design = np.column_stack([np.ones_like(y), side, x])
    coef, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    dof = len(y) - 3
    if rank < 3 or dof < 1:
        return boot_change(base, new, log=True, confidence=confidence)
    resid = y - design @ coef
    s2 = float(resid @ resid) / dof
    se = math.sqrt(s2 * float(np.linalg.inv(design.T @ design)[1, 1])
                   + 2 * (boot_cv / 100 * ref) ** 2)
    d = float(coef[1])
    if se == 0:
        return Estimate(100 * d / ref, 100 * d / ref, 100 * d / ref,
                        1.0 if d == 0 else 0.0, nb, nn)
    tq = float(sst.t.ppf(0.5 + confidence / 2, dof))
    p = float(2 * sst.t.sf(abs(d / se), dof))
    return Estimate(100 * d / ref, 100 * (d - tq * se) / ref,
                    100 * (d + tq * se) / ref, p, nb, nn)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (nan stays nan): the family-wise
    error rate stays at most alpha whatever the rows' dependence, which
    matters here, where latency percentiles and interrupt rows move
    together."""
    p = np.asarray(pvalues, dtype=float)
    ok = ~np.isnan(p)
    out = np.full(len(p), np.nan)
    m = int(ok.sum())
    if m == 0:
        return out.tolist()
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(p[idx], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out.tolist()


@dataclasses.dataclass(frozen=True)
class Noise:
    within_cv: float        # percent: spread of runs inside a boot
    between_cv: float       # percent: spread of boots beyond that
    boots: int
    runs: int


def noise(boots: Sequence[Sequence[float]]) -> Noise:
    """Within-boot and between-boot CV (one-way random-effects variance
    components on the log scale, where a standard deviation is a CV).
    between_cv is what a boot adds on top of its runs' own spread: the
    noise that only more boots, not more runs, average away."""
    groups = [np.log(np.asarray(b, dtype=float)) for b in boots if len(b)]
    nan = math.nan
    runs = sum(len(g) for g in groups)
    if not groups or any((g == -np.inf).any() or np.isnan(g).any()
                         for g in groups):
        return Noise(nan, nan, len(groups), runs)
    dof = sum(len(g) - 1 for g in groups)
    within = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / dof \
        if dof else nan
    between = nan
    if len(groups) > 1:
        means = np.array([g.mean() for g in groups])
        mean_n = runs / len(groups)
        between = float(means.var(ddof=1)) - (within / mean_n
                                              if dof else 0.0)
        between = max(between, 0.0)
    return Noise(100 * math.sqrt(within) if dof else nan,
                 100 * math.sqrt(between) if len(groups) > 1 else nan,
                 len(groups), runs)
