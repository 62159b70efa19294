"""storm kernel build: a guest kernel from a source tree, then the storms.

The tree is only read: objects go to a separate build directory (make O=),
so one tree serves any number of builds and stays clean. The configuration
is allnoconfig plus configs/guest.config (what `storm vm` and the storms
need, nothing else) plus the user's fragments, so a from-scratch build is
minutes, not hours. ccache, when installed, is shared by every build
directory: a second revision of the same tree compiles only what differs.

A build directory is usable only once `.storm-built` exists in it; it is
removed before every build, so a failed build is never booted or bisected
as if it were the previous good one (kernels.resolve checks it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

from .. import REPO
from .git import git

GUEST_CONFIG = REPO / "configs" / "guest.config"
# what an arm64 guest needs beyond guest.config (--arch arm64)
ARCH_CONFIG = {"arm64": REPO / "configs" / "guest-arm64.config"}
# make's ARCH and CROSS_COMPILE for a guest architecture the host is not
CROSS = {"arm64": ("arm64", "aarch64-linux-gnu-")}
# where each architecture's build leaves the image QEMU boots
IMAGE = {"x86_64": "arch/x86/boot/bzImage", "arm64": "arch/arm64/boot/Image"}
BUILD_ROOT = REPO / "build" / "kernel"
STAMP = ".storm-built"
FRAGMENT_COPY = ".storm-config"
# the Kconfig files' hash of the tree that made .config (kconfig_id)
KCONFIG_COPY = ".storm-kconfig"
# Without these the guest cannot boot or the storms cannot load: a
# fragment or tree that loses one of them is an error, not a warning.
ESSENTIAL = ("CONFIG_SMP", "CONFIG_MODULES", "CONFIG_VIRTIO_PCI",
             "CONFIG_9P_FS", "CONFIG_DEBUG_FS", "CONFIG_BINFMT_SCRIPT")
CONFIG_LINE = re.compile(r"^(CONFIG_\w+)=(.*)$")
UNSET_LINE = re.compile(r"^# (CONFIG_\w+) is not set$")


class BuildError(Exception):
    pass


@dataclasses.dataclass
class Built:
    out: pathlib.Path
    release: str
    seconds: float
    revision: str


def tree_key(tree: pathlib.Path) -> str:
    """linux-1a2b3c: the tree's name and a hash of its path, so that two
    trees called linux never share a build directory."""
    path = str(tree.resolve())
    return f"{pathlib.Path(path).name}-{hashlib.sha1(path.encode()).hexdigest()[:6]}"


def default_out(tree: pathlib.Path, suffix: str = "") -> pathlib.Path:
    return BUILD_ROOT / (tree_key(tree) + (f"-{suffix}" if suffix else ""))


def git_revision(tree: pathlib.Path) -> str:
    """The tree's commit (with -dirty), or '' when it is not a git tree."""
    return git(tree, "describe", "--always", "--dirty", "--abbrev=12",
               "--match=NONE", check=False)


