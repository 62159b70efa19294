"""Find a kernel to boot: a stock Debian series, a vmlinuz, or a built tree.

Nothing here knows an exact Debian ABI version: "6.1" means the newest
installed /boot/vmlinuz-6.1.*, whatever Debian's updates made it. A
series with no image under /boot is the one built from Debian's source
package (`storm kernel build --series 7.3`: today's kernel, whose stock
image's headers want a compiler a Debian 12 host lacks), found in its
build directory.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

from .. import REPO
from . import arm64, kbuild, linux_source

BOOT = pathlib.Path("/boot")
MODULES = pathlib.Path("/lib/modules")
# where `storm kernel build --series S` builds
SERIES_BUILDS = REPO / "build" / "kernel"


def series_build(series: str, root: pathlib.Path = SERIES_BUILDS,
                 arch: str = "x86_64") -> pathlib.Path:
    """Where `storm kernel build --series SERIES [--arch ARCH]` puts its
    kernel."""
    return root / kbuild.arch_named(f"debian-{series}", arch)


class KernelNotFound(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Kernel:
    image: pathlib.Path        # what QEMU boots
    release: str               # what `uname -r` says in the guest
    kdir: pathlib.Path | None  # headers or build tree to build modules against
    tree: pathlib.Path | None = None  # a built source tree, if that is what it is
    arch: str = "x86_64"       # the guest's: x86_64 or arm64


def _version_key(release: str) -> list[tuple[int, str]]:
    return [(int(p), "") if p.isdigit() else (-1, p)
            for p in re.split(r"[.+~-]", release)]


def _release_of_tree(build: pathlib.Path) -> str | None:
    uts = build / "include" / "generated" / "utsrelease.h"
    if uts.is_file():
        m = re.search(r'UTS_RELEASE "([^"]+)"', uts.read_text())
        if m:
            return m.group(1)
    rel = build / "include" / "config" / "kernel.release"
    if rel.is_file():
        return rel.read_text().strip()
    return None


def installed_series(boot: pathlib.Path = BOOT) -> dict[str, list[str]]:
    """Map "6.1" -> releases installed under /boot, newest first."""
    series: dict[str, list[str]] = {}
    for img in boot.glob("vmlinuz-*"):
        release = img.name[len("vmlinuz-"):]
        m = re.match(r"(\d+\.\d+)", release)
        if m:
            series.setdefault(m.group(1), []).append(release)
    for rels in series.values():
        rels.sort(key=_version_key, reverse=True)
    return series


def resolve_arm64(spec: str, series_root: pathlib.Path = SERIES_BUILDS
                  ) -> Kernel:
    """An arm64 kernel: Debian's 6.1 or 6.12 for arm64 (arm64.py fetches
    them on first use), today's series cross-built from Debian's source
    (storm kernel build --series 7.3 --arch arm64), or a built arm64
    tree; booted in an emulated arm64 guest."""
    if pathlib.Path(spec).is_dir():
        k = resolve(spec)
        if k.arch != "arm64":
            raise KernelNotFound(f"{spec}: an {k.arch} build, not arm64")
        return k
    if spec in linux_source.SERIES and spec not in arm64.META:
        built = series_build(spec, series_root, "arm64")
        if not (built / kbuild.STAMP).is_file():
            raise KernelNotFound(
                f"no arm64 {spec} kernel built: build it once with "
                f"scripts/storm kernel build --series {spec} --arch arm64 "
                f"(Debian's linux-source-{spec}, cross-compiled; kept in "
                f"{built})")
        return resolve(str(built))
    if spec not in arm64.META:
        raise KernelNotFound(
            f"--arch arm64 --kernel {spec}: Debian's arm64 kernels are "
            f"{', '.join(arm64.META)}; today's is built from source "
            f"({', '.join(s for s in linux_source.SERIES if s not in arm64.META)}"
            "), or give a built arm64 tree")
    try:
        arm64.ensure()
    except arm64.Arm64Error as e:
        raise KernelNotFound(f"arm64: {e}") from e
    release = arm64.releases().get(spec)
    if not release:
        raise KernelNotFound(f"no arm64 {spec} kernel in {arm64.ROOT}: "
                             "storm arm64 fetch")
    return Kernel(image=arm64.ROOT / "boot" / f"vmlinuz-{release}",
                  release=release, kdir=arm64.headers(release),
                  arch="arm64")


def resolve(spec: str, boot: pathlib.Path = BOOT,
            modules: pathlib.Path = MODULES,
            series_root: pathlib.Path = SERIES_BUILDS,
            arch: str = "x86_64") -> Kernel:
    """spec: "6.1", "6.12", "7.3", a vmlinuz path, or a built kernel
    tree; with arch "arm64", "6.1" or "6.12" (Debian's arm64 kernels)."""
    if arch == "arm64":
        return resolve_arm64(spec, series_root)
    path = pathlib.Path(spec)
    if path.is_dir():
        tree_arch = kbuild.arch_of(path)
        image = path / kbuild.IMAGE[tree_arch]
        release = _release_of_tree(path)
        if (path / ".storm-config").exists() \
                and not (path / ".storm-built").exists():
            raise KernelNotFound(
                f"{spec}: its last storm kernel build did not finish; "
                "build it again (storm kernel build)")
        if not image.is_file() or not release:
            raise KernelNotFound(
                f"{spec}: not a built kernel tree (no {kbuild.IMAGE[tree_arch]}"
                " or include/generated/utsrelease.h)")
        return Kernel(image=image, release=release, kdir=path, tree=path,
                      arch=tree_arch)
    if path.is_file():
        release = path.name[len("vmlinuz-"):] \
            if path.name.startswith("vmlinuz-") else ""
        if not release:
            raise KernelNotFound(
                f"{spec}: cannot tell the release of this image; name it "
                "vmlinuz-<release> or pass a built tree")
        kdir = modules / release / "build"
        return Kernel(image=path, release=release,
                      kdir=kdir if kdir.exists() else None)
    if re.fullmatch(r"\d+\.\d+", spec):
        rels = installed_series(boot).get(spec)
        built = series_build(spec, series_root)
        if not rels and (built / ".storm-built").is_file():
            return resolve(str(built), boot, modules, series_root)
        if not rels and spec in linux_source.SERIES:
            raise KernelNotFound(
                f"no Debian {spec} kernel in {boot} and none built: build "
                f"it once with scripts/storm kernel build --series {spec} "
                f"(Debian's linux-source-{spec}, about 16 minutes cold on 2 "
                f"cores; kept in {built})")
        if not rels:
            have = ", ".join(sorted(installed_series(boot))) or "none"
            raise KernelNotFound(
                f"no Debian {spec} kernel in {boot} (installed: {have}); "
                "run scripts/setup")
        release = rels[0]
        kdir = modules / release / "build"
        return Kernel(image=boot / f"vmlinuz-{release}", release=release,
                      kdir=kdir if kdir.exists() else None)
    raise KernelNotFound(
        f"{spec}: not a kernel series (6.1, 6.12, 7.3), a vmlinuz or a "
        "built tree")
