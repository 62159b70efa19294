"""Statistics for comparing result sets: means, spread, change, significance.

Two layers. The descriptive one (amean, hmean, cv, summarize) follows
mmtests conventions: the arithmetic mean (Amean) for times and counts, the
harmonic mean (Hmean) for rates, the coefficient of variation (CV, sample
standard deviation over the mean), and the change in percent against the
baseline. Significance is a two-sided test at a given confidence level:
Welch's t-test (unequal variances; the default) or the Mann-Whitney U test
(no normality assumption; needs a handful of runs per side to ever reach
95%).

The inferential one (boot_summary, boot_change, holm, graph_test, noise)
treats the boot as the unit of replication: runs inside one boot share
that boot's memory placement, host load and timer alignment, so they are
not independent samples of "this kernel". Each boot is first reduced to
one number (boot_summary: for a storm's primary time the minimum of its
runs, since noise under emulation only ever slows a run down; for other
times the median of its runs; for counts their mean), and the test
compares those per-boot numbers between the sides: Welch's t-test, on the
logarithm for times (emulation drift is multiplicative), with its
confidence interval for the change. holm() and graph_test() correct a
family of such tests; noise() splits the variance of the per-boot numbers
tested into what the runs inside a boot contribute and what the boots do.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import warnings
from typing import Any, Sequence

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
    n = len(xs)
    if n < 2:
        return 0.0
    # two passes of exact sums: numpy's answer to rounding, without its
    # cost on a handful of values (compare takes thousands of them)
    m = math.fsum(xs) / n
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (n - 1))


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

SUMMARIES = ("min", "median", "mean")


def boot_summary(runs: Sequence[float], how: str) -> float:
    """One number per boot from its runs: "min" (a primary time: host
    load and emulator stalls only ever slow a run down, so the fastest
    run is the one nearest what the kernel costs; it falls with the
    number of runs, so compare only boots with as many runs), "median"
    (other times: unmoved by slow runs while fewer than half are slow) or
    "mean" (counts)."""
    if how not in SUMMARIES:
        raise ValueError(f"unknown boot summary {how!r}")
    if not len(runs):
        return math.nan
    if how != "mean" and not any(math.isnan(r) for r in runs):
        # the builtins give numpy's answer, without its cost on a few
        # runs (compare summarises every metric of every boot)
        return float(min(runs) if how == "min" else statistics.median(runs))
    x = np.asarray(runs, dtype=float)
    return float({"min": np.min, "median": np.median, "mean": np.mean}[how](x))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A change between two sides, boots as the unit."""
    pct: float              # point estimate, percent of the baseline
    lo: float               # confidence interval of pct (nan: untestable)
    hi: float
    p: float                # two-sided p-value (nan: untestable)
    n_base: int             # boots per side behind it
    n_new: int
    basis: str = ""         # where the spread came from when not the
                            # boots' own (bootmodel.change), or why
                            # there is no test

    @property
    def testable(self) -> bool:
        return not math.isnan(self.p)

    @property
    def excludes_zero(self) -> bool:
        return self.testable and (self.lo > 0 or self.hi < 0)


def _ttests(x: np.ndarray, y: np.ndarray, confidence: float
            ) -> list[tuple[float, float, float, float]]:
    """Welch on each row of x and y (rows: metrics; columns: boots):
    (mean(y) - mean(x), its CI low and high, two-sided p), one scipy call
    for them all."""
    from scipy import stats as sst   # imported late: the CLI starts faster
    diff = y.mean(axis=1) - x.mean(axis=1)
    const = (x.var(axis=1) == 0) & (y.var(axis=1) == 0)
    out: list[tuple[float, float, float, float]] = []
    if (~const).any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = sst.ttest_ind(y[~const], x[~const], axis=1,
                                equal_var=False)
            ci = res.confidence_interval(confidence_level=confidence)
        tested = iter(zip(np.atleast_1d(ci.low), np.atleast_1d(ci.high),
                          np.atleast_1d(res.pvalue)))
    for k, d in enumerate(diff):
        if const[k]:
            # both sides constant over boots (deterministic counts)
            out.append((float(d), float(d), float(d),
                        1.0 if d == 0 else 0.0))
        else:
            lo, hi, p = next(tested)
            out.append((float(d), float(lo), float(hi), float(p)))
    return out


