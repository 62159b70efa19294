"""--accel on matrix, ab, bisect and seed reaches storm vm through the one
guest-starting path (guest.vm_command), and the run's environment says
whether the vCPUs were overcommitted or pinned. Nothing boots: KVM hangs
with stock guests on this host, so the storm vm command line each driver
would run is caught instead."""

from __future__ import annotations

import contextlib
import json
import pathlib

import pytest

from stormsuite import seeds
from stormsuite.designs import ab, bisect_measure, matrix
from stormsuite.kernel import kbuild
from stormsuite.machines import guest, vm
from stormsuite.designs.bisect_state import BisectState
from stormsuite.seeds import common


@pytest.fixture
def vm_argv(monkeypatch):
    """Every storm vm command line a driver runs; each guest fails at
    once (no guest boots), which ends the driver."""
    seen: list[list[str]] = []

    def fake_run_command(cmd, prefix=""):
        seen.append(cmd)
        return 125
    monkeypatch.setattr(guest, "run_command", fake_run_command)
    monkeypatch.setattr(guest, "build_modules", lambda kernel, arch="x86_64": None)
    return seen


def accel_of(cmd: list[str]) -> str:
    assert cmd.count("--accel") == 1, cmd
    return cmd[cmd.index("--accel") + 1]


class Kernel:
    def __init__(self, release):
        self.release = release


def test_matrix_boots_kvm_guests(monkeypatch, vm_argv, tmp_path):
    monkeypatch.setattr(matrix.machines.kernels, "resolve", lambda spec, **kw: Kernel("r"))
    rc = matrix.main(["--accel", "kvm", "--boots", "2", "--jobs", "1",
                      "--results", str(tmp_path), "--no-write", "--no-plot",
                      "ipistorm", "numipi=10"])
    assert rc == 1 and vm_argv
    assert [accel_of(c) for c in vm_argv] == ["kvm"] * len(vm_argv)


def test_tcg_stays_the_default(monkeypatch, vm_argv, tmp_path):
    monkeypatch.delenv("STORM_ACCEL", raising=False)
    monkeypatch.setattr(matrix.machines.kernels, "resolve", lambda spec, **kw: Kernel("r"))
    matrix.main(["--boots", "2", "--jobs", "1", "--results", str(tmp_path),
                 "--no-write", "ipistorm"])
    assert vm_argv and accel_of(vm_argv[0]) == "tcg"


def test_one_boot_needs_the_instruction_counter_which_kvm_lacks(capsys):
    """--boots 1 decides on instructions, which only TCG counts."""
    with pytest.raises(SystemExit):
        matrix.main(["--accel", "kvm", "--boots", "1", "--dry-run",
                     "ipistorm"])
    assert "--boots 1" in capsys.readouterr().err
    assert matrix.main(["--boots", "1", "--dry-run", "ipistorm"]) == 0


def test_ab_boots_kvm_guests(monkeypatch, vm_argv, tmp_path):
    monkeypatch.setattr(ab, "git", lambda tree, *a, **k: "a" * 40)
    monkeypatch.setattr(ab.source, "lock", lambda what:
                        contextlib.nullcontext())
    monkeypatch.setattr(ab, "build_both", lambda tree, base, patched, args:
                        ([tmp_path / "base", tmp_path / "patched"], "fake"))
    monkeypatch.setattr(kbuild, "release_of", lambda out: out.name)
    rc = ab.main(["--tree", str(tmp_path), "--base", "v1", "--patched", "v2",
                  "--accel", "kvm", "--jobs", "1", "--results",
                  str(tmp_path / "res"), "--no-write", "ipistorm"])
    assert rc == 1 and vm_argv
    assert {accel_of(c) for c in vm_argv} == {"kvm"}


