"""A run's metrics as lkp-tests stats: the names, stats.json, and the
lkp program's parse.

lkp-tests keys every stat a program's parse prints with the program's
name: "time_per_call_ns: 812" from the ipistorm program becomes
ipistorm.time_per_call_ns in the result root's stats.json. The storms'
programs (lkp/programs/<storm>/) are named after the storms, so a metric
named <storm>.X in metrics.py is printed as X and comes back under its own
name; the /proc/interrupts rows (interrupts.CAL:Function_call_interrupts,
...), which lkp's own interrupts monitor also reports over a whole job,
keep their name under the program's: ipistorm.interrupts.CAL:... is the
storm window's row. suite_name() maps an lkp stat back.

Every run file storm run writes gets lkp's per-run stats.json in its
capture directory (run-<stamp>-<n>.raw/stats.json): runfile.py calls
write_stats(). The lkp program's parse is `python3 -m stormsuite.runfiles.lkpstats`
reading the program's output (the run files' paths storm run prints, one
a line) on stdin, and printing each run's stats, one sample per run.

Standard library only, Python 3.7 and later: it runs in guests and on
boxes, under lkp.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Any

try:
    from . import metrics
except ImportError:             # run as a file, not a module
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from stormsuite.runfiles import metrics  # type: ignore[no-redef]

STATS = "stats.json"


def lkp_name(storm: str, name: str) -> str:
    """The stat's name in stats.json: under the program's (the storm's)."""
    return name if name.startswith(storm + ".") else f"{storm}.{name}"


def suite_name(storm: str, stat: str) -> str:
    """The metric an lkp stat of the storm's program names (lkp_name's
    inverse)."""
    rest = stat[len(storm) + 1:] if stat.startswith(storm + ".") else stat
    return rest if rest.startswith("interrupts.") else stat


def value_text(x: float) -> str:
    """A number as lkp's dump-stat reads it: integers without a point."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def stats_of_run(doc: dict[str, Any]) -> dict[str, float]:
    """stats.json of one run: every metric under its lkp name."""
    storm = doc["storm"]
    return {lkp_name(storm, m.name): v
            for m, v in sorted(metrics.of_run(doc).items(),
                               key=lambda mv: mv[0].name)}


def write_stats(capture: pathlib.Path, doc: dict[str, Any]) -> None:
    """lkp's per-run stats.json in the run's capture directory, written
    atomically."""
    out = capture / STATS
    tmp = out.with_name(f".{STATS}.{os.getpid()}")
    tmp.write_text(json.dumps(stats_of_run(doc), indent=2, sort_keys=True)
                   + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)


def parse_lines(log: str) -> list[str]:
    """The stat lines lkp's parse prints for the runs named in the
    program's output: one block per run, the names under the program's."""
    out = []
    for line in log.splitlines():
        path = pathlib.Path(line.strip())
        if not line.strip() or path.suffix != ".json" or not path.is_file():
            continue
        doc = json.loads(path.read_text())
        storm = doc["storm"]
        for stat, value in stats_of_run(doc).items():
            out.append(f"{stat[len(storm) + 1:]}: {value_text(value)}")
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python3 -m stormsuite.runfiles.lkpstats < PROGRAM-OUTPUT\n"
              "(the lkp program's parse: the run files' stats, lkp-style)")
        return 0
    lines = parse_lines(sys.stdin.read())
    if not lines:
        print("lkpstats: no run file named in the program's output",
              file=sys.stderr)
        return 1
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
