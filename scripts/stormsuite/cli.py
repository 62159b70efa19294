"""Dispatch `storm SUBCOMMAND` to the module that does that one job."""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "vm": ("vm", "boot a kernel in a QEMU guest and run a command in it"),
    "show": ("show", "summarise storm result files (latency percentiles)"),
    "compare": ("compare", "compare result sets: mean, CV, change, significance"),
    "report": ("report", "a comparison in 0-day or mmtests style, for mail"),
    "matrix": ("matrix", "run a storm on several kernels/boot args, then compare"),
    "kernel": ("kbuild", "kernel build TREE: a guest kernel and the storms; kernel source"),
    "ab": ("ab", "a patched kernel against its baseline, built and compared"),
    "bisect": ("bisect", "git bisect a kernel tree on a storm's metric"),
    "simulate": ("simulate", "the verdicts' error rates on simulated noise"),
    "seed": ("seeds", "reproduce a seed's measurement: build, run, answer"),
    "box": ("box", "a test box over ssh, driven by ktest.pl: run, matrix, "
            "ab, build, bisect-test; its test VM"),
}
# run by git bisect run for storm bisect; not listed in --help
INTERNAL = {"bisect-step": ("bisect", "", "step_main"),
            # ktest.pl's TEST on the box: one boot's storm runs
            "box-step": ("box", "", "step_main")}


def usage() -> str:
    lines = ["usage: storm SUBCOMMAND [--help] ...", "", "subcommands:"]
    lines += [f"  {name:11} {entry[1]}" for name, entry in SUBCOMMANDS.items()]
    lines += [f"  {'run':11} load a storm on this kernel and save its result",
              f"  {'test':11} run the test suite (what CI runs)",
              f"  {'demo':11} set up, then run a demo storm in a guest"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS and name not in INTERNAL:
        print(f"storm: unknown subcommand {name!r}\n\n{usage()}",
              file=sys.stderr)
        return 2
    entry = SUBCOMMANDS.get(name) or INTERNAL[name]
    module = importlib.import_module(f"stormsuite.{entry[0]}")
    func = entry[2] if len(entry) > 2 else "main"
    return int(getattr(module, func)(rest) or 0)
