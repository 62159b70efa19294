"""storm calibrate: a boot's spread on each instruction row, measured on
A/A boots, kept where the verdicts read it.

    storm calibrate [--results DIR] [--write] SET [SET...]

Each SET is what storm compare takes (a label, a label directory, a
series directory); the sets of each storm and parameters are calibrated
together, and must be of one kernel series: the boots of one kernel,
e.g. both sides of

    storm matrix --kernel 6.12 --kernel 6.12 --boots 4 --runs 6 ...

For every primary instruction row it prints the spread of a boot's
number beyond what its runs show (bootmodel.boot_spread: the random
effect of a boot, in percent of the level) with its degrees of freedom,
and with --write puts it into scripts/stormsuite/analysis/calibrations.json,
replacing the entry for the same storm, parameters, kernel series and
row. A
comparison with one boot on a side tests that side with it
(bootmodel.change), and says so in its verdict line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import shlex
import sys

import numpy as np

from ..runfiles import runs
from . import bootmodel, verdict


class CalibrateError(Exception):
    pass


def of_sets(sets: list[runs.Series], command: str = ""
            ) -> list[bootmodel.Calibration]:
    """The calibration of every primary instruction row of these A/A
    sets (each set a group with its own mean)."""
    storms = {(s.storm, tuple(sorted(s.params.items()))) for s in sets}
    releases = {verdict.release_of(s) for s in sets}
    kernels = {bootmodel.kernel_series(r) for r in releases}
    if len(storms) != 1:
        raise CalibrateError("the sets differ in storm or parameters: "
                             + "; ".join(s.what for s in sets))
    if len(kernels) != 1 or "" in kernels:
        raise CalibrateError("the sets' runs are not of one kernel series: "
                             + ", ".join(sorted(releases)))
    series = kernels.pop()
    per_boot = [[verdict.of_runs(b) for b in s.boots] for s in sets]
    names = [m for m in per_boot[0][0]
             if all(m in b for p in per_boot for b in p)]
    out = []
    for m in names:
        if m.kind != "insn" or not m.primary:
            continue
        row = verdict._insn_row(m, names, per_boot, sets, table=[])
        assert row.model is not None
        var, dof, within = bootmodel.boot_spread(row.model)
        boots = [b for g in row.model for b in g]
        if not dof:
            raise CalibrateError(f"{m.name}: fewer than two boots in a set")
        level = float(np.mean([b.number for b in boots]))
        out.append(bootmodel.Calibration(
            storm=sets[0].storm, kernel=series, metric=m.name,
            boot_cv=round(100 * math.sqrt(var) / level, 4),
            within_cv=round(100 * math.sqrt(within) / level, 4),
            boots=len(boots), dof=dof,
            runs=int(np.median([b.runs for b in boots])),
            params=bootmodel.params_text(sets[0].params),
            command=command,
            tick_slope=boots[0].slope if boots[0].slope_var else None,
            tick_slope_var=boots[0].slope_var))
    return out


def write(found: list[bootmodel.Calibration],
          path: pathlib.Path = bootmodel.CALIBRATIONS) -> None:
    """Put found into the calibrations file, replacing the entries of the
    same storm, parameters, kernel series and row."""
    def key(c: bootmodel.Calibration) -> tuple[str, ...]:
        return (c.storm, c.params, c.kernel, c.metric)
    have = [c for c in bootmodel.load(path)
            if not any(key(c) == key(f) for f in found)]
    table = sorted(have + found, key=key)
    path.write_text(json.dumps(
        {"schema": 1, "calibrations": [dataclasses.asdict(c)
                                       for c in table]}, indent=1) + "\n")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm calibrate",
        description="Measure, on A/A boots of one storm on one kernel, "
        "how far a boot's instructions per operation move beyond what its "
        "runs show: the spread a comparison with one boot a side is "
        "tested with.")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where labels are looked up (default results/)")
    p.add_argument("--write", action="store_true",
                   help=f"write into {bootmodel.CALIBRATIONS.name}")
    p.add_argument("sets", nargs="+", metavar="SET",
                   help="label, label directory or series directory")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        sets = [s for spec in args.sets
                for s in runs.resolve(spec, args.results)]
        # each storm and its parameters on its own (a label directory
        # can hold several)
        designs: dict[tuple[str, str], list[runs.Series]] = {}
        for s in sets:
            designs.setdefault(
                (s.storm, bootmodel.params_text(s.params)), []).append(s)
        found = [c for group in designs.values()
                 for c in of_sets(group, "storm calibrate "
                                  + shlex.join(argv))]
    except (runs.RunError, CalibrateError) as e:
        print(f"storm calibrate: {e}", file=sys.stderr)
        return 2
    if not found:
        print("storm calibrate: no instruction counts in "
              f"{' '.join(args.sets)}: calibrate A/A boots run with the "
              "instruction counter (storm matrix without --no-insn)",
              file=sys.stderr)
        return 2
    for c in found:
        print(f"{c.storm} on {c.kernel}: {c.metric}: boot spread "
              f"{c.boot_cv:.3g}% ({c.boots} boots x {c.runs} runs, "
              f"{c.dof} degrees of freedom)")
    if args.write:
        write(found)
        print(f"wrote {bootmodel.CALIBRATIONS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