def test_bisect_boots_kvm_guests(monkeypatch, vm_argv, tmp_path):
    """The accel given at the start is in the bisect's state, which every
    step (a `git bisect run` child) boots its guests from."""
    monkeypatch.setattr(bisect_measure, "ensure_built",
                        lambda state, sha: tmp_path / sha)
    state = {"storm": "ipistorm", "params": [], "good": "g" * 40,
             "append": "", "cpus": 4, "memory": "2G", "timeout": 60,
             "insn": False, "accel": "kvm", "runs": 1, "warmup": 0,
             "results": str(tmp_path / "runs"), "jobs": 1,
             "dir": str(tmp_path), "tree": str(tmp_path)}
    # through state.json, as a step reads it
    (tmp_path / "state.json").write_text(json.dumps(state))
    with pytest.raises(bisect_measure.MeasureError):
        bisect_measure.build_and_boot(BisectState.load(tmp_path / "state.json"),
                              [("b" * 40, 1)])
    assert [accel_of(c) for c in vm_argv] == ["kvm"]


def test_seed_boots_kvm_guests(monkeypatch, vm_argv, tmp_path):
    monkeypatch.setattr(common.source, "lock", lambda what:
                        contextlib.nullcontext())
    monkeypatch.setattr(common, "build", lambda kernels, who: {
        k.name: tmp_path / k.name for k in kernels})
    monkeypatch.setattr(kbuild, "release_of", lambda out: out.name)
    rc = seeds.main(["000", "--accel", "kvm", "--jobs", "1", "--results",
                     str(tmp_path)])
    assert rc != 0 and vm_argv
    assert {accel_of(c) for c in vm_argv} == {"kvm"}


@pytest.mark.parametrize("cmd", [["matrix"], ["ab"], ["bisect"],
                                 ["seed", "001"]])
def test_every_guest_driver_takes_accel(cmd, capsys):
    from stormsuite import cli
    with pytest.raises(SystemExit):
        cli.main([*cmd, "--help"])
    assert "--accel {tcg,kvm}" in capsys.readouterr().out


def test_kvm_guest_runs_without_tcg_or_the_plugin(tmp_path):
    args = vm.argparse.Namespace(accel="kvm", append="", cpus=4,
                                 memory="2G", verbose=False, insn=True)
    k = vm.kernels.Kernel(image=tmp_path, release="r", kdir=None)
    cmd = vm.vng_command(args, k, tmp_path, [])
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert "--disable-kvm" not in cmd
    assert "-accel tcg" not in opts and "-plugin" not in opts


@pytest.mark.parametrize("vcpus,accel,host,over", [
    (4, "kvm", {0, 1}, True),           # more vCPUs than host CPUs
    (2, "kvm", {0, 1}, False),
    (2, "kvm", {0, 1, 2, 3}, False),
    (4, "kvm", {3}, True),              # --host-cpus 3
    (2, "tcg", {0, 1, 2, 3}, True),     # one host thread runs them all
    (1, "tcg", {0}, False),
])
def test_vcpu_placement(vcpus, accel, host, over):
    got_over, pinned, note = vm.vcpu_placement(vcpus, accel, host)
    assert got_over == over
    assert not pinned                   # storm vm pins no vCPU thread
    assert note.startswith(f"{vcpus} vCPUs on ")
    assert ("not overcommitted" in note) != over
    assert note.endswith("not pinned")


def test_guest_environment_says_how_the_vcpus_are_placed(tmp_path):
    args = vm.argparse.Namespace(accel="kvm", append="", cpus=64,
                                 concurrent_with="", name="", host_cpus="0",
                                 command=["true"])
    k = vm.kernels.Kernel(image=tmp_path, release="r", kdir=None)
    vm.write_state(tmp_path, args, k)
    env = (tmp_path / "env").read_text()
    assert "export STORM_VM_VCPUS_OVERCOMMITTED=yes\n" in env
    assert "export STORM_VM_VCPUS_PINNED=no\n" in env
    assert "STORM_VM_VCPU_PLACEMENT='64 vCPUs on 1 host CPUs: " \
        "overcommitted, not pinned'" in env
    storm_run = (pathlib.Path(vm.REPO) / "scripts" / "storm-run").read_text()
    for var in ("STORM_VM_VCPUS_OVERCOMMITTED", "STORM_VM_VCPUS_PINNED",
                "STORM_VM_VCPU_PLACEMENT"):
        assert "${" + var + ":-}" in storm_run
