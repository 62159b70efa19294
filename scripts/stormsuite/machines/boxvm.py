"""The test box without hardware: a QEMU VM of the box image.

`storm box vm start` boots build/box/<key>/box.img (boximage.py) under
TCG with its serial console in a file, sshd on a loopback port and the
disk as a snapshot (every boot starts from the image as built), then
writes a box config for ktest.pl (build/box/vm/box.conf: the VM's port,
key and console file, then configs/box/testvm.conf and one of
testvm-ssh.conf or testvm-serial.conf). From there on the VM is a box
like any other: ktest.pl reboots it into the next kernel with kexec
(REBOOT_SCRIPT loads it, REBOOT is `systemctl kexec`) and reads its
boot: by default over ssh alone, as on a box with no serial console and
no power switch (CONSOLE is scripts/storm-ssh-console, POWER_CYCLE a
sysrq reboot over ssh); with --console serial from the serial console's
file, `storm box vm reset` its POWER_CYCLE. `stop` ends it.

One VM at a time (build/box/vm/), like one box.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from .. import REPO
from ..kernel import kbuild
from . import boximage, ktest

STATE = REPO / "build" / "box" / "vm"
TEMPLATE = REPO / "configs" / "box" / "testvm.conf"
# how ktest.pl reads the VM's boots: ssh alone, or the serial console
CONSOLES = {"ssh": REPO / "configs" / "box" / "testvm-ssh.conf",
            "serial": REPO / "configs" / "box" / "testvm-serial.conf"}
DEFAULT_CONSOLE = "ssh"
KERNEL_FRAGMENT = REPO / "configs" / "box" / "testvm-kernel.config"
# Under TCG: the boot panic "IO-APIC + timer doesn't work!" (README);
# the serial console is where ktest.pl reads the boot.
APPEND = "root=/dev/vda rw console=ttyS0,115200 no_timer_check"
TCG_ACCEL = "tcg,thread=single"


class VMError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class VM:
    state: pathlib.Path = STATE

    @property
    def pidfile(self) -> pathlib.Path:
        return self.state / "qemu.pid"

    @property
    def console(self) -> pathlib.Path:
        return self.state / "console.log"

    @property
    def monitor(self) -> pathlib.Path:
        return self.state / "monitor.sock"

    @property
    def config(self) -> pathlib.Path:
        """The box config ktest.pl and storm box read for this VM."""
        return self.state / "box.conf"

    def pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().split()[0])
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError, IndexError):
            return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qemu_command(vm: VM, image: boximage.Image, release: str, port: int,
                 cpus: int, memory: str) -> list[str]:
    return ["qemu-system-x86_64", "-name", "stormbox", "-machine", "q35",
            "-accel", TCG_ACCEL, "-smp", str(cpus), "-m", memory,
            "-display", "none", "-nodefaults", "-no-user-config",
            "-serial", f"file:{vm.console}",
            "-monitor", f"unix:{vm.monitor},server,nowait",
            "-drive", f"file={image.disk},if=virtio,format=raw,snapshot=on",
            "-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{port}-:22",
            "-device", "virtio-net-pci,netdev=net0",
            "-kernel", str(kernel_file(image, "vmlinuz", release)),
            "-initrd", str(kernel_file(image, "initrd.img", release)),
            "-append", APPEND,
            "-daemonize", "-pidfile", str(vm.pidfile)]


def kernel_file(image: boximage.Image, name: str, release: str
                ) -> pathlib.Path:
    """The host's copy of a kernel the image has (the same file)."""
    if release not in image.kernels:
        raise VMError(f"{release} is not in the image (it has "
                      f"{', '.join(image.kernels)})")
    return boximage.kernel_files(release)[0 if name == "vmlinuz" else 1]


def config_text(vm: VM, image: boximage.Image, port: int, release: str,
                console: str = DEFAULT_CONSOLE) -> str:
    if console not in CONSOLES:
        raise VMError(f"{console}: the console is one of "
                      f"{', '.join(CONSOLES)}")
    how = ("over ssh alone" if console == "ssh"
           else "from the serial console")
    return (f"# written by storm box vm start: the test VM's port, key, "
            f"console file and the kernel it powers on with; ktest.pl "
            f"reads its boots {how}\n"
            f"BOX_PORT := {port}\n"
            f"BOX_GOOD_KERNEL := {release}\n"
            f"BOX_KEY := {image.key}\n"
            f"BOX_CONSOLE := {vm.console}\n"
            f"STORM := {REPO / 'scripts' / 'storm'}\n"
            f"INCLUDE {TEMPLATE}\n"
            f"INCLUDE {CONSOLES[console]}\n")


