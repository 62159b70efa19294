"""Debian's linux-source-<series> as a git tree: what the seeds, the
e2e bisects and today's guest kernel build from.

    storm kernel source [--series 6.1|6.12|7.2|7.3] [DIR]

Installs the package when its tarball is missing (linux-source-7.3 comes
from trixie-backports, which scripts/setup adds at apt priority 1),
unpacks it into DIR (default build/linux-source-<series>) and commits it
as one root commit, tagged storm-linux-source. Kept once made: a second
call only prints where it is. The tag, not a branch, is what builds use,
so commits made on top (the bisect demo's) change nothing for the seeds.
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

from .. import REPO
from .git import git

# 6.1: the seeds' kernel; 6.12: Debian 12's newer one, built with the
# guest configuration as 7.3 is; 7.3: today's (trixie-backports); 7.2:
# the one before it (trixie-backports too), tests/e2e/bisect-range's
# good end
SERIES = ("6.1", "6.12", "7.2", "7.3")
DEFAULT_SERIES = "6.1"
TAG = "storm-linux-source"


def package(series: str = DEFAULT_SERIES) -> str:
    return f"linux-source-{series}"


def tree_of(series: str = DEFAULT_SERIES) -> pathlib.Path:
    return REPO / "build" / package(series)


TREE = tree_of()
PACKAGE = package()
IDENTITY = ["-c", "user.name=storm", "-c", "user.email=storm@localhost"]


class SourceTreeError(Exception):
    pass


def tarball(series: str = DEFAULT_SERIES) -> pathlib.Path | None:
    found = sorted(glob.glob(f"/usr/src/{package(series)}.tar.*"))
    return pathlib.Path(found[-1]) if found else None


def install(say, series: str = DEFAULT_SERIES) -> pathlib.Path:
    """The package's tarball, installed with apt-get if it is missing."""
    found = tarball(series)
    if found:
        return found
    pkg = package(series)
    say(f"installing {pkg}")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    res = subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends",
         pkg], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        stdin=subprocess.DEVNULL, capture_output=True, text=True)
    found = tarball(series)
    if res.returncode != 0 or not found:
        hint = " (scripts/setup adds trixie-backports, where it is)" \
            if series != DEFAULT_SERIES else ""
        raise SourceTreeError(f"apt-get install {pkg} failed{hint}: "
                              f"{res.stderr.strip()[-500:]}")
    return found


def ensure(tree: pathlib.Path | None = None, say=None,
           series: str = DEFAULT_SERIES) -> str:
    """TREE (default: the series' own) as a git tree with the tag; the
    tagged commit."""
    tree = tree or tree_of(series)
    pkg = package(series)
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
    tar = install(say, series)
    say(f"unpacking {tar} into {tree}")
    tree.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tree.parent) as scratch:
        subprocess.run(["tar", "-xf", str(tar), "-C", scratch], check=True)
        unpacked = pathlib.Path(scratch) / pkg
        if not (unpacked / "Makefile").is_file():
            raise SourceTreeError(f"{tar}: no {pkg}/Makefile in it")
        version = subprocess.run(
            ["make", "-s", "-C", str(unpacked), "kernelversion"],
            capture_output=True, text=True).stdout.strip()
        git(unpacked, "init", "-q", "-b", "main")
        # Debian's .gitignore ignores the whole top level: add with -f
        git(unpacked, "add", "-A", "-f", ".")
        git(unpacked, *IDENTITY, "commit", "-q", "-m",
            f"Linux {version} (Debian {pkg})")
        git(unpacked, "tag", TAG)
        if tree.is_dir():
            # an empty DIR given: the tree goes in its place, not into it
            tree.rmdir()
        shutil.move(str(unpacked), str(tree))
    return git(tree, "rev-parse", f"{TAG}^{{commit}}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm kernel source",
        description="Unpack Debian's linux-source-SERIES (installed with "
        "apt-get if missing) into DIR as a git tree whose one commit is "
        f"tagged {TAG}: the tree the seeds (6.1), the e2e bisects and "
        "today's guest kernel (7.3) build from.")
    p.add_argument("dir", nargs="?", type=pathlib.Path,
                   help="where (default build/linux-source-SERIES)")
    p.add_argument("--series", choices=SERIES, default=DEFAULT_SERIES,
                   help=f"which Debian source package (default "
                   f"{DEFAULT_SERIES})")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        tree = (args.dir or tree_of(args.series)).resolve()
        rev = ensure(tree, series=args.series)
    except (SourceTreeError, RuntimeError, subprocess.CalledProcessError) \
            as e:
        print(f"storm kernel source: {e}", file=sys.stderr)
        return 1
    print(f"{tree} {TAG} {rev[:12]}")
    return 0
