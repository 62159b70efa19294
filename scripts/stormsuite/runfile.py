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
  dmesg                  what the kernel logged during the run
  trace.json             trace-cmd / bpftrace summaries, when traced
  bpftrace.json

A "TYPE KEY VALUE" line: TYPE is s (string), n (number; null when the
value is not one), b (true for 1/true/yes/y) or j (JSON as written); KEY
has no blanks; VALUE is the rest of the line.

Standard library only, Python 3.7 and later: it runs in guests and on test
boxes. Usage: python3 -m stormsuite.runfile CAPTURE OUT.json
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys
from typing import Any

try:
    from . import interrupts, result
except ImportError:             # run as a file, not a module
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from stormsuite import interrupts, result  # type: ignore[no-redef]

CAPTURE_SUFFIX = ".raw"
NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
# result fields that are CPU lists stay strings even when they are one
# CPU ("1" and "0-3" must have the same type)
CPU_LIST_FIELD = re.compile(r"(^|\.)(cpulist|targets|cpus_online|cpus)$")


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
    return (capture / name).read_bytes().decode("utf-8", "replace")


def build(capture: pathlib.Path) -> dict[str, Any]:
    """The run document of one capture directory."""
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
    for part in ("trace", "bpftrace"):
        f = capture / f"{part}.json"
        if f.is_file():
            doc[part] = json.loads(_text(capture, f.name))
    return doc


def run_file_of(capture: pathlib.Path) -> pathlib.Path:
    return capture.with_name(capture.name[:-len(CAPTURE_SUFFIX)] + ".json")


def write(capture: pathlib.Path, out: pathlib.Path) -> None:
    """Write the run file atomically: a reader sees it whole or not."""
    doc = build(capture)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print("usage: python3 -m stormsuite.runfile CAPTURE OUT.json",
              file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    try:
        write(pathlib.Path(argv[0]), pathlib.Path(argv[1]))
    except (OSError, ValueError, KeyError) as e:
        print(f"runfile: {argv[0]}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
