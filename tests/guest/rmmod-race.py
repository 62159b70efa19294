#!/usr/bin/env python3
"""rmmod-race.py KO NAME ROUNDS EARLY MAX [PARAM=VALUE...] - in the guest:
load a storm with background=1 and unload it in the same instant, at least
ROUNDS times and until EARLY rounds unloaded it before its controller ran
(the kernel log says so), but no more than MAX rounds.

finit_module() and delete_module() back to back from one process, with no
exec in between: insmod followed by rmmod leaves milliseconds in which the
module's controller thread gets to run; this leaves microseconds. Whether
the controller ran first is up to how single-threaded TCG takes turns
between vCPUs: from 1 in 40 rounds (6.12, ipistorm) to 1 in 2, so a fixed
round count would sometimes not reach the window at all.

Prints "rounds N failed M early E"; exits 1 if any round failed to load or
unload.
"""

import ctypes
import errno
import os
import sys

# x86_64 system call numbers (the guests are x86_64)
SYS_DELETE_MODULE = 176
SYS_FINIT_MODULE = 313
EARLY_MARK = b"unloaded before the storm could report"


def new_log_lines(kmsg: int) -> bytes:
    """What the kernel logged since the last call (non-blocking)."""
    out = b""
    while True:
        try:
            rec = os.read(kmsg, 8192)
        except BlockingIOError:
            return out
        except BrokenPipeError:     # records overwritten: skip them
            continue
        if not rec:
            return out
        out += rec


def one_round(libc, ko: str, name: bytes, params: bytes) -> bool:
    """Load and unload at once; False if either failed."""
    fd = os.open(ko, os.O_RDONLY)
    try:
        if libc.syscall(SYS_FINIT_MODULE, fd, params, 0) != 0:
            print(f"load failed: {os.strerror(ctypes.get_errno())}",
                  file=sys.stderr)
            return False
        while libc.syscall(SYS_DELETE_MODULE, name, os.O_NONBLOCK):
            if ctypes.get_errno() not in (errno.EAGAIN, errno.EBUSY):
                print(f"unload failed: {os.strerror(ctypes.get_errno())}",
                      file=sys.stderr)
                return False
        return True
    finally:
        os.close(fd)


def main() -> int:
    ko, name = sys.argv[1], sys.argv[2].encode()
    rounds_min, early_want, rounds_max = map(int, sys.argv[3:6])
    params = " ".join(["background=1"] + sys.argv[6:]).encode()
    libc = ctypes.CDLL(None, use_errno=True)
    kmsg = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    os.lseek(kmsg, 0, os.SEEK_END)
    rounds = failed = early = 0
    while rounds < rounds_max and (rounds < rounds_min or
                                   early < early_want):
        rounds += 1
        if not one_round(libc, ko, name, params):
            failed += 1
        early += new_log_lines(kmsg).count(EARLY_MARK)
    print(f"rounds {rounds} failed {failed} early {early}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