def boot_changes(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
                 logs: Sequence[bool], confidence: float = 0.95
                 ) -> list[Estimate]:
    """boot_change of each (base, new) pair, logs[k] its scale, with one
    test call for all the pairs of equal sizes (compare's rows share
    their boots)."""
    nan = math.nan
    out: list[Estimate | None] = [None] * len(pairs)
    scaled: dict[tuple[int, int], list[tuple[int, np.ndarray, np.ndarray,
                                            Any]]] = {}
    for k, ((base, new), log) in enumerate(zip(pairs, logs)):
        x = np.asarray(base, dtype=float)
        y = np.asarray(new, dtype=float)
        nb, nn = len(x), len(y)
        if nb == 0 or nn == 0:
            out[k] = Estimate(nan, nan, nan, nan, nb, nn)
            continue
        if log and not ((x <= 0).any() or (y <= 0).any()):
            x, y = np.log(x), np.log(y)

            def to_pct(d: float) -> float:
                return 100 * math.expm1(d)
        else:
            ref = abs(float(x.mean()))

            def to_pct(d: float, ref: float = ref) -> float:
                return 100 * d / ref if ref else nan
        if nb < 2 or nn < 2:
            out[k] = Estimate(to_pct(float(y.mean() - x.mean())), nan, nan,
                              nan, nb, nn)
            continue
        scaled.setdefault((nb, nn), []).append((k, x, y, to_pct))
    for (nb, nn), group in scaled.items():
        res = _ttests(np.array([g[1] for g in group]),
                      np.array([g[2] for g in group]), confidence)
        for (k, _, _, to_pct), (d, lo, hi, p) in zip(group, res):
            out[k] = Estimate(to_pct(d), to_pct(lo), to_pct(hi), p, nb, nn)
    return [e for e in out if e is not None]


def boot_change(base: Sequence[float], new: Sequence[float], *,
                log: bool, confidence: float = 0.95) -> Estimate:
    """The change from base to new, given one summary per boot on each
    side: Welch's t-test and its confidence interval. log: test and bound
    the ratio new/base on the log scale (times, always positive; counts
    with a value not above 0 fall back to the other scale); otherwise the
    difference, in percent of the baseline's mean (counts, which may be
    0). Both sides constant: p is 1 when equal, 0 when not. Fewer than
    two boots on a side: the point estimate only."""
    return boot_changes([(base, new)], [log], confidence)[0]


# A run this many robust standard deviations (1.4826 x MAD) above its
# boot's median, after the ticks, had something else run in its window:
# an instruction count only ever gains from that (docs/insn.md;
# bootmodel.boot_of leaves it out). Measured: a 6.12 target run 13.9
# above, the rest of its boot within 2.5.
HIGH_OUTLIER = 6.0


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