def parse_config(text: str) -> dict[str, str]:
    """CONFIG_X -> value ('n' for '# ... is not set'); the last line wins."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        m = CONFIG_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
            continue
        m = UNSET_LINE.match(line)
        if m:
            out[m.group(1)] = "n"
    return out


# the first lines of every .config make writes: a whole configuration
# (a bot's, such as the one 0-day attaches to its reports), not a fragment
WHOLE_CONFIG = "# Automatically generated file; DO NOT EDIT."


def is_whole_config(path: pathlib.Path) -> bool:
    with path.open(errors="replace") as f:
        return any(WHOLE_CONFIG in f.readline() for _ in range(3))


def merged_fragment(fragments: list[pathlib.Path],
                    arch: str = "x86_64") -> str:
    """What allnoconfig is given: whole configurations first (the base:
    where a symbol is given twice the later wins), then guest.config
    (what the guest and the storms need win over a base that turns them
    off) and the architecture's own, then the fragments, in their
    order."""
    wholes = [f for f in fragments if is_whole_config(f)]
    parts = [f"# {f}\n" + f.read_text() for f in wholes]
    if wholes:
        # a distribution's configuration names its own certificates
        # (debian/certs/...), which no other tree has
        parts.append('# storm: no trusted keys but the kernel\'s own\n'
                     'CONFIG_SYSTEM_TRUSTED_KEYS=""\n'
                     'CONFIG_SYSTEM_REVOCATION_KEYS=""\n')
    for conf in (GUEST_CONFIG, ARCH_CONFIG.get(arch)):
        if conf is not None:
            parts.append(f"# {conf.relative_to(REPO)}\n" + conf.read_text())
    for frag in fragments:
        if frag not in wholes:
            parts.append(f"# {frag}\n" + frag.read_text())
    # The release is named by make's LOCALVERSION (make_env), never by
    # CONFIG_LOCALVERSION: that one lands in autoconf.h, which every
    # file includes, so two builds named differently would share no
    # ccache entry at all.
    parts.append('CONFIG_LOCALVERSION=""\n')
    return "\n".join(parts)


def unmet(wanted: dict[str, str], got: dict[str, str],
          known: set[str] | None = None) -> list[str]:
    """Options asked for that the configuration did not take. With KNOWN
    (the tree's options: kconfig_symbols), one the tree does not have at
    all is told from one it refused."""
    missing = []
    for sym, value in wanted.items():
        have = got.get(sym, "n")
        if value.strip('"') == have.strip('"'):
            continue
        if known is not None and sym not in known:
            if value != "n":
                missing.append(f"{sym}={value}: this kernel has no such "
                               "option")
            continue
        missing.append(f"{sym}={value} (got {have}): refused, by its "
                       "dependencies or a choice")
    return missing


KCONFIG_SYMBOL = re.compile(r"^\s*(?:menu)?config\s+(\w+)", re.M)


def kconfig_symbols(tree: pathlib.Path) -> set[str]:
    """Every CONFIG_ option the tree's Kconfig files define."""
    known = set()
    for f in tree.rglob("Kconfig*"):
        if f.is_file():
            known.update("CONFIG_" + m.group(1) for m in
                         KCONFIG_SYMBOL.finditer(f.read_text(errors="replace")))
    return known


def preempt_model(config: dict[str, str]) -> str:
    """The preemption model a .config chose, as the kernel names it."""
    for model in ("PREEMPT_RT", "PREEMPT_LAZY", "PREEMPT",
                  "PREEMPT_VOLUNTARY", "PREEMPT_NONE"):
        if config.get(f"CONFIG_{model}") == "y":
            dynamic = config.get("CONFIG_PREEMPT_DYNAMIC") == "y"
            return model + (" (PREEMPT_DYNAMIC)" if dynamic else "")
    return "unknown"


def make_env(localversion: str = "") -> dict[str, str]:
    env = dict(os.environ)
    # Appended to the release (include/config/kernel.release); being set
    # also stops setlocalversion adding "+" for an untagged git tree.
    env["LOCALVERSION"] = localversion
    env["KBUILD_BUILD_USER"] = "storm"
    env["KBUILD_BUILD_HOST"] = "storm"
    if shutil.which("ccache"):
        # Paths under build/ are made relative to the working directory,
        # which -g would put in the hash and is left out: every build
        # directory next to build/kernel/src (source.py) then compiles
        # with the same command lines, whichever tree a revision came
        # from.
        env.setdefault("CCACHE_BASEDIR", str(BUILD_ROOT.parent))
        env.setdefault("CCACHE_NOHASHDIR", "1")
        env.setdefault("CCACHE_SLOPPINESS", "time_macros")
        env.setdefault("CCACHE_MAXSIZE", "10G")
    # setlocalversion runs git in the source tree: build/kernel/src must
    # not be taken for a part of this repository
    env["GIT_CEILING_DIRECTORIES"] = str(BUILD_ROOT)
    return env


def make_args(tree: pathlib.Path, out: pathlib.Path, jobs: int,
              arch: str = "x86_64") -> list[str]:
    args = ["make", "-C", str(tree), f"O={out}", f"-j{jobs}", "-s"]
    karch, cross = CROSS.get(arch, ("", ""))
    if karch:
        args += [f"ARCH={karch}", f"CROSS_COMPILE={cross}"]
    if shutil.which("ccache"):
        args.append(f"CC=ccache {cross}gcc")
    return args


def arch_of(out: pathlib.Path) -> str:
    """The architecture a build directory's .config is for."""
    config = out / ".config"
    if config.is_file() and "\nCONFIG_ARM64=y\n" in config.read_text():
        return "arm64"
    return "x86_64"


def run_make(args: list[str], log: pathlib.Path, what: str,
             progress: bool, localversion: str = "") -> None:
    """Run make, its output to log; on failure show the compiler's errors."""
    started = time.monotonic()
    with open(log, "ab") as logf:
        logf.write(f"$ {' '.join(args)}\n".encode())
        logf.flush()
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT,
                                env=make_env(localversion))
        last = started
        while proc.poll() is None:
            time.sleep(1)
            now = time.monotonic()
            if progress and now - last >= 30:
                last = now
                print(f"storm kernel build: {what}: {now - started:.0f} s",
                      file=sys.stderr, flush=True)
    if proc.returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        errors = [ln for ln in lines if re.search(r"\berror\b|Error \d", ln)]
        shown = (errors[:30] or lines[-30:])
        raise BuildError(f"{what} failed (exit {proc.returncode}); "
                         f"full log: {log}\n  " + "\n  ".join(shown))


