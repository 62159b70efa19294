"""`storm box COMMAND`: which module does each of the box's commands
(box.py: run, matrix, ab, build; boxbisect.py: bisect, bisect-test;
boximage.py: image; boxvm.py: vm)."""

from __future__ import annotations

import argparse
import sys

from . import box, boxbisect, boximage, boxvm


def parser(command: str) -> argparse.ArgumentParser:
    """The parser of `storm box COMMAND` (ValueError: no such command)."""
    parsers = {"run": box.run_parser, "matrix": box.matrix_parser,
               "ab": box.ab_parser, "build": box.build_parser,
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


COMMANDS = ("run", "matrix", "ab", "build", "bisect", "bisect-test",
            "image", "vm")


def usage() -> str:
    """storm box --help: a usage line, then each command's synopsis
    (box.py's docstring), then where the rest is."""
    synopsis = box.__doc__.split("\n\n")[1] if box.__doc__ else ""
    return (f"usage: storm box {{{','.join(COMMANDS)}}} [--help] ...\n\n"
            "A test box over ssh, driven by ktest.pl (docs/box.md).\n\n"
            f"{synopsis}\n\n"
            "storm box COMMAND --help: its options")


def main(argv: list[str]) -> int:
    commands = {"run": box.run_main, "matrix": box.matrix_main,
                "ab": box.ab_main, "build": box.build_main,
                "bisect": boxbisect.bisect_main,
                "bisect-test": boxbisect.bisect_test_main}
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "image":
        return boximage.main(argv[1:])
    if argv[0] == "vm":
        return boxvm.main(argv[1:])
    if argv[0] not in commands:
        print(f"storm box: unknown command {argv[0]!r} "
              f"({', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])
