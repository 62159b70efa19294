#!/usr/bin/env python3
"""faults.py --ko DIR --out FILE [--most N] - in a debug kernel's guest:
make each allocation of a storm's load fail in turn, then allocations of
its threads while it runs, and record what became of the storm.

The kernel's fail-nth (/proc/thread-self/fail-nth, CONFIG_FAULT_INJECTION)
fails the Nth allocation this task makes from then on, whatever the
injectors' probability: this process loads the module itself
(finit_module), so every allocation of the load counts, the kernel's
module loader's first and then the storm's init and its run in insmod's
context. The loader's share is measured with a load the storm refuses at
once (a CPU that is not there); the campaign then fails each allocation
from just before that point (failslab, whose counts repeat; from the
first for fail_page_alloc, whose counts move) to the end of a successful
load (at most --most of them, evenly spread). failslab and fail_page_alloc take turns
(the other one ignores sleeping allocations, as by default, so that its
calls do not count).

A load must end one of two ways: refused (finit_module fails, the module
is not loaded) or run to a status the result states (done, failed); and
nothing may be left behind: no module, no storm thread, no slabstorm
cache.

The run phase: a background storm is loaded with no failure, then its
threads (not the controller, which writes the result) are marked
(/proc/PID/make-it-fail) and the injector, filtered to marked tasks,
fails their Ith allocation from then on (interval I, probability 100,
`times` failures at most): a vm_mmap or vmap of tlbstorm's flushers, a
kmem_cache_create or an object of slabstorm's threads. The storm must end
on its own with a status (failed where the failure reached it) and
unload leaving nothing behind. This process marks from a CPU the storms
do not use, at SCHED_FIFO; a run whose threads all ended before it saw
them is run again (twice at most) and kept as missed.

The host-side test (tests/test_debug_guest.py) asserts it on the JSON
this writes, and that failures were injected at all.
"""

import argparse
import ctypes
import json
import os
import pathlib
import sys
import time

# the registry of storms (its module needs nothing but the standard library)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "scripts"))
from stormsuite import storms  # noqa: E402

SYS_DELETE_MODULE = 176
SYS_FINIT_MODULE = 313
DEBUGFS = pathlib.Path("/sys/kernel/debug")

# No count_sent=1: its kprobes sit on ftrace, and a failed allocation
# while unregistering one (ftrace_set_filter_ip, "Failed to disarm
# kprobe-ftrace ... (error -12)") leaves the probe in the kernel's table
# after its module is freed: the kernel's own limit (kernel/kprobes.c
# WARNs and goes on), and the next load then oopses under KASAN
# (docs/safety.md). count_sent's own failure paths (its
# counters' allocation, a probe that cannot be registered) go untested
# with it.
CASES = [
    ("ipistorm", "numipi=200 single=1 cpulist=0 offset=1"),
    ("ipistorm", "numipi=200 cpulist=0"),
    # in the background only count_sent's registration is in the load;
    # its probes are removed by the controller thread, which fail-nth
    # (this thread's) does not reach
    ("ipistorm", "numipi=200 single=1 cpulist=0 offset=1 count_sent=1 "
     "background=1"),
    ("tlbstorm", "numflush=20 cpulist=0 targets=1"),
    ("tlbstorm", "mode=kernel numflush=20 cpulist=0"),
    ("slabstorm", "mode=remote numobj=200 cpulist=0-1"),
    ("slabstorm", "mode=create numcache=5"),
]
# every other storm: its example, counted (scripts/stormsuite/storms.py)
CASES += [(s.name, f"{s.count_param}=200 {s.example}")
          for s in storms.STORMS.values() if s.name not in dict(CASES)]
