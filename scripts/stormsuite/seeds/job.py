"""A seed's job file (seeds/NNN-what-it-reproduces.toml): the kernels a
reproduction builds from linux-source-6.1, the storm and its parameters,
the boot variants, the design's defaults and the comparisons, as data;
run by matrix's measure and compare, answered in the seed's own format
(answers.py).

    seed = "004"                 # storm seed 004
    title = "one line, for the list"
    about = "--help's description"       # or a multi-line string
    storm = "ipistorm"
    params = "numipi={numipi} single=1 ..."   # {option}, {last_cpu}
    guest = { cpus = 17, boots = 4, runs = 8, timeout = 1800 }
    compare = "first-against-rest"           # or "rest-against-last"
    [options.numipi]             # the command's own options, --numipi
    default = 100000
    least = 1
    help = "..."
    [least.cpus]                 # a guest option's least value, and why
    value = 17
    why = "..."
    [[kernels]]                  # linux-source-6.1 + patch + fragments
    name = "004-revert"
    patch = "seed-004-....patch" # under patches/
    config = ["slab.config"]     # under configs/
    says = "how the answer names it"
    [[variants]]                 # each a comparison of every kernel
    says = "idle=poll"
    append = "idle=poll"         # boot arguments
    params = "wait=0"            # the storm's, after the job's
    [answer]                     # answers.FORMATS, with its settings
    format = "mmtests"
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import tomllib
from typing import Any

from .. import REPO
from ..designs import matrix
from ..runfiles import runs
from . import answers, common

JOBS = REPO / "seeds"
COMPARES = ("first-against-rest", "rest-against-last")


class JobError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Variant:
    says: str
    append: str = ""
    params: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Comparison:
    base: common.Kernel
    cand: common.Kernel
    doc: dict[str, Any]         # storm compare's JSON

    @property
    def labels(self) -> tuple[str, str]:
        return self.doc["baseline"], self.doc["candidates"][0]


@dataclasses.dataclass(frozen=True)
class Measured:
    """One variant's outcome: a series per kernel, and the comparisons
    the job asks for."""
    variant: Variant
    sets: list[runs.Series]
    comparisons: list[Comparison]


def _words(value: Any) -> tuple[str, ...]:
    return tuple(str(value).split()) if value else ()


@dataclasses.dataclass
class Job:
    path: pathlib.Path
    seed: str
    title: str
    about: str
    storm: str
    params: str
    options: dict[str, dict[str, Any]]
    guest: dict[str, Any]
    least: dict[str, dict[str, Any]]
    kernels: list[common.Kernel]
    says: dict[str, str]            # kernel name -> how the answer names it
    variants: list[Variant]
    compare: str
    answer: dict[str, Any]

    # what the seed command's driver (seeds/__init__.py) calls

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        common.add_guest_options(p, cpus=self.guest.get("cpus", 4),
                                 boots=self.guest["boots"],
                                 runs_=self.guest["runs"],
                                 timeout=self.guest.get("timeout", 1800))
        for name, o in self.options.items():
            p.add_argument(f"--{name}", type=type(o["default"]),
                           default=o["default"], help=o["help"])

    def check(self, p: argparse.ArgumentParser,
              args: argparse.Namespace) -> None:
        for name, rule in self.least.items():
            common.at_least(p, args, rule.get("why", ""),
                            **{name: rule["value"]})
        for name, o in self.options.items():
            if "least" in o:
                common.at_least(p, args, **{name: o["least"]})

    def storm_params(self, args: argparse.Namespace,
                     variant: Variant | None = None) -> list[str]:
        """The job's parameters with the options' values put in, and the
        variant's own after them."""
        values = {**vars(args), "last_cpu": getattr(args, "cpus", 1) - 1}
        own = [w.format(**values) for w in self.params.split()]
        return own + list(variant.params if variant else ())

    def plan(self, args: argparse.Namespace) -> str:
        variants = "; ".join(
            v.says + (f" (boot with {v.append})" if v.append else "")
            + (f" ({' '.join(v.params)})" if v.params
               and v.says != " ".join(v.params) else "")
            for v in self.variants) if len(self.variants) > 1 else ""
        return (f"kernels: {', '.join(k.name for k in self.kernels)}"
                + (f"; variants: {variants}" if variants else "")
                + f"; {args.boots} boots each, {args.warmup} warm-up + "
                f"{args.runs} runs of {self.storm} "
                f"{' '.join(self.storm_params(args))} on {args.cpus} vCPUs")

    def work(self, args: argparse.Namespace) -> tuple[list[int], int]:
        """For --dry-run's estimate: one storm a boot, every kernel booted
        args.boots times in every variant; the kernels to build."""
        return [1] * (len(self.kernels) * len(self.variants)
                      * args.boots), len(self.kernels)

    def run(self, args: argparse.Namespace, who: str) -> int:
        results = common.results_dir(args, self.seed)
        clock = common.Clock()
        with common.built(self.kernels, who, clock) as outs:
            sides = [matrix.Side(str(outs[k.name]), v.append,
                                 self.label(outs[k.name], v), 0, v.params)
                     for v in self.variants for k in self.kernels]
            sets = common.measure(sides, args, self.storm,
                                  self.storm_params(args), results)
        n = len(self.kernels)
        measured = [Measured(v, sets[i * n:(i + 1) * n],
                             self.comparisons(sets[i * n:(i + 1) * n]))
                    for i, v in enumerate(self.variants)]
        clock.lap("compare")
        text = answers.FORMATS[self.answer["format"]](
            self, args, measured, common.accel(sets))
        common.finish(who, self.seed, results, text, clock,
                      {"job": str(self.path.relative_to(REPO))
                       if self.path.is_relative_to(REPO) else str(self.path),
                       "comparisons": [[c.doc for c in m.comparisons]
                                       for m in measured]})
        return 0

    # the rest

    def label(self, out: pathlib.Path, v: Variant) -> str:
        return matrix.label_for(common.release(out), v.append,
                                ",".join(v.params))

    def pairs(self) -> list[tuple[int, int]]:
        """(base, candidate) indices into the kernels, as compared."""
        n = len(self.kernels)
        if self.compare == "first-against-rest":
            return [(0, i) for i in range(1, n)]
        return [(i, n - 1) for i in range(n - 1)]

    def comparisons(self, sets: list[runs.Series]) -> list[Comparison]:
        return [Comparison(self.kernels[b], self.kernels[c],
                           common.compare_two(sets[b], sets[c]))
                for b, c in self.pairs()]


