"""The guest step, as one Python API: boot a kernel, run a storm, get the
run files it wrote.

matrix, ab and bisect measure through run_storm() and run_boots(): no argv
rebuilt for another driver, no run file found by scraping a console. Each
boot is `storm vm ... -- storm run --series ID`; the run files are then
found by their series id and boot, and there must be exactly as many as
were asked for.

Under single-threaded TCG a guest keeps one host core busy, so boots run
two at a time (jobs=2) on a 2-core host; callers order the boots so that
each concurrent pair holds one boot of each side (drift and host load hit
both alike), and every run file records the guest it shared the host with
(env.concurrent_with).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import json
import os
import pathlib
import re
import secrets
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence, TypeVar

from .. import REPO
from ..runfiles import dmesg
from ..runfiles.runs import RESULTS

# storm run's exit status when a storm's own checks failed (the kernel
# ran a call twice, a flush missed a CPU): its runs are written, with
# their failures, for storm bisect --metric failures
CHECKS_FAILED = 3

STORM = REPO / "scripts" / "storm"
VM_STATE = REPO / "build" / "vm"   # storm vm's state directories
_print_lock = threading.Lock()


class GuestError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Guest:
    """What to boot, and how."""
    kernel: str                 # 6.1, 6.12, a vmlinuz, a built tree
    append: str = ""
    cpus: int = 4
    memory: str = "2G"
    timeout: float = 900
    no_build: bool = False      # the storms are built already (build_modules)
    numa: int = 1               # NUMA nodes (storm vm --numa)
    host_cpus: str = ""         # storm vm --host-cpus
    insn: bool = True           # count instructions (storm vm --no-insn)
    accel: str = "tcg"          # storm vm --accel: tcg or kvm
    arch: str = "x86_64"        # storm vm --arch: x86_64 or arm64


@dataclasses.dataclass(frozen=True)
class Step:
    """One `storm run` in a boot: a storm and its parameters."""
    storm: str
    params: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Boot:
    """One boot to make: a guest, what it runs, where its runs go."""
    guest: Guest
    label: str                  # results/<label>/...
    series: str                 # the side's series id
    name: str                   # for progress lines: "<label> boot 2/3"
    steps: tuple[Step, ...]     # in this order, each warmup + runs times


@dataclasses.dataclass
class BootResult:
    boot: Boot
    files: list[pathlib.Path]
    seconds: float
    concurrent_with: str


def breakdown(done: Sequence[BootResult]) -> str:
    """Where a guest's time went, on average: booting to the storm (the
    guest's uptime when `storm run` started) and the rest (runs, module
    builds are not in it, shutdown)."""
    boot = []
    for d in done:
        try:
            env = json.loads(d.files[0].read_text()).get("env", {})
            boot.append(float(env["seconds_since_boot"]))
        except (IndexError, OSError, ValueError, KeyError, TypeError):
            continue
    if not done:
        return ""
    total = sum(d.seconds for d in done) / len(done)
    if not boot:
        return f"{total:.0f} s a guest"
    up = sum(boot) / len(boot)
    return (f"a guest {total:.0f} s: boot to the storm {up:.0f} s, "
            f"runs and shutdown {total - up:.0f} s")


def new_series_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def _echo(prefix: str, line: str) -> None:
    with _print_lock:
        sys.stdout.write(f"{prefix}{line}" if prefix else line)
        sys.stdout.flush()


def vm_command(guest: Guest, command: Sequence[str], name: str = "",
               concurrent_with: str = "",
               rwdirs: Sequence[pathlib.Path] = (),
               status_file: pathlib.Path | None = None) -> list[str]:
    cmd = [str(STORM), "vm", "--kernel", guest.kernel,
           "--cpus", str(guest.cpus), "--memory", guest.memory,
           "--timeout", str(guest.timeout), "--accel", guest.accel]
    if guest.arch != "x86_64":
        cmd += ["--arch", guest.arch]
    for d in rwdirs:
        cmd += ["--rwdir", str(d)]
    if guest.append:
        cmd += ["--append", guest.append]
    if guest.numa > 1:
        cmd += ["--numa", str(guest.numa)]
    if guest.host_cpus:
        cmd += ["--host-cpus", guest.host_cpus]
    if guest.no_build:
        cmd.append("--no-build")
    if not guest.insn:
        cmd.append("--no-insn")
    if name:
        cmd += ["--name", name]
    if concurrent_with:
        cmd += ["--concurrent-with", concurrent_with]
    if status_file is not None:
        cmd += ["--status-file", str(status_file)]
    return cmd + ["--", *command]


def outcome_text(status_file: pathlib.Path, rc: int) -> str:
    """What became of a guest, from storm vm's --status-file."""
    try:
        st = json.loads(status_file.read_text())
    except (OSError, ValueError):
        return f"storm vm exit {rc}, no status written"
    what = {"timeout": "the guest timed out and was killed",
            "no-run": "the guest never ran the command",
            "interrupted": "storm vm was interrupted",
            "kernel-problem": "the guest's dmesg shows a kernel problem: "
            + "; ".join(st.get("problems", [])[:3]),
            "command-failed": "the command in the guest exited "
            f"{st.get('command_exit')}",
            }.get(st.get("outcome"), str(st.get("outcome")))
    return f"{what} (storm vm exit {rc}; files in {st.get('state')})"


