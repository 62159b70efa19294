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
    compare = "first-against-rest"  # or "rest-against-last", "none"
    [options.numipi]             # the command's own options, --numipi
    default = 100000
    least = 1
    help = "..."
    [options.sizes]              # makes the variants, one per vCPU count
    default = "4,16,64"
    variants = "cpus"
    least = 2
    most = 255
    [options.kernel]             # repeatable: stock kernels replacing the
    default = ["6.1", "6.12"]    # job's
    kernels = true
    [least.cpus]                 # a guest option's least value, and why
    value = 17
    why = "..."
    [[kernels]]                  # linux-source-6.1 + patch + fragments
    name = "004-revert"
    patch = "seed-004-....patch" # under patches/
    config = ["slab.config"]     # under configs/
    says = "how the answer names it"
    [[kernels]]                  # or a kernel storm vm knows, not built
    name = "6.12"
    stock = "6.12"
    [[variants]]                 # each a comparison of every kernel
    says = "idle=poll"
    append = "idle=poll"         # boot arguments
    params = "wait=0"            # the storm's, after the job's
    cpus = 16                    # the guests' vCPUs (else --cpus)
    [answer]                     # answers.FORMATS, with its settings
    format = "mmtests"
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import pathlib
import tomllib
from typing import Any

from .. import REPO
from ..designs import matrix
from ..runfiles import runs
from . import answers, common

JOBS = REPO / "seeds"
COMPARES = ("first-against-rest", "rest-against-last", "none")


class JobError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Variant:
    says: str
    append: str = ""
    params: tuple[str, ...] = ()
    cpus: int = 0               # 0: --cpus


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
    kernels: list[common.Kernel]
    sets: list[runs.Series]     # one per kernel
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
        common.add_guest_options(p, cpus=self.guest.get("cpus"),
                                 boots=self.guest["boots"],
                                 runs_=self.guest["runs"],
                                 timeout=self.guest.get("timeout", 1800))
        if "cpus" not in self.guest:
            # refused, not ignored (check): the variants size the guests
            p.add_argument("--cpus", help=argparse.SUPPRESS)
        for name, o in self.options.items():
            if o.get("kernels"):
                p.add_argument(f"--{name}", action="append", default=[],
                               help=o["help"])
            else:
                p.add_argument(f"--{name}", type=type(o["default"]),
                               default=o["default"], help=o["help"])

    def option(self, role: str) -> str | None:
        """The option that makes the variants ("variants") or names the
        kernels ("kernels"), if the job has one."""
        return next((n for n, o in self.options.items() if o.get(role)),
                    None)

    def check(self, p: argparse.ArgumentParser,
              args: argparse.Namespace) -> None:
        sizing = self.option("variants")
        if "cpus" not in self.guest and args.cpus is not None:
            by = f"--{sizing}" if sizing else "its variants"
            p.error(f"--cpus {args.cpus}: seed {self.seed}'s guests are "
                    f"sized by {by} ({by} {args.cpus}: guests of "
                    f"{args.cpus} vCPUs only)")
        for name, rule in self.least.items():
            common.at_least(p, args, rule.get("why", ""),
                            **{name: rule["value"]})
        if sizing:
            o = self.options[sizing]
            try:
                sizes = [v.cpus for v in self.variants_for(args)]
            except ValueError:
                p.error(f"--{sizing} {getattr(args, sizing)}: vCPU counts, "
                        f"e.g. {o['default']}")
            if not sizes or min(sizes) < o["least"] or \
                    max(sizes) > o["most"]:
                p.error(f"--{sizing}: every size between {o['least']} and "
                        f"{o['most']} vCPUs")
        if self.option("kernels"):
            from ..kernel import kernels
            for spec in getattr(args, self.option("kernels")):
                try:
                    kernels.resolve(spec)
                except kernels.KernelNotFound as e:
                    p.error(str(e))
        for name, o in self.options.items():
            if "least" in o and name != sizing:
                common.at_least(p, args, **{name: o["least"]})

    def variants_for(self, args: argparse.Namespace) -> list[Variant]:
        """The job's variants, or one per vCPU count of the option that
        makes them (ValueError: not numbers)."""
        sizing = self.option("variants")
        if not sizing:
            return self.variants
        return [Variant(f"{n} vCPUs", cpus=n) for n in
                (int(x) for x in str(getattr(args, sizing)).split(",")
                 if x.strip())]

    def kernels_for(self, args: argparse.Namespace) -> list[common.Kernel]:
        """The job's kernels, or the stock ones an option names."""
        named = self.option("kernels")
        if named and getattr(args, named):
            return [common.Kernel(spec, stock=spec)
                    for spec in getattr(args, named)]
        return self.kernels

    def storm_params(self, args: argparse.Namespace,
                     variant: Variant | None = None) -> list[str]:
        """The job's parameters with the options' values put in, and the
        variant's own after them."""
        values = {**vars(args), "last_cpu": (getattr(args, "cpus", None)
                                             or 1) - 1}
        own = [w.format(**values) for w in self.params.split()]
        return own + list(variant.params if variant else ())

    def plan(self, args: argparse.Namespace) -> str:
        variants = self.variants_for(args)
        kernels = self.kernels_for(args)
        sizes = [v.cpus for v in variants if v.cpus]
        described = "; ".join(
            v.says + (f" (boot with {v.append})" if v.append else "")
            + (f" ({' '.join(v.params)})" if v.params
               and v.says != " ".join(v.params) else "")
            for v in variants if not v.cpus) if len(variants) > 1 else ""
        guests = (f"guests of {', '.join(map(str, sizes))} vCPUs" if sizes
                  else f"{args.cpus} vCPUs")
        return (f"kernels: {', '.join(k.name for k in kernels)}"
                + (f"; variants: {described}" if described else "")
                + f"; {args.boots} boots each, {args.warmup} warm-up + "
                f"{args.runs} runs of {self.storm} "
                f"{' '.join(self.storm_params(args))} on {guests}"
                + ("" if any(not k.stock for k in kernels) else
                   "; nothing to build"))

    def work(self, args: argparse.Namespace) -> tuple[list[int], int]:
        """For --dry-run's estimate: one storm a boot, every kernel booted
        args.boots times in every variant; the kernels to build."""
        kernels = self.kernels_for(args)
        return [1] * (len(kernels) * len(self.variants_for(args))
                      * args.boots), sum(not k.stock for k in kernels)

    def run(self, args: argparse.Namespace, who: str) -> int:
        results = common.results_dir(args, self.seed)
        clock = common.Clock()
        kernels, variants = self.kernels_for(args), self.variants_for(args)
        built = [k for k in kernels if not k.stock]
        with (common.built(built, who, clock) if built
              else contextlib.nullcontext({})) as outs:
            where = {k.name: k.stock or str(outs[k.name]) for k in kernels}
            sides = [matrix.Side(where[k.name], v.append,
                                 self.label(release(k, outs), v), v.cpus,
                                 v.params)
                     for v in variants for k in kernels]
            sets = common.measure(sides, args, self.storm,
                                  self.storm_params(args), results)
        if not built:
            clock.lap("boots and runs")
        n = len(kernels)
        measured = [Measured(v, kernels, sets[i * n:(i + 1) * n],
                             self.comparisons(kernels,
                                              sets[i * n:(i + 1) * n]))
                    for i, v in enumerate(variants)]
        clock.lap("compare")
        answer = answers.FORMATS[self.answer["format"]](
            self, args, measured, common.accel(sets))
        path = common.finish(
            who, self.seed, results, answer.text, clock,
            {"job": str(self.path.relative_to(REPO))
             if self.path.is_relative_to(REPO) else str(self.path),
             "params": self.storm_params(args),
             "comparisons": [[c.doc for c in m.comparisons]
                             for m in measured], **answer.data})
        if answer.plot:
            print(f"{who}: wrote {answer.plot(path.with_suffix('.png'))}")
        return 0

    # the rest

    def label(self, release: str, v: Variant) -> str:
        label = matrix.label_for(release, v.append, ",".join(v.params))
        return f"{label}_{v.cpus}vcpu" if v.cpus else label

    def pairs(self, n: int | None = None) -> list[tuple[int, int]]:
        """(base, candidate) indices into N kernels (the job's), as
        compared."""
        n = len(self.kernels) if n is None else n
        if self.compare == "first-against-rest":
            return [(0, i) for i in range(1, n)]
        if self.compare == "rest-against-last":
            return [(i, n - 1) for i in range(n - 1)]
        return []

    def comparisons(self, kernels: list[common.Kernel],
                    sets: list[runs.Series]) -> list[Comparison]:
        return [Comparison(kernels[b], kernels[c],
                           common.compare_two(sets[b], sets[c]))
                for b, c in self.pairs(len(kernels))]


