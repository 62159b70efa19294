"""`storm box COMMAND`: which module does each of the box's commands
(box.py: build; boxbisect.py: bisect, bisect-test; boximage.py: image;
boxvm.py: vm). A box's matrix and ab are storm matrix and storm ab with
--box (machines.py)."""

from __future__ import annotations

import argparse
import sys

from ..machines import box, boximage, boxvm
from . import boxbisect


def parser(command: str) -> argparse.ArgumentParser:
    """The parser of `storm box COMMAND` (ValueError: no such command)."""
    parsers = {"build": box.build_parser,
               "bisect": boxbisect.bisect_parser,
               "bisect-test": boxbisect.bisect_test_parser}
    if command == "image":
        return boximage.parser()
    if command == "vm":
        return boxvm.parser()
    if command == "":
        p = argparse.ArgumentParser(
            prog="storm box", description="A test box over ssh, driven "
            "by ktest.pl (docs/box.md).")
        p.add_argument("command", choices=COMMANDS)
        return p
    if command not in parsers:
        raise ValueError(f"storm box {command!r}: no such command")
    return parsers[command]()


COMMANDS = ("build", "bisect", "bisect-test", "image", "vm")
# the box's designs, now the guests' with --box
MOVED = {"run": "storm matrix --box CONFIG --kernel K --boots N STORM ...",
         "matrix": "storm matrix --box CONFIG --kernel A --kernel B ...",
         "ab": "storm ab --box CONFIG --tree LINUX --base REV ..."}


def usage() -> str:
    """storm box --help: a usage line, then each command's synopsis
    (box.py's docstring), then where the rest is."""
    synopsis = box.__doc__.split("\n\n")[1] if box.__doc__ else ""
    return (f"usage: storm box {{{','.join(COMMANDS)}}} [--help] ...\n\n"
            "A test box over ssh, driven by ktest.pl (docs/box.md).\n\n"
            f"{synopsis}\n\n"
            "storm box COMMAND --help: its options")


def main(argv: list[str]) -> int:
    commands = {"build": box.build_main,
                "bisect": boxbisect.bisect_main,
                "bisect-test": boxbisect.bisect_test_main}
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "image":
        return boximage.main(argv[1:])
    if argv[0] == "vm":
        return boxvm.main(argv[1:])
    if argv[0] in MOVED:
        print(f"storm box {argv[0]}: use {MOVED[argv[0]]} (the same "
              "options, the box's ktest.pl config given as --box; "
              "docs/box.md)", file=sys.stderr)
        return 2
    if argv[0] not in commands:
        print(f"storm box: unknown command {argv[0]!r} "
              f"({', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])
