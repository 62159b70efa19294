"""Dispatch `storm SUBCOMMAND` to the module that does that one job."""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "vm": ("vm", "boot a kernel in a QEMU guest and run a command in it"),
    "show": ("show", "summarise storm result files (latency percentiles)"),
    "compare": ("compare", "compare result sets: mean, CV, change, significance"),
    "matrix": ("matrix", "run a storm on several kernels/boot args, then compare"),
}


def usage() -> str:
    lines = ["usage: storm SUBCOMMAND [--help] ...", "", "subcommands:"]
    lines += [f"  {name:10} {desc}" for name, (_, desc) in SUBCOMMANDS.items()]
    lines += [f"  {'run':10} load a storm on this kernel and save its result",
              f"  {'test':10} run the test suite (what CI runs)",
              f"  {'demo':10} set up, then run a demo storm in a guest"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"storm: unknown subcommand {name!r}\n\n{usage()}",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"stormsuite.{SUBCOMMANDS[name][0]}")
    return int(module.main(rest) or 0)
