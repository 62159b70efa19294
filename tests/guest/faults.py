#!/usr/bin/env python3
"""faults.py --ko DIR --out FILE [--most N] - in a debug kernel's guest:
make each allocation of a storm's load fail in turn, and record what
became of the load.

The kernel's fail-nth (/proc/thread-self/fail-nth, CONFIG_FAULT_INJECTION)
fails the Nth allocation this task makes from then on, whatever the
injectors' probability: this process loads the module itself
(finit_module), so every allocation of the load counts, the kernel's
module loader's first and then the storm's init and its run in insmod's
context. The loader's share is measured with a load the storm refuses at
once (a CPU that is not there); the campaign then fails each allocation
from just before that point to the end of a successful load (at most
--most of them, evenly spread). failslab and fail_page_alloc take turns
(the other one ignores sleeping allocations, as by default, so that its
calls do not count).

A load must end one of two ways: refused (finit_module fails, the module
is not loaded) or run to a status the result states (done, failed); and
nothing may be left behind: no module, no storm thread, no slabstorm
cache. The host-side test (tests/test_debug_guest.py) asserts it on the
JSON this writes, and that failures were injected at all.
"""

import argparse
import ctypes
import json
import os
import pathlib
import sys

SYS_DELETE_MODULE = 176
SYS_FINIT_MODULE = 313
DEBUGFS = pathlib.Path("/sys/kernel/debug")

# No count_sent=1: its kprobes sit on ftrace, and a failed allocation
# while unregistering one (ftrace_set_filter_ip, "Failed to disarm
# kprobe-ftrace ... (error -12)") leaves the probe in the kernel's table
# after its module is freed: the kernel's own limit (kernel/kprobes.c
# WARNs and goes on), which took the next load down with a KASAN oops in
# the first campaign (2026-11-24). count_sent's own failure paths (its
# counters' allocation, a probe that cannot be registered) go untested
# with it.
CASES = [
    ("ipistorm", "numipi=200 single=1 cpulist=0 offset=1"),
    ("ipistorm", "numipi=200 cpulist=0"),
    ("tlbstorm", "numflush=20 cpulist=0 targets=1"),
    ("tlbstorm", "mode=kernel numflush=20 cpulist=0"),
    ("slabstorm", "mode=remote numobj=200 cpulist=0-1"),
    ("slabstorm", "mode=create numcache=5"),
]
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


def storm_threads() -> list[str]:
    out = []
    for f in pathlib.Path("/proc").glob("[0-9]*/comm"):
        try:
            comm = f.read_text().strip()
        except OSError:
            continue
        if comm.startswith(("ipistorm", "tlbstorm", "slabstorm",
                            "slabtouch")):
            out.append(comm)
    return out


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
        out["status"] = status_of(name)
        if libc.syscall(SYS_DELETE_MODULE, name.encode(), os.O_NONBLOCK):
            out["unload_error"] = os.strerror(ctypes.get_errno())
    else:
        out["refused"] = os.strerror(err)
    out["left_loaded"] = loaded(name)
    out["left_threads"] = storm_threads()
    out["left_caches"] = slab_caches()
    return out


def count_calls(libc, fail: FailNth, ko: str, name: str, params: str
                ) -> int:
    """The allocations a load makes that the injector counts."""
    got = load(libc, fail, ko, name, params, 1 << 30)
    return got["calls"] or 0


def campaign(libc, fail: FailNth, ko: str, name: str, params: str,
             most: int) -> dict:
    total = count_calls(libc, fail, ko, name, params)
    loader = count_calls(libc, fail, ko, name, f"{params} {REFUSED}")
    first = max(1, loader - 2)
    span = list(range(first, total + 1))
    if len(span) > most:
        step = len(span) / most
        span = sorted({span[int(i * step)] for i in range(most)} |
                      {span[-1]})
    loads = [load(libc, fail, ko, name, params, n) for n in span]
    return {"calls": total, "loader_calls": loader, "loads": loads}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ko", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--most", type=int, default=12,
                   help="loads per case and injector at most")
    args = p.parse_args()
    if not (DEBUGFS / "failslab").is_dir() or \
            not pathlib.Path("/proc/thread-self/fail-nth").exists():
        print("faults.py: this kernel has no fault injection", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    fail = FailNth()
    results = []
    for injector in INJECTORS:
        for other in INJECTORS:
            setup(other, other == injector)
        for name, params in CASES:
            ko = os.path.join(args.ko, f"{name}.ko")
            got = campaign(libc, fail, ko, name, params, args.most)
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
    for injector in INJECTORS:
        setup(injector, False)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
