"""Dispatch `storm SUBCOMMAND` to the module that does that one job."""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

SUBCOMMANDS = {
    "vm": ("machines.vm", "boot a kernel in a QEMU guest and run a command in it"),
    "show": ("report.show", "summarise storm result files (latency percentiles)"),
    "compare": ("report.compare", "compare result sets: mean, CV, change, significance"),
    "report": ("report.report", "a comparison in 0-day or mmtests style, for mail"),
    "matrix": ("designs.matrix", "run a storm on several kernels/boot args, then compare"),
    "kernel": ("kernel.kbuildcli", "kernel build TREE: a guest kernel and the storms; kernel source"),
    "ab": ("designs.ab", "a patched kernel against its baseline, built and compared"),
    "bisect": ("designs.bisect", "git bisect a kernel tree on a storm's metric"),
    "simulate": ("analysis.simulate", "the verdicts' error rates on simulated noise"),
    "calibrate": ("analysis.calibrate", "a storm's boot-to-boot spread of "
                  "instructions from A/A boots, for one-boot verdicts"),
    "seed": ("seeds", "reproduce a seed's measurement: build, run, answer"),
    "lkp": ("lkp.install", "lkp install LKP_SRC: the storms as lkp-tests programs"),
    "arm64": ("kernel.arm64", "fetch|show: Debian's arm64 kernels, headers and "
              "guest root (storm vm --arch arm64)"),
    "box": ("designs.boxcli", "a test box over ssh, driven by ktest.pl: build, "
            "bisect, bisect-test; image: its test VM's disk, vm: its test "
            "VM (matrix, ab, bisect --box: the designs on a box)"),
}
# storm kernel WHAT: the second word names the module
KERNEL = {
    "build": ("kernel.kbuildcli", "a guest kernel from a source tree (or Debian's "
              "7.3 source), then the storms"),
    "source": ("kernel.linux_source", "Debian's linux-source-6.1 or 7.3 as a git tree"),
}
# the shell subcommands (scripts/storm runs their scripts, not Python)
SHELL = ("run", "test", "demo", "pairs")
# run by git bisect run for storm bisect; not listed in --help
INTERNAL = {"bisect-step": ("designs.bisect", "", "step_main"),
            # ktest.pl's TEST on the box: one boot's storm runs
            "box-step": ("machines.box", "", "step_main")}


# What the drivers compute with, and need only to compute: `storm X
# --help` must work without them (system python3, before scripts/setup).
HEAVY = ("numpy", "scipy", "matplotlib")


class _Absent(types.ModuleType):
    """Stands in for a package of HEAVY that is not installed, while only
    help is printed: importing it works (the parsers are built at import
    time, the computing is not), using any of it says what is missing."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise ImportError(f"{self.__name__} is not installed: run "
                          "scripts/setup (or scripts/setup --no-apt) for "
                          "the Python packages the drivers compute with")


class _AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, missing: set[str]) -> None:
        self.missing = missing

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in self.missing:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = _Absent(spec.name)
        module.__path__ = []          # submodules: scipy.stats, ...
        return module

    def exec_module(self, module) -> None:
        pass


def wants_help(argv: list[str]) -> bool:
    """-h or --help among the arguments, before any `--` (after it they
    are a guest command's: storm vm -- COMMAND --help)."""
    words = argv[:argv.index("--")] if "--" in argv else argv
    return "-h" in words or "--help" in words


def help_without_heavy() -> list[str]:
    """Let the modules import without HEAVY where it is missing (only to
    print help: cli.main calls this for wants_help). The packages stood
    in for."""
    missing = {name for name in HEAVY
               if name not in sys.modules
               and importlib.util.find_spec(name) is None}
    if missing and not any(isinstance(f, _AbsentFinder)
                           for f in sys.meta_path):
        sys.meta_path.append(_AbsentFinder(missing))
    return sorted(missing)


def usage() -> str:
    lines = ["usage: storm SUBCOMMAND [--help] ...", "", "subcommands:"]
    lines += [f"  {name:11} {entry[1]}" for name, entry in SUBCOMMANDS.items()]
    lines += [f"  {'run':11} load a storm on this kernel and save its result",
              f"  {'test':11} run the test suite (what CI runs)",
              f"  {'demo':11} set up, then run a demo storm in a guest",
              f"  {'pairs':11} CPU pairs of this machine (SMT sibling, "
              "package, node) for cpulist and targets"]
    return "\n".join(lines)


def parser(words: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The argparse parser that `storm WORDS...` parses its arguments
    with, and those arguments: `kernel build`, `kernel source` and `seed
    NNN` take two words, the others one. ValueError when WORDS name no
    Python subcommand (the shell ones: SHELL)."""
    name = words[0] if words else ""
    if name not in SUBCOMMANDS:
        raise ValueError(f"no Python subcommand {name!r}")
    what = words[1] if len(words) > 1 else ""
    if name == "kernel":
        if what not in KERNEL:
            raise ValueError(f"storm kernel {what!r}: no such command")
        module = importlib.import_module(f"stormsuite.{KERNEL[what][0]}")
        return module.parser(), words[2:]
    module = importlib.import_module(f"stormsuite.{SUBCOMMANDS[name][0]}")
    if name == "box":
        return module.parser(what), words[2:]
    if name == "lkp" and what == "install":
        return module.parser(what), words[2:]
    if name == "seed":
        if what not in module.SEEDS and not what.endswith(".toml"):
            raise ValueError(f"storm seed {what!r}: no such seed")
        return module.parser(what), words[2:]
    return module.parser(), words[1:]


def kernel_usage() -> str:
    return "\n".join(["usage: storm kernel build TREE [options] | "
                      "storm kernel source [--series S] [DIR]", ""]
                     + [f"  {w:7} {entry[1]}" for w, entry in KERNEL.items()]
                     + ["", "storm kernel WHAT --help: its options"])


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if wants_help(rest) or (name in ("box", "seed") and not rest):
        help_without_heavy()
    if name not in SUBCOMMANDS and name not in INTERNAL:
        print(f"storm: unknown subcommand {name!r}\n\n{usage()}",
              file=sys.stderr)
        return 2
    if name == "kernel":
        what = rest[0] if rest else ""
        if what not in KERNEL:
            help_ = what in ("-h", "--help")
            print(kernel_usage(), file=sys.stdout if help_ else sys.stderr)
            return 0 if help_ else 2
        rest = rest[1:]
        entry = KERNEL[what]
    else:
        entry = SUBCOMMANDS.get(name) or INTERNAL[name]
    module = importlib.import_module(f"stormsuite.{entry[0]}")
    func = entry[2] if len(entry) > 2 else "main"
    return int(getattr(module, func)(rest) or 0)


def entry() -> None:
    """The console script of an installed package (pyproject.toml:
    storm-py)."""
    sys.exit(main(sys.argv[1:]))
