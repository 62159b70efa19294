"""Result sets: the JSON run files `storm run` writes, found and loaded.

Layout: results/<label>/<storm>-<params>/run-<UTC time>-<n>.json. A
*series* is one such directory (one storm with one parameter set on one
label); a *label* holds any number of series. Runs made under --trace or
--bpftrace are kept apart: tracing perturbs the times, so statistics use
the untraced runs only.

Every `storm run` invocation stamps its runs with a series id (run.series;
matrix, ab and bisect give all boots of one side the same id), and every
run records the guest's boot (env.boot_id). A directory can hold several
series: one is read unless asked to pool them (select_series), so earlier
runs never join a comparison by accident. Inside a series the runs are
grouped by boot (Series.boots): the boot is the unit the statistics
compare. Run files from before series ids count as one series, "legacy",
whose boots are told apart by run.index starting again at 1.

A run whose storm's checks failed (result failures above 0, status
failed: `storm run` writes it as evidence, and exits 3) is a wrong kernel,
not a slow one: a series keeps such runs apart (Series.failed), out of
every time and count statistic, and says so on stderr when it reads them.
`storm bisect --metric failures` reads them (failures_of).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import sys
from typing import Any, Iterable

from .. import REPO
from . import runfile

SCHEMA = 1
# Where runs go unless a command is told otherwise (--results): the
# repository's results/, which git ignores, or $STORM_RESULTS.
RESULTS = pathlib.Path(os.environ.get("STORM_RESULTS")
                       or REPO / "results").absolute()


class RunError(ValueError):
    pass


def load_run(path: pathlib.Path) -> dict[str, Any]:
    """One run file, checked to be a storm-run document of a known schema;
    or a run's capture directory (run-*.raw, from a box without python3),
    made into its document here."""
    try:
        if path.is_dir():
            doc = runfile.build(path)
        else:
            doc = json.loads(path.read_bytes().decode("utf-8", "replace"))
    except (OSError, ValueError, KeyError) as e:
        raise RunError(f"{path}: not a readable run ({e})") from e
    if not isinstance(doc, dict) or doc.get("kind") != "storm-run":
        raise RunError(f"{path}: not a storm run file (no kind: storm-run)")
    if doc.get("schema") != SCHEMA:
        raise RunError(f"{path}: schema {doc.get('schema')!r}, "
                       f"this driver reads schema {SCHEMA}")
    for key in ("storm", "params", "result", "interrupts", "env", "run"):
        if key not in doc:
            raise RunError(f"{path}: no {key!r} section")
    doc["_path"] = str(path)
    return doc


def is_traced(run: dict[str, Any]) -> bool:
    return bool(run.get("run", {}).get("traced"))


def failures_of(run: dict[str, Any]) -> int:
    """The violations the storm's checks found in the run: its result's
    failures line (0 in results from before the checks had one)."""
    value = run.get("result", {}).get("failures", 0)
    return int(value) if isinstance(value, (int, float)) else 0


def check_failed(run: dict[str, Any]) -> bool:
    """The storm's checks found the kernel wrong in this run."""
    return failures_of(run) > 0


def failed_text(failed: list[dict[str, Any]]) -> str:
    """'run-X.json (2 failures), run-Y.json (1 failure)'"""
    return ", ".join(
        f"{pathlib.Path(str(r.get('_path', '?'))).name} "
        f"({failures_of(r)} failure{'' if failures_of(r) == 1 else 's'})"
        for r in failed)


LEGACY_SERIES = "legacy"


def series_id(run: dict[str, Any]) -> str:
    return str(run.get("run", {}).get("series") or LEGACY_SERIES)


