"""storm ab: a patched kernel against its baseline, in one command.

    storm ab --tree TREE --base REV (--patched REV | --patch FILE)
             [--runs N] STORM [PARAM=VALUE ...]

Both kernels are built from a scratch git worktree of TREE (the user's
checkout is never touched), each into its own build directory, sharing
ccache, so the second build compiles little. Each is named by its
revision through make LOCALVERSION= (6.1.192-storm-1a2b3c4 and
6.1.192-storm-1a2b3c4-fix-smp), which is also the label of its results.
Then `storm matrix` boots each, runs the storm N times and prints the
compare table.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

from . import compare, kbuild, matrix
from .kbuild import git


def worktree(tree: pathlib.Path) -> pathlib.Path:
    """A scratch worktree of TREE under build/kernel, made once."""
    wt = kbuild.default_out(tree, "ab-src")
    if not (wt / ".git").exists():
        wt.parent.mkdir(parents=True, exist_ok=True)
        git(tree, "worktree", "prune")
        git(tree, "worktree", "add", "--detach", "--force", str(wt), "HEAD")
    return wt


def checkout(wt: pathlib.Path, rev: str) -> None:
    git(wt, "checkout", "--quiet", "--force", "--detach", rev)
    git(wt, "clean", "-fdqx")


def patch_name(patch: pathlib.Path) -> str:
    """fix-smp from 0001-fix-smp.patch: short, and legal in a release."""
    stem = re.sub(r"^\d{4}-", "", patch.stem)
    return re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-")[:20] or "patched"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="storm ab",
        description="Build a baseline and a patched kernel from one git "
        "tree (in a scratch worktree; your checkout is left alone), run "
        "STORM N times on each in its own guest, and print the comparison "
        "(storm compare's table, JSON and plot).",
        epilog="examples: storm ab --tree ~/linux --base v6.1 --patch "
        "fix.patch --runs 5 ipistorm single=1 wait=1 numipi=2000;  storm ab "
        "--tree ~/linux --base HEAD~1 --patched HEAD ipistorm ...")
    p.add_argument("--tree", type=pathlib.Path, required=True,
                   help="a kernel git tree")
    p.add_argument("--base", required=True, help="the baseline revision")
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--patched", help="the patched revision")
    side.add_argument("--patch", type=pathlib.Path,
                      help="a patch file applied on top of --base")
    p.add_argument("--config", action="append", default=[],
                   type=pathlib.Path, metavar="FRAGMENT",
                   help="config fragment for both builds (repeatable)")
    matrix.add_guest_options(p, "kernel")
    compare.add_stat_options(p)
    p.add_argument("storm", help="ipistorm, tlbstorm or slabstorm")
    p.add_argument("params", nargs="*", metavar="PARAM=VALUE")
    args = p.parse_args(argv)
    if args.patch and not args.patch.is_file():
        p.error(f"{args.patch}: no such patch file")
    tree = args.tree.resolve()
    try:
        base = git(tree, "rev-parse", "--verify", f"{args.base}^{{commit}}")
        patched = git(tree, "rev-parse", "--verify",
                      f"{args.patched}^{{commit}}") if args.patched else ""
        wt = worktree(tree)
    except RuntimeError as e:
        print(f"storm ab: {tree}: {e}", file=sys.stderr)
        return 2
    if args.patch:
        # before the baseline build, not after its quarter of an hour
        checkout(wt, base)
        try:
            git(wt, "apply", "--check", str(args.patch.resolve()))
        except RuntimeError as e:
            print(f"storm ab: {args.patch} does not apply to "
                  f"{base[:12]}: {e}", file=sys.stderr)
            return 2

    outs = []
    sides = [("base", base, None, f"-storm-{base[:7]}")]
    if args.patch:
        sides.append(("patched", base, args.patch.resolve(),
                      f"-storm-{base[:7]}-{patch_name(args.patch)}"))
    else:
        sides.append(("patched", patched, None, f"-storm-{patched[:7]}"))
    try:
        for name, rev, patch, localversion in sides:
            checkout(wt, rev)
            if patch is not None:
                try:
                    git(wt, "apply", "--index", str(patch))
                except RuntimeError as e:
                    print(f"storm ab: {patch} does not apply to "
                          f"{rev[:12]}: {e}", file=sys.stderr)
                    return 2
            print(f"storm ab: building {name} ({rev[:12]}"
                  + (f" + {patch.name}" if patch else "") + ")",
                  file=sys.stderr, flush=True)
            built = kbuild.build(wt, kbuild.default_out(tree, f"ab-{name}"),
                                 fragments=tuple(args.config),
                                 localversion=localversion)
            print(f"storm ab: {name}: {built.release} built in "
                  f"{built.seconds:.0f} s", file=sys.stderr, flush=True)
            outs.append(built.out)
    except kbuild.BuildError as e:
        print(f"storm ab: {e}", file=sys.stderr)
        return 1
    finally:
        checkout(wt, base)

    margs = []
    for out in outs:
        margs += ["--kernel", str(out)]
    margs += ["--runs", str(args.runs), "--warmup", str(args.warmup),
              "--cpus", str(args.cpus), "--memory", args.memory,
              "--timeout", str(args.timeout), "--test", args.test,
              "--confidence", str(args.confidence), "--floor",
              str(args.floor)]
    margs += [flag for flag, on in (("--all", args.all),
                                    ("--no-plot", args.no_plot),
                                    ("--no-write", args.no_write)) if on]
    return matrix.main(margs + [args.storm] + args.params)
