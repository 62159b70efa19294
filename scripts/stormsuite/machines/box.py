"""storm box: the storms on a test box over ssh, ktest.pl driving the box.

    storm matrix --box BOX --kernel A --kernel B [--boots N] STORM [P=V...]
    storm ab     --box BOX --tree LINUX --base REV --patch FILE STORM ...
    storm bisect --box BOX --tree LINUX --good REV --bad REV STORM ...
    storm box build  --config BOX --tree LINUX [--kconfig FILE] --name NAME
    storm box bisect --config BOX ...     (storm bisect --box's other name)
    storm box bisect-test --config BOX --kernel TREE --good SET --bad SET STORM
    storm box image | vm start|reset|stop     the test box without hardware

A box is a machine of matrix and ab (machines.py), as guests are: each
boot is one ktest.pl run (ktest.py writes its config: the kernel, the
user's box config, one test): ktest.pl reboots the box into the kernel
(grub-reboot, kexec or a script: the box config says how), waits for its
login prompt on the console, then runs storm's step as its TEST while it
watches the console for oopses and panics. The step (`storm box-step
STATE`, run by ktest.pl on this host) checks the box booted that kernel,
copies storm run and the modules built here for it, runs the series
there (POSIX sh: the box needs no Python), fetches the captures into
results/<label>/ and makes their run files here, and fails on a splat in
the box's dmesg. `build` is ktest.pl's build and install (olddefconfig
on the box's own config plus configs/box.config, what the storms need)
of a kernel tree. `bisect` and `bisect-test` (boxbisect.py) are
ktest.pl's bisect with storm's verdict as its test.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import pathlib
import re
import shlex
import subprocess
import sys
import tarfile
import time
from typing import Any, Sequence

from .. import REPO, storms
from ..kernel import kernels
from ..runfiles import dmesg, runfile, runs
from . import guest, ktest

STORM = REPO / "scripts" / "storm"
LOGS = REPO / "build" / "box" / "log"
# what the box needs of the suite: storm run (POSIX sh) and the modules
BOX_SCRIPTS = ("scripts/storm-run", "scripts/storm-run-trace.sh",
               "scripts/storm-run-checks.sh", "scripts/storm-capture.sh")
STORMS = storms.NAMES
# the options a box kernel gets on top of the box's own config
FRAGMENT = REPO / "configs" / "box.config"


class BoxError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A kernel on the box: its release, and the tree or headers the
    modules are built against here (None: build/<release>/ as it is)."""
    spec: str
    release: str
    kdir: pathlib.Path | None


def resolve_kernel(spec: str) -> Kernel:
    """6.1 or 6.12 (this host's stock kernels, which the test VM has), a
    built tree (ktest's OUTPUT_DIR), or a release installed on the box
    with its headers at /lib/modules/<release>/build here."""
    if spec in ("6.1", "6.12") or pathlib.Path(spec).is_dir():
        try:
            k = kernels.resolve(spec)
        except kernels.KernelNotFound as e:
            raise BoxError(str(e)) from e
        return Kernel(spec, k.release, k.kdir)
    kdir = kernels.MODULES / spec / "build"
    if kdir.is_dir():
        return Kernel(spec, spec, kdir)
    if all((REPO / "build" / spec / f"{s}.ko").is_file() for s in STORMS):
        return Kernel(spec, spec, None)
    raise BoxError(f"{spec}: not 6.1/6.12, a built tree, or a release "
                   f"with headers at {kdir} or modules in build/{spec}/")


def build_modules(k: Kernel) -> None:
    if k.kdir is None:
        return
    from . import vm
    try:
        vm.build_modules(kernels.Kernel(image=pathlib.Path(),
                                        release=k.release, kdir=k.kdir),
                         quiet=True)
    except SystemExit as e:
        raise BoxError(f"{k.spec}: {e}") from e


@dataclasses.dataclass(frozen=True)
class Design:
    storm: str
    params: tuple[str, ...]
    runs: int = 5
    warmup: int = 1
    timeout: float = 1200


