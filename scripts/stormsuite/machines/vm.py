"""storm vm: boot a kernel in a QEMU guest (virtme-ng) and run a command.

The guest shares the host's root read-only, runs COMMAND as root in the
repository, and may write only to results/ ($STORM_RESULTS; and any
--rwdir). The host
reads the command's exit status and the guest's dmesg from a state
directory the guest writes, so nothing depends on QEMU's own exit code.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import hashlib
import json
import os
import pathlib
import shlex
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .. import REPO
from ..kernel import arm64, kernels, source
from ..runfiles import dmesg, runs

EXIT_KERNEL_PROBLEM = 3     # the command passed but dmesg shows BUG/WARNING/...
EXIT_TIMEOUT = 124          # as timeout(1)
EXIT_NO_RUN = 125           # the guest never ran the command (boot failure)
EXIT_INTERRUPTED = 130      # storm vm got a signal and killed the guest
KERNEL_LOG = "kernel.log"   # the guest's early console, on the host
SECOND_SERIAL_PORT = "0x2f8"  # ttyS1: QEMU's second -serial
QEMU_LOG = "qemu.log"       # QEMU's -d cpu_reset,guest_errors log
# Multi-threaded TCG in QEMU 7.2 (Debian 12) now and then crashes stock
# guests: seen here, an "Oops: int3" in code the kernel had just patched
# with text_poke (a stale translation on another vCPU) and a double fault
# with garbage EFLAGS in SLUB's cmpxchg16b, each a silent end of the guest.
# One host thread for all vCPUs has no cross-vCPU races, and on a 2-core
# host it boots faster (54 s against 88 s for 6.12 with 4 vCPUs).
TCG_ACCEL = "tcg,thread=single"
# What udev's coldplug loads into a Debian guest that no storm needs, and
# what it costs under TCG: kvm for the emulated CPU's SVM/VMX (6 s), the
# q35 SATA controller and its CD-ROM (3 s), the crypto and CRC
# accelerators, the watchdogs, PS/2 mouse and speaker drivers. Kept out
# with modprobe.blacklist= (udev's module loading honours it; insmod of a
# storm does not look at it). virtme-ng's initramfs loads the 9p and
# virtio modules the guest does need. Built kernels (storm kernel build)
# have none of these.
UNNEEDED_MODULES = (
    "kvm", "kvm_amd", "kvm_intel", "ccp", "ahci", "libahci", "libata",
    "sr_mod", "cdrom", "sg", "iTCO_wdt", "iTCO_vendor_support", "i6300esb",
    "intel_pmc_bxt", "lpc_ich", "i2c_i801", "i2c_smbus", "psmouse",
    "serio_raw", "pcspkr", "evdev", "joydev", "aesni_intel", "crc32c_intel",
    "crc32_pclmul", "crct10dif_pclmul", "ghash_clmulni_intel", "sha1_ssse3",
    "sha256_ssse3", "sha512_ssse3", "powernow_k8", "button", "crypto_simd",
    "cryptd")
# An arm64 guest's machine: GICv3, as arm64 servers have, and a
# Neoverse N1, a server core QEMU names (not "max", whose features change
# with QEMU's version).
ARM64_QEMU = "-M virt,gic-version=3 -cpu neoverse-n1"
ARM64_MOUNTS = "/run/storm-mounts"   # where an arm64 guest mounts aside
# The guest kernel's log buffer (see vng_command).
LOG_BUF_LEN = "16M"
# The instruction counter (qemu-plugin/storm-insn.c), where it writes in
# the state directory, and the tick handling counting guests boot with:
# with the default (nohz idle), whether a target's tick is stopped
# changes from run to run and moves its count between levels up to 25%
# apart; with nohz=off every CPU takes every tick, which the interrupt
# counts (LOC) then account for.
PLUGIN = "build/qemu-plugin/storm-insn.so"
INSN_LOG = "insn.log"
INSN_APPEND = "nohz=off"
CONSOLE_LOGLEVEL = 5         # up to KERN_WARNING: oopses, panics, warnings


def venv_bin() -> pathlib.Path:
    return REPO / ".venv" / "bin"


def find_vng() -> str:
    vng = venv_bin() / "vng"
    if vng.exists():
        return str(vng)
    found = shutil.which("vng")
    if not found:
        raise SystemExit("storm vm: virtme-ng is not installed; run scripts/setup")
    return found


def build_modules(kernel: kernels.Kernel, quiet: bool) -> None:
    """make the storms for this kernel (a no-op when up to date)."""
    if kernel.kdir is None:
        print(f"storm vm: no headers for {kernel.release}; using build/"
              f"{kernel.release} as it is", file=sys.stderr)
        return
    cmd = ["make", "-C", str(REPO), "--no-print-directory",
           f"KDIR={kernel.kdir}", "modules"]
    # Two guests of one kernel start at once (matrix, the tests,
    # debug-kernel): one make at a time per build/<release>, or the two
    # write the same objects and one fails on the other's half-written
    # dependency file.
    lock_dir = REPO / "build"
    lock_dir.mkdir(exist_ok=True)
    try:
        with source.made_against(kernel.kdir, "storm vm"), \
                open(lock_dir / f".modules-{kernel.release}.lock",
                     "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            res = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
    except source.SourceError as e:
        raise SystemExit(f"storm vm: {e}") from e
    if res.returncode != 0:
        sys.stderr.write(res.stdout)
        raise SystemExit(f"storm vm: building the modules for "
                         f"{kernel.release} failed")
    if not quiet:
        sys.stderr.write(res.stdout)


def memory_mib(text: str) -> int:
    """2G, 1536M, 2048 (MiB, as QEMU's -m reads a bare number) -> MiB."""
    m = re.fullmatch(r"(\d+)([MG]?)i?B?", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(f"--memory {text}: a size such as 2G or 1536M")
    return int(m.group(1)) * (1024 if m.group(2).upper() == "G" else 1)


def numa_nodes(cpus: int, memory: str, nodes: int) -> list[str]:
    """vng --numa specs for NODES nodes of equal size, CPUs in order
    (node 0: CPUs 0..cpus/nodes-1, ...), as a two-socket machine numbers
    them; none for one node (the default, no NUMA at all)."""
    if nodes <= 1:
        return []
    if cpus % nodes:
        raise ValueError(f"--numa {nodes}: {cpus} vCPUs do not split into "
                         f"{nodes} equal nodes")
    mib = memory_mib(memory)
    if mib % nodes:
        raise ValueError(f"--numa {nodes}: {memory} does not split into "
                         f"{nodes} equal nodes")
    per = cpus // nodes
    return [f"{mib // nodes}M,cpus={n * per}-{(n + 1) * per - 1}"
            for n in range(nodes)]


def vng_command(args: argparse.Namespace, kernel: kernels.Kernel,
                state: pathlib.Path, rwdirs: list[pathlib.Path]) -> list[str]:
    cmd = [find_vng(), "--run", str(kernel.image),
           "--cpus", str(args.cpus), "--memory", args.memory]
    if kernel.arch == "arm64":
        # virtme-ng's arm64 machine is virt with a Cortex-A57 and GICv2;
        # the later -M and -cpu (ARM64_QEMU) make it GICv3 and a server
        # core. The root is build/arm64/root; the repository and every
        # --rwdir are mounted into it at their host paths.
        cmd += ["--arch", "arm64", "--root", str(arm64.ROOT),
                "--busybox", str(arm64.ROOT / "bin" / "busybox")]
    if args.accel == "tcg":
        cmd.append("--disable-kvm")
    # vng tries virtio-fs first, for the root and for every --rwdir, and
    # waits 3 s for each virtiofsd that does not answer before it falls
    # back to 9p (9 s of every boot here). 9p always: the same guest
    # filesystem, and the same q35 machine (vng switches to microvm with
    # virtio-fs), on every host.
    cmd.append("--force-9p")
    for spec in numa_nodes(args.cpus, args.memory, getattr(args, "numa", 1)):
        cmd += ["--numa", spec]
    exec_prologue = ""
    if kernel.arch == "arm64":
        # virtme-ng mounts every --rwdir before any --rodir, so the
        # read-only repository would hide results/ and the state
        # directory inside it: each is mounted aside and bound into
        # place in order, the repository first.
        binds = []
        for i, (d, mode) in enumerate([(REPO, "rodir")]
                                      + [(d, "rwdir") for d in rwdirs]):
            aside = f"{ARM64_MOUNTS}/{i}"
            cmd += [f"--{mode}", f"{aside}={d}"]
            binds.append(f"mount --bind {aside} {shlex.quote(str(d))}")
        exec_prologue = " && ".join(binds) + " && "
    else:
        for d in rwdirs:
            cmd += ["--rwdir", str(d)]
    # vng sends the serial console to /dev/null unless --verbose, and boots
    # with panic=-1 and -no-reboot: a panicking guest just ends. A second
    # serial port, written to a host file, carries an early console that
    # stays on (keep_bootcon): the kernel's words from its first line to its
    # last, even a panic during boot. QEMU's -d log records a triple fault.
    qemu = (f"-serial file:{state / KERNEL_LOG} "
            if kernel.arch == "x86_64" else f"{ARM64_QEMU} ")
    qemu += f"-d cpu_reset,guest_errors -D {state / QEMU_LOG}"
    if args.accel == "tcg":
        qemu += f" -accel {TCG_ACCEL}"
    if counting_insn(args):
        qemu += f" -plugin {REPO / PLUGIN},out={state / INSN_LOG}"
    nodes = getattr(args, "numa", 1)
    if nodes > 1:
        # A socket per node: with vng's -smp N (one socket, one LLC) the
        # kernel warns at boot that CPUs sharing an LLC sit on two nodes
        # (topology_sane(): "llc-sibling ... is not on the same node").
        # The last -smp is the one QEMU takes.
        qemu += (f" -smp {args.cpus},sockets={nodes},"
                 f"cores={args.cpus // nodes},threads=1")
    cmd.append(f"--qemu-opts={qemu}")
    # log_buf_len: a long run (the check scripts, a fuzzing run) prints
    # far more than Debian's 128 KiB; a wrapped buffer loses its splats.
    append = [f"earlycon=uart8250,io,{SECOND_SERIAL_PORT},115200",
              "keep_bootcon", "no_timer_check"] \
        if kernel.arch == "x86_64" else []
    append += [f"log_buf_len={LOG_BUF_LEN}",
               "modprobe.blacklist=" + ",".join(UNNEEDED_MODULES)]
    if not args.verbose:
        # warnings, oopses and panics, not every pr_info of a storm
        append.append(f"loglevel={CONSOLE_LOGLEVEL}")
    if counting_insn(args):
        append.append(INSN_APPEND)
    if args.append:
        append.append(args.append)
    cmd += ["--append", " ".join(append)]
    if args.verbose:
        cmd.append("--verbose")
    cmd += ["--exec",
            f"{exec_prologue}sh {REPO}/scripts/guest-exec {state}"]
    return cmd


HOST_LOADAVG = "host-loadavg"  # the host's /proc/loadavg, for the guest


def counting_insn(args: argparse.Namespace) -> bool:
    """Whether this guest counts instructions: under TCG unless --no-insn
    (KVM has no plugins; a vPMU counts there, in the module)."""
    return args.accel == "tcg" and getattr(args, "insn", True)


def build_plugin() -> None:
    """make the instruction counter (a no-op when up to date)."""
    res = subprocess.run(["make", "-C", str(REPO), "--no-print-directory",
                          "plugin"], stdin=subprocess.DEVNULL, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        sys.stderr.write(res.stdout)
        raise SystemExit("storm vm: building the instruction counter "
                         f"({PLUGIN}) failed; --no-insn boots without it")


@functools.lru_cache(maxsize=2)
def qemu_version(arch: str = "x86_64") -> str:
    qemu = arm64.QEMU if arch == "arm64" else "qemu-system-x86_64"
    try:
        out = subprocess.run([qemu, "--version"],
                             capture_output=True, text=True, timeout=30)
        first = out.stdout.splitlines()[0] if out.stdout else ""
    except (OSError, subprocess.SubprocessError):
        first = ""
    return first.removeprefix("QEMU emulator version ").strip() or "unknown"


def kernel_identity(kernel: kernels.Kernel) -> tuple[str, str]:
    """(sha256 of the kernel's .config, the git revision it was built
    from, or 'unknown' for either)."""
    if kernel.tree is not None:
        config = kernel.tree / ".config"
    else:
        config = kernel.image.parent / f"config-{kernel.release}"
    digest = "unknown"
    if config.is_file():
        digest = "sha256:" + hashlib.sha256(config.read_bytes()).hexdigest()
    commit = "unknown"
    stamp = kernel.tree / ".storm-built" if kernel.tree else None
    if stamp is not None and stamp.is_file():
        try:
            commit = json.loads(stamp.read_text()).get("revision") or commit
        except ValueError:
            pass
    return digest, commit


@functools.lru_cache(maxsize=1)
def suite_identity() -> dict[str, str]:
    """This repository's version for the run files, from the host: git in
    the guest, over 9p under TCG, takes seconds a boot."""
    out = {}
    for key, args in (("STORM_SUITE_VERSION", ["describe", "--always",
                                               "--dirty"]),
                      ("STORM_SUITE_COMMIT", ["rev-parse", "HEAD"])):
        try:
            res = subprocess.run(["git", "-C", str(REPO), *args],
                                 capture_output=True, text=True, timeout=30,
                                 env={**os.environ,
                                      "GIT_OPTIONAL_LOCKS": "0"})
        except (OSError, subprocess.SubprocessError):
            continue
        if res.returncode == 0 and res.stdout.strip():
            out[key] = res.stdout.strip()
    return out


def accel_text(accel: str) -> str:
    """What run files record as env.accel: the emulation mode."""
    return f"tcg,{TCG_ACCEL.split(',', 1)[1]}" if accel == "tcg" else accel


def vcpu_placement(vcpus: int, accel: str, host_cpus: set[int]
                   ) -> tuple[bool, bool, str]:
    """(overcommitted, pinned, a note for the run file): whether the
    guest has more vCPUs than host CPUs to run them on, and whether each
    vCPU thread has a host CPU of its own. storm vm pins no vCPU thread
    (--host-cpus confines QEMU as a whole), and single-threaded TCG runs
    every vCPU on one host thread. Under KVM it matters: the PV TLB flush
    skips vCPUs the host preempted, so an overcommitted or unpinned guest
    takes fewer TLB shootdown IPIs than the hardware would."""
    threads = 1 if accel == "tcg" else len(host_cpus)
    over = vcpus > threads
    where = ("one host thread (single-threaded TCG)" if accel == "tcg"
             else f"{len(host_cpus)} host CPUs")
    note = (f"{vcpus} vCPUs on {where}: "
            + ("overcommitted" if over else "not overcommitted")
            + ", not pinned")
    return over, False, note


def write_state(state: pathlib.Path, args: argparse.Namespace,
                kernel: kernels.Kernel) -> None:
    config, commit = kernel_identity(kernel)
    over, pinned, note = vcpu_placement(
        args.cpus, args.accel,
        cpu_list(args.host_cpus) if args.host_cpus
        else os.sched_getaffinity(0))
    env = {
        "STORM_ACCEL": args.accel,
        "STORM_RESULTS": str(runs.RESULTS),
        "STORM_VM_ACCEL": accel_text(args.accel),
        "STORM_VM_QEMU_VERSION": qemu_version(kernel.arch),
        "STORM_VM_ARCH": kernel.arch,
        "STORM_VM_KERNEL": kernel.release,
        "STORM_VM_KERNEL_CONFIG": config,
        "STORM_VM_KERNEL_COMMIT": commit,
        "STORM_VM_APPEND": args.append or "",
        "STORM_VM_CPUS": str(args.cpus),
        "STORM_VM_CONCURRENT": args.concurrent_with or "",
        "STORM_VM_NAME": args.name or "",
        "STORM_HOST_LOADAVG": str(state / HOST_LOADAVG),
        "STORM_HOST_CPUS": str(os.cpu_count() or 0),
        "STORM_VM_HOST_CPUS": args.host_cpus or "",
        "STORM_VM_VCPUS_OVERCOMMITTED": "yes" if over else "no",
        "STORM_VM_VCPUS_PINNED": "yes" if pinned else "no",
        "STORM_VM_VCPU_PLACEMENT": note,
        "STORM_INSN_LOG": (str(state / INSN_LOG) if counting_insn(args)
                           else ""),
        **suite_identity(),
    }
    (state / "env").write_text("".join(
        f"export {k}={shlex.quote(v)}\n" for k, v in env.items()))
    (state / "cmd").write_text(f"cd {shlex.quote(str(REPO))} || exit 125\n"
                               + shlex.join(args.command) + "\n")


class Interrupted(Exception):
    """storm vm itself got SIGINT, SIGTERM or SIGHUP."""


def _interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def cpu_list(text: str) -> set[int]:
    """The CPUs of a list such as 0, 1,3 or 0-1 (taskset -c's syntax)."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad CPU list {text!r}")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"bad CPU list {text!r}")
        cpus.update(range(first, last + 1))
    return cpus


def run_guest(cmd: list[str], timeout: float, log: pathlib.Path,
              loadavg: pathlib.Path | None = None,
              host_cpus: set[int] | None = None) -> int | None:
    """Run vng; its exit status, or None when it was killed at the
    timeout. vng runs in a session of its own (the terminal's Ctrl-C must
    not reach QEMU half-way), so a signal to us kills the whole guest here
    and raises Interrupted: no QEMU is ever left behind. With host_cpus,
    vng and everything it starts (QEMU, its threads) run only there."""
    env = dict(os.environ)
    env["PATH"] = f"{venv_bin()}:{env.get('PATH', '')}"
    handlers = {sig: signal.signal(sig, _interrupted)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    proc = None
    try:
        with open(log, "wb") as logf:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True,
                                    preexec_fn=(lambda: os.sched_setaffinity(
                                        0, host_cpus)) if host_cpus
                                    else None)
            assert proc.stdout is not None
            deadline = time.monotonic() + timeout
            os.set_blocking(proc.stdout.fileno(), False)
            next_load = 0.0
            while True:
                if loadavg is not None and time.monotonic() >= next_load:
                    # the guest reads it at each run's start and end
                    write_loadavg(loadavg)
                    next_load = time.monotonic() + 2
                done = proc.poll() is not None
                chunk = proc.stdout.read()
                if chunk:
                    logf.write(chunk)
                    logf.flush()
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                if done:
                    return proc.returncode
                if time.monotonic() > deadline:
                    kill_guest(proc)
                    return None
                time.sleep(0.1)
    except BaseException:
        if proc is not None:
            kill_guest(proc)
        raise
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def write_loadavg(path: pathlib.Path) -> None:
    try:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(pathlib.Path("/proc/loadavg").read_text())
        tmp.replace(path)
    except OSError:
        pass


def kill_guest(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def boot_time(state: pathlib.Path, launched: float) -> str:
    """', command after 35 s (kernel up 31 s)': from QEMU's start to the
    command's, by the host's clock (guest-exec's first file), and the
    guest kernel's uptime then (the rest is QEMU, firmware, loading)."""
    mark = state / "started"
    try:
        host = mark.stat().st_mtime - launched
        up = float(mark.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    return f", command after {host:.1f} s (kernel up {up:.1f} s)"


def read_or_empty(f: pathlib.Path) -> str:
    return f.read_text(errors="replace") if f.is_file() else ""


def why_ended(state: pathlib.Path) -> str:
    """The kernel's own reason when the guest ended early, from its log."""
    for line in reversed(read_or_empty(state / KERNEL_LOG).splitlines()):
        if "Kernel panic" in line:
            return line.split("]", 1)[-1].strip()
    if "Triple fault" in read_or_empty(state / QEMU_LOG):
        return "triple fault (QEMU reset the guest)"
    if not (state / "console").is_file():
        return "it never started the command (boot failure?)"
    return "no panic in the kernel log (a reset, or QEMU died?)"


def report_failure(state: pathlib.Path, why: str) -> None:
    print(f"storm vm: {why}", file=sys.stderr)
    for name in ("dmesg", KERNEL_LOG, "console"):
        text = read_or_empty(state / name)
        if text.strip():
            print(f"---- guest {name} (last 60 lines) ----", file=sys.stderr)
            lines = text.splitlines()
            print("\n".join(lines[-60:]), file=sys.stderr)
            break
    print(f"storm vm: guest files kept in {state}", file=sys.stderr)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="storm vm",
        description="Boot a kernel in a QEMU guest with virtme-ng and run "
        "COMMAND as root in the repository; the storms built for that kernel "
        "are in build/$(uname -r)/. Exit status: COMMAND's, or 3 when the "
        "guest's dmesg shows BUG/WARNING/Oops/Call Trace/soft lockup/hung "
        "task, 124 on timeout, 125 when the guest never ran COMMAND, 130 "
        "when interrupted (as timeout(1), COMMAND's own 3, 124 or 125 look "
        "the same: --status-file says which).")
    p.add_argument("--kernel", default="6.1",
                   help="6.1, 6.12 (newest installed Debian kernel of that "
                   "series), 7.3 (built from Debian's source by storm "
                   "kernel build --series 7.3), a vmlinuz-<release>, or a "
                   "built kernel tree (default 6.1)")
    p.add_argument("--arch", choices=("x86_64", "arm64"), default="x86_64",
                   help="the guest's architecture (default x86_64); arm64 "
                   "boots Debian's arm64 6.1 or 6.12 in an emulated virt "
                   "machine with GICv3 (docs/arm64.md)")
    p.add_argument("--cpus", type=int, default=4, help="vCPUs (default 4)")
    p.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    p.add_argument("--numa", type=int, default=1, metavar="NODES",
                   help="NUMA nodes of equal size, CPUs numbered in node "
                   "order (default 1: no NUMA); --cpus and --memory must "
                   "divide evenly")
    p.add_argument("--append", default="",
                   help="extra kernel command line, e.g. 'idle=poll'")
    p.add_argument("--timeout", type=float, default=600,
                   help="kill the guest after this many seconds (default 600)")
    p.add_argument("--accel", choices=("tcg", "kvm"),
                   default=os.environ.get("STORM_ACCEL", "tcg"),
                   help="tcg (default; stock guests hang under KVM on some "
                   "hosts) or kvm")
    p.add_argument("--rwdir", action="append", default=[], type=pathlib.Path,
                   help="another host directory the guest may write")
    p.add_argument("--no-build", action="store_true",
                   help="do not (re)build the modules for the guest kernel")
    p.add_argument("--name", help="recorded in run files: this guest's name "
                   "(storm matrix, ab and bisect name their boots)")
    p.add_argument("--concurrent-with", metavar="NAME",
                   help="recorded in run files: the guest that runs at "
                   "the same time (storm matrix, ab and bisect set it)")
    p.add_argument("--host-cpus", metavar="LIST",
                   help="run the guest's QEMU only on these host CPUs "
                   "(taskset -c syntax: 0, 0-1, 1,3; recorded in run files "
                   "as env.vm_host_cpus); default: wherever the host "
                   "scheduler puts it")
    p.add_argument("--no-insn", dest="insn", action="store_false",
                   help="do not count instructions (by default a TCG guest "
                   "runs the storm-insn plugin and boots with "
                   f"{INSN_APPEND}: every run file gets insn.* rows)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show the guest's console as it boots and runs")
    p.add_argument("--status-file", type=pathlib.Path, metavar="FILE",
                   help="write what became of the guest there as JSON "
                   "(outcome: ok, command-failed, kernel-problem, timeout, "
                   "no-run or interrupted; COMMAND's own exit status): "
                   "the exit status cannot tell a timeout from COMMAND "
                   "exiting 124")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- COMMAND [ARG...]: run as root in the "
                   "repository directory (required)")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("give a command after --, e.g. storm vm -- uname -r")
    if args.cpus < 1 or args.timeout <= 0:
        p.error("--cpus and --timeout must be positive")
    if args.numa < 1:
        p.error("--numa must be at least 1")
    try:
        numa_nodes(args.cpus, args.memory, args.numa)
    except ValueError as e:
        p.error(str(e))
    if args.host_cpus:
        try:
            host_cpus = cpu_list(args.host_cpus)
        except ValueError as e:
            p.error(f"--host-cpus: {e}")
        if not host_cpus <= os.sched_getaffinity(0):
            p.error(f"--host-cpus {args.host_cpus}: this host lets us run on "
                    f"CPUs {sorted(os.sched_getaffinity(0))} only")

    try:
        kernel = kernels.resolve(args.kernel, arch=args.arch)
    except kernels.KernelNotFound as e:
        print(f"storm vm: {e}", file=sys.stderr)
        return 2
    if kernel.arch == "arm64" and args.accel != "tcg":
        p.error("--arch arm64 runs under emulation only (--accel tcg)")
    if kernel.arch == "arm64":
        # the guest's root, whichever arm64 kernel boots in it
        try:
            arm64.ensure()
        except arm64.Arm64Error as e:
            print(f"storm vm: arm64: {e}", file=sys.stderr)
            return 2
    if not os.access(kernel.image, os.R_OK):
        print(f"storm vm: cannot read {kernel.image} (run as root)",
              file=sys.stderr)
        return 2
    if not args.no_build:
        build_modules(kernel, quiet=not args.verbose)
    if counting_insn(args):
        build_plugin()

    results = runs.RESULTS
    results.mkdir(parents=True, exist_ok=True)
    vmdir = REPO / "build" / "vm"
    vmdir.mkdir(parents=True, exist_ok=True)
    state = pathlib.Path(tempfile.mkdtemp(prefix="guest-", dir=vmdir))
    write_state(state, args, kernel)
    rwdirs = [results, state] + [d.resolve() for d in args.rwdir]
    if kernel.arch == "arm64":
        for d in [REPO, *rwdirs]:
            arm64.mount_point(d)
    cmd = vng_command(args, kernel, state, rwdirs)

    started = time.monotonic()
    launched = time.time()
    outcome = guest_outcome(args, kernel, cmd, state, launched)
    outcome["seconds"] = round(time.monotonic() - started, 1)
    if args.status_file:
        write_status(args.status_file, outcome)
    if outcome["outcome"] == "ok":
        shutil.rmtree(state, ignore_errors=True)
    return outcome["exit"]


def write_status(path: pathlib.Path, outcome: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(outcome, indent=1) + "\n")
    os.replace(tmp, path)


def guest_outcome(args: argparse.Namespace, kernel: kernels.Kernel,
                  cmd: list[str], state: pathlib.Path,
                  launched: float) -> dict:
    """Run the guest; what became of it, for --status-file: outcome (ok,
    command-failed, kernel-problem, timeout, no-run, interrupted), exit
    (storm vm's status), command_exit (COMMAND's, when it ran) and the
    kernel problems found in dmesg. The exit status alone cannot say
    whether 124 was the timeout or COMMAND's own; this can."""
    def done(what: str, status: int, command_exit: int | None = None,
             problems: list[str] | None = None) -> dict:
        return {"outcome": what, "exit": status,
                "command_exit": command_exit, "problems": problems or [],
                "kernel": kernel.release, "state": str(state)}

    started = time.monotonic()
    try:
        vng_status = run_guest(
            cmd, args.timeout, state / "vng.log", state / HOST_LOADAVG,
            cpu_list(args.host_cpus) if args.host_cpus else None)
    except Interrupted as e:
        print(f"storm vm: {e}: guest killed; its files are in {state}",
              file=sys.stderr)
        return done("interrupted", EXIT_INTERRUPTED)
    elapsed = time.monotonic() - started
    if vng_status is None:
        report_failure(state, f"guest ({kernel.release}) timed out after "
                       f"{args.timeout:.0f} s and was killed")
        return done("timeout", EXIT_TIMEOUT)
    rc_file = state / "rc"
    text = rc_file.read_text().strip() if rc_file.is_file() else ""
    if not text.isdigit():
        report_failure(state, f"guest ({kernel.release}) ended before "
                       f"the command finished after {elapsed:.0f} s: "
                       f"{why_ended(state)}; vng exit status {vng_status}")
        log = (state / "vng.log").read_text(errors="replace")
        sys.stderr.write(log[-3000:])
        return done("no-run", EXIT_NO_RUN)
    rc = int(text)
    bad = dmesg.problems((state / "dmesg").read_text(errors="replace"))
    if bad:
        report_failure(state, "guest dmesg shows a kernel problem:\n  "
                       + "\n  ".join(bad[:20]))
        return done("kernel-problem", rc or EXIT_KERNEL_PROBLEM, rc, bad)
    if rc:
        report_failure(state, f"command exited with {rc}")
        return done("command-failed", rc, rc)
    print(f"storm vm: {kernel.release}, {args.cpus} vCPUs, {args.accel}, "
          f"{elapsed:.0f} s{boot_time(state, launched)}", file=sys.stderr)
    return done("ok", 0, 0)
