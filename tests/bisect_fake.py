"""Stand-ins for bisect_measure.measure, for tests that drive real git bisects
over small synthetic repositories: each commit's `value` file is the
metric's level ("broken" fails like a build that does not compile), and
its boots are real boots' noise around that level."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import pathlib
import subprocess
from typing import Any

import numpy as np

from stormsuite.designs import bisect_measure
from stormsuite.runfiles import metrics, runs
from stormsuite.designs.bisect_state import BisectState


def value_at(state: BisectState, sha: str) -> str:
    return subprocess.run(["git", "-C", state.tree, "show", f"{sha}:value"],
                          check=True, capture_output=True,
                          text=True).stdout.strip()


BOOTS = pathlib.Path(__file__).parent / "data" / "resample"
_drawn = 0


@functools.lru_cache(maxsize=None)
def real_boots() -> tuple[tuple[float, ...], ...]:
    """Real boots of ipistorm's default storm on 6.1 (tests/data/resample,
    the A/A sets): each boot's per-run median call times, over the level
    of the pool (the median of the per-boot minima), so that a value of
    1 is a typical boot."""
    doc = json.loads(gzip.decompress(
        (BOOTS / "ipistorm-6.1-aa" / "boots.json.gz").read_bytes()))
    boots = []
    for g in doc["groups"]:
        for b in g["boots"]:
            boots.append([metrics.median_call("ipistorm", r["result"])
                          for r in b["runs"]])
    level = float(np.median([min(b) for b in boots]))
    return tuple(tuple(x / level for x in b) for b in boots)


def boots_of(value: float, n: int, runs: int, seed: str = ""
             ) -> list[list[float]]:
    """n boots of a commit whose level is value: each a real boot drawn
    at random (with its slow runs and its two clusters of call times),
    `runs` of its runs, scaled to the level. Seeded by seed and the
    draws made so far in this process."""
    global _drawn
    pool = real_boots()
    rng = np.random.default_rng(
        [_drawn, *hashlib.sha256(seed.encode()).digest()[:8]])
    _drawn += 1
    out = []
    for k in rng.integers(len(pool), size=n):
        b = pool[k]
        pick = rng.choice(len(b), size=runs, replace=runs > len(b))
        out.append([value * b[i] for i in pick])
    return out


def measure(state: BisectState, requests: list[tuple[str, int]]
            ) -> list[tuple[list[list[float]], list[str]]]:
    out = []
    for sha, n in requests:
        text = value_at(state, sha)
        if text == "broken":
            raise bisect_measure.MeasureError("build failed: synthetic")
        # seeded by the commit's subject, not its sha (which changes with
        # the time the test made the repository): a test replays alike
        subject = subprocess.run(
            ["git", "-C", state.tree, "log", "-1", "--format=%s", sha],
            check=True, capture_output=True, text=True).stdout.strip()
        out.append((boots_of(float(text), n, state.runs, subject), []))
    return out


RUNS = pathlib.Path(__file__).parent / "data" / "runs"
SERIES = "ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"


def measure_captured(state: BisectState, requests: list[tuple[str, int]]
                     ) -> list[tuple[list[list[float]], list[str]]]:
    """Run files captured in real 6.12 guests stand in for a commit's
    boots, one file a boot: `value` names the label, e.g.
    6.12.117+deb12-amd64_idle=poll."""
    out = []
    for sha, n in requests:
        label = value_at(state, sha)
        files = sorted((RUNS / label / SERIES).glob("run-*.json"))
        files = [files[k % len(files)] for k in range(n)]
        boots = [state.reading.samples([runs.load_run(f)])
                 for f in files]
        out.append((boots, [str(f) for f in files]))
    return out
