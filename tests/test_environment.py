"""The box's environment: storm-run's early refusals (lockdown, module
signature enforcement, no debugfs) on fake /proc and /sys trees, the
settings it captures and environment.py parses, and compare's refusal when
they differ."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from conftest import REPO
from stormsuite.analysis import verdict
from stormsuite.report import compare
from stormsuite.runfiles import environment, runs
from test_run_json import fake, needs_root  # noqa: F401 (a fixture)

CHECKS = REPO / "scripts" / "storm-run-checks.sh"
SIGNATURE = b"\0" * 12 + b"~Module signature appended~\n"
DATA = pathlib.Path(__file__).parent / "data"


def tree(root: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for path, text in files.items():
        f = root / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text + "\n")
    return root


def check(name: str, root: pathlib.Path, *args: str) -> tuple[int, str]:
    """A check function of storm-run-checks.sh: (status, its $why)."""
    p = subprocess.run(
        ["sh", "-c", f'. "$0"; why=; {name} "$@"; rc=$?; '
         'printf %s "$why"; exit $rc', str(CHECKS), str(root), *args],
        capture_output=True, text=True, timeout=30)
    assert not p.stderr, p.stderr
    return p.returncode, p.stdout


@pytest.fixture
def unsigned(tmp_path) -> pathlib.Path:
    ko = tmp_path / "ipistorm.ko"
    ko.write_bytes(b"\x7fELF" + b"\0" * 64)
    return ko


@pytest.fixture
def signed(tmp_path) -> pathlib.Path:
    ko = tmp_path / "signed.ko"
    ko.write_bytes(b"\x7fELF" + b"\0" * 64 + SIGNATURE)
    return ko


LOCKDOWN = "/sys/kernel/security/lockdown"
SIG_ENFORCE = "/sys/module/module/parameters/sig_enforce"


@pytest.mark.parametrize("level", ["integrity", "confidentiality"])
def test_lockdown_refuses_an_unsigned_module(tmp_path, unsigned, signed,
                                             level):
    root = tree(tmp_path / "root", {
        LOCKDOWN: "none integrity confidentiality".replace(
            level, f"[{level}]")})
    rc, why = check("check_lockdown", root, str(unsigned))
    assert rc == 1
    assert f"locked down ({level}" in why and str(unsigned) in why
    assert "lockdown=none" in why         # and what to do about it
    assert check("check_lockdown", root, str(signed)) == (0, "")


def test_no_lockdown_passes(tmp_path, unsigned):
    root = tree(tmp_path / "root", {
        LOCKDOWN: "[none] integrity confidentiality"})
    assert check("check_lockdown", root, str(unsigned)) == (0, "")
    # a kernel without the lockdown LSM has no file at all
    assert check("check_lockdown", tmp_path / "empty", str(unsigned)) == \
        (0, "")


def test_signature_enforcement_refuses_an_unsigned_module(tmp_path, unsigned,
                                                         signed):
    root = tree(tmp_path / "root", {SIG_ENFORCE: "Y"})
    rc, why = check("check_sig_enforce", root, str(unsigned))
    assert rc == 1 and "enforces module signatures" in why
    assert "module.sig_enforce=1" in why
    assert check("check_sig_enforce", root, str(signed)) == (0, "")
    off = tree(tmp_path / "off", {SIG_ENFORCE: "N"})
    assert check("check_sig_enforce", off, str(unsigned)) == (0, "")


def test_debugfs_missing_or_turned_off(tmp_path):
    has = "nodev\tsysfs\nnodev\tdebugfs\nnodev\ttracefs"
    good = tree(tmp_path / "good", {"/proc/filesystems": has,
                                    "/proc/cmdline": "quiet"})
    assert check("check_debugfs", good) == (0, "")
    none = tree(tmp_path / "none", {"/proc/filesystems": "nodev\tsysfs",
                                    "/proc/cmdline": "quiet"})
    rc, why = check("check_debugfs", none)
    assert rc == 1 and "no debugfs" in why and "CONFIG_DEBUG_FS" in why
    for arg in ("debugfs=off", "debugfs=no-mount"):
        off = tree(tmp_path / arg, {"/proc/filesystems": has,
                                    "/proc/cmdline": f"ro {arg} quiet"})
        rc, why = check("check_debugfs", off)
        assert rc == 1 and f"{arg} on the kernel command line" in why


CPU = "/sys/devices/system/cpu/"
BOX = {
    **{f"{CPU}cpu{n}/cpufreq/scaling_governor": "performance"
       for n in range(4)},
    f"{CPU}cpu0/cpufreq/scaling_driver": "intel_pstate",
    f"{CPU}intel_pstate/no_turbo": "0",
    f"{CPU}smt/control": "on",
    f"{CPU}smt/active": "1",
    f"{CPU}cpu0/microcode/version": "0x2b000603",
    f"{CPU}cpu0/cpuidle/state0/name": "POLL",
    f"{CPU}cpu0/cpuidle/state1/name": "C1",
    f"{CPU}cpu0/cpuidle/state2/name": "C1E",
    f"{CPU}cpu0/cpuidle/state3/name": "C6",
    f"{CPU}cpu0/cpuidle/state0/disable": "0",
    f"{CPU}cpu0/cpuidle/state1/disable": "0",
    f"{CPU}cpu0/cpuidle/state2/disable": "0",
    f"{CPU}cpu0/cpuidle/state3/disable": "1",
    "/sys/module/intel_idle/parameters/max_cstate": "9",
    f"{CPU}isolated": "2-3",
    f"{CPU}nohz_full": "2-3",
    f"{CPU}vulnerabilities/meltdown": "Not affected",
    f"{CPU}vulnerabilities/spectre_v2": "Mitigation: Enhanced IBRS",
    "/sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never",
    "/sys/kernel/mm/transparent_hugepage/defrag":
        "always defer defer+madvise [madvise] never",
    LOCKDOWN: "[none] integrity confidentiality",
    SIG_ENFORCE: "N",
}


def sysenv(root: pathlib.Path) -> str:
    p = subprocess.run(["sh", "-c", '. "$0"; sysenv "$1"', str(CHECKS),
                        str(root)], capture_output=True, text=True,
                       timeout=30, check=True)
    return p.stdout


def test_a_box_settings_captured_and_parsed(tmp_path):
    text = sysenv(tree(tmp_path, BOX))
    # paths as on the box, not under the test's root
    assert f"{CPU}smt/control\ton\n" in text
    env = environment.fields(text, "ro isolcpus=2-3 nohz_full=2-3 "
                        "intel_idle.max_cstate=3 mitigations=auto,nosmt")
    assert env == {
        "cpufreq_governor": "performance", "cpufreq_driver": "intel_pstate",
        "turbo": "on", "smt": "on", "smt_active": "1",
        "microcode": "0x2b000603", "cstates": "POLL C1 C1E C6",
        "cstates_disabled": "C6",
        "cstate_limits": "intel_idle.max_cstate=3",
        "cstate_max": "intel_idle.max_cstate=9",
        "isolcpus": "2-3", "nohz_full": "2-3", "mitigations": "auto,nosmt",
        "vulnerabilities": "meltdown=Not affected; "
        "spectre_v2=Mitigation: Enhanced IBRS",
        "thp": "madvise", "thp_defrag": "madvise", "lockdown": "none",
        "sig_enforce": "N"}


def test_a_guest_without_cpufreq_or_smt_control(tmp_path):
    env = environment.fields(sysenv(tree(tmp_path, {
        f"{CPU}nohz_full": "(null)", f"{CPU}isolated": "",
        f"{CPU}cpufreq/boost": "0"})))
    assert env["cpufreq_governor"] == "none" and env["turbo"] == "off"
    assert env["smt"] == env["microcode"] == env["lockdown"] == "unknown"
    assert env["nohz_full"] == env["isolcpus"] == ""
    assert env["mitigations"] == "auto" and env["cstates"] == "none"


def side(label: str, **env: str) -> runs.Series:
    doc = json.loads(next((DATA / "runs").rglob("run-*.json")).read_text())
    docs = []
    for boot in ("a", "b"):
        d = json.loads(json.dumps(doc))
        d["env"].update(env, boot_id=f"{label}-{boot}")
        d["_path"] = f"{label}/{boot}"
        docs.append(d)
    return runs.series_from_runs(label, pathlib.Path(label), docs)


def test_compare_refuses_a_different_governor_and_says_which():
    a = side("A", cpufreq_governor="performance")
    b = side("B", cpufreq_governor="powersave")
    with pytest.raises(verdict.CompareError) as e:
        verdict.build([a, b])
    assert "cpufreq_governor: A has performance, B has powersave" in \
        str(e.value)
    assert "--force" in str(e.value)
    cmp = verdict.build([a, b], force=True)
    assert any("cpufreq_governor" in w and "--force" in w
               for w in cmp.warnings)


def test_what_the_kernel_brings_is_said_not_refused():
    """Two kernels on one box: their config hash, their vulnerabilities'
    text and the idle states their drivers offer differ by nature."""
    a = side("A", kernel_config="sha256:1", vulnerabilities="x=Vulnerable",
             cstates="POLL C1", turbo="on", thp="madvise",
             cstate_max="intel_idle.max_cstate=9 processor.max_cstate=8",
             cstate_limits="")
    b = side("B", kernel_config="sha256:2", vulnerabilities="x=Mitigation",
             cstates="POLL C1 C1E", turbo="on", thp="madvise",
             cstate_max="", cstate_limits="")
    cmp = verdict.build([a, b])
    text = "\n".join(cmp.warnings)
    assert "environments differ in vulnerabilities" in text
    assert "environments differ in cstates" in text
    # a kernel built without intel_idle and processor has no max_cstate
    assert "environments differ in cstate_max" in text
    assert "kernel_config" not in text


def test_boot_argument_settings_differ_by_design_in_a_matrix():
    """nohz_full=, isolcpus=, mitigations=, nosmt: refused between sides
    booted alike, taken between sides whose boot arguments differ."""
    a = side("A", boot_args="", nohz_full="", isolcpus="")
    b = side("B", boot_args="", nohz_full="1-3", isolcpus="")
    with pytest.raises(verdict.CompareError, match="nohz_full: A has"):
        verdict.build([a, b])
    b = side("B", boot_args="nohz_full=1-3", nohz_full="1-3", isolcpus="")
    verdict.build([a, b])


def test_old_run_files_without_the_fields_still_compare():
    a = side("A")
    b = side("B", cpufreq_governor="performance", turbo="on")
    verdict.build([a, b])


def test_kvm_guests_say_their_vcpus_were_overcommitted():
    placed = dict(accel="kvm", vcpus_overcommitted="yes", vcpus_pinned="no",
                  vcpu_placement="8 vCPUs on 2 host CPUs: overcommitted, "
                  "not pinned")
    cmp = verdict.build([side("A", **placed), side("B", **placed)],
                        force=True)
    assert any("A: KVM guest vCPUs 8 vCPUs on 2 host CPUs" in w
               and "PV TLB flush" in w for w in cmp.warnings)


@needs_root
def test_storm_run_refuses_early_under_lockdown(fake, tmp_path):
    root = tree(tmp_path / "root", {
        LOCKDOWN: "none [integrity] confidentiality",
        "/proc/filesystems": "nodev\tdebugfs"})
    p = fake.run("--runs", "1", "ipistorm", "numipi=1",
                 STORM_RUN_SYSROOT=str(root))
    assert p.returncode == 1
    assert "locked down (integrity" in p.stderr
    assert not fake.log.exists()          # no insmod was tried
    assert fake.files() == []


@needs_root
def test_storm_run_records_the_box_settings(fake, tmp_path):
    root = tree(tmp_path / "root", {**BOX, "/proc/filesystems":
                                    "nodev\tdebugfs", "/proc/cmdline": ""})
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1",
                 STORM_RUN_SYSROOT=str(root))
    assert p.returncode == 0, p.stderr
    doc = json.loads(pathlib.Path(p.stdout.split()[0]).read_text())
    env = doc["env"]
    assert env["cpufreq_governor"] == "performance"
    assert env["turbo"] == "on" and env["smt"] == "on"
    assert env["cstates_disabled"] == "C6" and env["thp"] == "madvise"
    assert env["microcode"] == "0x2b000603"
    assert compare.runs.load_run(pathlib.Path(p.stdout.split()[0]))
