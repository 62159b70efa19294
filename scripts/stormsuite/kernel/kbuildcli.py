"""storm kernel build: a guest kernel from a source tree, or today's
kernel from Debian's source, then the storms (kbuild.py builds; this is
the command).

A tree given by path is built where it is (the compiler's messages point
into it). `--series 7.3` builds Debian's linux-source-7.3 as ab and bisect
build their revisions, through the one source directory (source.py), so
that the compiler cache it fills serves the ab and bisect builds of a 7.3
tree that follow.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

from . import kbuild, kernels, linux_source, source
from .kbuild import BuildError, build, prepare


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm kernel build",
        description="Build a guest kernel from a source tree into a separate "
        "directory (the tree stays clean), with allnoconfig + "
        "configs/guest.config + your fragments, then the storm modules "
        "against it. Boot it with: storm vm --kernel OUT.")
    p.add_argument("tree", type=pathlib.Path, nargs="?",
                   help="kernel source tree")
    p.add_argument("--series", choices=linux_source.SERIES,
                   help="instead of a tree: Debian's linux-source-SERIES "
                   "(unpacked by storm kernel source), built into "
                   "build/kernel/debian-SERIES, where storm vm --kernel "
                   "SERIES finds it")
    p.add_argument("--config", action="append", default=[],
                   type=pathlib.Path, metavar="FRAGMENT",
                   help="a config fragment merged on top (repeatable)"
                   "; a whole .config (a bot's, as 0-day attaches) is the base instead, under configs/guest.config")
    p.add_argument("--prepare-only", action="store_true",
                   help="configure and make modules_prepare only, into "
                   "OUT (default with --series: build/kernel/"
                   "debian-SERIES-prepared): enough to build the storms "
                   "against (make check KDIR=OUT), not to boot")
    p.add_argument("--out", type=pathlib.Path,
                   help="build directory (default build/kernel/<tree name>-<hash of "
                   "its path>)")
    p.add_argument("--localversion", default="-storm",
                   help="appended to the release, as make LOCALVERSION= "
                   "does (default -storm)")
    p.add_argument("-j", "--jobs", type=int,
                   help="parallel jobs (default: CPU count)")
    p.add_argument("--arch", choices=("x86_64", "arm64"), default="x86_64",
                   help="the guest's architecture (default x86_64); arm64 "
                   "is cross-compiled (aarch64-linux-gnu-) with "
                   "configs/guest-arm64.config on top, into build/kernel/"
                   "debian-SERIES-arm64 with --series, where storm vm "
                   "--arch arm64 --kernel SERIES finds it")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    for frag in args.config:
        if not frag.is_file():
            p.error(f"{frag}: no such config fragment")
    if not re.fullmatch(r"[A-Za-z0-9._+-]*", args.localversion):
        p.error("--localversion: letters, digits and . _ + - only")
    if (args.tree is None) == (args.series is None):
        p.error("give a TREE or --series, one of them")
    try:
        if args.series and not args.prepare_only and not args.out:
            return build_series(args.series, tuple(args.config),
                                args.localversion, args.arch)
        if args.series:
            args.tree = linux_source.tree_of(args.series)
            linux_source.ensure(args.tree, series=args.series)
            out = kernels.series_build(args.series, arch=args.arch)
            if args.prepare_only:
                out = out.with_name(out.name + "-prepared")
            args.out = args.out or out
        if args.prepare_only:
            if not args.out:
                p.error("--prepare-only: give --out (or --series)")
            release = prepare(args.tree, args.out, jobs=args.jobs,
                              arch=args.arch)
            print(f"storm kernel build: {release} prepared in {args.out}; "
                  f"build the storms against it with: make check "
                  f"KDIR={args.out}")
            return 0
        built = build(args.tree, args.out, fragments=tuple(args.config),
                      localversion=args.localversion, jobs=args.jobs,
                      arch=args.arch)
    except (BuildError, linux_source.SourceTreeError,
            source.SourceError) as e:
        print(f"storm kernel build: {e}", file=sys.stderr)
        return 1
    print(f"storm kernel build: {built.release} in {built.out} "
          f"({built.seconds:.0f} s); boot it with: "
          f"scripts/storm vm --kernel {built.out} -- ...")
    return 0


def build_series(series: str, fragments: tuple[pathlib.Path, ...],
                 localversion: str, arch: str = "x86_64") -> int:
    """Debian's linux-source-SERIES, its tagged commit, built through the
    one source directory into build/kernel/debian-SERIES (kept: a second
    call finds it built)."""
    out = kernels.series_build(series, arch=arch)
    if (out / kbuild.STAMP).is_file() and not fragments:
        print(f"storm kernel build: {out} holds {series} already "
              f"({kernels.resolve(str(out)).release}); remove it to build "
              "it again")
        return 0
    tree = linux_source.tree_of(series)
    rev = linux_source.ensure(tree, series=series)
    with source.lock("storm kernel build"):
        source.build_revision(tree, rev, out.name, "storm kernel build",
                              fragments=fragments, localversion=localversion,
                              arch=arch)
    release = kernels.resolve(str(out)).release
    print(f"storm kernel build: {release} in {out}; boot it with: "
          f"scripts/storm vm "
          + ("" if arch == "x86_64" else f"--arch {arch} ")
          + f"--kernel {series} -- ...")
    return 0
