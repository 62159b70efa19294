"""The storms' lkp-tests programs, made from the registry (storms.py) and
each module's parameters (modparams.py): programs/<storm>/run, parse and
meta.yaml, as `storm lkp install` writes them into an lkp checkout."""

from __future__ import annotations

import textwrap

from .. import storms
from . import modparams

# storm run's own, before the module's
RUN_PARAMS = (("runs", "measured runs, one sample each (default 5)"),
              ("warmup", "runs first whose results are thrown away "
               "(default 1)"))

# where a program finds the suite: $STORM_SRC, else lkp install's package
# of it (pkg/PKGBUILD), else the checkout storm lkp install links
FIND_SUITE = """\
# the storm suite: $STORM_SRC, else lkp install's package of it
# (pkg/PKGBUILD), else the checkout storm lkp install links
b=${{BENCHMARK_ROOT:-/lkp/benchmarks}}
src=${{STORM_SRC:-$b/{storm}}}
[ -n "${{STORM_SRC:-}}" ] || [ -x "$src/lkp/run-storm" ] || src=$b/storm
"""


def run(storm: storms.Storm, params: list[modparams.Param]) -> str:
    """The program: its header declares the job's parameters ("# - NAME",
    as lkp's programs do); lkp/run-storm runs it."""
    names = [n for n, _ in RUN_PARAMS] + [p.name for p in params]
    head = "".join(f"# - {n}\n" for n in names)
    about = textwrap.fill(f"{storm.name}, from the storm suite: "
                          f"{storm.summary}, their time per {storm.op} "
                          "and the IPIs they take.", 70,
                          initial_indent="## ", subsequent_indent="## ")
    return ("#!/bin/sh\n" + head + "\n" + about + "\n"
            "## runs and warmup: storm run's (measured runs, 5; thrown-away "
            "runs\n## first, 1); every other parameter is the module's, as "
            "insmod takes it.\n\n" + FIND_SUITE.format(storm=storm.name)
            + 'exec "$src/lkp/run-storm" "$0"\n')


def parse(storm: storms.Storm) -> str:
    return ("#!/bin/sh\n# The run files named in the program's output, as "
            "lkp stats: one sample\n# per run, named as the storm suite "
            "names its metrics\n# (scripts/stormsuite/runfiles/lkpstats.py, "
            "metrics.py).\n" + FIND_SUITE.format(storm=storm.name)
            + "PYTHONPATH=$src/scripts exec python3 -m stormsuite.runfiles.lkpstats\n")


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def meta(storm: storms.Storm, params: list[modparams.Param]) -> str:
    op = storm.op
    lines = ["short_description: >",
             *textwrap.wrap(f"{storm.name} (the storm suite): "
                            f"{storm.summary}, their time per {op} and the "
                            "IPIs they take.", 72, initial_indent="  ",
                            subsequent_indent="  "),
             "", "description: |",
             *textwrap.wrap(f"The storm suite's {storm.name} module, loaded "
                            "by `storm run` warmup+runs times on the "
                            "running kernel. One sample per measured run. "
                            "The parameters but runs and warmup are the "
                            f"module's (docs/{storm.name}.md in the storm "
                            "suite).", 72, initial_indent="  ",
                            subsequent_indent="  "),
             "", "homepage: docs/lkp.md in the storm suite", "",
             "parameters:"]
    for name, desc in RUN_PARAMS:
        lines.append(f"  {name}: {_quoted(desc)}")
    for p in params:
        lines.append(f"  {p.name}: {_quoted(p.description)}")
    lines += ["", "results:",
              f"  {storm.time_metric}: {_quoted(f'time per {op} (primary)')}",
              f"  {storm.ipi_metric}: "
              + _quoted(f"IPIs taken per {op} (primary)"),
              f"  {storm.sent_metric}: "
              + _quoted(f"IPIs sent per {op}, with count_sent=1 (primary)"),
              f"  {storm.insn_metric}: "
              + _quoted(f"instructions per {op} where they are counted"),
              f"  {storm.name}.runtime_ns: "
              + _quoted("the storm's wall time")]
    return "\n".join(lines) + "\n"


def job(storm: storms.Storm, count: int = 1000) -> str:
    """A job for a storm without one of its own in lkp/jobs/: its
    registry example, counted."""
    params = [f"  {storm.count_param}: {count}"] + [
        f"  {k}: {v}" for k, v in
        (p.split("=", 1) for p in storm.example.split())]
    return (f"suite: {storm.name}\ntestcase: {storm.name}\n"
            "category: benchmark\n\n"
            f"# the storm suite's example {storm.name} (scripts/stormsuite/"
            f"storms.py)\n{storm.name}:\n  runs: 5\n"
            + "\n".join(params) + "\n")


def program(name: str) -> dict[str, str]:
    """file name -> text of the storm's lkp program."""
    storm = storms.STORMS[name]
    params = modparams.of_storm(name)
    return {"run": run(storm, params), "parse": parse(storm),
            "meta.yaml": meta(storm, params)}
