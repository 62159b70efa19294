"""A run's raw capture -> its run file (the storm-run JSON document).

`storm run` (scripts/storm-run, POSIX sh for bare test boxes) only
captures: per run, a directory run-<stamp>-<i>.raw/ with the files below,
as lkp-tests keeps each run's raw output. This module parses each source
with the suite's one parser for it and writes the run file next to it,
run-<stamp>-<i>.json. storm-run calls it where python3 is (every storm vm
guest, most boxes); where it is not, runs.py builds the document from the
capture when it reads the directory.

  header                 "TYPE KEY VALUE" lines: schema, storm, label
  run params env         "TYPE KEY VALUE" lines (below)
  result                 the module's debugfs result ("name: value")
  interrupts.before      /proc/interrupts right before insmod
  interrupts.after       and right after it returned
  sysenv                 the box's settings, "PATH<TAB>FIRST LINE" of
                         sysfs files (stormsuite/runfiles/environment.py): into env
  dmesg                  what the kernel logged during the run
  insn                   under the storm-insn plugin: its marker lines
                         of this load (stormsuite/runfiles/insn.py)
  trace.txt[.gz]         a --trace run: `trace-cmd report`, the events
  trace-events trace.meta  enabled (one a line), what recorded it (tool,
                         version, source)
  bpftrace.out           a --bpftrace run: the maps bpftrace printed, and
  bpftrace.meta          what recorded it

Beside them runfile.py writes lkp-tests' stats.json of the run
(lkpstats.py): the capture directory is then laid out as an lkp result
root of one run.

A "TYPE KEY VALUE" line: TYPE is s (string), n (number; null when the
value is not one), b (true for 1/true/yes/y) or j (JSON as written); KEY
has no blanks; VALUE is the rest of the line.

Standard library only, Python 3.7 and later: it runs in guests and on test
boxes. Usage: python3 -m stormsuite.runfiles.runfile CAPTURE... (storm-run calls it
once, after its last run: Python's start-up costs seconds in a TCG guest
whose root is 9p).
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import sys
from typing import Any

try:
    from . import environment, insn, interrupts, lkpstats, result, tracesum
except ImportError:             # run as a file, not a module
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from stormsuite.runfiles import (  # type: ignore[no-redef]
        environment, insn, interrupts, lkpstats, result, tracesum)

CAPTURE_SUFFIX = ".raw"
NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
# result fields that are CPU lists stay strings even when they are one
# CPU ("1" and "0-3" must have the same type)
CPU_LIST_FIELD = re.compile(
    r"(^|\.)(cpulist|targets|senders|busy|cpus_online|cpus)$")


def number(text: str) -> int | float | None:
    """text as a JSON number when it is a plain decimal, else None."""
    if not NUMBER.fullmatch(text):
        return None
    return float(text) if "." in text else int(text)


def parse_kv(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in text.splitlines():
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        key, _, value = rest.partition(" ")
        if kind == "s":
            out[key] = value
        elif kind == "n":
            out[key] = number(value)
        elif kind == "b":
            out[key] = value in ("1", "true", "yes", "y")
        elif kind == "j":
            out[key] = json.loads(value) if value else None
        else:
            raise ValueError(f"unknown type {kind!r} in {line!r}")
    return out


def result_section(text: str) -> dict[str, Any]:
    """The module's result file, numbers as numbers."""
    out: dict[str, Any] = {}
    for name, value in result.parse(text).items():
        num = None if CPU_LIST_FIELD.search(name) else number(value)
        out[name] = value if num is None else num
    return out


def _text(capture: pathlib.Path, name: str) -> str:
    """A captured file, gunzipped if it was packed (name.gz)."""
    f = capture / name
    data = f.read_bytes() if f.is_file() else \
        gzip.decompress((capture / f"{name}.gz").read_bytes())
    return data.decode("utf-8", "replace")


def _has(capture: pathlib.Path, name: str) -> bool:
    return (capture / name).is_file() or (capture / f"{name}.gz").is_file()


