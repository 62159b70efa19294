"""Boots and runs: the one model every instruction verdict uses.

A run's instructions per operation are

    level + boot + run noise + slope x ticks per operation

where `boot` is a random effect shared by every run of that boot (where
its memory landed, what else ran, how long its spin-waits waited: docs/
insn.md). The unit of replication is the boot:

- a boot's number is the mean of its runs after the ticks (one slope
  fitted within the boots), runs far above the boot's median left out
  (stats.HIGH_OUTLIER robust standard deviations: something else ran on
  that CPU in that window);
- two boots a side or more: Welch on the boots' numbers, the boots'
  own spread;
- one boot on a side: the spread its runs cannot show comes from a
  calibration of that storm on that kernel (calibrations.json, made by
  calibrate.py from A/A boots); without one the verdict cannot tell;
- sets measured in one and the same boot (runs interleaved in one
  guest) share the boot's level, which cancels: their runs are the
  unit, and what is called holds for that boot.

compare (verdict.py), bisect's endpoints, steps and confirmation
(classify.py, bisect.py) all read boots through this module.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re
from typing import Sequence

import numpy as np

from . import stats

CALIBRATIONS = pathlib.Path(__file__).with_name("calibrations.json")


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The spread of a boot's number (its level's random effect and what
    its own runs leave, together), in percent of the level, measured on
    A/A boots of one storm on one kernel series with `runs` runs a boot;
    within_cv: the part of it the boots' own runs made."""
    storm: str
    kernel: str             # series: "6.1", "6.12"
    metric: str             # the row: ipistorm.insn_per_call.target
    boot_cv: float          # percent
    within_cv: float        # percent
    boots: int
    dof: int                # of the boot spread's estimate
    runs: int               # runs a boot it was measured with
    params: str = ""
    command: str = ""
    # instructions per tick per operation, fitted within all its boots:
    # what a side of one boot is corrected with (two boots alone fix a
    # slope far less well)
    tick_slope: float | None = None
    tick_slope_var: float = 0.0

    def describe(self) -> str:
        return (f"boot spread {self.boot_cv:.2g}% calibrated on "
                f"{self.kernel}, {self.boots} boots")


def kernel_series(release: str) -> str:
    """'6.1' of '6.1.0-56-amd64', '6.12' of '6.12.117+deb12-amd64'."""
    m = re.match(r"(\d+\.\d+)", release or "")
    return m.group(1) if m else ""


def load(path: pathlib.Path = CALIBRATIONS) -> list[Calibration]:
    if not path.is_file():
        return []
    doc = json.loads(path.read_text())
    names = {f.name for f in dataclasses.fields(Calibration)}
    return [Calibration(**{k: v for k, v in c.items() if k in names})
            for c in doc.get("calibrations", [])]


def params_text(params: dict[str, str]) -> str:
    """A storm's parameters as a calibration records them."""
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()))


def find(storm: str, release: str, metric: str, params: dict[str, str],
         table: Sequence[Calibration] | None = None) -> Calibration | None:
    """The calibration of this row of this storm, with these parameters
    (the spread of a boot follows the design), on this kernel series."""
    key = (storm, kernel_series(release), metric, params_text(params))
    for c in (load() if table is None else table):
        if (c.storm, c.kernel, c.metric, c.params) == key:
            return c
    return None


@dataclasses.dataclass(frozen=True)
class Boot:
    """One boot's number on a row, and how far its own runs leave it
    uncertain."""
    number: float
    within_var: float       # variance of the number from its runs
    runs: int
    values: tuple[float, ...] = ()      # the runs kept, after the ticks
    ticks: float = 0.0                  # the mean ticks of its runs
    slope_var: float = 0.0              # variance of the ticks' slope
                                        # (one for every boot read with it)
    slope: float = 0.0                  # the ticks' slope it was read with


