"""A stand-in for bisect.measure_commit, for tests that drive real git
bisects over small synthetic repositories: the commit's `value` file is
the metric ("broken" fails like a build that does not compile)."""

from __future__ import annotations

import pathlib
from typing import Any

from stormsuite import bisect


def measure(state: dict[str, Any], sha: str, nruns: int
            ) -> tuple[list[float], list[pathlib.Path]]:
    text = (pathlib.Path(state["tree"]) / "value").read_text().strip()
    if text == "broken":
        raise bisect.MeasureError("build failed: synthetic")
    # distinct, overlapping-free spreads around the value
    return [float(text) + 0.1 * i for i in range(nruns)], []


RUNS = pathlib.Path(__file__).parent / "data" / "runs"
SERIES = "ipistorm-cpulist_0-delay_50-numipi_500-offset_1-single_1-wait_1"


def measure_captured(state: dict[str, Any], sha: str, nruns: int
                     ) -> tuple[list[float], list[pathlib.Path]]:
    """Run files captured in real 6.12 guests stand in for a commit's runs:
    `value` names the label, e.g. 6.12.117+deb12-amd64_idle=poll."""
    label = (pathlib.Path(state["tree"]) / "value").read_text().strip()
    files = sorted((RUNS / label / SERIES).glob("run-*.json"))[:nruns]
    docs = [bisect.runs.load_run(f) for f in files]
    return bisect.samples_of(docs, state), files