# Storms whose threads allocate while they run, with no failure in the
# load: failures are injected into their threads once they run.
RUN_CASES = [
    ("slabstorm", "mode=remote cpulist=0-1 timeout=5 background=1"),
    ("slabstorm", "mode=create cpulist=0-1 timeout=5 background=1"),
    ("slabstorm", "mode=shrink cpulist=0-1 fill=64 timeout=5 background=1"),
    ("tlbstorm", "cpulist=0 targets=1 timeout=5 background=1"),
    ("tlbstorm", "mode=kernel cpulist=0 timeout=5 background=1"),
]
# the Ith allocation of the storm's threads from the mark on fails
RUN_INTERVALS = (1, 7, 50)
RUN_TIMES = 3
# A storm thread, not the controller (<module>/ctl)
STORM_THREAD = storms.thread_pattern()

# A CPU that is not there: every storm refuses it before its allocations.
REFUSED = "cpulist=63"

INJECTORS = {
    # attribute -> (value for the campaign, default to put back)
    "failslab": {"ignore-gfp-wait": ("N", "Y")},
    "fail_page_alloc": {"ignore-gfp-wait": ("N", "Y"),
                        "min-order": ("0", "1")},
}


def write(path: pathlib.Path, value: str) -> None:
    path.write_text(value + "\n")


def run_filter(injector: str, interval: int) -> None:
    """Fail the interval-th allocation of the marked tasks, RUN_TIMES in
    all (interval 0: injector off, unfiltered, as by default). The filter
    goes on before the probability and off after it: with probability
    100 and no filter, every allocation in the guest would fail, this
    process's writes here first."""
    d = DEBUGFS / injector
    if not interval:
        write(d / "probability", "0")
    write(d / "task-filter", "Y" if interval else "N")
    write(d / "interval", str(max(interval, 1)))
    write(d / "times", str(RUN_TIMES if interval else 1))
    if interval:
        write(d / "probability", "100")


def setup(injector: str, on: bool) -> None:
    d = DEBUGFS / injector
    for attr, (campaign, default) in INJECTORS[injector].items():
        write(d / attr, campaign if on else default)
    # one line per injected failure (no stack): tells the dmesg scan that
    # an allocation-failure report after it was asked for
    write(d / "verbose", "1")


class FailNth:
    """This thread's fail-nth, through one descriptor opened beforehand:
    opening the file allocates, and with a count still running that
    allocation would be the one failed. Reading and writing an open proc
    file allocate nothing in the kernel."""

    def __init__(self) -> None:
        self.fd = os.open("/proc/thread-self/fail-nth", os.O_RDWR)

    def set(self, n: int) -> None:
        os.pwrite(self.fd, str(n).encode(), 0)

    def left(self) -> int:
        return int(os.pread(self.fd, 32, 0))


def loaded(name: str) -> bool:
    return any(line.split()[0] == name for line in
               pathlib.Path("/proc/modules").read_text().splitlines())


def task_comms() -> dict[int, str]:
    """Every task's name by PID (kthreads have no cmdline); tasks that
    went while being read are left out."""
    out = {}
    for f in pathlib.Path("/proc").glob("[0-9]*/comm"):
        try:
            out[int(f.parent.name)] = f.read_text().strip()
        except (OSError, ValueError):
            continue
    return out


def storm_threads() -> list[str]:
    return [c for c in task_comms().values()
            if c.startswith(("ipistorm", "tlbstorm", "slabstorm",
                             "slabtouch"))]


def slab_caches() -> list[str]:
    return sorted(p.name for p in pathlib.Path("/sys/kernel/slab").glob(
        "slabstorm*"))


def status_of(name: str) -> str:
    f = DEBUGFS / name / "result"
    try:
        for line in f.read_text().splitlines():
            if line.startswith("status: "):
                return line.split(": ", 1)[1]
    except OSError:
        return "no result"
    return "no status"


def wait_status(name: str, params: str, most: float = 120) -> str:
    """The status once the storm has reported: a background storm's
    result appears when it is over."""
    deadline = time.monotonic() + most
    status = status_of(name)
    while "background=1" in params and status in ("no result", "running") \
            and time.monotonic() < deadline:
        time.sleep(0.2)
        status = status_of(name)
    return status


