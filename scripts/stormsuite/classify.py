"""Good or bad: which bisect endpoint a commit's samples look like.

A commit is good when its samples are significantly different from the
bad endpoint's and not from the good one's; bad the other way round.
Anything else (like both, or like neither, as a commit half way between
would be) is ambiguous: the bisect measures it again, then skips it.
The test is stats.p_value's (Mann-Whitney U by default here: a bisect
step has few samples and TCG runtimes have outliers).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from . import stats

GOOD, BAD, AMBIGUOUS = "good", "bad", "ambiguous"


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
    return Verdict(AMBIGUOUS, p_good, p_bad)