def tracer_sections(capture: pathlib.Path) -> dict[str, tuple[dict, str]]:
    """{"trace" / "bpftrace": (the run file's section, the text summary)}
    of a traced run's capture."""
    out = {}
    if _has(capture, "trace.txt"):
        meta = parse_kv(_text(capture, "trace.meta"))
        out["trace"] = tracesum.trace_report(
            _text(capture, "trace.txt"), tool=meta["tool"],
            version=meta["version"], source=meta["source"],
            events=_text(capture, "trace-events").split())
    if _has(capture, "bpftrace.out"):
        meta = parse_kv(_text(capture, "bpftrace.meta"))
        out["bpftrace"] = tracesum.bpftrace_report(
            _text(capture, "bpftrace.out"), tool=meta["tool"],
            version=meta["version"], source=meta["source"])
    return out


def build(capture: pathlib.Path) -> dict[str, Any]:
    """The run document of one capture directory."""
    return _build(capture, tracer_sections(capture))


def _build(capture: pathlib.Path,
           tracers: dict[str, tuple[dict, str]]) -> dict[str, Any]:
    header = parse_kv(_text(capture, "header"))
    doc: dict[str, Any] = {
        "schema": header["schema"], "kind": "storm-run",
        "storm": header["storm"], "label": header["label"],
        "run": parse_kv(_text(capture, "run")),
        "params": parse_kv(_text(capture, "params")),
        "env": parse_kv(_text(capture, "env")),
        "result": result_section(_text(capture, "result")),
        "interrupts": interrupts.section(_text(capture, "interrupts.before"),
                                         _text(capture, "interrupts.after")),
    }
    if _has(capture, "sysenv"):
        doc["env"].update(environment.fields(_text(capture, "sysenv"),
                                        str(doc["env"].get("cmdline", ""))))
    doc["insn"] = insn.of_run(
        _text(capture, "insn") if _has(capture, "insn") else None,
        doc["result"])
    for part, (section, _) in tracers.items():
        doc[part] = section
    return doc


def run_file_of(capture: pathlib.Path) -> pathlib.Path:
    return capture.with_name(capture.name[:-len(CAPTURE_SUFFIX)] + ".json")


def write(capture: pathlib.Path, out: pathlib.Path) -> str:
    """Write the run file atomically (a reader sees it whole or not),
    and lkp's stats.json of the run in its capture (lkpstats.py); the
    tracer summaries' text, if the run was traced."""
    tracers = tracer_sections(capture)
    doc = _build(capture, tracers)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    try:
        lkpstats.write_stats(capture, doc)
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        # the run file stands; only its lkp view is missing
        print(f"runfile: {capture}: no {lkpstats.STATS} ({type(e).__name__}"
              f": {e})", file=sys.stderr)
    return "".join(text for _, text in tracers.values())


# the suffix a capture gets when its run file cannot be made: kept for a
# look, out of the way of every reader
UNREADABLE_SUFFIX = ".unreadable"


def main(argv: list[str]) -> int:
    """Make the run file of every capture given, next to it; print each
    run file's path (stdout) and a traced run's summary (stderr). A
    capture that cannot be made into a run file is renamed *.unreadable;
    exit 1 if any was."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m stormsuite.runfiles.runfile CAPTURE...",
              file=sys.stderr)
        return 0 if argv else 2
    failed = 0
    for name in argv:
        capture = pathlib.Path(name)
        out = run_file_of(capture)
        try:
            summary = write(capture, out)
        except (OSError, ValueError, KeyError) as e:
            kept = capture.with_name(capture.name[:-len(CAPTURE_SUFFIX)]
                                     + UNREADABLE_SUFFIX)
            os.replace(capture, kept)
            print(f"runfile: {capture}: {type(e).__name__}: {e} (the "
                  f"capture is kept as {kept})", file=sys.stderr)
            failed += 1
            continue
        sys.stderr.write(summary)
        print(out, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