def storm_pids() -> list[int]:
    return [pid for pid, c in task_comms().items()
            if STORM_THREAD.fullmatch(c)]


def left_behind(name: str) -> dict:
    return {"left_loaded": loaded(name), "left_threads": storm_threads(),
            "left_caches": slab_caches()}


def run_phase(libc, ko: str, name: str, params: str, injector: str,
              interval: int) -> dict:
    """A background storm whose threads' allocations fail as it runs.
    The injector is armed before the load: nothing is marked yet, so
    nothing fails until the threads are (kthreads inherit kthreadd's
    make-it-fail, 0), and then at once."""
    run_filter(injector, interval)
    fd = os.open(ko, os.O_RDONLY)
    try:
        t0 = time.monotonic()
        rc = libc.syscall(SYS_FINIT_MODULE, fd, params.encode(), 0)
        err = ctypes.get_errno()
    finally:
        os.close(fd)
    out = {"interval": interval}
    if rc:
        run_filter(injector, 0)
        out["refused"] = os.strerror(err)
        out.update(left_behind(name))
        return out
    # The threads exist once the load returns (created in init), yet on a
    # slow debug guest a scan right after it can find none: look again
    # while the storm runs, and keep what was seen.
    pids, scans = storm_pids(), 1
    while not pids and status_of(name) in ("no result", "running") and \
            scans < 300:
        time.sleep(0.1)
        pids, scans = storm_pids(), scans + 1
    out["scans"] = scans
    if not pids:
        out["comms"] = sorted(set(task_comms().values()))
    for pid in pids:
        try:
            write(pathlib.Path(f"/proc/{pid}/make-it-fail"), "1")
        except OSError:
            pass
    out["marked"] = len(pids)
    out["status"] = wait_status(name, params)
    out["seconds"] = round(time.monotonic() - t0, 1)
    out["injected"] = RUN_TIMES - int(
        (DEBUGFS / injector / "times").read_text())
    run_filter(injector, 0)
    if libc.syscall(SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK):
        out["unload_error"] = os.strerror(ctypes.get_errno())
    out.update(left_behind(name))
    return out


def run_marked(libc, ko: str, name: str, params: str, injector: str,
               interval: int, tries: int = 3) -> dict:
    """run_phase until the marking reached the storm's threads: a run
    whose threads all ended before this process saw them (a guest busy
    elsewhere) injected nothing and tests nothing; the misses are kept."""
    missed = []
    for _ in range(tries):
        got = run_phase(libc, ko, name, params, injector, interval)
        if "refused" in got or got["marked"]:
            break
        missed.append(got)
    got["missed"] = missed
    return got


def off_storm_cpus(storm_cpus: set[int]) -> None:
    """This process on a CPU of its own, ahead of every normal task: the
    storms' threads busy their CPUs for the whole storm, and the marking
    must not wait behind them (as rmmod-race.py's rmmod does)."""
    spare = os.sched_getaffinity(0) - storm_cpus
    if spare:
        os.sched_setaffinity(0, {max(spare)})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))


def load(libc, fail: FailNth, ko: str, name: str, params: str,
         nth: int) -> dict:
    """One load with the Nth allocation failing (0: none); unloaded
    after."""
    fd = os.open(ko, os.O_RDONLY)
    args = params.encode()
    try:
        fail.set(nth)
        rc = libc.syscall(SYS_FINIT_MODULE, fd, args, 0)
        err = ctypes.get_errno()
        left = fail.left()
        fail.set(0)
    finally:
        os.close(fd)
    out = {"nth": nth, "injected": nth > 0 and left == 0,
           "calls": nth - left if nth and left else None}
    if rc == 0:
        out["status"] = wait_status(name, params)
        if libc.syscall(SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK):
            out["unload_error"] = os.strerror(ctypes.get_errno())
    else:
        out["refused"] = os.strerror(err)
    out.update(left_behind(name))
    return out


