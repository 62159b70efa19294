"""Debian's arm64 kernels, and a root for arm64 guests, from Debian's
packages into build/arm64/: nothing is installed on the host.

  build/arm64/root/      the guest's root: busybox, bash (virtme-ng's
                         init for a foreign architecture is a bash
                         script) and the C library; the kernels' images
                         in boot/ and their modules in lib/modules/
  build/arm64/headers/   each kernel's headers, with the host's (amd64)
                         kbuild tools, to cross-build the storms
  build/arm64/apt/       apt's lists and downloads for arm64, kept apart
                         from the host's

"6.1" and "6.12" are what the metapackages linux-image-arm64 and
linux-image-6.12-arm64 depend on today, as on x86: no ABI is named here.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys

from .. import REPO

ARM64 = REPO / "build" / "arm64"
ROOT = ARM64 / "root"
HEADERS = ARM64 / "headers"
APT = ARM64 / "apt"
STAMP = ARM64 / ".fetched"
QEMU = "qemu-system-aarch64"
# series -> the metapackage whose dependency names its ABI
META = {"6.1": "linux-image-arm64", "6.12": "linux-image-6.12-arm64"}
# the guest's userland: virtme-ng's bash init, busybox for the rest, and
# python3 (python_packages()) for storm run's run files and the checks
USERLAND = ("busybox-static", "bash", "libc6", "libtinfo6", "libexpat1",
            "zlib1g", "libssl3")
# What virtme-init's udev coldplug is for here: the names of the
# virtio-serial ports it runs the command on (scripts/guest-udevd).
UDEVD = REPO / "scripts" / "guest-udevd"


class Arm64Error(Exception):
    pass


def say(text: str) -> None:
    print(f"storm arm64: {text}", file=sys.stderr)


def host_sources(etc: pathlib.Path = pathlib.Path("/etc/apt")
                 ) -> dict[str, str]:
    """The host's apt sources (its mirrors, its keys), file name -> text,
    but for the suites setup adds at low priority (trixie-backports):
    without their pin a newer suite's kernels would win."""
    out = {}
    if (etc / "sources.list").is_file():
        out["host.list"] = (etc / "sources.list").read_text()
    for f in sorted((etc / "sources.list.d").glob("*")):
        if f.suffix in (".list", ".sources") and \
                not f.name.startswith("storm-"):
            out[f.name] = f.read_text()
    return out


def apt_config() -> pathlib.Path:
    """A private apt for arm64 (amd64 too, for the kbuild tools): its own
    lists, cache and status, the host's sources."""
    for d in ("state/lists/partial", "cache/archives/partial",
              "etc/sources.list.d", "etc/preferences.d"):
        (APT / d).mkdir(parents=True, exist_ok=True)
    status = APT / "state" / "status"
    if not status.exists():
        status.write_text("")
    sources = host_sources()
    if not sources:
        raise Arm64Error("the host has no apt sources to fetch from")
    parts = APT / "etc" / "sources.list.d"
    for old in parts.iterdir():
        old.unlink()
    for name, text in sources.items():
        (parts / name).write_text(text)
    conf = APT / "etc" / "apt.conf"
    conf.write_text(
        f'Dir::State "{APT}/state";\n'
        f'Dir::State::status "{status}";\n'
        f'Dir::Cache "{APT}/cache";\n'
        'Dir::Etc::SourceList "/dev/null";\n'
        f'Dir::Etc::SourceParts "{parts}";\n'
        f'Dir::Etc::Preferences "{APT}/etc/preferences";\n'
        f'Dir::Etc::PreferencesParts "{APT}/etc/preferences.d";\n'
        'APT::Architecture "arm64";\n'
        'APT::Architectures { "arm64"; "amd64"; };\n'
        'APT::Sandbox::User "root";\n')
    return conf


def apt(conf: pathlib.Path, *args: str, cwd: pathlib.Path | None = None
        ) -> str:
    res = subprocess.run(list(args), env={"APT_CONFIG": str(conf),
                                          "PATH": "/usr/bin:/bin:/usr/sbin"},
                         cwd=cwd, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    if res.returncode:
        raise Arm64Error(f"{' '.join(args)}: {res.stderr.strip()[-800:]}")
    return res.stdout


def depends(conf: pathlib.Path, package: str) -> list[str]:
    """The packages PACKAGE depends on, as apt-cache depends lists them."""
    out = apt(conf, "apt-cache", "depends", "--no-recommends",
              "--no-suggests", package)
    return [m.group(1) for m in re.finditer(
        r"^\s+(?:Pre)?Depends: (\S+)", out, re.MULTILINE)]


def python_packages(conf: pathlib.Path) -> list[str]:
    """python3 without the packaging around it: the interpreter and its
    standard library (the C extensions whose libraries are not there,
    such as readline and sqlite3, are not used)."""
    minimal = next(d for d in depends(conf, "python3-minimal:arm64")
                   if re.fullmatch(r"python3\.\d+-minimal", d))
    version = minimal[len("python"):-len("-minimal")]
    return ["python3-minimal", minimal, f"libpython{version}-minimal",
            f"libpython{version}-stdlib"]


def field(deb: pathlib.Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name],
                          capture_output=True, text=True,
                          check=True).stdout.strip()


def kbuild_of(headers_deb: pathlib.Path) -> str:
    """The linux-kbuild-* package the headers' scripts link into."""
    m = re.search(r"(linux-kbuild-[^\s,(]+)", field(headers_deb, "Depends"))
    if not m:
        raise Arm64Error(f"{headers_deb.name}: no linux-kbuild dependency")
    return m.group(1)


