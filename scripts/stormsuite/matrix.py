"""storm matrix: one storm on several kernels and boot arguments, compared.

Every (kernel, --append) combination boots its own guest with `storm vm`
and runs `storm run` in it with a label naming the kernel and the
arguments; then the runs this matrix made are compared, the first
combination being the baseline (compare.py).
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import re
import subprocess
import sys
import time

from . import REPO, compare, kernels, runs

RUN_FILE = re.compile(r"^(/\S+/run-[^/\s]+\.json)\s*$")


def label_for(release: str, append: str) -> str:
    """6.1.0-56-amd64, or 6.1.0-56-amd64_idle=poll for --append idle=poll."""
    if not append.strip():
        return release
    args = ",".join(append.split())
    return f"{release}_" + re.sub(r"[^A-Za-z0-9._,+=-]", "_", args)


def guest_command(args: argparse.Namespace, kernel: str, append: str,
                  label: str) -> list[str]:
    cmd = [str(REPO / "scripts" / "storm"), "vm", "--kernel", kernel,
           "--cpus", str(args.cpus), "--memory", args.memory,
           "--timeout", str(args.timeout)]
    if append:
        cmd += ["--append", append]
    cmd += ["--", "scripts/storm", "run", "--runs", str(args.runs),
            "--warmup", str(args.warmup), "--label", label]
    if args.trace:
        cmd.append("--trace")
    if args.bpftrace:
        cmd.append("--bpftrace")
    return cmd + [args.storm] + args.params


def add_guest_options(p: argparse.ArgumentParser, per: str) -> None:
    """How many runs, in what guest: shared by matrix, ab and bisect."""
    p.add_argument("--runs", type=int, default=5,
                   help=f"measured runs per {per} (default 5)")
    p.add_argument("--warmup", type=int, default=1,
                   help=f"warm-up runs per {per} (default 1)")
    p.add_argument("--cpus", type=int, default=4, help="vCPUs (default 4)")
    p.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    p.add_argument("--timeout", type=float, default=900,
                   help="seconds per guest before it is killed "
                   "(default 900)")


def run_guest(cmd: list[str]) -> tuple[int, list[pathlib.Path]]:
    """Run one guest, echoing its output; the run files it wrote."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, text=True,
                            errors="replace")
    assert proc.stdout is not None
    files = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = RUN_FILE.match(line.replace("\r", ""))
        if m:
            files.append(pathlib.Path(m.group(1)))
    return proc.wait(), files


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="storm matrix",
        description="Run STORM with the parameters on every combination of "
        "--kernel and --append, each in its own guest (storm vm), with "
        "results labelled <kernel release>[_<boot args>]; then compare the "
        "runs made here, the first combination being the baseline.",
        epilog="example: storm matrix --kernel 6.1 --kernel 6.12 --runs 5 "
        "ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50;  "
        "storm matrix --append '' --append idle=poll ipistorm ...")
    p.add_argument("--kernel", action="append", default=[],
                   help="a kernel for storm vm (6.1, 6.12, vmlinuz, tree); "
                   "repeat for more (default 6.1)")
    p.add_argument("--append", action="append", default=[],
                   help="boot arguments, '' for none; repeat for more "
                   "(default: none)")
    add_guest_options(p, "combination")
    p.add_argument("--trace", action="store_true",
                   help="also one trace-cmd run per combination")
    p.add_argument("--bpftrace", action="store_true",
                   help="also one bpftrace run per combination")
    p.add_argument("--out", type=pathlib.Path,
                   help="write the comparison here (default: the first "
                   "candidate's series directory)")
    compare.add_stat_options(p)
    p.add_argument("storm", help="ipistorm, tlbstorm or slabstorm")
    p.add_argument("params", nargs="*", metavar="PARAM=VALUE")
    args = p.parse_args(argv)
    kernel_specs = args.kernel or ["6.1"]
    appends = args.append or [""]
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be at least 1 and --warmup not negative")
    for prm in args.params:
        if "=" not in prm:
            p.error(f"{prm}: parameters are NAME=VALUE")

    combos = []
    for spec, append in itertools.product(kernel_specs, appends):
        try:
            release = kernels.resolve(spec).release
        except kernels.KernelNotFound as e:
            print(f"storm matrix: {e}", file=sys.stderr)
            return 2
        combos.append((spec, append, label_for(release, append)))
    labels = [c[2] for c in combos]
    if len(set(labels)) != len(labels):
        p.error("two combinations give the same label: " + ", ".join(labels))

    started = time.monotonic()
    timings = []
    sides = []
    for spec, append, label in combos:
        print(f"storm matrix: {label}: booting {spec}"
              + (f" with {append!r}" if append else ""), file=sys.stderr)
        t0 = time.monotonic()
        rc, files = run_guest(guest_command(args, spec, append, label))
        timings.append((label, time.monotonic() - t0))
        if rc != 0:
            print(f"storm matrix: {label}: the guest failed (exit {rc})",
                  file=sys.stderr)
            return rc
        files = [f for f in files if f.is_file()]
        if not files:
            print(f"storm matrix: {label}: no run files came back",
                  file=sys.stderr)
            return 1
        sides.append([runs.load_files(files, label)])

    t0 = time.monotonic()
    status = 0
    if len(sides) > 1:
        try:
            compare.compare(sides, args, args.out)
        except (runs.RunError, compare.CompareError) as e:
            print(f"storm matrix: {e}", file=sys.stderr)
            status = 2
    total = time.monotonic() - started
    print("storm matrix: " + ", ".join(f"{lb} {t:.0f} s" for lb, t in timings)
          + f", compare {time.monotonic() - t0:.0f} s; total {total:.0f} s",
          file=sys.stderr)
    return status