def count_calls(libc, fail: FailNth, ko: str, name: str, params: str
                ) -> int:
    """The allocations a load makes that the injector counts."""
    got = load(libc, fail, ko, name, params, 1 << 30)
    return got["calls"] or 0


def campaign(libc, fail: FailNth, ko: str, name: str, params: str,
             most: int, exact: bool) -> dict:
    """Fail each allocation of a load in turn. failslab's counts repeat
    exactly (exact): from just before the loader's last allocation to
    past the load's. fail_page_alloc's move from load to load by more than
    the module's own share (ipistorm's numipi=200 cpulist=0 made 9 to 16
    page allocations in five loads of one boot, none of them ipistorm's):
    from the first, so that failures land wherever the count falls."""
    total = count_calls(libc, fail, ko, name, params)
    loader = count_calls(libc, fail, ko, name, f"{params} {REFUSED}")
    first = max(1, min(loader, total) - 2) if exact else 1
    span = list(range(first, max(total, loader + 2) + 1))
    if len(span) > most:
        step = len(span) / most
        span = sorted({span[int(i * step)] for i in range(most)} |
                      {span[-1]})
    loads = [load(libc, fail, ko, name, params, n) for n in span]
    return {"calls": total, "loader_calls": loader, "loads": loads}


def each_case(cases, ko_dir: str):
    """(injector, module, params, .ko path) for every case under each
    injector in turn, that injector set up and the other at rest."""
    for injector in INJECTORS if cases else ():
        for other in INJECTORS:
            setup(other, other == injector)
        for name, params in cases:
            yield injector, name, params, os.path.join(ko_dir, f"{name}.ko")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ko", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--most", type=int, default=12,
                   help="loads per case and injector at most")
    p.add_argument("--phase", choices=("load", "run", "both"),
                   default="both", help="the load campaign, the run "
                   "phase, or both (default)")
    args = p.parse_args()
    if not (DEBUGFS / "failslab").is_dir() or \
            not pathlib.Path("/proc/thread-self/fail-nth").exists():
        print("faults.py: this kernel has no fault injection", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    fail = FailNth()
    results = []
    for injector, name, params, ko in each_case(
            CASES if args.phase != "run" else (), args.ko):
        got = campaign(libc, fail, ko, name, params, args.most,
                       exact=injector == "failslab")
        got.update(injector=injector, module=name, params=params)
        results.append(got)
        outcomes = [ld.get("status") or ld.get("refused")
                    for ld in got["loads"]]
        print(f"{injector} {name} {params}: {got['calls']} calls "
              f"({got['loader_calls']} the loader's), "
              f"{len(got['loads'])} loads, "
              f"{sum(ld['injected'] for ld in got['loads'])} injected: "
              + ", ".join(f"{o} x{outcomes.count(o)}"
                          for o in sorted(set(outcomes))))
    if args.phase != "run":
        pathlib.Path(args.out).write_text(json.dumps(results, indent=1) +
                                          "\n")
    runs = []
    if args.phase != "load":
        off_storm_cpus({0, 1})
    for injector, name, params, ko in each_case(
            RUN_CASES if args.phase != "load" else (), args.ko):
        for interval in RUN_INTERVALS:
            got = run_marked(libc, ko, name, params, injector, interval)
            got.update(injector=injector, module=name, params=params)
            runs.append(got)
            print(f"{injector} {name} {params} (run phase, every "
                  f"{interval}): {got.get('marked', 0)} threads marked, "
                  f"{got.get('injected', 0)} injected: "
                  f"{got.get('status') or got.get('refused')} in "
                  f"{got.get('seconds')} s"
                  + (f" ({len(got['missed'])} runs missed)"
                     if got.get("missed") else ""))
    for injector in INJECTORS:
        setup(injector, False)
    if args.phase != "load":
        pathlib.Path(args.out).with_name("faults-run.json").write_text(
            json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