def release(k: common.Kernel, outs: dict[str, pathlib.Path]) -> str:
    if k.stock:
        from ..kernel import kernels
        return kernels.resolve(k.stock).release
    return common.release(outs[k.name])


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
        bad = set(k) - {"name", "patch", "config", "says", "stock"}
        if "name" not in k or bad or ("stock" in k and (
                "patch" in k or "config" in k)):
            raise JobError(f"{path}: a kernel is name, patch, config, "
                           f"says, or name, stock, says: {k}")
        kernel = common.Kernel(k["name"], k.get("patch"),
                               tuple(k.get("config", ())), k.get("stock"))
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
        cpus = int(v.get("cpus", 0))
        variants.append(Variant(v.get("says") or " ".join(params)
                                or append or (f"{cpus} vCPUs" if cpus
                                              else ""),
                                append, params, cpus))
    for name, o in (doc.get("options") or {}).items():
        if "default" not in o or "help" not in o:
            raise JobError(f"{path}: option {name}: default and help")
        if o.get("variants") not in (None, "cpus") or (
                o.get("variants") and not {"least", "most"} <= set(o)):
            raise JobError(f"{path}: option {name}: variants = \"cpus\", "
                           "with least and most")
    return Job(path, str(doc["seed"]), doc["title"], doc["about"],
               doc["storm"], doc["params"], doc.get("options") or {},
               doc["guest"], doc.get("least") or {}, kernels, says,
               variants, doc["compare"], answer)


def jobs() -> dict[str, pathlib.Path]:
    """NNN -> its job file under seeds/."""
    return {p.name.split("-", 1)[0]: p for p in sorted(JOBS.glob("*.toml"))}