def graph_test(pvalues: Sequence[float], weights: Sequence[float],
               transitions: Sequence[Sequence[float]]) -> list[float]:
    """Adjusted p-values of a graphical multiple test (Bretz, Maurer,
    Brannath and Posch 2009, Statistics in Medicine 28:586, algorithms 1
    and 2): hypothesis j starts with weights[j] of alpha (the weights sum
    to at most 1); when it is rejected its weight moves to the others as
    transitions[j] says (each row sums to at most 1), and the graph is
    updated. A hypothesis is rejected at level alpha when its adjusted p
    is at most alpha; the family-wise error rate stays at most alpha in
    the strong sense whatever the dependence between the tests (closed
    testing with weighted Bonferroni tests). Holm is the complete graph
    with equal weights. nan (no test possible) is never rejected and
    stays nan; a hypothesis that never receives weight gets 1."""
    p = np.asarray(pvalues, dtype=float)
    w = np.asarray(weights, dtype=float).copy()
    g = np.asarray(transitions, dtype=float).reshape(len(p), len(p)).copy()
    if (w < 0).any() or w.sum() > 1 + 1e-9 or (g < 0).any() \
            or (g.sum(axis=1) > 1 + 1e-9).any() or np.diag(g).any():
        raise ValueError("graph_test: weights and transitions must be "
                         "non-negative, sum to at most 1, no self-loops")
    out = np.where(np.isnan(p), np.nan, 1.0)
    active = ~np.isnan(p)
    q = 0.0
    while active.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(active & (w > 0), p / w, np.inf)
        j = int(np.argmin(ratio))
        if not np.isfinite(ratio[j]):
            break
        q = max(q, min(1.0, float(ratio[j])))
        out[j] = q
        active[j] = False
        # algorithm 1: j's weight and edges pass on
        w = w + w[j] * g[j]
        w[j] = 0.0
        denom = 1.0 - g[:, j] * g[j, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            ng = (g + np.outer(g[:, j], g[j, :])) / denom[:, None]
        ng[denom <= 1e-12] = 0.0
        np.fill_diagonal(ng, 0.0)
        ng[j, :] = 0.0
        ng[:, j] = 0.0
        g = ng
    return out.tolist()


@dataclasses.dataclass(frozen=True)
class Noise:
    """The spread of one row's per-boot numbers (log scale, where a
    standard deviation is a CV), in percent."""
    tested_cv: float        # of the per-boot numbers the test compares
    within_cv: float        # the part of it a boot's own runs make
    between_cv: float       # the rest: what the boots themselves add
    runs_cv: float          # of single runs inside a boot (pooled)
    boots: int
    runs: int


BOOTSTRAP_RESAMPLES = 2000


def _within_var(runs: np.ndarray, how: str) -> float:
    """The variance of log(boot_summary) that resampling the boot's own
    runs gives (the bootstrap variance): how far the number would move
    with other runs of the same boot. Exact for "min" (the resampled
    minimum is the k-th smallest run with probability
    ((r-k+1)/r)**r - ((r-k)/r)**r) and "mean" (the plug-in variance over
    r, by the delta method on the log); scipy's bootstrap otherwise."""
    r = len(runs)
    if r < 2 or np.ptp(runs) == 0:
        return 0.0
    if how == "min":
        logs = np.log(np.sort(runs))
        k = np.arange(r)
        prob = ((r - k) / r) ** r - ((r - k - 1) / r) ** r
        mean = float((prob * logs).sum())
        return float((prob * (logs - mean) ** 2).sum())
    if how == "mean":
        return float(np.var(runs) / r / np.mean(runs) ** 2)
    from scipy import stats as sst

    def stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.log(np.median(x, axis=axis))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sst.bootstrap((runs,), stat, n_resamples=BOOTSTRAP_RESAMPLES,
                            method="percentile",
                            random_state=np.random.default_rng(0))
    return float(res.standard_error) ** 2


def noise(boots: Sequence[Sequence[float]], how: str = "mean") -> Noise:
    """Split the variance of the per-boot numbers a row tests
    (boot_summary(runs, how) of each boot, on the log scale) into what the
    runs inside a boot contribute (the mean over boots of the bootstrap
    variance of the boot's number, resampling its runs) and what is left
    between boots (never below 0): within_cv**2 + between_cv**2 =
    tested_cv**2 unless the runs explain more than all of it. between_cv
    is the noise only more boots, not more runs, average away. runs_cv is
    the pooled spread of single runs around their boot's mean."""
    groups = [np.asarray(b, dtype=float) for b in boots if len(b)]
    nan = math.nan
    runs = sum(len(g) for g in groups)
    if not groups or any((g <= 0).any() or np.isnan(g).any()
                         for g in groups):
        return Noise(nan, nan, nan, nan, len(groups), runs)
    logs = [np.log(g) for g in groups]
    dof = sum(len(g) - 1 for g in logs)
    runs_cv = 100 * math.sqrt(sum(float(((g - g.mean()) ** 2).sum())
                                  for g in logs) / dof) if dof else nan
    if len(groups) < 2:
        return Noise(nan, nan, nan, runs_cv, len(groups), runs)
    tested = float(np.var([math.log(boot_summary(g, how)) for g in groups],
                          ddof=1))
    within = float(np.mean([_within_var(g, how) for g in groups]))
    between = max(tested - within, 0.0)
    return Noise(100 * math.sqrt(tested), 100 * math.sqrt(within),
                 100 * math.sqrt(between), runs_cv, len(groups), runs)
