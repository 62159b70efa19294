"""Debian's linux-source-6.1 as a git tree: what the seeds and the e2e
bisect build their kernels from.

    storm kernel source [DIR]

Installs the package when its tarball is missing, unpacks it into DIR
(default build/linux-source-6.1) and commits it as one root commit,
tagged storm-linux-source. Kept once made: a second call only prints
where it is. The tag, not a branch, is what builds use, so commits made
on top (the bisect demo's) change nothing for the seeds.
"""

from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from . import REPO
from .git import git

TREE = REPO / "build" / "linux-source-6.1"
TAG = "storm-linux-source"
PACKAGE = "linux-source-6.1"
IDENTITY = ["-c", "user.name=storm", "-c", "user.email=storm@localhost"]


class SourceTreeError(Exception):
    pass


def tarball() -> pathlib.Path | None:
    found = sorted(glob.glob(f"/usr/src/{PACKAGE}.tar.*"))
    return pathlib.Path(found[-1]) if found else None


def install(say) -> pathlib.Path:
    """The package's tarball, installed with apt-get if it is missing."""
    found = tarball()
    if found:
        return found
    say(f"installing {PACKAGE}")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    res = subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends",
         PACKAGE], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        stdin=subprocess.DEVNULL, capture_output=True, text=True)
    found = tarball()
    if res.returncode != 0 or not found:
        raise SourceTreeError(f"apt-get install {PACKAGE} failed: "
                              f"{res.stderr.strip()[-500:]}")
    return found


def ensure(tree: pathlib.Path = TREE, say=None) -> str:
    """TREE as a git tree with the tag; the tagged commit."""
    def _say(msg: str) -> None:
        print(f"storm kernel source: {msg}", file=sys.stderr, flush=True)
    say = say or _say
    if (tree / ".git").is_dir():
        try:
            return git(tree, "rev-parse", "--verify", f"{TAG}^{{commit}}")
        except RuntimeError:
            pass
        # a tree made before the tag existed: its root commit is the source
        root = git(tree, "rev-list", "--max-parents=0", "HEAD").split()[-1]
        git(tree, "tag", "-f", TAG, root)
        return root
    if tree.exists() and any(tree.iterdir()):
        raise SourceTreeError(f"{tree} exists and is not a git tree: move "
                              "it away, or give another directory")
    tar = install(say)
    say(f"unpacking {tar} into {tree}")
    tree.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tree.parent) as scratch:
        subprocess.run(["tar", "-xf", str(tar), "-C", scratch], check=True)
        unpacked = pathlib.Path(scratch) / PACKAGE
        if not (unpacked / "Makefile").is_file():
            raise SourceTreeError(f"{tar}: no {PACKAGE}/Makefile in it")
        version = subprocess.run(
            ["make", "-s", "-C", str(unpacked), "kernelversion"],
            capture_output=True, text=True).stdout.strip()
        git(unpacked, "init", "-q", "-b", "main")
        # Debian's .gitignore ignores the whole top level: add with -f
        git(unpacked, "add", "-A", "-f", ".")
        git(unpacked, *IDENTITY, "commit", "-q", "-m",
            f"Linux {version} (Debian {PACKAGE})")
        git(unpacked, "tag", TAG)
        shutil.move(str(unpacked), str(tree))
    return git(tree, "rev-parse", f"{TAG}^{{commit}}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm kernel source",
        description=f"Unpack Debian's {PACKAGE} (installed with apt-get if "
        f"missing) into DIR as a git tree whose one commit is tagged {TAG}: "
        "the tree the seeds and the e2e bisect build from.")
    p.add_argument("dir", nargs="?", type=pathlib.Path, default=TREE,
                   help=f"where (default {TREE.relative_to(REPO)})")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        rev = ensure(args.dir.resolve())
    except (SourceTreeError, RuntimeError, subprocess.CalledProcessError) \
            as e:
        print(f"storm kernel source: {e}", file=sys.stderr)
        return 1
    print(f"{args.dir} {TAG} {rev[:12]}")
    return 0
