"""kmemleak's report (/sys/kernel/debug/kmemleak): what leaked, and which
of it is a leak of the kernel's own that a storm only brings out. The
debug-kernel tests read it (test_debug_guest.py), and
tests/e2e/debug-kernel prints its count of each for a report:

    python3 tests/kmemleak.py REPORT
"""

from __future__ import annotations

import dataclasses
import re
import sys

OBJECT = re.compile(r"^unreferenced object (0x[0-9a-f]+) \(size (\d+)\):",
                    re.M)
# a hex dump line: 16 bytes, then their printable form
ASCII = re.compile(r"^\s+(?:[0-9a-f]{2} ){1,16}\s*(.*)$", re.M)
FRAME = re.compile(r"\] (\w+)\+0x")


@dataclasses.dataclass
class Leak:
    address: str
    size: int
    text: str          # the printable bytes of the hex dump
    frames: list[str]  # function names, innermost first
    report: str


def parse(report: str) -> list[Leak]:
    starts = [m.start() for m in OBJECT.finditer(report)] + [len(report)]
    leaks = []
    for a, b in zip(starts, starts[1:]):
        block = report[a:b]
        head = OBJECT.match(block)
        leaks.append(Leak(head.group(1), int(head.group(2)),
                          "".join(ASCII.findall(block)),
                          FRAME.findall(block), block))
    return leaks


def slab_name_leak(leak: Leak) -> bool:
    """The name of a slabstorm cache whose sysfs entry could not be made:
    in 6.1's sysfs_slab_add(), a failed kobject_init_and_add() is not
    followed by kobject_put(), so the name it gave the kobject is never
    freed (mm/slub.c). Fault injection into kmem_cache_create() brings it
    out; any module creating a cache under memory pressure leaks it."""
    path = ["kobject_set_name_vargs", "kobject_init_and_add",
            "sysfs_slab_add"]
    return leak.text.startswith("slabstorm-") and any(
        leak.frames[i:i + len(path)] == path
        for i in range(len(leak.frames)))


def storms_leaks(report: str) -> list[Leak]:
    """What leaked, less the kernel's own leak above."""
    return [leak for leak in parse(report) if not slab_name_leak(leak)]


def main(argv: list[str]) -> int:
    text = open(argv[0], errors="replace").read()
    print(f"{len(parse(text))} objects, {len(storms_leaks(text))} not the "
          "kernel's own sysfs_slab_add() name leak")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
