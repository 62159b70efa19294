"""storm matrix: one storm on several kernels and boot arguments, compared.

Every (kernel, --append, --vary value) combination is a side (--vary
PARAM=A,B: the same storm with the module parameter at A and at B, what
a parameter costs on one kernel); each side gets --boots
guests (storm vm), interleaved A1 B1, B2 A2 ... and run two at a time so
that each concurrent pair holds one boot of each side. Every boot runs
`storm run` with warm-up and --runs runs, under a label naming the kernel
and the arguments and one series id per side; then the sides are compared
(compare.py), the first combination being the baseline, boots as the unit.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import pathlib
import re
import sys
import time
from typing import Any

from .. import machines
from ..analysis import verdict
from ..machines import guest
from ..report import compare
from ..runfiles import runs
from . import options


def label_for(release: str, append: str, vary: str = "") -> str:
    """6.1.0-56-amd64, or 6.1.0-56-amd64_idle=poll for --append idle=poll,
    6.1.0-56-amd64_handler_ns=250 for --vary handler_ns=0,250."""
    args = ",".join(append.split() + ([vary] if vary else []))
    if not args:
        return release
    return f"{release}_" + re.sub(r"[^A-Za-z0-9._,+=-]", "_", args)


def parse_vary(spec: str) -> tuple[str, list[str]]:
    """--vary PARAM=A,B[,...] -> (PARAM, [A, B, ...])."""
    name, eq, values = spec.partition("=")
    vals = [v for v in values.split(",")]
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) \
            or len(vals) < 2 or any(not v for v in vals):
        raise ValueError(f"--vary {spec}: give PARAM=A,B (two values or "
                         "more)")
    return name, vals


def unique_labels(labels: list[str]) -> list[str]:
    """The same kernel twice (an A/A comparison): 6.1.0-56-amd64.a, .b."""
    seen: dict[str, int] = {}
    out = []
    for lb in labels:
        if labels.count(lb) > 1:
            seen[lb] = seen.get(lb, 0) + 1
            lb = f"{lb}.{chr(ord('a') + seen[lb] - 1)}"
        out.append(lb)
    return out


@dataclasses.dataclass(frozen=True)
class Side:
    kernel: str                 # as given: 6.1, a tree, ...
    append: str
    label: str
    cpus: int = 0               # 0: args.cpus
    params: tuple[str, ...] = ()    # this side's own, after the design's


# A boot's cost here, for --dry-run: measured, a 4-vCPU guest under
# single-threaded TCG, two at a time, boots and runs its command in about
# 70 s; a run of the default storms (ipistorm numipi=20000) with its
# insmod and rmmod takes about 2 s. Longer storms take longer.
BOOT_SECONDS, RUN_SECONDS = 70.0, 2.0


def estimate(nboots: int, runs_per_boot: int, jobs: int) -> float:
    per_boot = BOOT_SECONDS + RUN_SECONDS * runs_per_boot
    return per_boot * -(-nboots // jobs)


@dataclasses.dataclass(frozen=True)
class Design:
    """How every side is measured: the storm, boots, runs, the guest."""
    storm: str
    params: tuple[str, ...] = ()
    boots: int = 3
    runs: int = 5
    warmup: int = 1
    cpus: int = 4
    memory: str = "2G"
    timeout: float = 900
    jobs: int = 2
    extra: tuple[str, ...] = ()     # storm run's --trace, --bpftrace
    insn: bool = True               # count instructions (--no-insn)
    accel: str = "tcg"              # storm vm --accel

    @classmethod
    def of(cls, args: argparse.Namespace, **over: Any) -> Design:
        """From a command's options (options.add_guest_options and the
        storm)."""
        extra = tuple(flag for flag, name in (("--trace", "trace"),
                                              ("--bpftrace", "bpftrace"))
                      if getattr(args, name, False))
        fields: dict[str, Any] = dict(
            boots=args.boots, runs=args.runs, warmup=args.warmup,
            cpus=args.cpus, memory=args.memory, timeout=args.timeout,
            jobs=args.jobs, extra=extra, insn=getattr(args, "insn", True),
            accel=getattr(args, "accel", "tcg"))
        fields.update(over)
        if "storm" not in fields:
            fields.update(storm=args.storm, params=tuple(args.params))
        return cls(**fields)


def measure(sides: list[Side], design: Design, results: pathlib.Path,
            machine: machines.Machine | None = None
            ) -> tuple[list[runs.Series], float, str]:
    """Boot every side design.boots times, interleaved, on the machine
    (QEMU guests unless given); one series per side, the seconds it
    took, and where a boot's time went."""
    machine = machine or machines.Guests()
    series = guest.new_series_id()
    plan = guest.interleave([[machines.Planned(
        s.kernel, s.append, s.cpus, s.label, i + 1,
        f"{s.label} boot {i + 1}/{design.boots}", design.storm,
        tuple(design.params) + s.params) for i in range(design.boots)]
        for s in sides])
    setup = machines.Setup(runs=design.runs, warmup=design.warmup,
                           timeout=design.timeout, cpus=design.cpus,
                           memory=design.memory, jobs=design.jobs,
                           extra=design.extra, insn=design.insn,
                           accel=design.accel)
    t0 = time.monotonic()
    done = machine.boot(plan, setup, series, results)
    by_label: dict[str, list[pathlib.Path]] = {}
    for d in done:
        by_label.setdefault(d.planned.label, []).extend(d.files)
    return [runs.load_files(by_label[s.label], s.label) for s in sides], \
        time.monotonic() - t0, machine.breakdown(done)


