"""storm ab: a patched kernel against its baseline, in one command.

    storm ab --tree TREE --base REV (--patched REV | --patch FILE)
             [--runs N] STORM [PARAM=VALUE ...]

Both kernels are built from build/kernel/src (source.py: the revision
written out of TREE, the user's checkout never touched), each into its
own build directory next to it, so that every build of a revision, from
any tree, hits the same ccache entries and an unchanged base is not
rebuilt at all. Each is named by its
revision through make LOCALVERSION= (6.1.192-storm-1a2b3c4 and
6.1.192-storm-1a2b3c4-fix-smp), which is also the label of its results.
Then the two kernels are measured as a matrix does (matrix.py:
--boots guests each, interleaved base/patched, two at a time) and
compared, boots as the unit. With --box CONFIG both are worktrees of the
tree built and installed on a test box by ktest.pl (box.py) and booted
there, one boot at a time (machines.py).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
import time

from .. import machines
from ..kernel import kbuild, source
from ..machines import box
from ..report import compare
from . import matrix, options
from ..kernel.git import git


def patch_name(patch: pathlib.Path) -> str:
    """fix-smp from 0001-fix-smp.patch: short, and legal in a release."""
    stem = re.sub(r"^\d{4}-", "", patch.stem)
    return re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-")[:20] or "patched"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm ab",
        description="Build a baseline and a patched kernel from one git "
        "tree (through build/kernel/src, the one source directory ab and "
        "bisect build from, so every tree shares one compiler cache; your "
        "checkout is left alone), boot each --boots times, two guests at "
        "a time, run STORM in each, and print the comparison (storm "
        "compare's verdict lines, table, JSON and plot).",
        epilog="examples: storm ab --tree ~/linux --base v6.1 --patch "
        "fix.patch --runs 5 ipistorm single=1 wait=1 numipi=2000;  storm ab "
        "--tree ~/linux --base HEAD~1 --patched HEAD ipistorm ...")
    options.add_revision_options(p)
    p.add_argument("--config", action="append", default=[],
                   type=pathlib.Path, metavar="FRAGMENT",
                   help="config fragment for both builds (repeatable)"
                   "; a whole .config (a bot's, as 0-day attaches) is the base instead, under configs/guest.config")
    p.add_argument("--append", default="",
                   help="boot arguments for both kernels, e.g. idle=poll")
    p.add_argument("--out", type=pathlib.Path,
                   help="write the comparison here (default: the patched "
                   "kernel's series directory)")
    options.add_guest_options(p, "kernel")
    options.add_box_options(p)
    options.add_arch_option(p)
    p.add_argument("--kconfig", type=pathlib.Path,
                   help="with --box: the configuration both builds start "
                   "from (default: the box's running kernel's); "
                   "configs/box.config is forced on top")
    compare.add_stat_options(p)
    compare.add_view_options(p)
    options.add_storm_arguments(p)
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    options.check_guest_options(p, args, one_boot=True)
    compare.check_stat_options(p, args)
    options.check_revision_options(p, args)
    tree = args.tree.resolve()
    try:
        base = git(tree, "rev-parse", "--verify", f"{args.base}^{{commit}}")
        patched = git(tree, "rev-parse", "--verify",
                      f"{args.patched}^{{commit}}") if args.patched else ""
    except RuntimeError as e:
        print(f"storm ab: {tree}: {e}", file=sys.stderr)
        return 2
    if args.patch:
        # before the baseline build, not after its quarter of an hour
        try:
            source.check_patch(tree, base, args.patch)
        except source.SourceError as e:
            print(f"storm ab: {args.patch} does not apply to {base[:12]}: "
                  f"{e}", file=sys.stderr)
            return 2
    if args.box and args.arch != "x86_64":
        p.error("--arch: a box is the architecture it is (--box)")
    if args.box:
        return box_main(p, args, tree, base, patched)
    if args.kconfig:
        p.error("--kconfig: the start of a box's builds (--box); a guest "
                "kernel's is configs/guest.config (--config)")
    if args.dry_run:
        todo = [name for name, out, rev, patch, localversion
                in plan_builds(base, patched, args)
                if not kbuild.built_as(out, source.revision_id(rev, patch),
                                       fragments_of(args), localversion,
                                       args.arch)]
        # a build whose objects are all in ccache: 2 min here; from a
        # cold cache, a quarter of an hour
        matrix.print_plan("storm ab", 2, args,
                          build_seconds=BUILD_SECONDS * len(todo))
        print("storm ab: to build: " + (", ".join(todo) or "nothing")
              + " (count 15 min a build if ccache has never seen this source)")
        return 0
    # the build directories are in use until the last boot is done
    with source.lock("storm ab"):
        started = time.monotonic()
        try:
            outs, took = build_both(tree, base, patched, args)
        except (kbuild.BuildError, source.SourceError) as e:
            print(f"storm ab: {e}", file=sys.stderr)
            return 1
        build_seconds = time.monotonic() - started
        releases = [kbuild.release_of(out) for out in outs]
        sides = [matrix.Side(str(out), args.append, label) for out, label in
                 zip(outs, matrix.unique_labels(
                     [matrix.label_for(r, args.append) for r in releases]))]
        return matrix.measure_and_compare(sides, args, "storm ab", took,
                                          build_seconds,
                                          machines.Guests(args.arch))


BUILD_SECONDS = 120


def box_main(p: argparse.ArgumentParser, args: argparse.Namespace,
             tree: pathlib.Path, base: str, patched: str) -> int:
    """--box: both kernels built from worktrees of the tree under
    build/box/src/ and installed on the box by ktest.pl (box.py's
    build), then measured there as on guests."""
    if args.config:
        p.error("--config: fragments of a guest kernel; a box's builds "
                "start from --kconfig, with configs/box.config on top")
    if args.append:
        p.error("--append: a box boots with its ktest.pl config's command "
                "line")
    if args.dry_run:
        matrix.print_plan("storm ab", 2, args)
        print("storm ab: to build on the box: base, patched (ktest.pl)")
        return 0
    try:
        machine = machines.Box(args.box, args.ktest)
        started = time.monotonic()
        kernels_ = [box.build_worktree(machine.box, tree, name, rev, patch,
                                       args.kconfig)
                    for name, rev, patch in (
                        ("base", base, None),
                        ("patched", patched or base, args.patch))]
    except (machines.MachineError, box.BoxError) as e:
        print(f"storm ab: {e}", file=sys.stderr)
        return 1
    build_seconds = time.monotonic() - started
    sides = [matrix.Side(k.spec, "", label) for k, label in
             zip(kernels_, matrix.unique_labels([k.release
                                                 for k in kernels_]))]
    return matrix.measure_and_compare(sides, args, "storm ab",
                                      "base and patched", build_seconds,
                                      machine=machine)


def fragments_of(args: argparse.Namespace) -> tuple[pathlib.Path, ...]:
    return tuple(f.resolve() for f in args.config)


def plan_builds(base: str, patched: str, args: argparse.Namespace
                ) -> list[tuple[str, pathlib.Path, str, pathlib.Path | None,
                                str]]:
    """(side, build directory, commit, patch, localversion) of the two
    builds."""
    patch = args.patch.resolve() if args.patch else None
    if patch is not None:
        sides = [("base", base, None, f"-storm-{base[:7]}"),
                 ("patched", base, patch,
                  f"-storm-{base[:7]}-{patch_name(patch)}")]
    else:
        sides = [("base", base, None, f"-storm-{base[:7]}"),
                 ("patched", patched, None, f"-storm-{patched[:7]}")]
    return [(name, source.BUILD_ROOT / kbuild.arch_named(f"ab-{name}",
                                                         args.arch),
             rev, p, localversion) for name, rev, p, localversion in sides]


def build_both(tree: pathlib.Path, base: str, patched: str,
               args: argparse.Namespace) -> tuple[list[pathlib.Path], str]:
    """Build (or find already built) the base and the patched kernel;
    their directories, and what each took."""
    outs, took = [], []
    for name, out, rev, side_patch, localversion in \
            plan_builds(base, patched, args):
        t0 = time.monotonic()
        outs.append(source.build_revision(
            tree, rev, out.name, f"storm ab: {name}", patch=side_patch,
            fragments=fragments_of(args), localversion=localversion,
            arch=args.arch))
        took.append(f"{name} {time.monotonic() - t0:.0f} s")
    return outs, ", ".join(took)
