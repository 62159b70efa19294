"""Stand-ins for bisect.measure, for tests that drive real git bisects
over small synthetic repositories: each commit's `value` file is the
metric ("broken" fails like a build that does not compile)."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

from stormsuite import bisect


def value_at(state: dict[str, Any], sha: str) -> str:
    return subprocess.run(["git", "-C", state["tree"], "show", f"{sha}:value"],
                          check=True, capture_output=True,
                          text=True).stdout.strip()


def boots_of(value: float, n: int, runs: int) -> list[list[float]]:
    """n boots whose medians spread by +-2% around value (boot drift),
    runs spread by 0.1 inside each."""
    return [[value * (1 + 0.02 * ((k % 3) - 1)) + 0.1 * i
             for i in range(runs)] for k in range(n)]


def measure(state: dict[str, Any], requests: list[tuple[str, int]]
            ) -> list[tuple[list[list[float]], list[str]]]:
    out = []
    for sha, n in requests:
        text = value_at(state, sha)
        if text == "broken":
            raise bisect.MeasureError("build failed: synthetic")
        out.append((boots_of(float(text), n, state["runs"]), []))
    return out


RUNS = pathlib.Path(__file__).parent / "data" / "runs"
SERIES = "ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"


def measure_captured(state: dict[str, Any], requests: list[tuple[str, int]]
                     ) -> list[tuple[list[list[float]], list[str]]]:
    """Run files captured in real 6.12 guests stand in for a commit's
    boots, one file a boot: `value` names the label, e.g.
    6.12.117+deb12-amd64_idle=poll."""
    out = []
    for sha, n in requests:
        label = value_at(state, sha)
        files = sorted((RUNS / label / SERIES).glob("run-*.json"))
        files = [files[k % len(files)] for k in range(n)]
        boots = [bisect.samples_of([bisect.runs.load_run(f)], state)
                 for f in files]
        out.append((boots, [str(f) for f in files]))
    return out