@dataclasses.dataclass
class Box:
    config: pathlib.Path        # the user's ktest config for the box
    ssh: list[str]
    dir: str                    # storm's directory on the box
    ktest: pathlib.Path

    @classmethod
    def open(cls, config: pathlib.Path, ktest_pl: str | None = None) -> Box:
        """The box of a box config, checked for what ktest.pl would
        otherwise ask on its terminal."""
        cfg = ktest.read_config(config)
        missing = ktest.missing_options(cfg)
        if missing:
            raise BoxError(
                f"{config}: set {', '.join(missing)} (ktest.pl asks for "
                "them; configs/box/box.conf shows each)")
        return cls(config.resolve(), cfg.ssh, cfg.box_dir,
                   ktest.find_ktest(ktest_pl))


@dataclasses.dataclass
class BootResult:
    name: str
    label: str
    files: list[pathlib.Path]
    seconds: float
    ktest_seconds: float


def suite_identity() -> dict[str, str]:
    def git(*a: str) -> str:
        res = subprocess.run(["git", "-C", str(REPO), *a], text=True,
                             capture_output=True)
        return res.stdout.strip() if res.returncode == 0 else "unknown"
    return {"STORM_SUITE_VERSION": git("describe", "--always", "--dirty"),
            "STORM_SUITE_COMMIT": git("rev-parse", "HEAD")}


def boot_and_run(box: Box, kernel: Kernel, design: Design, *, label: str,
                 series: str, name: str, results: pathlib.Path,
                 logdir: pathlib.Path) -> BootResult:
    """One boot: ktest.pl reboots the box into the kernel and runs the
    step as its TEST; the run files the step made."""
    logdir.mkdir(parents=True, exist_ok=True)
    state = logdir / "step.json"
    out = logdir / "step-result.json"
    out.unlink(missing_ok=True)
    state.write_text(json.dumps({
        "ssh": box.ssh, "box_dir": box.dir, "release": kernel.release,
        "storm": design.storm, "params": list(design.params),
        "runs": design.runs, "warmup": design.warmup, "label": label,
        "series": series, "name": name, "results": str(results),
        "out": str(out), "env": suite_identity()}, indent=1) + "\n")
    stub = ktest.nobuild_dir(kernel.release, LOGS)
    run = ktest.Run(kernel.release, stub, stub, "", (
        ("TEST_TYPE", "test"), ("BUILD_TYPE", "nobuild"), ("NO_INSTALL", "1"),
        ("TEST", f"{STORM} box-step {state}"),
        ("REBOOT_ON_SUCCESS", "0")))
    conf = logdir / "ktest.conf"
    conf.write_text(ktest.config_text(
        box.config, run, f"{name}: boot {kernel.release}, then "
        f"{design.storm} {' '.join(design.params)}"))
    t0 = time.monotonic()
    rc = ktest.run(box.ktest, conf, logdir / "ktest.log", echo=sys.stderr,
                   timeout=design.timeout)
    seconds = time.monotonic() - t0
    try:
        done = json.loads(out.read_text())
    except (OSError, ValueError):
        done = {}
    if rc != 0 or not done.get("ok"):
        why = done.get("error") or ktest.failure(logdir / "ktest.log") \
            or f"ktest.pl exit {rc}"
        raise BoxError(f"{name}: {why} (logs in {logdir})")
    files = [pathlib.Path(f) for f in done["files"]]
    if len(files) != design.runs:
        raise BoxError(f"{name}: {len(files)} run files came back, "
                       f"{design.runs} were asked for")
    return BootResult(name, label, files, seconds, seconds - done["seconds"])


# --------------------------------------------------------------------
# The step: ktest.pl's TEST, on this host, while the box is up


def remote(ssh: Sequence[str], command: str, *, stdin: bytes | None = None,
           timeout: float = 600, check: bool = True
           ) -> subprocess.CompletedProcess:
    res = subprocess.run([*ssh, command], input=stdin if stdin is not None
                         else b"", capture_output=True, timeout=timeout)
    if check and res.returncode != 0:
        raise BoxError(f"on the box: {command[:80]}: exit "
                       f"{res.returncode}: "
                       f"{res.stderr.decode(errors='replace').strip()[-500:]}")
    return res


