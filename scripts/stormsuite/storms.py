"""The storms, each said once: what the drivers know of a storm that its
result file does not say.

A storm is a module, <name>/<name>.c (the Makefile and Kbuild build every
such directory), and one entry here. Its result file says what it
measured in the op.* keys (include/storm.h, storm_show_op(); docs/
storms.md), so metrics, verdicts, compare and bisect know no storm by
name; its parameters are its module's (`modinfo -p`, read by
lkp/programs.py and the fuzzer). What is left is here: the name of one
operation before any result exists (metric names for bisect, lkp's
index), the threads a leak check looks for, the boots a time verdict
needs, and a line for help and lkp.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Storm:
    name: str
    op: str                 # one operation: the module's "op:" line
    summary: str            # what it storms, one line (help, lkp meta.yaml)
    threads: tuple[str, ...]   # its kthreads are "<prefix>/<cpu>"
    # A small storm on CPUs 0-1, timed (the guest checks that every storm
    # passes: unload races, bounds, RCU-Tasks), and the parameter that
    # makes it a fixed-count one.
    example: str
    count_param: str
    # Boots a side, and runs a boot, where time is the primary metric
    # (--no-insn): a design whose rates were measured in real guests
    # against a planted change of about 5% (tests/e2e/time-design; the
    # pools in tests/data/resample, read by tests/test_verdicts_sim.py).
    # None: not measured; the most of the measured ones.
    boots_timed: int | None = None
    runs_timed: int | None = None

    @property
    def time_metric(self) -> str:
        """The time per operation: the median timed operation where the
        module times them (op.timed), else the runtime over the count."""
        return f"{self.name}.time_per_{self.op}_ns"

    @property
    def untimed_metric(self) -> str:
        """The runtime over the count where the module times operations
        but timed none: a different number (it counts the loop around
        them), so a name of its own."""
        return f"{self.name}.runtime_per_{self.op}_ns"

    @property
    def ipi_metric(self) -> str:
        return f"{self.name}.ipis_per_{self.op}"

    @property
    def sent_metric(self) -> str:
        return f"{self.name}.ipis_sent_per_{self.op}"

    @property
    def insn_metric(self) -> str:
        return f"{self.name}.insn_per_{self.op}"


STORMS: dict[str, Storm] = {s.name: s for s in (
    # ipistorm 12 x 15: a 5% change called 92%, A/A 2.5% (8 x 15: 75.5%;
    # 12 x 5: 58%) on the ipistorm-6.1-plant pool
    Storm("ipistorm", "call",
          "storms of cross-CPU function calls (smp_call_function_single, "
          "_many, all-CPU and async)", ("ipistorm",),
          "single=1 cpulist=0 offset=1", "numipi", boots_timed=12,
          runs_timed=15),
    # tlbstorm 6 x 5: a 5% change called 100%, A/A 0% on the
    # tlbstorm-6.1-pool A/A pool
    Storm("tlbstorm", "flush",
          "TLB-shootdown storms (user or kernel ranges)",
          ("tlbstorm", "tlbstorm-w"), "cpulist=0 targets=1", "numflush",
          boots_timed=6, runs_timed=5),
    # slabstorm 12 x 15: 92.5%, A/A 6.0% (8 x 15: 71.5%) on the
    # slabstorm-6.1-plant pool
    Storm("slabstorm", "op",
          "kmem_cache create/destroy/shrink and cross-CPU alloc/free "
          "storms", ("slabstorm", "slabtouch"), "mode=remote cpulist=0-1",
          "numobj", boots_timed=12, runs_timed=15),
    Storm("rcustorm", "gp",
          "storms of RCU grace periods, expedited (an IPI to every CPU "
          "not quiescent) and normal", ("rcustorm", "rcustorm-r"),
          "cpulist=0 busy=1", "numgp"),
)}

NAMES = tuple(STORMS)


def get(name: str) -> Storm | None:
    return STORMS.get(name)


def boots_timed(name: str | None) -> int:
    """Boots a side for a time verdict on this storm."""
    measured = [s.boots_timed for s in STORMS.values() if s.boots_timed]
    storm = STORMS.get(name or "")
    return storm.boots_timed if storm and storm.boots_timed \
        else max(measured)


def runs_timed(name: str | None) -> int:
    """Runs a boot for a time verdict on this storm."""
    measured = [s.runs_timed for s in STORMS.values() if s.runs_timed]
    storm = STORMS.get(name or "")
    return storm.runs_timed if storm and storm.runs_timed \
        else max(measured)


def shell() -> str:
    """The registry for the guest's check scripts (tests/guest/lib.sh):
    "NAME|COUNT_PARAM|EXAMPLE|THREAD THREAD..." lines."""
    return "".join(f"{s.name}|{s.count_param}|{s.example}|"
                   f"{' '.join(s.threads)}\n" for s in STORMS.values())


def thread_pattern() -> re.Pattern[str]:
    """Any storm's kthread: "<prefix>/<cpu>"."""
    prefixes = sorted({t for s in STORMS.values() for t in s.threads},
                      key=len, reverse=True)
    return re.compile(f"({'|'.join(map(re.escape, prefixes))})/[0-9]+")
