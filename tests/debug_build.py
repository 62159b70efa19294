"""The debug kernel of tests/e2e/debug-kernel: linux-source-6.1's
storm-linux-source commit with configs/debug.config (KASAN, lockdep,
kmemleak, fault injection), built through the one source directory as
ab and bisect build theirs. Prints its build directory.

    python3 tests/debug_build.py TREE
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]
                       / "scripts"))

from stormsuite import REPO  # noqa: E402
from stormsuite.kernel import source  # noqa: E402
from stormsuite.kernel.git import git  # noqa: E402


def main(argv: list[str]) -> int:
    tree = pathlib.Path(argv[0])
    rev = git(tree, "rev-parse", "storm-linux-source^{commit}")
    with source.lock("debug-kernel"):
        out = source.build_revision(
            tree, rev, "debug-6.1", "debug-kernel",
            fragments=(REPO / "configs" / "debug.config",),
            localversion="-storm-debug")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
