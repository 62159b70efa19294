"""storm lkp install: the storms as lkp-tests programs, in an lkp checkout.

Writes each storm's program, programs/<storm>/ (run, parse, meta.yaml:
programs.py, from the registry and the module's parameters), and
copies lkp/jobs/*.yaml into the checkout, gives each program its pkg/ (lkp/pkg/: a PKGBUILD
whose source is this suite at its HEAD commit, and the Debian packages it
needs), so that lkp's own `lkp install` builds the module on the box and
packs it under /lkp/benchmarks/<storm>, lists each storm in
distro/adaptation-pkg/<distro> (`lkp install` builds only the packages
listed there), registers the storms as performance testcases
(etc/linux-perf-test-cases) and their primary stats, lower is better
(etc/index-perf-all.yaml), links the suite where the programs look for it
(<benchmark root>/storm, lkp's /lkp/benchmarks by default, as lkp installs
a benchmark), and writes the checkout's hosts/<this host> (nr_node,
nr_cpu, memory) when it has none: `lkp run` reads it. It runs nothing of
lkp's own `lkp install` (docs/lkp.md says why and what to install).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import socket
import subprocess
import sys

from .. import REPO, storms
from . import programs, modparams

JOBS = REPO / "lkp" / "jobs"
PKG = REPO / "lkp" / "pkg"
# what the package's build and package take from the suite (lkp/pkg/PKGBUILD)
PACKAGED = ["Makefile", "Kbuild", "include", *storms.NAMES, "tests/kmod",
            "lkp", "scripts"]
BENCHMARK_ROOT = pathlib.Path("/lkp/benchmarks")


class InstallError(Exception):
    pass


def host_file(sysfs: pathlib.Path = pathlib.Path("/sys"),
              meminfo: pathlib.Path = pathlib.Path("/proc/meminfo")) -> str:
    """lkp's hosts/<hostname> for this machine."""
    nodes = len(list((sysfs / "devices/system/node").glob("node[0-9]*"))) \
        or 1
    kb = 0
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemTotal:"):
            kb = int(line.split()[1])
    return (f"nr_node: {nodes}\nnr_cpu: {os.cpu_count() or 1}\n"
            f"memory: {max(1, round(kb / 1024 / 1024))}G\n")


def re_name(name: str) -> str:
    """A stat's name as index-perf-all.yaml writes it, a regular
    expression."""
    return name.replace(".", "\\.")


def suite_commit(repo: pathlib.Path = REPO) -> str | None:
    """The suite's HEAD commit, which the packages build; None outside a
    git checkout."""
    try:
        p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify",
                            "HEAD^{commit}"], capture_output=True, text=True)
    except OSError:             # no git
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def uncommitted(repo: pathlib.Path = REPO) -> list[str]:
    """The files the packages take that differ from HEAD: a package is
    built from the commit, not the working tree."""
    try:
        p = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                            "--untracked-files=no", "--", *PACKAGED],
                           capture_output=True, text=True)
    except OSError:
        return []
    return [line[3:] for line in p.stdout.splitlines()]


def pkgbuild(storm: str, suite: pathlib.Path, commit: str) -> str:
    """programs/<storm>/pkg/PKGBUILD: lkp/pkg/PKGBUILD for the storm, its
    source the suite at the commit."""
    text = (PKG / "PKGBUILD").read_text()
    for key, value in (("@STORM@", storm), ("@SUITE@", str(suite)),
                       ("@COMMIT@", commit)):
        text = text.replace(key, value)
    return text


def add_lines(f: pathlib.Path, lines: list[str]) -> bool:
    """Append the lines f lacks; whether any was."""
    have = f.read_text().splitlines() if f.is_file() else []
    new = [line for line in lines if line not in have]
    if new:
        text = "\n".join(have + new) + "\n"
        f.write_text(text)
    return bool(new)


