"""Where a design's boots happen, behind one interface: QEMU guests
(storm vm, --jobs at a time) or a test box that ktest.pl reboots into each
kernel, one boot at a time (`--box CONFIG`). storm matrix and storm ab
measure through it; the order of the boots (guest.interleave) and the
comparison are theirs, the same for both."""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time
from typing import Protocol, Sequence

from ..kernel import kernels
from . import box, guest, ktest


class MachineError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Planned:
    """One boot to make: a kernel, what runs in it, whose runs they are."""
    kernel: str                 # as given: 6.1, a tree, a release
    append: str                 # boot arguments (guests only)
    cpus: int                   # 0: the design's (guests only)
    label: str                  # results/<label>/...
    boot: int                   # the side's boot, from 1
    name: str                   # for progress lines: "<label> boot 2/3"
    storm: str
    params: tuple[str, ...]


@dataclasses.dataclass
class Booted:
    planned: Planned
    files: list[pathlib.Path]
    seconds: float


@dataclasses.dataclass(frozen=True)
class Setup:
    """What every boot of a design shares."""
    runs: int
    warmup: int
    timeout: float              # seconds a boot may take
    cpus: int = 4
    memory: str = "2G"
    jobs: int = 2
    extra: tuple[str, ...] = ()     # storm run's --trace, --bpftrace
    insn: bool = True
    accel: str = "tcg"


class Machine(Protocol):
    what: str                   # "guests", "boots of the box"

    def release(self, kernel: str) -> str:
        """The release a kernel spec boots (MachineError: none)."""

    def boot(self, plan: Sequence[Planned], setup: Setup, series: str,
             results: pathlib.Path) -> list[Booted]:
        """Every planned boot, in this order; each boot's run files
        (MachineError: a boot failed)."""

    def breakdown(self, done: Sequence[Booted]) -> str:
        """Where a boot's time went, for the closing line."""


class Guests:
    """QEMU guests, storm vm, of one architecture (x86_64, or arm64
    under emulation); consecutive boots share the host."""
    what = "guests"

    def __init__(self, arch: str = "x86_64") -> None:
        self._done: list[guest.BootResult] = []
        self.arch = arch

    def release(self, kernel: str) -> str:
        try:
            return kernels.resolve(kernel, arch=self.arch).release
        except kernels.KernelNotFound as e:
            raise MachineError(str(e)) from e

    def boot(self, plan: Sequence[Planned], setup: Setup, series: str,
             results: pathlib.Path) -> list[Booted]:
        try:
            for k in dict.fromkeys(p.kernel for p in plan):
                guest.build_modules(k, self.arch)
            boots = [guest.Boot(
                guest.Guest(p.kernel, p.append, p.cpus or setup.cpus,
                            setup.memory, setup.timeout, no_build=True,
                            insn=setup.insn, accel=setup.accel,
                            arch=self.arch),
                p.label, series, p.name, (guest.Step(p.storm, p.params),))
                for p in plan]
            self._done = guest.run_boots(
                boots, runs=setup.runs, warmup=setup.warmup,
                results=results, jobs=setup.jobs, extra=setup.extra)
        except guest.GuestError as e:
            raise MachineError(str(e)) from e
        by_boot = {id(d.boot): d for d in self._done}
        return [Booted(p, by_boot[id(b)].files, by_boot[id(b)].seconds)
                for p, b in zip(plan, boots)]

    def breakdown(self, done: Sequence[Booted]) -> str:
        return guest.breakdown(self._done)


def of_args(args) -> Machine:
    """The machine a command's options name: --box CONFIG, else
    guests."""
    if getattr(args, "box", None):
        return Box(args.box, getattr(args, "ktest", None))
    return Guests(getattr(args, "arch", "x86_64"))


class Box:
    """A test box that ktest.pl reboots into each kernel (box.py)."""
    what = "boots of the box"

    def __init__(self, config: pathlib.Path, ktest_pl: str | None = None):
        try:
            self.box = box.Box.open(config, ktest_pl)
        except (box.BoxError, ktest.ConfigError) as e:
            raise MachineError(str(e)) from e
        self._kernels: dict[str, box.Kernel] = {}
        self._reboot: list[float] = []

    def kernel(self, spec: str) -> box.Kernel:
        if spec not in self._kernels:
            try:
                self._kernels[spec] = box.resolve_kernel(spec)
            except box.BoxError as e:
                raise MachineError(str(e)) from e
        return self._kernels[spec]

    def release(self, kernel: str) -> str:
        return self.kernel(kernel).release

    def boot(self, plan: Sequence[Planned], setup: Setup, series: str,
             results: pathlib.Path) -> list[Booted]:
        out: list[Booted] = []
        t0 = time.monotonic()
        try:
            for k in dict.fromkeys(p.kernel for p in plan):
                box.build_modules(self.kernel(k))
            for n, p in enumerate(plan):
                print(f"storm: {p.name} ({n + 1}/{len(plan)}) on the box",
                      file=sys.stderr, flush=True)
                r = box.boot_and_run(
                    self.box, self.kernel(p.kernel),
                    box.Design(p.storm, p.params, setup.runs, setup.warmup,
                               setup.timeout),
                    label=p.label, series=series, name=p.name,
                    results=results.resolve(),
                    logdir=box.LOGS / series /
                    f"{n + 1:02d}-{p.label}-{p.boot}")
                out.append(Booted(p, r.files, r.seconds))
                self._reboot.append(r.ktest_seconds)
                print(f"storm: {p.name}: {len(r.files)} runs; "
                      f"{r.seconds:.0f} s (ktest.pl's reboot and console "
                      f"{r.ktest_seconds:.0f} s); {time.monotonic() - t0:.0f}"
                      " s so far", file=sys.stderr, flush=True)
        except box.BoxError as e:
            raise MachineError(str(e)) from e
        return out

    def breakdown(self, done: Sequence[Booted]) -> str:
        if not done:
            return ""
        total = sum(d.seconds for d in done) / len(done)
        reboot = sum(self._reboot) / len(self._reboot)
        return (f"a boot {total:.0f} s, of which ktest.pl's reboot and "
                f"console {reboot:.0f} s")
