"""The options of the commands that boot guests to measure (matrix, ab,
bisect and the seed commands): how many boots and runs, in what guest,
each command with its own defaults; and their checks."""

from __future__ import annotations

import argparse
import os
import pathlib

from .. import storms
from ..machines import guest
from ..runfiles import runs


# Boots a side by what the primary metric is (docs/drivers.md, "Why the
# default design"): instructions per operation, nearly deterministic,
# need few; time per operation, by storm (storms.Storm.boots_timed).
BOOTS_COUNTED = 3
BOOTS_TIMED = {name: storms.boots_timed(name) for name in storms.NAMES}
RUNS_COUNTED = 5
RUNS_TIMED = {name: storms.runs_timed(name) for name in storms.NAMES}


def boots_timed(storm: str | None) -> int:
    return storms.boots_timed(storm)


def add_guest_options(p: argparse.ArgumentParser, per: str, *,
                      boots: int | None = None, runs_: int | None = None,
                      cpus: int | None = 4, timeout: float = 900,
                      results: pathlib.Path | None = runs.RESULTS,
                      results_help: str = "$STORM_RESULTS or results/"
                      ) -> None:
    """How many boots and runs, in what guest: shared by matrix, ab,
    bisect and the seeds (with their own defaults). boots, runs_ None: by
    the primary metric (check_guest_options). cpus None: no --cpus (the
    command sizes its guests itself: seed 003's --sizes)."""
    p.add_argument("--boots", type=int, default=boots,
                   help=f"guests booted per {per}, the unit of replication "
                   + (f"(default {boots})" if boots is not None else
                      f"(default {BOOTS_COUNTED} where instructions are "
                      f"counted, the primary metric under TCG; where "
                      "time is primary, with --no-insn: "
                      + ", ".join(f"{k} {v}" for k, v in
                                  BOOTS_TIMED.items()) + ")"))
    p.add_argument("--runs", type=int, default=runs_,
                   help="measured runs per boot "
                   + (f"(default {runs_})" if runs_ is not None else
                      f"(default {RUNS_COUNTED} where instructions are "
                      "counted; with --no-insn: "
                      + ", ".join(f"{k} {v}" for k, v in
                                  RUNS_TIMED.items()) + ")"))
    p.add_argument("--warmup", type=int, default=1,
                   help="warm-up runs per boot, thrown away (default 1)")
    p.add_argument("--jobs", type=int, default=guest.default_jobs(),
                   help="guests at a time (default 2 on a host with 2 "
                   "cores or more: each TCG guest uses one)")
    if cpus is not None:
        p.add_argument("--cpus", type=int, default=cpus,
                       help=f"vCPUs (default {cpus})")
    p.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    p.add_argument("--timeout", type=float, default=timeout,
                   help="seconds per guest before it is killed "
                   f"(default {timeout:.0f})")
    p.add_argument("--results", type=pathlib.Path, default=results,
                   help=f"where the run files go (default: {results_help})")
    p.add_argument("--no-insn", dest="insn", action="store_false",
                   help="do not count instructions (by default TCG guests "
                   "run the storm-insn plugin, and instructions per "
                   "operation are primary metrics)")
    p.add_argument("--accel", choices=("tcg", "kvm"),
                   default=os.environ.get("STORM_ACCEL", "tcg"),
                   help="how the guests' CPUs are provided: tcg (default: "
                   "emulated; stock guests hang under KVM on some hosts) "
                   "or kvm (no instruction counter; run files say whether "
                   "the vCPUs were overcommitted or pinned)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (boots, runs) and its estimated "
                   "time; run nothing")


def add_arch_option(p: argparse.ArgumentParser) -> None:
    """--arch: the guests' architecture (matrix, ab)."""
    p.add_argument("--arch", choices=("x86_64", "arm64"), default="x86_64",
                   help="the guests' architecture (default x86_64); arm64: "
                   "Debian's arm64 kernels, or kernels cross-built for "
                   "arm64, under emulation (docs/arm64.md)")


def check_guest_options(p: argparse.ArgumentParser,
                        args: argparse.Namespace,
                        one_boot: bool = False) -> None:
    """one_boot: the command can decide on instructions with one boot a
    side (matrix, ab), so --boots 1 is allowed where they are counted."""
    if args.runs is None:
        args.runs = RUNS_COUNTED if counted(args) else \
            storms.runs_timed(getattr(args, "storm", None))
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be at least 1 and --warmup not negative")
    if args.boots is None:
        args.boots = BOOTS_COUNTED if counted(args) else \
            boots_timed(getattr(args, "storm", None))
    if args.boots < 1 or args.jobs < 1:
        p.error("--boots and --jobs must be at least 1")
    if args.boots < 2 and not (one_boot and counted(args)):
        p.error("--boots 1 can never show a change in time: boots are the "
                "unit of replication and a test needs two a side"
                + (" (with instruction counts, without --no-insn, one boot "
                   "a side decides on instructions)" if one_boot else
                   " (use storm vm -- storm run for a single look)"))
    for prm in getattr(args, "params", []):
        if "=" not in prm:
            p.error(f"{prm}: parameters are NAME=VALUE")


def counted(args: argparse.Namespace) -> bool:
    """Instructions will be counted: the plugin, in a TCG guest."""
    return bool(getattr(args, "insn", False)) and \
        getattr(args, "accel", None) in (None, "tcg")


def add_box_options(p: argparse.ArgumentParser) -> None:
    """--box: the boots happen on a test box that ktest.pl reboots, one
    at a time, instead of in guests (machines.py, docs/box.md)."""
    p.add_argument("--box", type=pathlib.Path, metavar="CONFIG",
                   help="boot a test box instead of guests: its ktest.pl "
                   "config (configs/box/box.conf is the template; storm box "
                   "vm start prints the test VM's); one boot at a time")
    p.add_argument("--ktest", help="with --box: ktest.pl, or the kernel "
                   "tree holding it (default: $STORM_KTEST, else "
                   "build/linux-source-6.1 from storm kernel source)")


def add_storm_arguments(p: argparse.ArgumentParser) -> None:
    """The storm and its module parameters, last on every command line."""
    p.add_argument("storm", help=", ".join(storms.NAMES))
    p.add_argument("params", nargs="*", metavar="PARAM=VALUE")


def add_revision_options(p: argparse.ArgumentParser) -> None:
    """The two sides of an A/B of kernel sources: a baseline revision of
    a tree and a patched one, or the baseline and a patch on top."""
    p.add_argument("--tree", type=pathlib.Path, required=True,
                   help="a kernel git tree")
    p.add_argument("--base", required=True, help="the baseline revision")
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--patched", help="the patched revision")
    side.add_argument("--patch", type=pathlib.Path,
                      help="a patch file applied on top of --base")


def check_revision_options(p: argparse.ArgumentParser,
                           args: argparse.Namespace) -> None:
    if args.patch and not args.patch.is_file():
        p.error(f"{args.patch}: no such patch file")