def corrected(groups: Sequence[Sequence[Sequence[float]]],
              ticks: Sequence[Sequence[Sequence[float]]] | None,
              known: tuple[float, float] | None = None
              ) -> tuple[list[list[np.ndarray]], list[list[float]],
                         tuple[float, float]]:
    """Per set, per boot, the runs adjusted to the mean ticks with one
    slope fitted within the boots of every set (each tick runs thousands
    of instructions, and the ticks follow the window's wall time), or
    the known one (slope, its variance: a calibration's); each boot's
    mean ticks; and the slope with its variance, which moves boots that
    took different ticks apart."""
    arrays = [[np.asarray(b, dtype=float) for b in g] for g in groups]
    if ticks is None:
        return arrays, [[0.0 for _ in g] for g in groups], (0.0, 0.0)
    xs = [np.asarray(b, dtype=float) for g in ticks for b in g]
    ys = [b for g in arrays for b in g]
    if known is not None:
        slope, slope_var = known
    else:
        fitted = within_slope(xs, ys)
        if fitted is None:
            return arrays, [[0.0 for _ in g] for g in groups], (0.0, 0.0)
        slope = fitted
        sxx = sum(float(((x - x.mean()) ** 2).sum()) for x in xs)
        resid = np.concatenate([(y - y.mean()) - slope * (x - x.mean())
                                for x, y in zip(xs, ys)])
        dof = len(resid) - len(xs) - 1
        # the residuals' spread as robust as the slope: a run with other
        # work in its window (tens of instructions a call more, which
        # boot_of then leaves out) moves neither
        mad = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
        spread = mad * mad if mad > 0 else \
            (float(resid @ resid) / dof if dof > 0 else 0.0)
        slope_var = spread / sxx if dof > 0 and sxx > 0 else 0.0
    centre = float(np.mean(np.concatenate(xs)))
    it = iter(xs)
    out, means = [], []
    for g in arrays:
        row, mrow = [], []
        for b in g:
            x = next(it)
            row.append(b - slope * (x - centre))
            mrow.append(float(x.mean()) - centre)
        out.append(row)
        means.append(mrow)
    return out, means, (slope, slope_var)


def within_slope(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]
                 ) -> float | None:
    """The slope of y on x within groups (each centred on its medians):
    Theil-Sen's, which a run with other work in its window does not
    move (a least-squares slope would take its instructions for the
    ticks')."""
    from scipy import stats as sst
    xc = np.concatenate([x - np.median(x) for x in xs if len(x)])
    yc = np.concatenate([y - np.median(y) for y in ys if len(y)])
    if not len(xc) or np.ptp(xc) == 0:
        return None
    return float(sst.theilslopes(yc, xc)[0])


def boot_of(values: np.ndarray, ticks: float = 0.0,
            slope: tuple[float, float] = (0.0, 0.0)) -> Boot:
    """A boot's number: the mean of its runs, leaving out (with five
    runs or more) those far above the boot's median: what else runs on a
    CPU only ever adds instructions."""
    v = np.asarray(values, dtype=float)
    if len(v) >= 5:
        med = float(np.median(v))
        mad = 1.4826 * float(np.median(np.abs(v - med)))
        if mad > 0:
            v = v[v - med <= stats.HIGH_OUTLIER * mad]
    n = len(v)
    var = float(v.var(ddof=1)) / n if n > 1 else math.nan
    return Boot(float(v.mean()) if n else math.nan, var, n, tuple(v),
                ticks, slope[1], slope[0])


def boots_of(groups: Sequence[Sequence[Sequence[float]]],
             ticks: Sequence[Sequence[Sequence[float]]] | None = None,
             known: tuple[float, float] | None = None
             ) -> list[list[Boot]]:
    """Per set, its boots (corrected, then boot_of)."""
    arrays, means, slope = corrected(groups, ticks, known)
    return [[boot_of(b, t, slope) for b, t in zip(g, tg)]
            for g, tg in zip(arrays, means)]


def boot_spread(sides: Sequence[Sequence[Boot]]
                ) -> tuple[float, int, float]:
    """(variance of a boot's number, its degrees of freedom, the mean
    variance its own runs make of it) from boots of one kernel, each
    side a group with its own mean (an A/A's two labels): the pooled
    variance of the boots' numbers, which holds the random effect of a
    boot and its runs' part together."""
    groups = [[b for b in g if not math.isnan(b.number)] for g in sides]
    groups = [g for g in groups if len(g) > 1]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return math.nan, 0, math.nan
    ss = sum(float(np.var([b.number for b in g]) * len(g)) for g in groups)
    within = float(np.mean([b.within_var for g in groups for b in g
                            if not math.isnan(b.within_var)] or [0.0]))
    return ss / dof, dof, within


def _t_estimate(d: float, parts: Sequence[tuple[float, float]], ref: float,
                n_base: int, n_new: int, confidence: float,
                basis: str) -> stats.Estimate:
    """The change d (new - base) with its variance made of parts
    (variance, degrees of freedom), Welch-Satterthwaite's degrees of
    freedom, in percent of ref."""
    from scipy import stats as sst
    var = sum(v for v, _ in parts)
    if var <= 0:
        p = 1.0 if d == 0 else 0.0
        pct = 100 * d / ref
        return stats.Estimate(pct, pct, pct, p, n_base, n_new, basis)
    dof = var ** 2 / sum(v ** 2 / f for v, f in parts if v > 0)
    se = math.sqrt(var)
    tq = float(sst.t.ppf(0.5 + confidence / 2, dof))
    p = float(2 * sst.t.sf(abs(d / se), dof))
    return stats.Estimate(100 * d / ref, 100 * (d - tq * se) / ref,
                          100 * (d + tq * se) / ref, p, n_base, n_new, basis)


