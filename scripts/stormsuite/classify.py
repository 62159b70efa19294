"""Good or bad: which bisect endpoint a commit's samples look like.

A commit is good when its samples are significantly different from the
bad endpoint's and not from the good one's; bad the other way round.
Like both (too noisy to tell) is ambiguous: the bisect measures it again,
then skips it.

Like neither is common under TCG: guests booted minutes apart drift by
10-20% (the e2e bisect's culprit read 128 ms in 15 runs against the bad
endpoint's 144 ms, with good at 26 ms). Such a commit is placed on the
line from the good endpoint's median to the bad one's: within the outer
quarter at either end (or beyond it) it takes that end's side; in the
middle half, as a commit half way between would be, it is ambiguous.
The test is stats.p_value's (Mann-Whitney U by default here: a bisect
step has few samples and TCG runtimes have outliers).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Sequence

from . import stats

GOOD, BAD, AMBIGUOUS = "good", "bad", "ambiguous"
# like neither endpoint: how far from an end (as a fraction of the
# good-to-bad distance) a commit may lie and still take that end's side
END_ZONE = 0.25


@dataclasses.dataclass(frozen=True)
class Verdict:
    decision: str           # GOOD, BAD or AMBIGUOUS
    p_good: float           # p-value of "same as the good endpoint"
    p_bad: float            # p-value of "same as the bad endpoint"

    def __str__(self) -> str:
        return (f"{self.decision} (p vs good {self.p_good:.3g}, "
                f"vs bad {self.p_bad:.3g})")


def endpoints_differ(good: Sequence[float], bad: Sequence[float], *,
                     test: str = "mannwhitney",
                     confidence: float = 0.95) -> tuple[bool, float]:
    """Whether good and bad differ significantly, and the p-value."""
    p = stats.p_value(good, bad, test)
    return (not math.isnan(p) and p < 1 - confidence), p


def classify(samples: Sequence[float], good: Sequence[float],
             bad: Sequence[float], *, test: str = "mannwhitney",
             confidence: float = 0.95) -> Verdict:
    alpha = 1 - confidence
    p_good = stats.p_value(samples, good, test)
    p_bad = stats.p_value(samples, bad, test)
    if math.isnan(p_good) or math.isnan(p_bad):
        return Verdict(AMBIGUOUS, p_good, p_bad)
    like_good, like_bad = p_good >= alpha, p_bad >= alpha
    if like_good and not like_bad:
        return Verdict(GOOD, p_good, p_bad)
    if like_bad and not like_good:
        return Verdict(BAD, p_good, p_bad)
    if not like_good and not like_bad:
        where = position(samples, good, bad)
        if where >= 1 - END_ZONE:
            return Verdict(BAD, p_good, p_bad)
        if where <= END_ZONE:
            return Verdict(GOOD, p_good, p_bad)
    return Verdict(AMBIGUOUS, p_good, p_bad)


def position(samples: Sequence[float], good: Sequence[float],
             bad: Sequence[float]) -> float:
    """Where the samples' median lies on the line from the good endpoint's
    median (0) to the bad one's (1); beyond either end is <0 or >1."""
    g, b = statistics.median(good), statistics.median(bad)
    if g == b:
        return math.nan
    return (statistics.median(samples) - g) / (b - g)