def download(conf: pathlib.Path, packages: list[str]) -> list[pathlib.Path]:
    """The .debs of PACKAGES, downloaded into APT/debs."""
    debs = APT / "debs"
    debs.mkdir(exist_ok=True)
    before = set(debs.glob("*.deb"))
    apt(conf, "apt-get", "download", "-q", *packages, cwd=debs)
    return sorted(set(debs.glob("*.deb")) - before)


def releases() -> dict[str, str]:
    """series -> release of the arm64 kernels fetched, e.g. "6.12" ->
    "6.12.117+deb12-arm64"."""
    out: dict[str, str] = {}
    for img in sorted((ROOT / "boot").glob("vmlinuz-*")):
        release = img.name[len("vmlinuz-"):]
        m = re.match(r"(\d+\.\d+)", release)
        if m:
            out[m.group(1)] = release
    return out


def fetched() -> bool:
    return STAMP.is_file() and bool(releases())


def fetch() -> dict[str, str]:
    """Download and unpack the arm64 kernels, their headers and the
    guest's userland; series -> release."""
    for tool in ("apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            raise Arm64Error(f"{tool} is missing: the arm64 guest's files "
                             "come from Debian's packages")
    conf = apt_config()
    say("reading Debian's arm64 package lists")
    apt(conf, "apt-get", "update", "-q")
    images = {series: next(d for d in depends(conf, f"{meta}:arm64")
                           if d.startswith("linux-image-"))
              for series, meta in META.items()}
    wanted = [f"{p}:arm64" for p in (*USERLAND, *python_packages(conf))]
    for image in images.values():
        abi = image[len("linux-image-"):]
        common = abi.removesuffix("-arm64") + "-common"
        wanted += [f"{image}:arm64", f"linux-headers-{abi}:arm64",
                   f"linux-headers-{common}"]
    say(f"downloading {', '.join(sorted(images.values()))}, their headers "
        "and the guest's busybox, bash, libc and python3")
    for old in (APT / "debs").glob("*.deb"):
        old.unlink()    # a fetch that stopped half-way left them
    debs = download(conf, wanted)
    kbuilds = sorted({kbuild_of(d) for d in debs
                      if d.name.startswith("linux-headers-")
                      and d.name.endswith("_arm64.deb")})
    debs += download(conf, [f"{k}:amd64" for k in kbuilds])
    unpack(debs)
    STAMP.write_text("".join(f"{d.name}\n" for d in debs))
    for deb in debs:
        deb.unlink()
    return releases()


def unpack(debs: list[pathlib.Path]) -> None:
    for d in (ROOT, HEADERS):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    for deb in debs:
        dest = HEADERS if re.match(r"linux-(headers|kbuild)-", deb.name) \
            else ROOT
        subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    fix_headers()
    make_root()


def fix_headers() -> None:
    """Debian's headers include their -common half by its absolute path
    under /usr/src; here both live under HEADERS."""
    for makefile in (HEADERS / "usr" / "src").glob(
            "linux-headers-*-arm64/Makefile"):
        text = makefile.read_text()
        makefile.write_text(text.replace("include /usr/src/",
                                         f"include {HEADERS}/usr/src/"))


def busybox_applets() -> list[str]:
    """Where the guest's busybox applets go: the host's busybox-static of
    the same Debian release has the same configuration, and lists them
    without running the arm64 binary."""
    out = subprocess.run(["busybox", "--list-full"], capture_output=True,
                         text=True, check=True).stdout
    return out.split()


def make_root() -> None:
    """What virtme-init expects of a root beyond the packages: the
    applets' names, the mount points it and storm vm use, a passwd."""
    for applet in busybox_applets():
        link = ROOT / applet
        if not link.exists() and not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    for d in ("proc", "sys", "dev", "run", "tmp", "root", "opt", "home",
              "srv", "var", "mnt", "etc"):
        (ROOT / d).mkdir(exist_ok=True)
    (ROOT / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (ROOT / "etc" / "group").write_text("root:x:0:\n")
    for name in ("usr/sbin/udevd", "usr/sbin/udevadm"):
        path = ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(UDEVD, path)
        path.chmod(0o755)


def mount_point(host_dir: pathlib.Path) -> None:
    """A host directory the guest mounts at its own path needs that path
    in the root (which the guest mounts read-only)."""
    (ROOT / host_dir.relative_to("/")).mkdir(parents=True, exist_ok=True)


def ensure() -> None:
    """Fetch on first use."""
    if not fetched():
        say(f"no arm64 kernels in {ROOT}: fetching them once (about 180 MB)")
        fetch()


def headers(release: str) -> pathlib.Path | None:
    kdir = HEADERS / "usr" / "src" / f"linux-headers-{release}"
    return kdir if (kdir / "Makefile").is_file() else None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm arm64",
        description="Fetch Debian's arm64 kernels (6.1, 6.12), their "
        "headers and an arm64 guest root into build/arm64 (scripts/setup "
        "does it once; storm vm --arch arm64 on first use). Nothing is "
        "installed on the host: apt runs with its own lists there.")
    p.add_argument("what", choices=("fetch", "show"),
                   help="fetch: download and unpack again; show: what is "
                   "there")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        if args.what == "fetch":
            fetch()
    except Arm64Error as e:
        print(f"storm arm64: {e}", file=sys.stderr)
        return 2
    got = releases()
    if not got:
        print(f"storm arm64: nothing fetched into {ROOT}", file=sys.stderr)
        return 1
    for series, release in sorted(got.items()):
        kdir = headers(release)
        print(f"{series}: {ROOT / 'boot' / ('vmlinuz-' + release)}, "
              f"headers {kdir or 'missing'}")
    return 0