def payload(release: str) -> bytes:
    """storm run and this kernel's modules, as a tar in the repository's
    layout (scripts/, build/<release>/)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel in BOX_SCRIPTS:
            tar.add(REPO / rel, arcname=rel)
        for s in STORMS:
            ko = REPO / "build" / release / f"{s}.ko"
            if not ko.is_file():
                raise BoxError(f"no {ko}: the modules for {release} are "
                               "not built")
            tar.add(ko, arcname=f"build/{release}/{s}.ko")
    return buf.getvalue()


def fetch(ssh: Sequence[str], box_dir: str, results: pathlib.Path
          ) -> list[pathlib.Path]:
    """The box's results/ into results here; the captures it held."""
    res = remote(ssh, f"cd {shlex.quote(box_dir)}/results && tar -c .")
    results.mkdir(parents=True, exist_ok=True)
    captures = []
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
        members = tar.getmembers()
        for m in members:
            if not (m.isdir() or m.isfile()) or m.name.startswith("/") \
                    or ".." in pathlib.PurePath(m.name).parts:
                raise BoxError(f"the box's results hold {m.name!r}")
        tar.extractall(results, members=members)
        for m in members:
            p = pathlib.PurePath(m.name)
            if m.isdir() and p.name.endswith(runfile.CAPTURE_SUFFIX):
                captures.append((results / p).resolve())
    return sorted(captures)


def step(state: dict[str, Any]) -> dict[str, Any]:
    """One boot's runs on the box; what came back."""
    ssh, d = state["ssh"], state["box_dir"]
    t0 = time.monotonic()
    booted = remote(ssh, "uname -r").stdout.decode().strip()
    if booted != state["release"]:
        raise BoxError(f"the box runs {booted}, not {state['release']}: "
                       "its box config does not boot STORM_KERNEL")
    q = shlex.quote(d)
    remote(ssh, f"mkdir -p {q} && cd {q} && rm -rf results && tar -x",
           stdin=payload(state["release"]))
    env = dict(state["env"], STORM_VM_NAME=state["name"])
    cmd = ["sh", "scripts/storm-run", "--runs", str(state["runs"]),
           "--warmup", str(state["warmup"]), "--results", "results",
           "--label", state["label"], "--series", state["series"],
           state["storm"], *state["params"]]
    line = (f"cd {q} && " + " ".join(f"{k}={shlex.quote(v)}"
                                     for k, v in env.items())
            + " " + shlex.join(cmd))
    res = remote(ssh, line, timeout=3600, check=False)
    # ktest.pl keeps its TEST's output until the next test only
    pathlib.Path(state["out"]).with_name("storm-run.log") \
        .write_bytes(res.stderr)
    sys.stdout.write(res.stderr.decode(errors="replace"))
    # the storm's checks failed: its runs are written, with their
    # failures, for the readers to keep apart (or a failures bisect)
    checks_failed = res.returncode == guest.CHECKS_FAILED
    if res.returncode != 0 and not checks_failed:
        last = res.stderr.decode(errors="replace").strip().splitlines()
        raise BoxError(f"storm run on the box exited {res.returncode}"
                       + (f": {last[-1]}" if last else ""))
    captures = fetch(ssh, d, pathlib.Path(state["results"]))
    files = []
    for c in captures:
        out = runfile.run_file_of(c)
        runfile.write(c, out)
        files.append(str(out))
    log = remote(ssh, "dmesg").stdout.decode(errors="replace")
    pathlib.Path(state["out"]).with_name("dmesg").write_text(log)
    bad = [line for line in dmesg.problems(log) if not (
        checks_failed and re.search(dmesg.CHECK_FAILED, line))]
    if bad:
        raise BoxError("the box's dmesg shows a kernel problem: "
                       + "; ".join(bad[:3]))
    return {"ok": True, "files": files, "booted": booted,
            "checks_failed": checks_failed,
            "seconds": time.monotonic() - t0}