def checks_failed_only(status_file: pathlib.Path) -> bool:
    """Whether a failed boot's only trouble is its storms' own checks:
    the guest's command exited CHECKS_FAILED (every run written) and any
    kernel problem its dmesg showed is such a check's report."""
    try:
        st = json.loads(status_file.read_text())
    except (OSError, ValueError):
        return False
    if st.get("command_exit") != CHECKS_FAILED:
        return False
    if st.get("outcome") == "command-failed":
        return True
    return st.get("outcome") == "kernel-problem" and all(
        re.search(dmesg.CHECK_FAILED, p) for p in st.get("problems", []))


def run_command(cmd: list[str], prefix: str = "") -> int:
    """Run a storm vm command, echoing its output (prefixed when guests
    run side by side); its exit status."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    assert proc.stdout is not None
    for line in proc.stdout:
        _echo(prefix, line)
    return proc.wait()


def untraced_runs(listing: pathlib.Path) -> list[pathlib.Path]:
    """The run files a boot's storm runs listed (their stdout: the path of
    every file written, one a line), less the traced runs."""
    out = []
    for line in listing.read_text(errors="replace").splitlines():
        f = pathlib.Path(line)
        if not line or not f.exists():
            continue
        if f.suffix == ".json":
            try:
                doc = json.loads(f.read_text(errors="replace"))
            except (OSError, ValueError):
                continue
            if doc.get("run", {}).get("traced"):
                continue
        out.append(f)
    return out


def boot_command(boot: Boot, *, runs: int, warmup: int,
                 results: pathlib.Path, listing: pathlib.Path,
                 extra: Sequence[str] = ()) -> list[str]:
    """What the guest runs: storm run for each step, stopping at the
    first that fails (the boot then fails), the paths of the files each
    wrote (its stdout) added to LISTING. A step whose storm's checks
    failed (CHECKS_FAILED: its runs written) does not stop the others;
    the boot then exits CHECKS_FAILED."""
    cmds = [["scripts/storm", "run", "--runs", str(runs), "--warmup",
             str(warmup), "--results", str(results), "--label", boot.label,
             "--series", boot.series, *extra, step.storm, *step.params]
            for step in boot.steps]
    steps = [f"{shlex.join(c)} >>{shlex.quote(str(listing))} || "
             f"{{ r=$?; [ $r = {CHECKS_FAILED} ] || exit $r; "
             f"rc={CHECKS_FAILED}; }}" for c in cmds]
    return ["sh", "-c", "; ".join(["rc=0", *steps, "exit $rc"])]


def run_storm(boot: Boot, *, runs: int, warmup: int, results: pathlib.Path,
              concurrent_with: str = "", extra: Sequence[str] = (),
              prefix: str = "") -> BootResult:
    """One boot: each of its steps runs+warmup times; the run files it
    wrote (runs of each step)."""
    if not boot.steps:
        raise GuestError(f"{boot.name}: nothing to run")
    results = results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    VM_STATE.mkdir(parents=True, exist_ok=True)
    fd, status = tempfile.mkstemp(prefix="status-", suffix=".json",
                                  dir=VM_STATE)
    os.close(fd)
    status_file = pathlib.Path(status)
    # where the guest lists the files its storm runs wrote: in the
    # results directory, which it may write
    fd, name = tempfile.mkstemp(prefix=".run-files-", dir=results)
    os.close(fd)
    listing = pathlib.Path(name)
    cmd = vm_command(
        boot.guest, boot_command(boot, runs=runs, warmup=warmup,
                                 results=results, listing=listing,
                                 extra=extra),
        boot.name, concurrent_with,
        [] if results == RESULTS.resolve() else [results],
        status_file)
    t0 = time.monotonic()
    try:
        rc = run_command(cmd, prefix)
        seconds = time.monotonic() - t0
        if rc != 0 and checks_failed_only(status_file):
            # a measurement of a kernel that fails the checks: its runs
            # say so (failures), and the readers keep them apart
            rc = 0
        failed = outcome_text(status_file, rc) if rc != 0 else ""
        new = untraced_runs(listing)
    finally:
        status_file.unlink(missing_ok=True)
        listing.unlink(missing_ok=True)
    if rc != 0:
        raise GuestError(f"{boot.name}: {failed}; {len(new)} run files "
                         f"came back")
    want = runs * len(boot.steps)
    if len(new) != want:
        raise GuestError(f"{boot.name}: {len(new)} run files came back, "
                         f"{want} were asked for")
    return BootResult(boot, sorted(new), seconds, concurrent_with)


def run_boots(boots: Sequence[Boot], *, runs: int, warmup: int,
              results: pathlib.Path, jobs: int = 2,
              extra: Sequence[str] = ()) -> list[BootResult]:
    """Every boot, jobs at a time in the order given (consecutive boots
    share the host), with progress and an estimate of the time left.
    A batch with a failed boot raises GuestError once its boots end."""
    jobs = max(1, jobs)
    done: list[BootResult] = []
    started = time.monotonic()
    for at in range(0, len(boots), jobs):
        batch = list(boots[at:at + jobs])
        names = [b.name for b in batch]
        with concurrent.futures.ThreadPoolExecutor(len(batch)) as pool:
            futs = []
            for b in batch:
                other = ", ".join(n for n in names if n != b.name)
                prefix = f"[{b.name}] " if len(batch) > 1 else ""
                futs.append(pool.submit(
                    run_storm, b, runs=runs, warmup=warmup,
                    results=results, concurrent_with=other, extra=extra,
                    prefix=prefix))
            errors = []
            for f in futs:
                try:
                    done.append(f.result())
                except GuestError as e:
                    errors.append(str(e))
            if errors:
                raise GuestError("; ".join(errors))
        elapsed = time.monotonic() - started
        left = len(boots) - len(done)
        eta = elapsed / len(done) * left if done else 0
        _echo("", f"storm: {len(done)}/{len(boots)} boots done in "
              f"{elapsed:.0f} s; about {eta:.0f} s left\n")
    return done


def build_modules(kernel: str, arch: str = "x86_64") -> None:
    """Build the storms for a kernel before its guests boot: two guests
    booting side by side must not run make in the same tree at once, and
    a bisect builds them while the source tree is at that commit."""
    from ..kernel import kernels
    from . import vm
    try:
        vm.build_modules(kernels.resolve(kernel, arch=arch), quiet=True)
    except (kernels.KernelNotFound, SystemExit) as e:
        raise GuestError(f"{kernel}: {e}") from e


def default_jobs() -> int:
    """Two guests at a time where there are two host cores or more."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


Planned = TypeVar("Planned")


def interleave(sides: Sequence[Sequence[Planned]]) -> list[Planned]:
    """A1 B1, B2 A2, A3 B3 ...: each concurrent pair holds one boot of
    each side, and the side launched first takes turns. Launch order is
    not neutral: an A/A matrix (6.1 against itself, 3+3 boots, ipistorm)
    with A always launched first measured A 6.5% slower in every pair,
    a false change with p=0.005; with the turns, whatever the first slot
    costs falls on both sides and shows as between-boot noise. A box's
    reboots (box.py) take the same order."""
    out: list[Planned] = []
    for i in range(max(len(s) for s in sides)):
        row = [s[i] for s in sides if i < len(s)]
        k = i % len(row)
        out += row[k:] + row[:k]
    return out
