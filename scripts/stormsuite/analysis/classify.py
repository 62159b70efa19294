"""Good or bad: which bisect endpoint a commit's boots look like.

Boots are the unit (stats.py): a commit's evidence is one number per boot
(made from the boot's runs as compare makes it: verdict.summary_of), on
the log scale for times. In a bisect
every commit is, in truth, like the good endpoint or like the bad one, so
the question is not "does it differ from good?" (a commit that merely
fails to differ from good was called good before, and a 10% regression
fails to differ from good most of the time at a few boots) but "which of
the two levels explains its boots better, and by how much?".

That is a likelihood ratio, tested sequentially (Wald's SPRT): the
commit's mean against the good level and against the bad level, each with
the uncertainty of the commit's own mean and of the level's, under a
Student t for the spread (estimated from every group measured so far, so
its uncertainty is priced in). The commit is good when the ratio reaches
`odds` (default 99: about 1 wrong call in 100 per step), bad at 1/odds;
in between, the bisect boots the commit again, up to a cap. A commit
still in between at the cap is ambiguous, and the bisect skips it rather
than deciding at odds near 1:1 (a coin toss that would send the bisect
the wrong way half the time): git then tests a neighbour, and names a
range of commits only when every commit left is ambiguous.

The levels are learnt as the bisect goes: the endpoints' boots, and the
boots of every commit already called (a commit called good joins the good
level's pool). Before any step the endpoints are booted, two at a time,
until their difference is clear (endpoints_clear, p < 0.001) or a cap,
and the bisect refuses to start unless they differ at the confidence
asked (endpoints_differ). Measured by storm simulate in real noise (the
e2e bisect tree's boots, 10 runs a boot, 5 commits) and on the lognormal
model, and asserted by tests/test_verdicts_sim.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

GOOD, BAD, AMBIGUOUS = "good", "bad", "ambiguous"
ODDS = 99.0             # per-step evidence needed to call a commit
MIN_SPREAD = 0.005      # times, log scale: no boot-to-boot spread is
                        # below 0.5% (instructions: Reading.min_spread)


def to_scale(boots: Sequence[float], log: bool) -> np.ndarray:
    x = np.asarray(boots, dtype=float)
    if log:
        if (x <= 0).any():
            raise ValueError("log scale needs positive values")
        return np.log(x)
    return x


@dataclasses.dataclass
class Levels:
    """What is known of the good and bad levels: groups of per-boot
    summaries (each group one commit), on the test's scale."""
    good: list[np.ndarray]
    bad: list[np.ndarray]
    min_spread: float = MIN_SPREAD  # floor of the spread (log scale)

    def pooled(self, extra: Sequence[np.ndarray] = ()) -> tuple[float, int]:
        """Pooled within-commit spread of boot summaries, and its degrees
        of freedom."""
        groups = [g for g in [*self.good, *self.bad, *extra] if len(g) > 1]
        dof = sum(len(g) - 1 for g in groups)
        if dof == 0:
            return math.nan, 0
        ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
        return max(math.sqrt(ss / dof), self.min_spread), dof

    @staticmethod
    def _mean(groups: list[np.ndarray]) -> tuple[float, int]:
        allv = np.concatenate(groups) if groups else np.array([])
        return (float(allv.mean()) if len(allv) else math.nan), len(allv)

    @property
    def good_mean(self) -> tuple[float, int]:
        return self._mean(self.good)

    @property
    def bad_mean(self) -> tuple[float, int]:
        return self._mean(self.bad)


@dataclasses.dataclass(frozen=True)
class Verdict:
    decision: str           # GOOD, BAD or AMBIGUOUS
    odds: float             # likelihood ratio good : bad
    position: float         # 0 at the good level, 1 at the bad one

    def __str__(self) -> str:
        return (f"{self.decision} (odds good:bad {fmt_odds(self.odds)}, "
                f"at {self.position:.2f} of the way from good to bad)")


def fmt_odds(odds: float) -> str:
    if odds >= 1:
        return f"{min(odds, 1e9):.3g}:1"
    return f"1:{min(1 / odds, 1e9):.3g}" if odds > 0 else "1:inf"


def odds_good(commit: np.ndarray, levels: Levels) -> tuple[float, float]:
    """(likelihood ratio good:bad of the commit's mean, its position on
    the good-to-bad line)."""
    from scipy import stats as sst
    mg, ng = levels.good_mean
    mb, nb = levels.bad_mean
    sd, dof = levels.pooled([commit])
    m = len(commit)
    c = float(commit.mean())
    position = (c - mg) / (mb - mg) if mb != mg else math.nan
    if math.isnan(sd) or m == 0:
        return 1.0, position
    sg = sd * math.sqrt(1 / m + 1 / ng)
    sb = sd * math.sqrt(1 / m + 1 / nb)
    lg = sst.t.logpdf((c - mg) / sg, dof) - math.log(sg)
    lb = sst.t.logpdf((c - mb) / sb, dof) - math.log(sb)
    return math.exp(max(min(lg - lb, 700), -700)), position