def wait_ssh(ssh: list[str], timeout: float) -> float:
    """Seconds until the box answers on ssh."""
    t0 = time.monotonic()
    while True:
        res = subprocess.run([*ssh, "true"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        if res.returncode == 0:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise VMError(f"no ssh after {timeout:.0f} s")
        time.sleep(2)


def start(image: boximage.Image, release: str, cpus: int = 2,
          memory: str = "1G", timeout: float = 600, vm: VM = VM(),
          console: str = DEFAULT_CONSOLE) -> tuple[VM, float]:
    """Boot the VM on release and wait for its sshd; the VM and the
    seconds that took. console: how ktest.pl reads its boots (CONSOLES)."""
    if console not in CONSOLES:
        raise VMError(f"{console}: the console is one of "
                      f"{', '.join(CONSOLES)}")
    if vm.pid() is not None:
        raise VMError(f"a box VM runs already (pid {vm.pid()}): "
                      "storm box vm stop")
    vm.state.mkdir(parents=True, exist_ok=True)
    for f in (vm.console, vm.monitor, vm.pidfile):
        f.unlink(missing_ok=True)
    vm.console.touch()
    port = free_port()
    t0 = time.monotonic()
    cmd = qemu_command(vm, image, release, port, cpus, memory)
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                         capture_output=True)
    if res.returncode != 0:
        raise VMError(f"qemu failed (exit {res.returncode}): "
                      f"{res.stderr.strip()}")
    vm.config.write_text(config_text(vm, image, port, release, console))
    ssh = ktest.read_config(vm.config).ssh
    try:
        wait_ssh(ssh, timeout)
    except VMError as e:
        stop(vm)
        tail = vm.console.read_text(errors="replace").splitlines()[-10:]
        raise VMError(f"{e}; the console's last lines:\n"
                      + "\n".join(tail)) from e
    return vm, time.monotonic() - t0


def monitor_command(vm: VM, command: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(vm.monitor))
        s.recv(4096)                    # the monitor's banner
        s.sendall(command.encode() + b"\n")
        time.sleep(0.5)


def reset(vm: VM = VM()) -> None:
    """A power cycle: ktest.pl's POWER_CYCLE for the VM with --console
    serial."""
    if vm.pid() is None:
        raise VMError("no box VM runs")
    monitor_command(vm, "system_reset")


def stop(vm: VM = VM(), timeout: float = 20) -> bool:
    """End the VM; False if none ran."""
    pid = vm.pid()
    if pid is None:
        return False
    try:
        monitor_command(vm, "quit")
    except OSError:
        pass
    t0 = time.monotonic()
    while vm.pid() is not None and time.monotonic() - t0 < timeout:
        time.sleep(0.5)
    if vm.pid() is not None:
        os.kill(pid, signal.SIGKILL)
    return True


def kconfig(tree: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """Write to out the .config a kernel for this VM starts from
    (storm box build --kconfig): allnoconfig, configs/guest.config and
    configs/box/testvm-kernel.config, configured from tree in a scratch
    build directory (the tree stays clean; kbuild.configure would keep a
    .config made from another tree). storm box build forces
    configs/box.config on top, as on any box."""
    STATE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=STATE, prefix="kconfig-") as work:
        kbuild.configure(tree.resolve(), pathlib.Path(work),
                         kbuild.merged_fragment([KERNEL_FRAGMENT]), jobs=1,
                         progress=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pathlib.Path(work) / ".config", out)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm box vm",
        description="The test box without hardware: start boots the box "
        "image (storm box image, built first if missing) in a TCG VM "
        "reached on a loopback ssh port, and prints the box config to "
        "give storm box (--config); reset power-cycles it (ktest.pl's "
        "POWER_CYCLE with --console serial); stop ends it; kconfig writes the .config a "
        "kernel for it starts from (--tree, --out; give it to storm box "
        "build, ab or bisect-test as --kconfig).")
    p.add_argument("action",
                   choices=("start", "reset", "stop", "config", "kconfig"))
    p.add_argument("--tree", type=pathlib.Path,
                   help="kconfig: the kernel source tree")
    p.add_argument("--out", type=pathlib.Path,
                   help="kconfig: where the .config goes")
    p.add_argument("--kernel", default="6.1",
                   help="the kernel it powers on with: 6.1, 6.12 or a "
                   "release in the image (default 6.1)")
    p.add_argument("--cpus", type=int, default=2, help="vCPUs (default 2)")
    p.add_argument("--memory", default="1G", help="memory (default 1G)")
    p.add_argument("--console", choices=tuple(CONSOLES),
                   default=DEFAULT_CONSOLE,
                   help="start: how ktest.pl reads the VM's boots: ssh "
                   "alone (scripts/storm-ssh-console, a sysrq reboot for "
                   "POWER_CYCLE: a box with no serial console and no power "
                   "switch), or serial (the serial console's file, storm "
                   "box vm reset) (default ssh)")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    vm = VM()
    try:
        if args.action == "start":
            from ..kernel import kernels
            image = boximage.build()
            release = args.kernel
            if release not in image.kernels:
                release = kernels.resolve(args.kernel).release
            _, secs = start(image, release, args.cpus, args.memory, vm=vm,
                            console=args.console)
            print(f"storm box vm: {release} up, ssh answers after "
                  f"{secs:.0f} s; pid {vm.pid()}", file=sys.stderr)
            print(vm.config)
        elif args.action == "reset":
            reset(vm)
        elif args.action == "kconfig":
            if args.tree is None or args.out is None:
                p.error("kconfig needs --tree and --out")
            print(kconfig(args.tree, args.out))
        elif args.action == "stop":
            if not stop(vm):
                print("storm box vm: none runs", file=sys.stderr)
        else:
            print(vm.config)
    except (VMError, boximage.ImageError, ktest.ConfigError,
            kbuild.BuildError, OSError) as e:
        print(f"storm box vm: {e}", file=sys.stderr)
        return 1
    return 0