def asked(fragment: str) -> str:
    """What of a merged fragment configure checks the tree took: from
    guest.config on (a whole configuration's symbols, thousands, many
    for other versions of the kernel, are taken where the tree has them
    and not reported one by one)."""
    head = f"# {GUEST_CONFIG.relative_to(REPO)}\n"
    return fragment[fragment.index(head):] if head in fragment else fragment


def kconfig_id(tree: pathlib.Path) -> str:
    """One hash of the tree's Kconfig files, names and contents."""
    h = hashlib.sha256()
    for f in sorted(tree.rglob("Kconfig*")):
        if f.is_file():
            h.update(f"{f.relative_to(tree)}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def configure(tree: pathlib.Path, out: pathlib.Path, fragment: str,
              jobs: int, progress: bool, arch: str = "x86_64") -> None:
    """allnoconfig + the fragment, unless the same fragment made .config
    from the same Kconfig files. A build directory that built another
    revision is configured again where the Kconfig files differ: make's
    own sync would give an option new in this tree its default (often
    y) where allnoconfig gives it n, so that one revision's configuration
    would depend on what the directory built before."""
    copy, kconfig = out / FRAGMENT_COPY, out / KCONFIG_COPY
    log = out / "build.log"
    ours = kconfig_id(tree)
    if (out / ".config").is_file() and copy.is_file() \
            and copy.read_text() == fragment and kconfig.is_file() \
            and kconfig.read_text() == ours:
        return
    copy.unlink(missing_ok=True)
    kconfig.unlink(missing_ok=True)
    allconfig = out / ".storm-allconfig"
    allconfig.write_text(fragment)
    run_make(make_args(tree, out, jobs, arch)
             + [f"KCONFIG_ALLCONFIG={allconfig}", "allnoconfig"],
             log, "configuration", progress)
    wanted = parse_config(asked(fragment))
    got = parse_config((out / ".config").read_text())
    missing = unmet(wanted, got, kconfig_symbols(tree))
    fatal = [m for m in missing if m.split("=")[0] in ESSENTIAL]
    if fatal:
        raise BuildError("the configuration lacks what the guest needs: "
                         + ", ".join(fatal))
    for m in missing:
        print(f"storm kernel build: note: {m}", file=sys.stderr)
    # guest.config asks for PREEMPT_VOLUNTARY, which 7.x on x86 no longer
    # offers: say which model the kernel took instead
    if any(m.startswith("CONFIG_PREEMPT") for m in missing):
        print(f"storm kernel build: note: preemption model "
              f"{preempt_model(got)}", file=sys.stderr)
    copy.write_text(fragment)
    kconfig.write_text(ours)


def release_of(out: pathlib.Path) -> str:
    uts = out / "include" / "generated" / "utsrelease.h"
    m = re.search(r'UTS_RELEASE "([^"]+)"', uts.read_text())
    if not m:
        raise BuildError(f"{uts}: no UTS_RELEASE")
    return m.group(1)


def arch_named(name: str, arch: str) -> str:
    """A build's directory name or release suffix for ARCH: an arm64
    build is named apart from the x86 one (debian-7.3-arm64,
    7.3.4-storm-arm64), since their objects, and the storms' in
    build/<release>, must never mix."""
    return name if arch == "x86_64" else f"{name}-{arch}"


def fragment_id(fragments: tuple[pathlib.Path, ...],
                arch: str = "x86_64") -> str:
    return hashlib.sha1(merged_fragment(list(fragments), arch).encode()) \
        .hexdigest()[:12]