def step_main(argv: list[str]) -> int:
    """storm box-step STATE: run by ktest.pl as its TEST (exit 0: the
    runs came back; else ktest.pl fails the test)."""
    if len(argv) != 1:
        print("usage: storm box-step STATE (run by ktest.pl)",
              file=sys.stderr)
        return 2
    state = json.loads(pathlib.Path(argv[0]).read_text())
    out = pathlib.Path(state["out"])
    try:
        done = step(state)
    except (BoxError, subprocess.TimeoutExpired, OSError,
            tarfile.TarError, ValueError, KeyError) as e:
        out.write_text(json.dumps({"ok": False, "error": str(e)}) + "\n")
        print(f"storm box-step: {e}", file=sys.stderr)
        return 1
    out.write_text(json.dumps(done, indent=1) + "\n")
    print(f"storm box-step: {len(done['files'])} run files from "
          f"{done['booted']} in {done['seconds']:.0f} s")
    return 0


# --------------------------------------------------------------------
# The commands


def add_design_options(p: argparse.ArgumentParser, boots: int) -> None:
    p.add_argument("--config", type=pathlib.Path, required=True,
                   help="the box's ktest.pl config (configs/box/box.conf "
                   "is the template; storm box vm start prints the test "
                   "VM's)")
    p.add_argument("--ktest", help="ktest.pl, or the kernel tree holding "
                   "it (default: $STORM_KTEST, else build/linux-source-6.1 "
                   "from storm kernel source)")
    p.add_argument("--boots", type=int, default=boots,
                   help=f"boots per kernel, the unit of replication "
                   f"(default {boots})")
    p.add_argument("--runs", type=int, default=5,
                   help="measured runs per boot (default 5)")
    p.add_argument("--warmup", type=int, default=1,
                   help="warm-up runs per boot, thrown away (default 1)")
    p.add_argument("--timeout", type=float, default=1200,
                   help="seconds per boot (reboot and runs) before ktest.pl "
                   "is stopped (default 1200)")
    p.add_argument("--results", type=pathlib.Path, default=runs.RESULTS,
                   help="where the run files go (default: $STORM_RESULTS "
                   "or results/)")


def check_design(p: argparse.ArgumentParser, args: argparse.Namespace,
                 min_boots: int) -> Design:
    if args.runs < 1 or args.warmup < 0 or args.boots < min_boots:
        p.error(f"--runs must be at least 1, --warmup not negative, "
                f"--boots at least {min_boots}")
    for prm in args.params:
        if "=" not in prm:
            p.error(f"{prm}: parameters are NAME=VALUE")
    return Design(args.storm, tuple(args.params), args.runs, args.warmup,
                  args.timeout)


SOURCES = REPO / "build" / "box" / "src"


def checkout(tree: pathlib.Path, name: str, rev: str,
             patch: pathlib.Path | None) -> pathlib.Path:
    """A worktree of tree at rev (and patch) for one side of ab, under
    build/box/src/NAME: the user's checkout is left alone."""
    d = SOURCES / name

    def git(*a: str, cwd: pathlib.Path = d) -> None:
        res = subprocess.run(["git", "-C", str(cwd), *a], text=True,
                             capture_output=True)
        if res.returncode != 0:
            raise BoxError(f"git {' '.join(a)}: {res.stderr.strip()}")
    if not (d / ".git").exists():
        SOURCES.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", "--force", str(d), rev,
            cwd=tree)
    git("checkout", "--detach", "--force", rev)
    git("clean", "-fdxq")
    if patch is not None:
        git("apply", "--index", str(patch.resolve()))
    return d


# A worktree's build directory, inside it: kbuild then names the source
# `..` on every compiler command line, whichever worktree it is, so a
# compiler cache (the test VM's ccache) serves one worktree's objects to
# the next (ab's sides, a bisect's endpoints and commits).
WORKTREE_OUT = "storm-out"