def install(lkp_src: pathlib.Path, benchmark_root: pathlib.Path = BENCHMARK_ROOT,
            hostname: str | None = None) -> list[str]:
    """Install the programs and jobs into lkp_src; what was done."""
    if not (lkp_src / "bin" / "lkp").is_file() \
            or not (lkp_src / "programs").is_dir():
        raise InstallError(f"{lkp_src}: not an lkp-tests checkout (no "
                           "bin/lkp and programs/)")
    done = []
    commit = suite_commit()
    for name in storms.NAMES:
        program = lkp_src / "programs" / name
        program.mkdir(parents=True, exist_ok=True)
        try:
            files = programs.program(name)
        except modparams.ParamsError as e:
            raise InstallError(str(e)) from e
        for f, text in files.items():
            (program / f).write_text(text)
            if f in ("run", "parse"):
                (program / f).chmod(0o755)
        done.append(f"programs/{name}")
        if commit is None:
            continue
        pkg = program / "pkg"
        pkg.mkdir(exist_ok=True)
        for f in ("depends", "depends-dev"):
            shutil.copy2(PKG / f, pkg / f)
        (pkg / "PKGBUILD").write_text(pkgbuild(name, REPO.resolve(), commit))
        done.append(f"programs/{name}/pkg/PKGBUILD "
                    f"({REPO.resolve()} at {commit[:12]})")
    names = sorted(storms.NAMES)
    # lkp install builds a program's pkg/ only when the distribution's
    # adaptation-pkg lists it ("NAME::": built by makepkg, as itself)
    adaptations = lkp_src / "distro" / "adaptation-pkg"
    if commit is not None and adaptations.is_dir():
        for f in sorted(adaptations.iterdir()):
            if f.is_file() and add_lines(f, [f"{s}::" for s in names]):
                done.append(f"distro/adaptation-pkg/{f.name}")
    for job in sorted(JOBS.glob("*.yaml")):
        shutil.copy2(job, lkp_src / "jobs" / job.name)
        done.append(f"jobs/{job.name}")
    for name in storms.NAMES:
        if not (JOBS / f"{name}.yaml").is_file():
            (lkp_src / "jobs" / f"{name}.yaml").write_text(
                programs.job(storms.STORMS[name]))
            done.append(f"jobs/{name}.yaml (the registry's example)")
    # lkp files every result under its kind of testcase (lkp run fails on
    # one it does not know), and its compare, stats, matrix and bisect
    # KPIs read which stats are performance and which way is better from
    # index-perf-all.yaml (index-perf.yaml is its shorter list, kept in
    # step)
    if add_lines(lkp_src / "etc" / "linux-perf-test-cases", names):
        done.append("etc/linux-perf-test-cases")
    index = [f"{re_name(name)}: -1" for s in names
             for name in (storms.STORMS[s].time_metric,
                          storms.STORMS[s].ipi_metric)]
    for name in ("index-perf-all.yaml", "index-perf.yaml"):
        if add_lines(lkp_src / "etc" / name, index):
            done.append(f"etc/{name}")
    host = lkp_src / "hosts" / (hostname or socket.gethostname())
    if not host.exists():
        host.parent.mkdir(exist_ok=True)
        host.write_text(host_file())
        done.append(f"hosts/{host.name}")
    link = benchmark_root / "storm"
    benchmark_root.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if link.resolve() != REPO.resolve():
            if not link.is_symlink():
                raise InstallError(f"{link} exists and is not a link to "
                                   f"the suite ({REPO})")
            link.unlink()
    if not link.exists():
        link.symlink_to(REPO)
    done.append(f"{link} -> {REPO}")
    return done


def parser(command: str = "") -> argparse.ArgumentParser:
    """storm lkp's parser; with command "install", that command's own."""
    p = argparse.ArgumentParser(
        prog="storm lkp",
        description="The storms as lkp-tests programs. `storm lkp install "
        "LKP_SRC` writes the programs (" + ", ".join(storms.NAMES) + ") and "
        "their jobs into an lkp-tests checkout and links this suite where "
        "they find it; then `lkp split-job` and `lkp run` a job as for any "
        "lkp program (docs/lkp.md).",
        epilog="example: storm lkp install ~/lkp-tests && cd ~/lkp-tests "
        "&& bin/lkp split-job jobs/ipistorm.yaml && bin/lkp install "
        "--skip-base ipistorm-*.yaml && bin/lkp run ipistorm-*.yaml")
    sub = p.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install the programs and jobs "
                          "into an lkp-tests checkout")
    inst.add_argument("lkp_src", type=pathlib.Path,
                      help="the lkp-tests checkout ($LKP_SRC)")
    inst.add_argument("--benchmark-root", type=pathlib.Path,
                      default=BENCHMARK_ROOT,
                      help="where lkp keeps benchmarks and the programs "
                      f"look for the suite (default {BENCHMARK_ROOT})")
    return inst if command == "install" else p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        done = install(args.lkp_src.resolve(), args.benchmark_root)
    except (InstallError, OSError) as e:
        print(f"storm lkp install: {e}", file=sys.stderr)
        return 1
    for line in done:
        print(f"storm lkp install: {line}")
    if suite_commit() is None:
        print("storm lkp install: no PKGBUILD: the suite is not a git "
              "checkout, and lkp install builds from one", file=sys.stderr)
    elif changed := uncommitted():
        print("storm lkp install: lkp install builds the commit, not "
              "these uncommitted changes: " + " ".join(changed),
              file=sys.stderr)
    built = sorted(p.parent.name for p in
                   (REPO / "build").glob("*/ipistorm.ko"))
    print("storm lkp install: this checkout's storms are built for "
          + (", ".join(built) or "no kernel yet")
          + " (make builds them for the running one, or lkp install "
          "--skip-base JOB builds the job's package); next: cd "
          f"{args.lkp_src} && bin/lkp split-job jobs/ipistorm.yaml && "
          "bin/lkp run ipistorm-*.yaml")
    return 0