def load(path: pathlib.Path) -> Job:
    """A job file, checked: JobError says what is wrong and where."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise JobError(f"{path}: {e}") from e
    if not isinstance(doc, dict):
        raise JobError(f"{path}: not a mapping of job keys")
    need = ("seed", "title", "about", "storm", "params", "guest", "kernels",
            "compare", "answer")
    missing = [k for k in need if k not in doc]
    if missing:
        raise JobError(f"{path}: no {', '.join(missing)}")
    unknown = set(doc) - set(need) - {"options", "least", "variants"}
    if unknown:
        raise JobError(f"{path}: unknown keys {', '.join(sorted(unknown))}")
    if doc["compare"] not in COMPARES:
        raise JobError(f"{path}: compare: one of {', '.join(COMPARES)}")
    answer = doc["answer"]
    if not isinstance(answer, dict) or \
            answer.get("format") not in answers.FORMATS:
        raise JobError(f"{path}: answer: format one of "
                       f"{', '.join(answers.FORMATS)}")
    kernels, says = [], {}
    for k in doc["kernels"]:
        bad = set(k) - {"name", "patch", "config", "says"}
        if "name" not in k or bad:
            raise JobError(f"{path}: a kernel is name, patch, config, "
                           f"says: {k}")
        kernel = common.Kernel(k["name"], k.get("patch"),
                               tuple(k.get("config", ())))
        for f in ((kernel.patch_path,) if kernel.patch else ()) \
                + kernel.fragments:
            if not f.is_file():
                raise JobError(f"{path}: kernel {kernel.name}: no {f}")
        kernels.append(kernel)
        says[kernel.name] = k.get("says", kernel.name)
    if len(kernels) < 2:
        raise JobError(f"{path}: two kernels at least, to compare")
    variants = []
    for v in doc.get("variants") or [{}]:
        params, append = _words(v.get("params")), v.get("append", "")
        variants.append(Variant(v.get("says") or " ".join(params)
                                or append, append, params))
    for name, o in (doc.get("options") or {}).items():
        if "default" not in o or "help" not in o:
            raise JobError(f"{path}: option {name}: default and help")
    return Job(path, str(doc["seed"]), doc["title"], doc["about"],
               doc["storm"], doc["params"], doc.get("options") or {},
               doc["guest"], doc.get("least") or {}, kernels, says,
               variants, doc["compare"], answer)


def jobs() -> dict[str, pathlib.Path]:
    """NNN -> its job file under seeds/."""
    return {p.name.split("-", 1)[0]: p for p in sorted(JOBS.glob("*.toml"))}
