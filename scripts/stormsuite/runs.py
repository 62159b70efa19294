"""Result sets: the JSON run files `storm run` writes, found and loaded.

Layout: results/<label>/<storm>-<params>/run-<UTC time>-<n>.json. A
*series* is one such directory (one storm with one parameter set on one
label); a *label* holds any number of series. Runs made under --trace or
--bpftrace are kept apart: tracing perturbs the times, so statistics use
the untraced runs only.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Any

from . import REPO

SCHEMA = 1
RESULTS = REPO / "results"


class RunError(ValueError):
    pass


def load_run(path: pathlib.Path) -> dict[str, Any]:
    """One run file, checked to be a storm-run document of a known schema."""
    try:
        doc = json.loads(path.read_bytes().decode("utf-8", "replace"))
    except (OSError, ValueError) as e:
        raise RunError(f"{path}: not a readable JSON run file ({e})") from e
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
    return sorted(d.glob("run-*.json"))


def series_from_runs(label: str, d: pathlib.Path,
                     docs: list[dict[str, Any]]) -> Series:
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
    return Series(label=label, dir=d, storm=first["storm"],
                  params=dict(first["params"]),
                  runs=[r for r in docs if not is_traced(r)],
                  traced=[r for r in docs if is_traced(r)])


def load_series(d: pathlib.Path, label: str | None = None) -> Series:
    docs = [load_run(f) for f in run_files(d)]
    if label is None:
        label = str(docs[0].get("label")) if docs else d.parent.name
    return series_from_runs(label, d, docs)


def load_files(files: list[pathlib.Path], label: str | None = None) -> Series:
    """A series from explicit run files (e.g. the ones a matrix just made)."""
    docs = [load_run(f) for f in sorted(files)]
    if not docs:
        raise RunError("no run files given")
    return series_from_runs(label or str(docs[0].get("label")),
                            pathlib.Path(files[0]).parent, docs)


def resolve(spec: str, results: pathlib.Path = RESULTS) -> list[Series]:
    """A label under results/, a label directory, or a series directory."""
    path = pathlib.Path(spec)
    if not path.is_dir():
        path = results / spec
    if not path.is_dir():
        have = sorted(p.name for p in results.iterdir() if p.is_dir()) \
            if results.is_dir() else []
        raise RunError(f"{spec}: no such label in {results} or directory "
                       f"(labels: {', '.join(have) or 'none'})")
    if run_files(path):
        return [load_series(path)]
    dirs = sorted(p for p in path.iterdir() if p.is_dir() and run_files(p))
    if not dirs:
        raise RunError(f"{spec}: no run files in {path} or its directories")
    return [load_series(d, label=path.name) for d in dirs]
