"""lkp-tests result roots read as storm result sets, for storm compare.

lkp keeps each job run in a result root,
/lkp/result/<suite>/<params>/<host>/<rootfs>/<kconfig>/<compiler>/<commit>/<n>/,
with the job (job.yaml), each program's output and stats (<program>.json:
one sample per line of stats its parse printed) and their union,
stats.json. A result root is one job, which on the 0-day fleet is one
boot: a directory of result roots (<commit>/ with 0/, 1/, ...) is a
series whose boots are its roots.

A root the storms' lkp programs made (lkp/programs/<storm>/run) also
holds storm run's own run files, under storm/: those are read, whole. A
root without them (copied from elsewhere, stats only) is read from its
stats: each sample of <storm>.json (stats.json's mean when that is all
there is) becomes a run whose metrics are its stats (metrics.of_stats),
its parameters the job's <storm>: section.
"""

from __future__ import annotations

import gzip
import json
import pathlib
from typing import Any

from . import lkpstats, metrics, runs

STORM_DIR = "storm"        # where the lkp program keeps storm run's files


def is_root(path: pathlib.Path) -> bool:
    return (path / lkpstats.STATS).is_file()


def roots(path: pathlib.Path) -> list[pathlib.Path]:
    """The result roots path is or holds (its numbered directories)."""
    if is_root(path):
        return [path]
    found = [p for p in path.iterdir() if p.is_dir() and is_root(p)] \
        if path.is_dir() else []
    return sorted(found, key=lambda p: (not p.name.isdigit(),
                                        int(p.name) if p.name.isdigit()
                                        else 0, p.name))


def _json(path: pathlib.Path) -> Any:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8", "replace"))


def storm_of(stats: dict[str, Any], root: pathlib.Path) -> str:
    found = {k.split(".", 1)[0] for k in stats} & set(metrics.PRIMARY)
    if len(found) != 1:
        raise runs.RunError(f"{root}: stats of {len(found)} storms "
                            f"({', '.join(sorted(found)) or 'none'}); one "
                            "storm per result root")
    return found.pop()


def job_section(job: pathlib.Path, storm: str) -> dict[str, str]:
    """A job file's <storm>: section, every parameter (a job as lkp
    writes it, split: the program's name at the start of a line, its
    parameters indented, one value each)."""
    out: dict[str, str] = {}
    inside = False
    for line in job.read_text(errors="replace").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            inside = line.rstrip() == f"{storm}:"
            continue
        if inside:
            key, _, value = line.strip().partition(":")
            value = value.strip().strip("'\"")
            if value:
                out[key] = value
    return out


def job_params(root: pathlib.Path, storm: str) -> dict[str, str]:
    """The module's parameters in the root's job.yaml: its <storm>:
    section but storm run's own (runs, warmup)."""
    job = root / "job.yaml"
    if not job.is_file():
        return {}
    return {k: v for k, v in job_section(job, storm).items()
            if k not in ("runs", "warmup")}


def _runs_from_stats(root: pathlib.Path, label: str) -> list[dict[str, Any]]:
    stats = _json(root / lkpstats.STATS)
    storm = storm_of(stats, root)
    per_run = next((p for p in (root / f"{storm}.json",
                                root / f"{storm}.json.gz") if p.is_file()),
                   None)
    samples: dict[str, list[float]]
    if per_run is not None:
        samples = {k: v for k, v in _json(per_run).items()
                   if isinstance(v, list)}
    else:
        samples = {k: [v] for k, v in stats.items()
                   if k.startswith(storm + ".")
                   and isinstance(v, (int, float))}
    n = max((len(v) for v in samples.values()), default=0)
    params = job_params(root, storm)
    docs = []
    for i in range(n):
        values = {lkpstats.suite_name(storm, k): float(v[i])
                  for k, v in samples.items() if i < len(v)
                  and isinstance(v[i], (int, float))}
        docs.append({
            "schema": runs.SCHEMA, "kind": "storm-run", "storm": storm,
            "label": label, "params": params, "result": {},
            "interrupts": {"cpus": [], "rows": {}},
            "env": {"boot_id": str(root), "lkp_result_root": str(root)},
            "run": {"series": "lkp", "index": i + 1, "traced": False},
            "lkp_stats": values, "_path": str(root / lkpstats.STATS)})
    if not docs:
        raise runs.RunError(f"{root}: no {storm} stats")
    return docs


def load_root(root: pathlib.Path, label: str) -> list[dict[str, Any]]:
    """The runs of one result root: storm run's own run files where the
    lkp program kept them, else its stats."""
    files = sorted((root / STORM_DIR).glob("*/*/run-*.json")) \
        if (root / STORM_DIR).is_dir() else []
    if files:
        return [runs.load_run(f) for f in files]
    return _runs_from_stats(root, label)


def label_of(path: pathlib.Path) -> str:
    """<commit> of .../<commit>/<n>, or the directory's own name."""
    if path.name.isdigit() and is_root(path):
        return f"{path.parent.name}/{path.name}"
    return path.name


def load_series(path: pathlib.Path) -> runs.Series:
    """A result root, or a directory of them, as one series: the roots
    are its boots."""
    found = roots(path)
    if not found:
        raise runs.RunError(f"{path}: no lkp result root ({lkpstats.STATS})")
    label = label_of(path)
    docs = []
    for root in found:
        for doc in load_root(root, label):
            # one result root, one boot: the unit of replication
            doc.setdefault("env", {}).setdefault("boot_id", str(root))
            docs.append(doc)
    return runs.series_from_runs(label, path, docs)
