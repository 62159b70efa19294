"""storm seed NNN: one seed's measurement, reproduced in one command.

The seeds (docs/seeds.md) are the patches whose authors hand-built what
this suite measures. A seed is a job file, seeds/NNN-<what it
reproduces>.toml (job.py): the kernels it builds from Debian's
linux-source-6.1 (patches/seed-NNN-*), the storm, the variants, the
comparisons and the answer's format (answers.py); or, where its design
is not a matrix of kernels and variants, a program (s001.py). Each boots,
runs the seed's storm, compares and prints the answer in the seed's
format, keeping run files and answers under seeds/NNN/ in the results
directory ($STORM_RESULTS or results/).
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import types

from . import job

# The seed whose design is a program of its own: every NUMA node pair in
# one boot (001). The others are job files (seeds/*.toml), run by job.py.
PROGRAMS = {"001": "s001"}


class Program:
    """A seed program (sNNN.py) with the interface of a job."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.title = module.TITLE
        self.about = module.__doc__
        self.add_arguments = module.add_arguments
        self.check = module.check
        self.plan = module.plan
        self.work = module.work
        self.run = module.run


def seeds() -> dict[str, pathlib.Path | str]:
    """NNN -> its job file, or its program's module name."""
    return dict(sorted({**job.jobs(), **PROGRAMS}.items()))


SEEDS = seeds()


def load(nnn: str) -> job.Job | Program:
    """Seed NNN, or the job file at path NNN."""
    where = SEEDS.get(nnn)
    if where is None and nnn.endswith(".toml"):
        where = pathlib.Path(nnn)
    if isinstance(where, pathlib.Path):
        return job.load(where)
    return Program(importlib.import_module(f".{where}", __name__))


def listing() -> str:
    lines = ["seeds:"]
    for nnn, where in SEEDS.items():
        what = where.name if isinstance(where, pathlib.Path) \
            else f"{where}.py"
        lines.append(f"  {nnn}  {load(nnn).title} ({what})")
    return "\n".join(lines)


def parser(nnn: str, seed: job.Job | Program | None = None
           ) -> argparse.ArgumentParser:
    seed = seed or load(nnn)
    p = argparse.ArgumentParser(prog=f"storm seed {nnn}",
                                description=seed.about,
                                formatter_class=argparse.
                                RawDescriptionHelpFormatter)
    seed.add_arguments(p)
    return p


# --dry-run's estimate, per step: a guest's boot and a storm run as
# matrix.BOOT_SECONDS and RUN_SECONDS (measured: a 4-vCPU guest under
# single-threaded TCG, two at a time, about 70 s to boot and run its
# command; a default-sized storm run about 2 s), a kernel build as
# BUILD_SECONDS from a warm ccache (ab's 2 min; about 15 min cold).
BUILD_SECONDS = 120


def estimate(seed, args: argparse.Namespace) -> str:
    """The time a seed's command will take, from the per-step figures
    above and what seed.work(args) says it will do."""
    from ..designs import matrix
    steps, builds = seed.work(args)
    per_run = matrix.RUN_SECONDS * (args.warmup + args.runs)
    boots = sum(matrix.BOOT_SECONDS + per_run * n for n in steps)
    secs = boots / args.jobs + BUILD_SECONDS * builds
    return (f"estimated time about {secs / 60:.0f} min: {len(steps)} boots "
            f"{args.jobs} at a time, {matrix.BOOT_SECONDS:.0f} s a boot "
            f"and {matrix.RUN_SECONDS:.0f} s a run ({sum(steps)} storms x "
            f"{args.warmup + args.runs} runs)"
            + (f", {builds} kernel builds at {BUILD_SECONDS // 60} min each "
               "from a warm ccache (about 15 min each from a cold one; a "
               "kernel already built is not built again)" if builds else
               ", nothing to build")
            + "; larger guests and longer storms take longer")


def main(argv: list[str]) -> int:
    usage = ("usage: storm seed NNN|JOB.toml [--help] [options]\n\n"
             "Reproduce a seed's measurement: build its kernels from "
             "linux-source-6.1, boot, run, compare, and print the answer in "
             "the seed's terms (docs/seeds.md). A seed is a job file, "
             "seeds/NNN-*.toml, or a program where its design needs one; "
             "any job file of that form runs the same way.\n\n")
    if not argv or argv[0] in ("-h", "--help"):
        print(usage + listing())
        return 0
    nnn = argv[0]
    if nnn not in SEEDS and not nnn.endswith(".toml"):
        print(f"storm seed: no seed {nnn!r}\n\n{listing()}", file=sys.stderr)
        return 2
    try:
        seed = load(nnn)
    except job.JobError as e:
        print(f"storm seed: {e}", file=sys.stderr)
        return 2
    if isinstance(seed, job.Job):
        nnn = seed.seed
    who = f"storm seed {nnn}"
    p = parser(nnn, seed)
    args = p.parse_args(argv[1:])
    from ..designs import options
    options.check_guest_options(p, args)
    seed.check(p, args)
    if args.dry_run:
        print(f"{who}: {seed.plan(args)}")
        print(f"{who}: {estimate(seed, args)}")
        return 0
    from .. import machines
    from ..analysis import verdict
    from ..kernel import kbuild, linux_source, source
    from ..machines import guest
    try:
        return seed.run(args, who)
    except (guest.GuestError, machines.MachineError, kbuild.BuildError,
            source.SourceError,
            linux_source.SourceTreeError, verdict.CompareError) as e:
        # the run files written so far stay under results/seeds/
        print(f"{who}: {e}", file=sys.stderr)
        return 1
