"""Result sets named on a command line (storm compare, storm report):
storm's own run files (runs.resolve), or lkp-tests result roots
(lkproot.py), one series with a root a boot."""

from __future__ import annotations

import pathlib

from . import lkproot, runs


def resolve(spec: str, results: pathlib.Path = runs.RESULTS,
            series: str | None = None, pool: bool = False
            ) -> list[runs.Series]:
    path = pathlib.Path(spec)
    if not path.is_dir():
        path = results / spec
    if path.is_dir() and not runs.run_files(path) and lkproot.roots(path):
        return [lkproot.load_series(path)]
    return runs.resolve(spec, results, series=series, pool=pool)
