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