def classify(commit: np.ndarray, levels: Levels, *, odds: float = ODDS
             ) -> Verdict:
    """GOOD or BAD when the evidence reaches odds; else AMBIGUOUS."""
    ratio, position = odds_good(commit, levels)
    if ratio >= odds:
        return Verdict(GOOD, ratio, position)
    if ratio <= 1 / odds:
        return Verdict(BAD, ratio, position)
    return Verdict(AMBIGUOUS, ratio, position)


def decide(measure: Callable[[int], Sequence[float]], levels: Levels, *,
           log: bool, first: int, more: int, cap: int,
           odds: float = ODDS) -> tuple[Verdict, np.ndarray]:
    """Measure a commit (measure(n) boots it n more times and returns
    their summaries): `first` boots, then `more` at a time until the
    verdict is clear or it has had `cap` boots (then AMBIGUOUS: a skip)."""
    boots = to_scale(measure(first), log)
    while True:
        v = classify(boots, levels, odds=odds)
        if v.decision != AMBIGUOUS or len(boots) >= cap:
            return v, boots
        n = min(more, cap - len(boots))
        boots = np.concatenate([boots, to_scale(measure(n), log)])


def endpoints_differ(good: Sequence[float], bad: Sequence[float], *,
                     log: bool, confidence: float = 0.95) -> tuple[bool, float]:
    """Whether the endpoints' boots differ (Welch on per-boot summaries),
    and the p-value. The default confidence is high: a bisect between
    endpoints that do not clearly differ bisects noise."""
    from . import stats
    est = stats.boot_change(good, bad, log=log, confidence=confidence)
    return est.testable and est.p < 1 - confidence, est.p


CLEAR_P = 0.001


def endpoints_clear(good: Sequence[float], bad: Sequence[float], *,
                    log: bool) -> bool:
    """Whether the endpoints are known well enough to bisect between:
    their difference has p < CLEAR_P. Until then the bisect boots both
    again (up to a cap, after which p < 1 - confidence is enough): a
    commit's verdict can be no surer than the two levels it is held
    against."""
    return endpoints_differ(good, bad, log=log, confidence=1 - CLEAR_P)[0]


@dataclasses.dataclass(frozen=True)
class Endpoints:
    """What booting the endpoints found: each one's boot numbers, whether
    they differ, the p-value and the level it was tested at; within: the
    interval (percent) that showed them closer than the floor, when that
    ended the sampling."""
    good: list[float]
    bad: list[float]
    differ: bool
    p: float
    alpha: float
    rounds: int
    within: tuple[float, float] | None = None   # at 1 - 2 alpha


def within_floor(good: Sequence[float], bad: Sequence[float], *, log: bool,
                 floor: float, alpha: float) -> tuple[float, float] | None:
    """The endpoints are closer than floor percent: the 1 - 2 alpha
    interval of their change lies inside (-floor, +floor), the two
    one-sided tests of equivalence at alpha each. Returns that interval,
    else None. A change smaller than the floor is never called, so no
    bisect could find it."""
    from . import stats
    if floor <= 0:
        return None
    est = stats.boot_change(good, bad, log=log, confidence=1 - 2 * alpha)
    if est.testable and -floor < est.lo and est.hi < floor:
        return est.lo, est.hi
    return None


def sample_endpoints(measure: Callable[[int, int], tuple[list[float],
                                                         list[float]]],
                     *, log: bool, first: int, cap: int,
                     confidence: float = 0.95,
                     floor: Callable[[], float] = lambda: 0.0) -> Endpoints:
    """Boot the endpoints until their difference is clear, they are
    shown closer than `floor` percent (within_floor), or each has `cap`
    boots: measure(n, round) boots each n more times and returns every
    boot number so far (first `first`, then one more each). Each round
    looks at the data once, at CLEAR_P (or less, so that all the looks a
    cap allows spend at most half of 1 - confidence), and the last test
    is at 1 - confidence less what the looks spent (Bonferroni): the
    chance of bisecting between endpoints that do not differ stays at
    most 1 - confidence. The equivalence looks spend the same per look
    on the other error, stopping a bisect whose endpoints differ by the
    floor or more. floor() is asked after each round (what the metric's
    floor is, the first round's run files say)."""
    alpha = 1 - confidence
    look_p = min(CLEAR_P, alpha / 2 / max(cap - first + 1, 1))
    rounds, n = 0, first
    while True:
        good, bad = measure(n, rounds)
        rounds += 1
        clear, p = endpoints_differ(good, bad, log=log,
                                    confidence=1 - look_p)
        if clear:
            return Endpoints(good, bad, True, p, look_p, rounds)
        same = within_floor(good, bad, log=log, floor=floor(), alpha=look_p)
        if same is not None:
            return Endpoints(good, bad, False, p, look_p, rounds, same)
        if len(good) >= cap or len(bad) >= cap:
            break
        n = 1
    final = alpha - look_p * rounds
    differ, p = endpoints_differ(good, bad, log=log, confidence=1 - final)
    return Endpoints(good, bad, differ, p, final, rounds)


def learn(levels: Levels, verdict: Verdict, boots: np.ndarray) -> None:
    """A called commit's boots join the level it was called."""
    if verdict.decision == GOOD:
        levels.good.append(boots)
    elif verdict.decision == BAD:
        levels.bad.append(boots)
