"""A bisect's commits measured: each built (through the one source
directory, in the bisect's build directories) and booted, the boots of
several commits interleaved two at a time, every measurement journalled
(measurements.jsonl) so that --resume answers from it.

The measurer is one function, `measure(state, requests)`: for each
(commit, boots) request, the per-boot samples and the run files.
--measurer MODULE:FUNCTION replaces it (the tests drive real git
bisects with a fake).
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
from typing import Any, Callable

from ..kernel import kbuild, source
from ..kernel.git import git
from ..machines import guest
from ..runfiles import runs
from .bisect_state import DEFAULT_MEASURER, BisectState

Request = tuple[str, int]               # (commit, boots)


Measured = tuple[list[list[float]], list[str]]  # per-boot samples, files


class MeasureError(Exception):
    """The commit could not be measured (build or boot failed)."""


def subject(tree: pathlib.Path, sha: str) -> str:
    return git(tree, "log", "-1", "--format=%s", sha)


def short(sha: str) -> str:
    return sha[:12]


GOOD_BUILD, STEP_BUILD = ("bisect-good", "-storm-good"), ("bisect", "-storm")


PARENT_BUILD = ("bisect-parent", "-storm-parent")


BUILDS_LOG = "builds.jsonl"


def build_for(state: BisectState, sha: str) -> tuple[pathlib.Path, str]:
    """(build directory, localversion): the good endpoint, and the first
    bad commit's parent in the final check, keep builds of their own, so
    that both sides of a pair of boots exist at once."""
    if sha == state.good:
        name, localversion = GOOD_BUILD
    elif sha == state.parent:
        name, localversion = PARENT_BUILD
    else:
        name, localversion = STEP_BUILD
    return source.build_dir(kbuild.arch_named(name, state.arch)), localversion


def ensure_built(state: BisectState, sha: str) -> pathlib.Path:
    """Build sha unless its build dir already has it. The revision is
    written to build/kernel/src and built from there (source.py): the
    tree's checkout is not needed, and every tree of the same source
    shares the compiler cache and the build directories."""
    tree = pathlib.Path(state.tree)
    out, localversion = build_for(state, sha)
    fragments = tuple(pathlib.Path(f) for f in state.config)
    try:
        if kbuild.built_as(out, short(sha), fragments, localversion,
                           state.arch):
            # (a build from before builds were recorded says so now)
            source.record(out, source.origin(tree, sha))
            guest.build_modules(str(out), state.arch)
            return out
        source.checkout(tree, sha, "storm bisect")
        built = kbuild.build(source.SRC, out, fragments=fragments,
                             localversion=localversion, revision=short(sha),
                             arch=state.arch)
        source.record(out)
    except (kbuild.BuildError, guest.GuestError, source.SourceError) as e:
        raise MeasureError(f"build failed: {e}") from e
    # kbuild.build made the storms against it too
    print(f"storm bisect: built {short(sha)} in {built.seconds:.0f} s",
          file=sys.stderr, flush=True)
    # for the summary's breakdown: the steps build in processes of their own
    with open(pathlib.Path(state.dir) / BUILDS_LOG, "a") as f:
        f.write(json.dumps({"commit": sha, "seconds": built.seconds}) + "\n")
    return out


def build_seconds(state_dir: pathlib.Path) -> tuple[int, float]:
    """(builds, seconds) of the kernel builds this bisect made."""
    try:
        lines = (state_dir / BUILDS_LOG).read_text().splitlines()
    except OSError:
        return 0, 0.0
    seconds = [json.loads(line)["seconds"] for line in lines if line]
    return len(seconds), sum(seconds)


def measure(state: BisectState, requests: list[Request]
            ) -> list[Measured]:
    """Build each requested commit and boot it, interleaved across the
    requests, two at a time: per request, the per-boot samples and the
    run files. The build directories are held (source.lock) from the
    first build to the last boot."""
    with source.lock("storm bisect"):
        return build_and_boot(state, requests)


def build_and_boot(state: BisectState, requests: list[Request]
                   ) -> list[Measured]:
    outs = [ensure_built(state, sha) for sha, _ in requests]
    steps = (guest.Step(state.storm, tuple(state.params)),)
    plan = []
    for (sha, n), out in zip(requests, outs):
        label = "good-" + short(sha) if sha == state.good else short(sha)
        series = guest.new_series_id()
        g = guest.Guest(str(out), state.append, state.cpus, state.memory,
                        state.timeout, no_build=True, insn=state.insn,
                        accel=state.accel, arch=state.arch)
        plan.append([guest.Boot(g, label, series,
                                f"{short(sha)} boot {k + 1}/{n}", steps)
                     for k in range(n)])
    try:
        done = guest.run_boots(guest.interleave(plan), runs=state.runs,
                               warmup=state.warmup,
                               results=pathlib.Path(state.results),
                               jobs=state.jobs)
    except guest.GuestError as e:
        raise MeasureError(str(e)) from e
    out: list[Measured] = []
    for boots in plan:
        mine = [d for d in done if d.boot in boots]
        try:
            samples = [state.reading.samples([runs.load_run(f)
                                              for f in d.files])
                       for d in mine]
        except runs.RunError as e:
            # a kernel whose storm's checks fail has no time to bisect on
            raise MeasureError(str(e)) from e
        out.append((samples, [str(f) for d in mine for f in d.files]))
    return out


# the default's name in the state.json of bisects started before the
# drivers were split into layers, which --resume reads back
MOVED_MEASURERS = {"stormsuite.bisect:measure": DEFAULT_MEASURER}


def load_measurer(spec: str) -> Callable[..., list[Measured]]:
    module, _, func = MOVED_MEASURERS.get(spec, spec).partition(":")
    return getattr(importlib.import_module(module), func)


MEASUREMENTS_LOG = "measurements.jsonl"


Measurer = Callable[[BisectState, list[Request]], list[Measured]]


def measurer_for(state: BisectState, phase: str) -> Measurer:
    """state.measurer through the bisect's journal, measurements.jsonl:
    every measurement is appended there as soon as it returns, and a
    request the journal already answers (the same phase, commit and
    number of boots, in the order they were asked) is answered from it
    instead of being measured again. steps.jsonl has a step only once it
    is decided; the journal also has the rounds of a step or of the
    endpoints that a stopped bisect left unfinished, which is what lets
    --resume reuse every boot. phase: "endpoints", "step" or "check"
    (the check measures the first bad commit and its parent again, on
    purpose: their step boots must not answer it)."""
    measurer = load_measurer(state.measurer)
    path = pathlib.Path(state.dir) / MEASUREMENTS_LOG
    recorded: dict[str, list[dict[str, Any]]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue        # a line cut short by the stop: measure it
            if d.get("phase") == phase:
                recorded.setdefault(d["commit"], []).append(d)

    def measure(st: BisectState, requests: list[Request]) -> list[Measured]:
        out: list[Measured | None] = []
        todo = []
        for i, (sha, n) in enumerate(requests):
            queue = recorded.get(sha, [])
            if queue and queue[0]["boots"] == n:
                d = queue.pop(0)
                print(f"storm bisect: {short(sha)}: {n} boots measured "
                      f"before the stop, reused ({MEASUREMENTS_LOG})",
                      file=sys.stderr, flush=True)
                # what the measurer's run files taught the reading
                # (bisect_state.Reading.samples) before the stop
                st.reading.name, st.reading.kind, st.reading.summary = \
                    d.get("metric") or (st.reading.name, st.reading.kind,
                                        st.reading.summary)
                out.append((d["samples"], d["files"]))
            else:
                # asked otherwise than before: measure from here on
                recorded.pop(sha, None)
                out.append(None)
                todo.append(i)
        if todo:
            got = measurer(st, [requests[i] for i in todo])
            with open(path, "a") as f:
                for i, (samples, files) in zip(todo, got):
                    sha, n = requests[i]
                    f.write(json.dumps({
                        "phase": phase, "commit": sha, "boots": n,
                        "samples": samples, "files": files,
                        "metric": [st.reading.name, st.reading.kind,
                                   st.reading.summary]}) + "\n")
                    out[i] = (samples, files)
        return [m for m in out if m is not None]

    return measure


def boots_of_files(files: list[str]) -> list[list[dict[str, Any]]]:
    """Run files as their boots' run documents (env.boot_id), in the
    order they came."""
    by_boot: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        doc = runs.load_run(pathlib.Path(f))
        by_boot.setdefault(str(doc["env"].get("boot_id") or f), []) \
            .append(doc)
    return list(by_boot.values())


def readable(files: list[str]) -> bool:
    return bool(files) and all(f.endswith(".json")
                               and pathlib.Path(f).is_file() for f in files)
