"""storm vm without booting anything: kernel lookup, refusals, timeout,
and the verdict from the guest's state files (with a stand-in for vng)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import threading
import time

import pytest

from stormsuite.kernel import kernels
from stormsuite.machines import vm

REPO = pathlib.Path(__file__).resolve().parents[1]
STORM = str(REPO / "scripts" / "storm")


def fake_boot(tmp_path, names):
    boot = tmp_path / "boot"
    mods = tmp_path / "modules"
    boot.mkdir()
    for n in names:
        (boot / f"vmlinuz-{n}").write_text("")
        (mods / n / "build").mkdir(parents=True)
    return boot, mods


def test_series_picks_newest_release_without_pinning(tmp_path):
    boot, mods = fake_boot(tmp_path, ["6.1.0-9-amd64", "6.1.0-56-amd64",
                                      "6.1.0-100-amd64",
                                      "6.12.117+deb12-amd64"])
    k = kernels.resolve("6.1", boot, mods)
    assert k.release == "6.1.0-100-amd64"
    assert k.kdir == mods / "6.1.0-100-amd64" / "build"
    assert kernels.resolve("6.12", boot, mods).release == \
        "6.12.117+deb12-amd64"


def test_missing_series_says_what_is_installed(tmp_path):
    boot, mods = fake_boot(tmp_path, ["6.1.0-56-amd64"])
    with pytest.raises(kernels.KernelNotFound, match="installed: 6.1"):
        kernels.resolve("5.10", boot, mods)


def test_built_tree(tmp_path):
    tree = tmp_path / "linux"
    (tree / "arch/x86/boot").mkdir(parents=True)
    (tree / "arch/x86/boot/bzImage").write_text("")
    (tree / "include/generated").mkdir(parents=True)
    (tree / "include/generated/utsrelease.h").write_text(
        '#define UTS_RELEASE "6.1.99-storm"\n')
    k = kernels.resolve(str(tree))
    assert (k.release, k.kdir, k.tree) == ("6.1.99-storm", tree, tree)


def test_todays_series_is_its_build_from_debian_source(tmp_path):
    """--kernel 7.3 on a host with no 7.3 image: the kernel `storm kernel
    build --series 7.3` made; before it is built, the refusal says how to
    build it. A stock image of a series is what the series means where
    there is one (--kernel 6.12 is Debian's own 6.12)."""
    boot, mods = fake_boot(tmp_path, ["6.1.0-56-amd64"])
    root = tmp_path / "kernel"
    with pytest.raises(kernels.KernelNotFound,
                       match="storm kernel build --series 7.3"):
        kernels.resolve("7.3", boot, mods, root)
    built = kernels.series_build("7.3", root)
    (built / "arch/x86/boot").mkdir(parents=True)
    (built / "arch/x86/boot/bzImage").write_text("")
    (built / "include/generated").mkdir(parents=True)
    (built / "include/generated/utsrelease.h").write_text(
        '#define UTS_RELEASE "7.3.4-storm"\n')
    # a build that did not finish is not booted
    (built / ".storm-config").write_text("")
    with pytest.raises(kernels.KernelNotFound):
        kernels.resolve("7.3", boot, mods, root)
    (built / ".storm-built").write_text("{}")
    k = kernels.resolve("7.3", boot, mods, root)
    assert (k.release, k.tree) == ("7.3.4-storm", built)
    # with a stock 7.3 installed, 7.3 is that one
    (boot / "vmlinuz-7.3.4+deb13-amd64").write_text("")
    assert kernels.resolve("7.3", boot, mods, root).release \
        == "7.3.4+deb13-amd64"


def test_unbuilt_tree_refused(tmp_path):
    with pytest.raises(kernels.KernelNotFound, match="not a built kernel"):
        kernels.resolve(str(tmp_path))


@pytest.mark.parametrize("spec", ["banana", "/no/such/vmlinuz"])
def test_nonsense_kernel_refused(spec):
    with pytest.raises(kernels.KernelNotFound):
        kernels.resolve(spec)


def run_storm(*args, timeout=60):
    return subprocess.run([STORM, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def test_help():
    for args in (["--help"], ["vm", "--help"], ["show", "--help"]):
        p = run_storm(*args)
        assert p.returncode == 0 and "usage" in p.stdout.lower(), args


def test_vm_without_command_refused():
    p = run_storm("vm", "--kernel", "6.1")
    assert p.returncode == 2 and "give a command" in p.stderr


def test_vm_unknown_kernel_refused():
    p = run_storm("vm", "--kernel", "4.19", "--", "true")
    assert p.returncode == 2 and "no Debian 4.19 kernel" in p.stderr


def test_unknown_subcommand():
    p = run_storm("frobnicate")
    assert p.returncode == 2 and "unknown subcommand" in p.stderr


def assert_gone(pid: int) -> None:
    """The process has exited (at most a zombie waiting for its parent)."""
    time.sleep(0.2)
    assert not pathlib.Path(f"/proc/{pid}").exists() or \
        "Z" in pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_timeout_kills_the_whole_guest(tmp_path):
    """run_guest() kills vng and everything it started after the timeout."""
    pidfile = tmp_path / "child"
    cmd = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"]
    start = time.monotonic()
    assert vm.run_guest(cmd, 1.5, tmp_path / "log") is None
    assert time.monotonic() - start < 10
    assert_gone(int(pidfile.read_text()))


def test_a_signal_to_storm_vm_kills_the_guest(tmp_path):
    """vng runs in its own session, out of reach of the terminal's Ctrl-C:
    storm vm must kill it itself when it is interrupted."""
    pidfile = tmp_path / "child"
    cmd = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"]
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    with pytest.raises(vm.Interrupted, match="SIGTERM"):
        vm.run_guest(cmd, 60, tmp_path / "log")
    assert_gone(int(pidfile.read_text()))
    # and our own handler is gone again
    assert signal.getsignal(signal.SIGTERM) is not vm._interrupted


FAKE_VNG = """#!/bin/sh
# stands in for vng: find the state dir in --exec and write what a guest would
for a; do last=$a; done
state=${last##* }
echo "guest says hi"
printf '%s\\n' "$FAKE_DMESG" > "$state/dmesg"
[ "$FAKE_RC" = none ] || echo "$FAKE_RC" > "$state/rc"
[ -z "$FAKE_KLOG" ] || printf '%s\\n' "$FAKE_KLOG" > "$state/kernel.log"
"""


@pytest.fixture
def fake_vng(tmp_path, monkeypatch):
    script = tmp_path / "vng"
    script.write_text(FAKE_VNG)
    script.chmod(0o755)
    monkeypatch.setattr(vm, "find_vng", lambda: str(script))
    monkeypatch.setattr(vm, "build_modules", lambda kernel, quiet: None)
    monkeypatch.setattr(kernels, "resolve", lambda spec, **kw: kernels.Kernel(
        image=script, release="6.1.0-test", kdir=None))
    return monkeypatch


@pytest.mark.parametrize("rc,log,expect", [
    ("0", "[ 1.0] all fine", 0),
    ("7", "[ 1.0] all fine", 7),
    ("0", "[ 1.0] WARNING: CPU: 1 PID: 1 at kernel/smp.c:1 x", vm.EXIT_KERNEL_PROBLEM),
    ("5", "[ 1.0] BUG: soft lockup - CPU#0 stuck", 5),
    ("none", "", vm.EXIT_NO_RUN),
])
def test_verdict_from_guest_state(fake_vng, capsys, rc, log, expect):
    fake_vng.setenv("FAKE_RC", rc)
    fake_vng.setenv("FAKE_DMESG", log)
    assert vm.main(["--", "true"]) == expect
    out = capsys.readouterr()
    assert "guest says hi" in out.out
    if expect:
        assert "storm vm:" in out.err


@pytest.mark.parametrize("rc,log,outcome,command_exit", [
    ("0", "[ 1.0] all fine", "ok", 0),
    ("124", "[ 1.0] all fine", "command-failed", 124),
    ("125", "[ 1.0] all fine", "command-failed", 125),
    ("3", "[ 1.0] all fine", "command-failed", 3),
    ("0", "[ 1.0] WARNING: CPU: 1 PID: 1 at kernel/smp.c:1 x",
     "kernel-problem", 0),
    ("none", "", "no-run", None),
])
def test_status_file_tells_the_command_from_storm_vm(fake_vng, tmp_path,
                                                     rc, log, outcome,
                                                     command_exit):
    """COMMAND exiting 124 and a timeout give the same exit status (as
    with timeout(1)); --status-file says which it was."""
    fake_vng.setenv("FAKE_RC", rc)
    fake_vng.setenv("FAKE_DMESG", log)
    status = tmp_path / "status.json"
    code = vm.main(["--status-file", str(status), "--", "true"])
    st = json.loads(status.read_text())
    assert (st["outcome"], st["command_exit"], st["exit"]) == \
        (outcome, command_exit, code)
    assert bool(st["problems"]) == (outcome == "kernel-problem")
    assert st["kernel"] == "6.1.0-test"


def test_status_file_on_timeout(fake_vng, tmp_path, monkeypatch):
    monkeypatch.setattr(vm, "run_guest", lambda *a, **k: None)
    status = tmp_path / "status.json"
    assert vm.main(["--status-file", str(status), "--", "true"]) == \
        vm.EXIT_TIMEOUT
    st = json.loads(status.read_text())
    assert st["outcome"] == "timeout" and st["command_exit"] is None


def test_a_guest_that_panics_says_why(fake_vng, capsys):
    """vng hides the serial console and reboots on panic: the panic line
    comes from the early console on the second serial port."""
    fake_vng.setenv("FAKE_RC", "none")
    fake_vng.setenv("FAKE_DMESG", "")
    fake_vng.setenv("FAKE_KLOG", "[ 9.1] Oops: general protection fault\n"
                    "[ 9.2] Kernel panic - not syncing: Fatal exception")
    assert vm.main(["--", "true"]) == vm.EXIT_NO_RUN
    err = capsys.readouterr().err
    assert "Kernel panic - not syncing: Fatal exception" in err
    assert "general protection fault" in err


def test_kernel_log_is_kept_on_the_host(tmp_path):
    """The guest's kernel messages go to a host file whatever --verbose
    says, at a level that keeps oopses and panics but not every pr_info."""
    args = vm.argparse.Namespace(accel="tcg", append="idle=poll", cpus=4,
                                 memory="2G", verbose=False)
    k = kernels.Kernel(image=tmp_path, release="r", kdir=None)
    cmd = vm.vng_command(args, k, tmp_path, [])
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert f"-serial file:{tmp_path / vm.KERNEL_LOG}" in opts
    # one TCG thread for all vCPUs: no cross-vCPU translation races
    assert "-accel tcg,thread=single" in opts
    append = cmd[cmd.index("--append") + 1]
    assert append.startswith("earlycon=uart8250,io,0x2f8,115200 "
                             "keep_bootcon no_timer_check log_buf_len=16M ")
    assert " loglevel=5" in append
    assert " modprobe.blacklist=kvm,kvm_amd," in append
    assert append.endswith("idle=poll")
    # no 3 s wait for a virtiofsd per shared directory
    assert "--force-9p" in cmd


def test_command_is_kept_out_of_the_kernel_command_line(tmp_path):
    """The command goes in a file: the kernel command line is short."""
    args = vm.argparse.Namespace(accel="tcg", append="", cpus=4,
                                 concurrent_with="", name="", host_cpus="",
                                 command=["echo", "a b", "$HOME"])
    k = kernels.Kernel(image=tmp_path, release="r", kdir=None)
    vm.write_state(tmp_path, args, k)
    cmd = (tmp_path / "cmd").read_text().splitlines()[-1]
    assert cmd == "echo 'a b' '$HOME'"
    assert "STORM_ACCEL=tcg" in (tmp_path / "env").read_text()
    assert "STORM_VM_ACCEL=tcg,thread=single" in (tmp_path / "env").read_text()


def test_guest_step_says_what_became_of_the_guest(tmp_path):
    """guest.run_storm's failure message comes from --status-file."""
    from stormsuite.machines import guest
    f = tmp_path / "status.json"
    for outcome, extra, said in (
            ("timeout", {}, "the guest timed out and was killed"),
            ("no-run", {}, "the guest never ran the command"),
            ("command-failed", {"command_exit": 124},
             "the command in the guest exited 124"),
            ("kernel-problem", {"problems": ["[ 1.0] BUG: x"]},
             "the guest's dmesg shows a kernel problem: [ 1.0] BUG: x")):
        f.write_text(json.dumps(dict(outcome=outcome, state="S", **extra)))
        assert guest.outcome_text(f, 124) == \
            f"{said} (storm vm exit 124; files in S)"
    f.unlink()
    assert guest.outcome_text(f, 3) == "storm vm exit 3, no status written"


def test_a_boot_whose_only_trouble_is_its_checks_is_a_measurement(tmp_path):
    """storm run exits 3 when a storm's checks failed, its runs written
    (storm bisect --metric failures reads them): such a boot is not a
    failed one, whether storm vm saw the exit or the checks' reports in
    dmesg; any other problem still fails it."""
    from stormsuite.machines import guest
    f = tmp_path / "status.json"
    check = "[ 9.1] ipistorm: check failed: CPU 0 ran 1 calls, 0 were sent"
    for st, want in (
            (dict(outcome="command-failed", command_exit=3), True),
            (dict(outcome="kernel-problem", command_exit=3,
                  problems=[check]), True),
            (dict(outcome="kernel-problem", command_exit=3,
                  problems=[check, "[ 9.2] BUG: soft lockup"]), False),
            (dict(outcome="kernel-problem", command_exit=0,
                  problems=[check]), False),
            (dict(outcome="command-failed", command_exit=1), False),
            (dict(outcome="timeout"), False)):
        f.write_text(json.dumps(st))
        assert guest.checks_failed_only(f) is want, st
    f.unlink()
    assert not guest.checks_failed_only(f)


def test_a_step_whose_checks_failed_does_not_stop_the_boot(tmp_path):
    """The boot's command runs every step past one that exits 3 and
    exits 3 itself; a step that fails otherwise stops the boot there."""
    from stormsuite.machines import guest
    (tmp_path / "scripts").mkdir()
    storm = tmp_path / "scripts" / "storm"
    storm.write_text('#!/bin/sh\necho "$*"\ncase "$*" in\n'
                     '*fail3*) exit 3 ;;\n*fail1*) exit 1 ;;\nesac\n')
    storm.chmod(0o755)

    def boot_rc(*params: str) -> tuple[int, list[str]]:
        boot = guest.Boot(guest.Guest("6.1"), "lab", "s-1", "b",
                          tuple(guest.Step("ipistorm", (p,))
                                for p in params))
        listing = tmp_path / "listing"
        listing.unlink(missing_ok=True)
        cmd = guest.boot_command(boot, runs=1, warmup=0,
                                 results=tmp_path, listing=listing)
        rc = subprocess.run(cmd, cwd=tmp_path).returncode
        return rc, [line.split()[-1]
                    for line in listing.read_text().splitlines()]

    assert boot_rc("a=1", "b=1") == (0, ["a=1", "b=1"])
    assert boot_rc("a=1", "fail3=1", "b=1") == (3, ["a=1", "fail3=1", "b=1"])
    assert boot_rc("fail1=1", "b=1") == (1, ["fail1=1"])
    assert boot_rc("fail3=1", "fail1=1", "b=1") == (1, ["fail3=1", "fail1=1"])


def test_arm64_guest_mounts_in_order(tmp_path):
    """An arm64 guest boots its own root (build/arm64/root) on a GICv3
    virt machine; the repository is read-only there and the writable
    directories inside it stay writable: each is mounted aside and
    bound into place, the repository first (virtme-ng mounts every
    --rwdir before any --rodir)."""
    args = vm.argparse.Namespace(accel="tcg", append="", cpus=4,
                                 memory="2G", verbose=False, insn=False)
    k = kernels.Kernel(image=tmp_path, release="r", kdir=None, arch="arm64")
    results, state = vm.REPO / "results", tmp_path / "state"
    cmd = vm.vng_command(args, k, state, [results, state])
    assert cmd[cmd.index("--arch") + 1] == "arm64"
    assert cmd[cmd.index("--root") + 1] == str(vm.arm64.ROOT)
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert "-M virt,gic-version=3 -cpu neoverse-n1" in opts
    assert "-serial" not in opts     # virt has one UART: the console's
    mounts = [(cmd[i], cmd[i + 1]) for i, a in enumerate(cmd)
              if a in ("--rodir", "--rwdir")]
    aside = vm.ARM64_MOUNTS
    assert mounts == [("--rodir", f"{aside}/0={vm.REPO}"),
                      ("--rwdir", f"{aside}/1={results}"),
                      ("--rwdir", f"{aside}/2={state}")]
    run = cmd[cmd.index("--exec") + 1]
    assert run == (f"mount --bind {aside}/0 {vm.REPO} && "
                   f"mount --bind {aside}/1 {results} && "
                   f"mount --bind {aside}/2 {state} && "
                   f"sh {vm.REPO}/scripts/guest-exec {state}")
    append = cmd[cmd.index("--append") + 1]
    assert "earlycon" not in append and "uart8250" not in append


def test_arm64_kernels_are_debians_two_and_todays_built(tmp_path):
    with pytest.raises(kernels.KernelNotFound, match="6.1, 6.12"):
        kernels.resolve("5.10", arch="arm64")
    with pytest.raises(kernels.KernelNotFound,
                       match="--series 7.3 --arch arm64"):
        kernels.resolve("7.3", arch="arm64", series_root=tmp_path)


def test_arm64_runs_under_emulation_only(fake_vng, capsys):
    """An arm64 kernel under --accel kvm is refused before any boot: this
    x86 host cannot run arm64 vCPUs natively."""
    fake_vng.setattr(kernels, "resolve", lambda spec, **kw: kernels.Kernel(
        image=vm.REPO, release="6.12.1-arm64", kdir=None, arch="arm64"))
    with pytest.raises(SystemExit) as e:
        vm.main(["--arch", "arm64", "--kernel", "6.12", "--accel", "kvm",
                 "--", "true"])
    assert e.value.code == 2
    assert "--arch arm64 runs under emulation only" in capsys.readouterr().err