def _slope_part(base: Sequence[Boot], new: Sequence[Boot]
                ) -> tuple[float, float]:
    """What the slope's error adds to the difference of two sides'
    numbers: their mean ticks apart, squared, times its variance (many
    degrees of freedom: every run)."""
    dx = float(np.mean([b.ticks for b in new])
               - np.mean([b.ticks for b in base]))
    runs = sum(b.runs for b in (*base, *new))
    return dx * dx * base[0].slope_var, max(runs - 3, 1)


Part = tuple[float, float, object]     # variance, dof, its estimate's key


def _side(boots: Sequence[Boot], cal: Calibration | None
          ) -> tuple[float, list[Part]] | str:
    """A side's level and the parts of its variance, each with its
    degrees of freedom and what estimated it (a calibration's part is
    one estimate, however many sides it serves); or why it has none."""
    numbers = [b.number for b in boots]
    mean = float(np.mean(numbers))
    if len(boots) > 1:
        return mean, [(float(np.var(numbers, ddof=1)) / len(boots),
                       len(boots) - 1, object())]
    if cal is None:
        return "cannot tell"
    # the calibrated spread of a boot's number; more when this boot's
    # runs leave it less sure than the calibration's did
    b = boots[0]
    parts: list[Part] = [((cal.boot_cv / 100 * mean) ** 2,
                          max(cal.dof, 1), cal)]
    extra = b.within_var - (cal.within_cv / 100 * mean) ** 2
    if b.runs > 1 and extra > 0:
        parts.append((extra, b.runs - 1, object()))
    return mean, parts


def _merged(parts: Sequence[Part]) -> list[tuple[float, float]]:
    """Parts estimated together (one calibration for both sides) as one:
    their variances add, their degrees of freedom do not."""
    by_key: dict[int, tuple[float, float]] = {}
    for var, dof, key in parts:
        v, _ = by_key.get(id(key), (0.0, dof))
        by_key[id(key)] = (v + var, dof)
    return list(by_key.values())


def change(base: Sequence[Boot], new: Sequence[Boot], *,
           cal_base: Calibration | None = None,
           cal_new: Calibration | None = None, same_boot: bool = False,
           confidence: float = 0.95, row: str = "") -> stats.Estimate:
    """The change from base to new on one row (the module docstring):
    its estimate, interval and p-value, and in `basis` what the spread
    came from when it was not the boots' own."""
    nan = math.nan
    nb, nn = len(base), len(new)
    if not nb or not nn or not base[0].number:
        return stats.Estimate(nan, nan, nan, nan, nb, nn)
    ref = float(np.mean([b.number for b in base]))
    if same_boot and nb == nn == 1:
        x, y = np.array(base[0].values), np.array(new[0].values)
        d = float(y.mean() - x.mean())
        if len(x) < 2 or len(y) < 2:
            return stats.Estimate(100 * d / ref, nan, nan, nan, 1, 1)
        return _t_estimate(d, [(float(x.var(ddof=1)) / len(x), len(x) - 1),
                               (float(y.var(ddof=1)) / len(y), len(y) - 1),
                               _slope_part(base, new)],
                           ref, 1, 1, confidence,
                           "one boot: the runs of that boot")
    sides = [_side(base, cal_base), _side(new, cal_new)]
    d = float(np.mean([b.number for b in new])) - ref
    missing = [what for what, s, n in (("baseline", sides[0], nb),
                                       ("candidate", sides[1], nn))
               if isinstance(s, str)]
    if missing:
        return stats.Estimate(
            100 * d / ref, nan, nan, nan, nb, nn,
            f"cannot tell: one boot on the {' and '.join(missing)} and no "
            f"calibration of {row or 'this row'} on its kernel (storm "
            "calibrate, or --boots 2 or more)")
    cals = {c.describe() for c, n in ((cal_base, nb), (cal_new, nn))
            if c is not None and n == 1}
    parts = [p for s in sides if not isinstance(s, str) for p in s[1]]
    if 1 in (nb, nn):
        # a side of one boot: its number moves with the slope's error
        # as far as its ticks are from the other side's
        parts.append((*_slope_part(base, new), object()))
    return _t_estimate(d, _merged(parts), ref, nb, nn, confidence,
                       "; ".join(sorted(cals)))
