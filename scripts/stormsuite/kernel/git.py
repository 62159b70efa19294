"""git on a kernel tree, for the drivers that build and bisect revisions
(kernel build, kernel source, ab, bisect): its output, or its message as
an error."""

from __future__ import annotations

import pathlib
import subprocess


def git(tree: pathlib.Path, *args: str, check: bool = True) -> str:
    """git -C tree ARGS: its output; RuntimeError with git's message."""
    res = subprocess.run(["git", "-C", str(tree), *args], text=True,
                         stdin=subprocess.DEVNULL, capture_output=True)
    if check and res.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout.strip()