def build_worktree(box: Box, tree: pathlib.Path, name: str, rev: str,
                   patch: pathlib.Path | None,
                   kconfig: pathlib.Path | None) -> Kernel:
    """rev (and patch) of tree checked out as build/box/src/NAME, built
    and installed on the box as storm box build does."""
    src = checkout(tree, name, rev, patch)
    return resolve_kernel(str(build(box, src, name, kconfig,
                                    outdir=src / WORKTREE_OUT)))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm box build",
        description="Build a kernel for the box with ktest.pl and install "
        "it there (TEST_TYPE = install): olddefconfig on the box's own "
        "configuration (--kconfig, else /boot/config-$(uname -r) read from "
        "the box) with configs/box.config forced on top (ADD_CONFIG: what "
        "the storms need); then the storms are built against it here. "
        "Prints the tree to give storm matrix --box as --kernel.")
    p.add_argument("--config", type=pathlib.Path, required=True,
                   help="the box's ktest.pl config")
    p.add_argument("--ktest", help="ktest.pl or a kernel tree holding it")
    p.add_argument("--tree", type=pathlib.Path, required=True,
                   help="the kernel source tree (ktest.pl's BUILD_DIR)")
    p.add_argument("--name", required=True,
                   help="what this kernel is (base, patched, ...): its "
                   "LOCALVERSION -storm-NAME and build/box/kernels/NAME, "
                   "ktest.pl's OUTPUT_DIR")
    p.add_argument("--kconfig", type=pathlib.Path,
                   help="the configuration to start from (default: the "
                   "box's running kernel's)")
    p.add_argument("--dry-run", action="store_true",
                   help="write ktest.pl's config and print it; build nothing")
    return p


def build_main(argv: list[str]) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        box = Box.open(args.config, args.ktest)
        out = build(box, args.tree, args.name, args.kconfig, args.dry_run)
    except (BoxError, ktest.ConfigError) as e:
        print(f"storm box build: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


KERNELS = REPO / "build" / "box" / "kernels"


def build_run(tree: pathlib.Path, name: str, kconfig: pathlib.Path,
              outdir: pathlib.Path) -> ktest.Run:
    """What ktest.pl is told for a build and install."""
    return ktest.Run("", tree.resolve(), outdir, f"-storm-{name}", (
        ("TEST_TYPE", "install"),
        ("BUILD_TYPE", f"useconfig:{kconfig}"),
        ("ADD_CONFIG", str(FRAGMENT)),
        ("REBOOT_ON_SUCCESS", "0")))


def box_kconfig(box: Box, logdir: pathlib.Path) -> pathlib.Path:
    """The box's running kernel's configuration, as a file in logdir:
    what a kernel for the box starts from by default."""
    text = remote(box.ssh, "cat /boot/config-$(uname -r)").stdout
    kconfig = logdir / "box.kconfig"
    kconfig.write_bytes(text)
    return kconfig


def build(box: Box, tree: pathlib.Path, name: str,
          kconfig: pathlib.Path | None, dry_run: bool = False,
          outdir: pathlib.Path | None = None) -> pathlib.Path:
    outdir = outdir or KERNELS / name
    if not dry_run:
        outdir.mkdir(parents=True, exist_ok=True)
    logdir = LOGS / f"build-{name}"
    logdir.mkdir(parents=True, exist_ok=True)
    if kconfig is None:
        kconfig = box_kconfig(box, logdir)
    conf = logdir / "ktest.conf"
    conf.write_text(ktest.config_text(
        box.config, build_run(tree, name, kconfig.resolve(), outdir),
        f"build {tree} as {name} for the box, and install it"))
    if dry_run:
        sys.stdout.write(conf.read_text())
        return conf
    rc = ktest.run(box.ktest, conf, logdir / "ktest.log", echo=sys.stderr)
    if rc != 0:
        raise BoxError(f"ktest.pl exit {rc} (log: {logdir / 'ktest.log'})")
    k = resolve_kernel(str(outdir))
    build_modules(k)
    return outdir