def group_boots(docs: Iterable[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Runs grouped by the boot they ran in, in order of first run."""
    boots: dict[str, list[dict[str, Any]]] = {}
    legacy = 0
    last_index = None
    for doc in docs:
        key = doc["env"].get("boot_id")
        if not key:
            # before boot ids: one storm run invocation per boot, its
            # run.index counting 1, 2, ... (files sorted by time)
            index = doc.get("run", {}).get("index")
            if last_index is None or not isinstance(index, int) \
                    or index <= last_index:
                legacy += 1
            last_index = index if isinstance(index, int) else None
            key = f"{series_id(doc)}-boot{legacy}"
        boots.setdefault(str(key), []).append(doc)
    return list(boots.values())


def select_series(docs: list[dict[str, Any]], want: str | None = None,
                  pool: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs of one series: the newest unless want names one (a prefix
    of its id) or pool takes them all. Returns (runs, ids left out)."""
    ids: dict[str, str] = {}            # id -> its newest start time
    for doc in docs:
        sid = series_id(doc)
        started = str(doc.get("run", {}).get("started", ""))
        ids[sid] = max(ids.get(sid, ""), started)
    if pool or len(ids) <= 1:
        return docs, []
    if want is not None:
        chosen = [i for i in ids if i.startswith(want)]
        if len(chosen) != 1:
            raise RunError(f"series {want!r}: {'no' if not chosen else 'more than one'} "
                           f"match among {', '.join(sorted(ids))}")
        pick = chosen[0]
    else:
        pick = max(ids, key=lambda i: (ids[i], i))
    return [d for d in docs if series_id(d) == pick], \
        sorted(i for i in ids if i != pick)


def params_text(params: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items())) \
        or "(defaults)"


@dataclasses.dataclass
class Series:
    """Every run of one storm + parameter set under one label."""
    label: str
    dir: pathlib.Path
    storm: str
    params: dict[str, str]
    runs: list[dict[str, Any]]          # untraced, oldest first
    traced: list[dict[str, Any]]
    left_out: list[str] = dataclasses.field(default_factory=list)
                                        # series ids in dir not read
    # runs whose storm's checks failed: in neither list above
    failed: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def boots(self) -> list[list[dict[str, Any]]]:
        return group_boots(self.runs)

    @property
    def series_ids(self) -> list[str]:
        return sorted({series_id(r) for r in self.runs})

    @property
    def size(self) -> str:
        """'3 boots x 5 runs' (or '15 runs in 3 boots' when uneven)."""
        per = {len(b) for b in self.boots}
        nb = len(self.boots)
        if len(per) == 1:
            return f"{nb} boot{'s' if nb != 1 else ''} x {per.pop()} runs"
        return f"{len(self.runs)} runs in {nb} boots"

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return (self.storm, tuple(sorted(self.params.items())))

    @property
    def what(self) -> str:
        return f"{self.storm} {params_text(self.params)}"

    def env(self, name: str) -> set[str]:
        """Distinct values of env.<name> over the runs."""
        return {str(r["env"].get(name)) for r in self.runs}


def run_files(d: pathlib.Path) -> list[pathlib.Path]:
    """The runs in d: run files, and the captures that have none."""
    files = set(d.glob("run-*.json"))
    files |= {c for c in d.glob("run-*" + runfile.CAPTURE_SUFFIX)
              if runfile.run_file_of(c) not in files}
    return sorted(files)


def series_from_runs(label: str, d: pathlib.Path,
                     docs: list[dict[str, Any]], left_out: list[str] | None = None
                     ) -> Series:
    if not docs:
        raise RunError(f"{d}: no run files")
    first = docs[0]
    for doc in docs[1:]:
        if (doc["storm"], doc["params"]) != (first["storm"], first["params"]):
            raise RunError(
                f"{d}: runs of different storms or parameters in one "
                f"directory: {doc['_path']} is {doc['storm']} "
                f"{params_text(doc['params'])}, {first['_path']} is "
                f"{first['storm']} {params_text(first['params'])}")
    # the one place runs become a series: a wrong kernel's runs stay out
    # of every statistic made from it (compare, matrix, report, ab)
    failed = [r for r in docs if check_failed(r)]
    if failed:
        print(f"storm: warning: {d}: {len(failed)} run"
              f"{'' if len(failed) == 1 else 's'} whose storm's checks "
              f"failed left out of the statistics: {failed_text(failed)}",
              file=sys.stderr)
    docs = [r for r in docs if not check_failed(r)]
    if not docs:
        raise RunError(f"{d}: the storm's checks failed in every run "
                       f"({failed_text(failed)}): nothing to measure")
    return Series(label=label, dir=d, storm=first["storm"],
                  params=dict(first["params"]),
                  runs=[r for r in docs if not is_traced(r)],
                  traced=[r for r in docs if is_traced(r)],
                  left_out=left_out or [], failed=failed)


def load_series(d: pathlib.Path, label: str | None = None,
                series: str | None = None, pool: bool = False) -> Series:
    docs = [load_run(f) for f in run_files(d)]
    if label is None:
        label = str(docs[0].get("label")) if docs else d.parent.name
    docs, left_out = select_series(docs, series, pool)
    return series_from_runs(label, d, docs, left_out)


def load_files(files: list[pathlib.Path], label: str | None = None) -> Series:
    """A series from explicit run files (e.g. the ones a matrix just made)."""
    docs = [load_run(f) for f in sorted(files)]
    if not docs:
        raise RunError("no run files given")
    return series_from_runs(label or str(docs[0].get("label")),
                            pathlib.Path(files[0]).parent, docs)


def resolve(spec: str, results: pathlib.Path = RESULTS,
            series: str | None = None, pool: bool = False) -> list[Series]:
    """A label under results/, a label directory or a series directory;
    'LABEL@ID' picks series ID there (see select_series). lkp-tests
    result roots too: sets.resolve."""
    if "@" in spec and not pathlib.Path(spec).is_dir():
        spec, series = spec.rsplit("@", 1)
    path = pathlib.Path(spec)
    if not path.is_dir():
        path = results / spec
    if not path.is_dir():
        have = sorted(p.name for p in results.iterdir() if p.is_dir()) \
            if results.is_dir() else []
        raise RunError(f"{spec}: no such label in {results} or directory "
                       f"(labels: {', '.join(have) or 'none'})")
    if run_files(path):
        return [load_series(path, series=series, pool=pool)]
    dirs = sorted(p for p in path.iterdir() if p.is_dir() and run_files(p))
    if not dirs:
        raise RunError(f"{spec}: no run files in {path} or its directories")
    return [load_series(d, label=path.name, series=series, pool=pool)
            for d in dirs]
