"""The test box's disk image: a Debian system built from Debian packages.

`storm box image` (and the box test) makes build/box/<key>/box.img, an
ext4 image of a bookworm system from debootstrap (sshd, kexec-tools,
systemd with a serial getty and DHCP on the first NIC), with the host's
stock kernels installed in /boot and a root ssh key made for it. No loop
mount: `mkfs.ext4 -d` writes the tree into the image file. The key is a
hash of every input (suite, mirror, packages, the kernels' files, this
recipe), so an image is built once and reused until one of them changes.

Needs root (debootstrap chroots), debootstrap, e2fsprogs and
openssh-client; the network it needs is the apt mirror alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

from .. import REPO
from ..kernel import kernels

IMAGES = REPO / "build" / "box"
SUITE = "bookworm"
SOURCES = pathlib.Path("/etc/apt/sources.list.d/debian.sources")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What the box runs beyond minbase: the ssh server storm and ktest reach
# it through, kexec-tools for the reboot into the next kernel, systemd
# (init, udev, networkd, the serial getty whose "login:" ktest waits
# for), kmod for insmod, bzip2 for ktest.pl's install of a kernel's
# modules (a tar -j), and procps/iproute2 for a person at the console.
PACKAGES = ("openssh-server", "kexec-tools", "systemd-sysv", "udev", "kmod",
            "bzip2", "iproute2", "procps")
# Free space in the image beyond its files: run captures, the modules.
SPARE_MIB = 256
# Units masked: timers that would start work in the middle of a
# measurement, and what only slows a TCG boot (the e2scrub reaper, the
# static gettys, kexec-tools' own reboot handling, which would load
# /vmlinuz over the kernel ktest.pl chose).
MASKED = ("apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
          "fstrim.timer", "e2scrub_reap.service", "getty-static.service",
          "kexec.service", "kexec-load.service")
# QEMU's user network has one address for the guest: no DHCP to wait for.
# No LLDP client: it needs AF_PACKET, which a kernel built for the VM
# (configs/box/testvm-kernel.config) does without, and networkd fails
# the whole link when it cannot start it.
NETWORK = """[Match]
Name=en* eth*

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
LLDP=no
"""


class ImageError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Image:
    dir: pathlib.Path

    @property
    def disk(self) -> pathlib.Path:
        return self.dir / "box.img"

    @property
    def key(self) -> pathlib.Path:
        """The root ssh key the image trusts."""
        return self.dir / "id_ed25519"

    @property
    def kernels(self) -> list[str]:
        return (self.dir / "kernels").read_text().split()

    @property
    def ready(self) -> bool:
        return (self.dir / "done").is_file() and self.disk.is_file()


def mirror_from_sources(sources: pathlib.Path = SOURCES) -> str:
    """The first Debian archive URI of apt's deb822 sources (the mirror
    this host installs from), else deb.debian.org."""
    try:
        text = sources.read_text()
    except OSError:
        return DEFAULT_MIRROR
    for stanza in re.split(r"\n\s*\n", text):
        uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
        suites = re.search(r"^Suites:\s*(.*)$", stanza, re.M)
        if uris and suites and SUITE in suites.group(1).split():
            return uris.group(1)
    return DEFAULT_MIRROR


def kernel_files(release: str, boot: pathlib.Path = kernels.BOOT
                 ) -> list[pathlib.Path]:
    files = [boot / f"{name}-{release}"
             for name in ("vmlinuz", "initrd.img", "config", "System.map")]
    missing = [str(f) for f in files[:2] if not f.is_file()]
    if missing:
        raise ImageError(f"kernel {release}: no {', '.join(missing)}")
    return [f for f in files if f.is_file()]


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def image_key(releases: list[str], mirror: str,
              packages: tuple[str, ...] = PACKAGES) -> str:
    """A hash of everything the image is made of."""
    h = hashlib.sha256()
    h.update(pathlib.Path(__file__).read_bytes())
    h.update(f"{SUITE} {mirror} {' '.join(packages)}\n".encode())
    for rel in releases:
        for f in kernel_files(rel):
            h.update(f"{f.name} {_sha256(f)}\n".encode())
    return h.hexdigest()[:16]


def default_releases() -> list[str]:
    """The newest installed 6.1 and 6.12 kernels, as the guests use."""
    out = []
    for series in ("6.1", "6.12"):
        try:
            out.append(kernels.resolve(series).release)
        except kernels.KernelNotFound as e:
            raise ImageError(str(e)) from e
    return out


def image_for(releases: list[str] | None = None, mirror: str | None = None
              ) -> Image:
    releases = releases or default_releases()
    mirror = mirror or mirror_from_sources()
    return Image(IMAGES / image_key(releases, mirror))


def _run(cmd: list[str], what: str, log: pathlib.Path) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT)
    if res.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise ImageError(f"{what} failed (exit {res.returncode}); the end "
                         f"of {log}:\n" + "\n".join(tail))


def configure(root: pathlib.Path, pubkey: str, releases: list[str],
              log: pathlib.Path) -> None:
    """What debootstrap leaves unset: name, fstab, network, root's key,
    the kernels, quiet timers."""
    (root / "etc" / "hostname").write_text("stormbox\n")
    (root / "etc" / "hosts").write_text("127.0.0.1\tlocalhost\n"
                                        "127.0.1.1\tstormbox\n")
    (root / "etc" / "fstab").write_text(
        "/dev/vda\t/\text4\trw,relatime\t0 1\n")
    (root / "etc" / "default" / "kexec").write_text(
        "# storm box: ktest.pl loads the next kernel; reboot does not\n"
        "LOAD_KEXEC=false\n")
    net = root / "etc" / "systemd" / "network"
    net.mkdir(parents=True, exist_ok=True)
    (net / "20-box.network").write_text(NETWORK)
    ssh = root / "root" / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    (ssh / "authorized_keys").write_text(pubkey)
    os.chmod(ssh / "authorized_keys", 0o600)
    for rel in releases:
        for f in kernel_files(rel):
            shutil.copy2(f, root / "boot" / f.name)
    _run(["chroot", str(root), "systemctl", "enable", "systemd-networkd"],
         "enabling systemd-networkd", log)
    _run(["chroot", str(root), "systemctl", "mask", *MASKED],
         "masking timers", log)
    for deb in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        deb.unlink()


def tree_mib(root: pathlib.Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total // (1 << 20)


def build(releases: list[str] | None = None, mirror: str | None = None,
          quiet: bool = False) -> Image:
    """The image for these kernels, built unless it is already there."""
    releases = releases or default_releases()
    mirror = mirror or mirror_from_sources()
    image = Image(IMAGES / image_key(releases, mirror))
    if image.ready:
        return image
    for tool in ("debootstrap", "mkfs.ext4", "ssh-keygen", "chroot"):
        if not shutil.which(tool):
            raise ImageError(f"no {tool}: run scripts/setup")
    if os.geteuid() != 0:
        raise ImageError("building the box image needs root (debootstrap)")
    if image.dir.exists():
        shutil.rmtree(image.dir)
    image.dir.mkdir(parents=True)
    log = image.dir / "build.log"
    root = image.dir / "rootfs"

    def say(text: str) -> None:
        if not quiet:
            print(f"storm box image: {text}", file=sys.stderr, flush=True)

    t0 = time.monotonic()
    say(f"debootstrap {SUITE} from {mirror} (log: {log})")
    _run(["debootstrap", "--variant=minbase",
          "--include=" + ",".join(PACKAGES), SUITE, str(root), mirror],
         "debootstrap", log)
    t1 = time.monotonic()
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "storm-box",
          "-f", str(image.key)], "ssh-keygen", log)
    configure(root, image.key.with_suffix(".pub").read_text(), releases, log)
    size = tree_mib(root) + SPARE_MIB
    tmp = image.disk.with_suffix(".tmp")
    _run(["mkfs.ext4", "-q", "-F", "-L", "stormbox", "-d", str(root),
          str(tmp), f"{size}M"], "mkfs.ext4 -d", log)
    tmp.rename(image.disk)
    shutil.rmtree(root)
    (image.dir / "kernels").write_text("\n".join(releases) + "\n")
    t2 = time.monotonic()
    (image.dir / "done").write_text(
        f"debootstrap_seconds {t1 - t0:.0f}\nimage_seconds {t2 - t1:.0f}\n"
        f"size_mib {size}\nmirror {mirror}\n")
    say(f"{image.disk}: {size} MiB; debootstrap {t1 - t0:.0f} s, "
        f"configure and mkfs {t2 - t1:.0f} s")
    return image


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm box image",
        description="Build the test box's disk image (a Debian "
        f"{SUITE} system from debootstrap with sshd, kexec-tools and a "
        "serial console, and the host's stock kernels in /boot) under "
        "build/box/<key>/, or say where it is when it is built already. "
        "Needs root and the apt mirror.")
    p.add_argument("--kernel", action="append", default=[],
                   help="a release installed in /boot to put in the image; "
                   "repeat (default: the newest 6.1 and 6.12)")
    p.add_argument("--mirror", help="the Debian mirror (default: the one in "
                   f"{SOURCES})")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        image = build(args.kernel or None, args.mirror)
    except ImageError as e:
        print(f"storm box image: {e}", file=sys.stderr)
        return 1
    print(image.disk)
    return 0
