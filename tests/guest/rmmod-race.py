#!/usr/bin/env python3
"""rmmod-race.py KO NAME ROUNDS [PARAM=VALUE...] - in the guest: load a
storm with background=1 and unload it in the same instant, ROUNDS times.

finit_module() and delete_module() back to back from one process, with no
exec in between: insmod followed by rmmod leaves milliseconds in which the
module's controller thread gets to run; this leaves microseconds. Prints
"rounds N failed M"; exits 1 if any round failed to load or unload.
"""

import ctypes
import errno
import os
import sys

# x86_64 system call numbers (the guests are x86_64)
SYS_DELETE_MODULE = 176
SYS_FINIT_MODULE = 313


def main() -> int:
    ko, name, rounds = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    params = " ".join(["background=1"] + sys.argv[4:]).encode()
    libc = ctypes.CDLL(None, use_errno=True)
    failed = 0
    for _ in range(rounds):
        fd = os.open(ko, os.O_RDONLY)
        loaded = libc.syscall(SYS_FINIT_MODULE, fd, params, 0) == 0
        if loaded:
            while libc.syscall(SYS_DELETE_MODULE, name, os.O_NONBLOCK):
                if ctypes.get_errno() not in (errno.EAGAIN, errno.EBUSY):
                    failed += 1
                    break
        else:
            print(f"load failed: {os.strerror(ctypes.get_errno())}",
                  file=sys.stderr)
            failed += 1
        os.close(fd)
    print(f"rounds {rounds} failed {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