def print_plan(what: str, nsides: int, args: argparse.Namespace,
               build_seconds: float = 0.0) -> None:
    nboots = nsides * args.boots
    runs_per_boot = args.runs + args.warmup
    secs = estimate(nboots, runs_per_boot, args.jobs) + build_seconds
    print(f"{what}: {nsides} sides x {args.boots} boots = {nboots} boots "
          f"({args.jobs} at a time), each {args.warmup} warm-up + "
          f"{args.runs} runs of {args.storm} {' '.join(args.params)}; "
          f"about {secs / 60:.0f} min"
          + (f" with {build_seconds / 60:.0f} min of builds"
             if build_seconds else ""))


def measure_and_compare(sides: list[Side], args: argparse.Namespace,
                        who: str, builds: str = "",
                        build_seconds: float = 0.0,
                        machine: machines.Machine | None = None) -> int:
    """What matrix and ab share: measure every side on the machine,
    compare, report where the time went (BUILDS: what the builds took,
    said by ab)."""
    machine = machine or machines.Guests()
    started = time.monotonic()
    try:
        sets, measured, guests = measure(sides, Design.of(args),
                                         args.results.resolve(), machine)
    except (machines.MachineError, runs.RunError) as e:
        print(f"{who}: {e}", file=sys.stderr)
        return 1
    status = 0
    t0 = time.monotonic()
    if len(sets) > 1:
        try:
            results = compare.compare([[s] for s in sets],
                                      compare.Settings.of(args))
            compare.show(results, args.out, write=not args.no_write,
                         plot=not args.no_plot)
            status = compare.exit_status([r.comparison for r in results],
                                         args.fail_above)
        except (runs.RunError, verdict.CompareError) as e:
            print(f"{who}: {e}", file=sys.stderr)
            status = 2
    total = time.monotonic() - started + build_seconds
    print(f"{who}: " + (f"builds {build_seconds:.0f} s ({builds}), "
                        if builds else "")
          + f"boots and runs {measured:.0f} s ({len(sides) * args.boots} "
          f"{machine.what}"
          + (f", {args.jobs} at a time" if machine.what == "guests" else "")
          + f"; {guests}), compare "
          f"{time.monotonic() - t0:.0f} s; total {total:.0f} s",
          file=sys.stderr)
    return status


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm matrix",
        description="Run STORM with the parameters on every combination of "
        "--kernel and --append, each combination --boots times in its own "
        "guests (storm vm; interleaved, two at a time), with results "
        "labelled <kernel release>[_<boot args>]; then compare the runs "
        "made here, the first combination being the baseline, boots as "
        "the unit of replication.",
        epilog="example: storm matrix --kernel 6.1 --kernel 6.12 --boots 3 "
        "--runs 5 ipistorm numipi=2000 single=1 wait=1 cpulist=0 offset=1;  "
        "storm matrix --append '' --append idle=poll ipistorm ...;  "
        "storm matrix --vary handler_ns=0,250 ipistorm ...;  "
        "A/A: storm matrix --kernel 6.1 --kernel 6.1 ipistorm ...")
    p.add_argument("--kernel", action="append", default=[],
                   help="a kernel for storm vm (6.1, 6.12, 7.3, vmlinuz, tree); "
                   "repeat for more (default 6.1)")
    p.add_argument("--append", action="append", default=[],
                   help="boot arguments, '' for none; repeat for more "
                   "(default: none)")
    p.add_argument("--vary", metavar="PARAM=A,B",
                   help="a module parameter at each value, on every kernel "
                   "and boot arguments (e.g. handler_ns=0,250: what the "
                   "parameter costs); the first value is the baseline")
    options.add_guest_options(p, "combination")
    options.add_arch_option(p)
    options.add_box_options(p)
    p.add_argument("--trace", action="store_true",
                   help="also one trace-cmd run per boot (kept apart from "
                   "the statistics)")
    p.add_argument("--bpftrace", action="store_true",
                   help="also one bpftrace run per boot")
    p.add_argument("--out", type=pathlib.Path,
                   help="write the comparison here (default: the first "
                   "candidate's series directory)")
    compare.add_stat_options(p)
    compare.add_view_options(p)
    options.add_storm_arguments(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    options.check_guest_options(p, args, one_boot=True)
    compare.check_stat_options(p, args)
    kernel_specs = args.kernel or ["6.1"]
    appends = args.append or [""]
    varied: list[str] = [""]
    args.vary_params = ()
    if args.vary:
        try:
            name, values = parse_vary(args.vary)
        except ValueError as e:
            p.error(str(e))
        if any(prm.partition("=")[0] == name for prm in args.params):
            p.error(f"--vary {name}: also given as a parameter")
        varied = [f"{name}={v}" for v in values]
        # compare takes sets that differ in this parameter only
        args.vary_params = (name,)

    if args.box and args.arch != "x86_64":
        p.error("--arch: a box is the architecture it is (--box)")
    if args.box and any(appends):
        p.error("--append: a box boots with its ktest.pl config's command "
                "line (--box)")
    try:
        machine = machines.of_args(args)
    except machines.MachineError as e:
        print(f"storm matrix: {e}", file=sys.stderr)
        return 1
    combos = []
    for spec, append, vary in itertools.product(kernel_specs, appends,
                                                varied):
        try:
            release = machine.release(spec)
        except machines.MachineError as e:
            print(f"storm matrix: {e}", file=sys.stderr)
            return 2
        combos.append((spec, append, vary, label_for(release, append, vary)))
    labels = unique_labels([c[3] for c in combos])
    sides = [Side(spec, append, label,
                  params=(vary,) if vary else ())
             for (spec, append, vary, _), label in zip(combos, labels)]
    if args.dry_run:
        print_plan("storm matrix", len(sides), args)
        return 0
    return measure_and_compare(sides, args, "storm matrix", machine=machine)