def stamp(out: pathlib.Path) -> dict | None:
    """What OUT's last finished build was (revision, fragment, name), as
    build() wrote it; None if no build finished there."""
    try:
        return json.loads((out / STAMP).read_text())
    except (OSError, ValueError):
        return None


def built_as(out: pathlib.Path, revision: str,
             fragments: tuple[pathlib.Path, ...], localversion: str,
             arch: str = "x86_64") -> bool:
    """Whether OUT's last finished build is REVISION with these fragments
    and name, so that building it again would change nothing."""
    done = stamp(out)
    if done is None:
        return False
    return bool(revision) and not revision.endswith("-dirty") \
        and done.get("revision") == revision \
        and done.get("fragment") == fragment_id(fragments, arch) \
        and done.get("localversion") == arch_named(localversion,
                                                          arch)


def file_id(path: pathlib.Path) -> str:
    """A short hash of a file's content (a patch, in a build's name)."""
    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def build(tree: pathlib.Path, out: pathlib.Path | None = None, *,
          fragments: tuple[pathlib.Path, ...] = (), localversion: str = "-storm",
          jobs: int | None = None, modules: bool = True,
          progress: bool = True, revision: str | None = None,
          arch: str = "x86_64") -> Built:
    """Configure and build TREE into OUT, then the storms against it.
    REVISION names what TREE holds when it is not a git tree of its own
    (source.SRC). ARCH arm64: cross-built (CROSS) with the arm64
    fragment."""
    tree = tree.resolve()
    if not (tree / "Makefile").is_file() or not (tree / "Kconfig").is_file():
        raise BuildError(f"{tree}: not a kernel source tree")
    if (tree / ".config").exists() or (tree / "include" / "config").exists():
        raise BuildError(f"{tree}: has a .config or include/config from an "
                         "in-tree build; builds go to a separate directory "
                         "(make O=), which needs a clean tree: run "
                         f"'make -C {tree} mrproper'")
    out = (out or default_out(tree)).resolve()
    source = out / "source"
    if source.is_symlink() and source.resolve() != tree:
        raise BuildError(f"{out} holds a build of {source.resolve()}, not "
                         f"{tree}: give another --out (objects of two trees "
                         "must not mix)")
    out.mkdir(parents=True, exist_ok=True)
    (out / STAMP).unlink(missing_ok=True)
    jobs = jobs or os.cpu_count() or 1
    started = time.monotonic()
    if revision is None:
        revision = git_revision(tree)
    localversion = arch_named(localversion, arch)
    configure(tree, out, merged_fragment(list(fragments), arch), jobs,
              progress, arch)
    run_make(make_args(tree, out, jobs, arch), out / "build.log",
             f"kernel {revision or tree.name}", progress, localversion)
    release = release_of(out)
    if modules:
        # the Makefile cross-builds for an arm64 KDIR by its .config
        run_make(["make", "-C", str(REPO), "--no-print-directory",
                  f"KDIR={out}", "modules"], out / "build.log",
                 "the storm modules", progress)
    seconds = time.monotonic() - started
    (out / STAMP).write_text(json.dumps({
        "tree": str(tree), "revision": revision, "release": release,
        "preempt": preempt_model(parse_config((out / ".config").read_text())),
        "fragment": fragment_id(fragments, arch), "localversion": localversion,
        "arch": arch,
        "seconds": round(seconds, 1), "finished": time.time()}) + "\n")
    return Built(out=out, release=release, seconds=seconds, revision=revision)


def prepare(tree: pathlib.Path, out: pathlib.Path, *,
            localversion: str = "-storm-prepared", jobs: int | None = None,
            progress: bool = True, arch: str = "x86_64") -> str:
    """What building modules against TREE needs and no more (make
    modules_prepare on the guest configuration, no vmlinux): a W=1 check
    of the storms against a kernel in a minute or two, not a full build.
    Its own release name, so its modules never mix with a booted
    kernel's; never booted (no stamp, no image). Returns the release."""
    tree = tree.resolve()
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    localversion = arch_named(localversion, arch)
    configure(tree, out, merged_fragment([], arch), jobs, progress, arch)
    run_make(make_args(tree, out, jobs, arch) + ["modules_prepare"],
             out / "build.log", "modules_prepare", progress, localversion)
    return release_of(out)
