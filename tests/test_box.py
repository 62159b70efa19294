"""storm box without a box: the ktest config reader, the configs storm
writes for ktest.pl (read by ktest.pl itself, with a test that does
nothing to a box), the order of boots, the box templates."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO
from stormsuite.designs import boxbisect
from stormsuite.machines import box, boximage, boxvm, guest, ktest
from stormsuite.runfiles import runs

BOX_CONF = REPO / "configs" / "box" / "box.conf"
TESTVM_CONF = REPO / "configs" / "box" / "testvm.conf"
TESTVM_VARS = {"BOX_PORT": "2222", "BOX_KEY": "/k", "BOX_CONSOLE": "/c",
               "STORM": "storm"}
# the variables storm defines before a box config (ktest.Run.variables)
STORM_VARS = ktest.Run("r", pathlib.Path("b"), pathlib.Path("o"), "",
                       ()).variables


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


def test_variables_options_and_include(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    write(sub / "inner.conf", "PORT := 22\n"
          "BOX_SSH := ssh -p ${PORT} root@${HOST}\n"
          "SSH_EXEC = ${BOX_SSH} $SSH_COMMAND\n")
    conf = write(sub / "outer.conf", "HOST := box1\n# a comment\n"
                 "INCLUDE inner.conf\nMACHINE = ${HOST}\nLATER = ${UNSET}\n"
                 "TEST_START\nIGNORED = 1\n")
    cfg = ktest.read_config(conf)
    assert cfg.variables["BOX_SSH"] == "ssh -p 22 root@box1"
    assert cfg.options["MACHINE"] == "box1"
    # left for the shell, as ktest.pl leaves it
    assert cfg.options["LATER"] == "${UNSET}"
    assert "IGNORED" not in cfg.options
    assert cfg.ssh == ["ssh", "-p", "22", "root@box1"]
    assert cfg.box_dir == ktest.BOX_DIR_DEFAULT


def test_ssh_from_ktest_defaults(tmp_path):
    cfg = ktest.read_config(write(tmp_path / "b.conf",
                                  "MACHINE = box2\nSSH_USER = tester\n"
                                  "STORM_BOX_DIR := /srv/s\n"))
    assert cfg.ssh == ["ssh", "tester@box2"]
    assert cfg.box_dir == "/srv/s"
    with pytest.raises(ktest.ConfigError, match="no MACHINE"):
        ktest.read_config(write(tmp_path / "c.conf", "X = 1\n")).ssh
    with pytest.raises(ktest.ConfigError, match="undefined variable"):
        ktest.read_config(write(tmp_path / "d.conf",
                                "BOX_SSH := ssh ${NOPE}\n")).ssh


def test_conditional_sections_are_refused(tmp_path):
    """DEFAULTS IF / ELSE hold by ktest.pl's expression rules; read as
    plain defaults, both branches' options would be taken, the last
    winning: refused with the line instead."""
    text = ("MACHINE = box3\nDEFAULTS IF ${ARCH} == x86_64\n"
            "REBOOT = ssh root@box3 reboot\nDEFAULTS ELSE\n"
            "REBOOT = power-cycle box3\n")
    with pytest.raises(ktest.ConfigError,
                       match=r"e.conf:2: 'DEFAULTS IF \$\{ARCH\} == x86_64': "
                             r"storm box does not evaluate"):
        ktest.read_config(write(tmp_path / "e.conf", text))
    with pytest.raises(ktest.ConfigError, match=r"f.conf:3: 'ELSE'"):
        ktest.read_config(write(tmp_path / "f.conf",
                                "MACHINE = m\nDEFAULTS\nELSE\n"))
    # a plain DEFAULTS section and DEFAULTS OVERRIDE are read as before
    cfg = ktest.read_config(write(tmp_path / "g.conf",
                                  "DEFAULTS OVERRIDE\nMACHINE = box4\n"))
    assert cfg.options["MACHINE"] == "box4"


def ssh_only(tmp_path: pathlib.Path) -> pathlib.Path:
    """configs/box/box.conf as its comment says to make it ssh-only: the
    serial console's three lines out, the ssh-only ones uncommented."""
    lines = BOX_CONF.read_text().splitlines()
    out = []
    for line in lines:
        if line.startswith(("CONSOLE = ", "CLOSE_CONSOLE_SIGNAL = ",
                            "POWER_CYCLE = ")):
            continue
        if line.startswith(("#CONSOLE = ", "#POWER_CYCLE = ",
                            "#SLEEP_TIME = ", "#BISECT_SLEEP_TIME = ")):
            line = line[1:]
        out.append(line)
    return write(tmp_path / "ssh-only.conf", "\n".join(out) + "\n")


def vm_config(tmp_path: pathlib.Path, console: str) -> pathlib.Path:
    """The test VM's templates as storm box vm start INCLUDEs them."""
    return write(tmp_path / f"testvm-{console}.conf",
                 "".join(f"{k} := {v}\n" for k, v in TESTVM_VARS.items())
                 + f"INCLUDE {TESTVM_CONF}\n"
                 f"INCLUDE {boxvm.CONSOLES[console]}\n")


def test_templates_have_what_ktest_asks_for(tmp_path):
    confs = [BOX_CONF, ssh_only(tmp_path),
             *(vm_config(tmp_path, c) for c in boxvm.CONSOLES)]
    for conf in confs:
        cfg = ktest.read_config(conf, STORM_VARS)
        assert ktest.missing_options(cfg) == [], conf
        assert cfg.ssh[0] == "ssh" and cfg.ssh[-1].startswith("root@"), conf
    for conf in (BOX_CONF, TESTVM_CONF, *boxvm.CONSOLES.values()):
        # storm's variables are only used, never set, by a box config
        cfg = ktest.read_config(conf, TESTVM_VARS)
        assert not set(STORM_VARS) & set(cfg.variables), conf
        starts = {line.split()[0] for line in conf.read_text().splitlines()
                  if line.strip() and not line.startswith("#")}
        owned = {"TEST_START", "TEST_TYPE", "BUILD_TYPE", "TEST"}
        assert not owned & starts, conf
    # the only storm variables a box config may use: the ones it gets
    used = set()
    for conf in (BOX_CONF, TESTVM_CONF, *boxvm.CONSOLES.values()):
        used |= set(re.findall(r"\$\{(STORM_\w+)\}", conf.read_text()))
    assert used <= set(STORM_VARS), used - set(STORM_VARS)


def test_ssh_only_templates_agree():
    """box.conf's ssh-only lines are the test VM's (what the box test
    runs): the console from storm's scripts, INT to close it, a sysrq
    reboot over ssh for the power cycle."""
    vm = ktest.read_config(boxvm.CONSOLES["ssh"])
    text = BOX_CONF.read_text()
    for name in ("CONSOLE", "POWER_CYCLE"):
        assert f"#{name} = {vm.options[name]}\n" in text, name
    assert vm.options["CONSOLE"] == \
        "${STORM_SCRIPTS}/storm-ssh-console ${BOX_SSH}"
    assert "CLOSE_CONSOLE_SIGNAL" not in vm.options
    assert "/proc/sysrq-trigger" in vm.options["POWER_CYCLE"]
    assert (ktest.SCRIPTS / "storm-ssh-console").is_file()
    assert os.access(ktest.SCRIPTS / "storm-ssh-console", os.X_OK)
    serial = ktest.read_config(boxvm.CONSOLES["serial"])
    assert serial.options["CONSOLE"] == "tail -n0 -F ${BOX_CONSOLE}"
    assert serial.options["POWER_CYCLE"] == "${STORM} box vm reset"


def test_missing_option_named_before_ktest_runs(tmp_path):
    conf = write(tmp_path / "b.conf", "MACHINE = b\nBUILD_DIR = x\n")
    with pytest.raises(box.BoxError, match="OUTPUT_DIR, POWER_CYCLE, "
                       "CONSOLE"):
        box.Box.open(conf, ktest_pl=str(ktest_stub(tmp_path)))


def ktest_stub(tmp_path: pathlib.Path) -> pathlib.Path:
    p = tmp_path / "ktest.pl"
    p.write_text("exit 0;\n")
    return p


def test_interleave_alternates_kernels():
    """The box reboots in the guests' order (guest.interleave)."""
    order = guest.interleave([["a1", "a2", "a3"], ["b1", "b2", "b3"]])
    assert order == ["a1", "b1", "b2", "a2", "a3", "b3"]


def test_boot_config_text(tmp_path):
    run = ktest.Run("6.12.1-x", tmp_path / "stub", tmp_path / "stub", "",
                    (("TEST_TYPE", "test"), ("TEST", "storm box-step s")))
    text = ktest.config_text(BOX_CONF, run, "a boot")
    lines = text.splitlines()
    # variables first: the box config is read with them defined
    inc = lines.index(f"INCLUDE {BOX_CONF.resolve()}")
    assert "STORM_KERNEL := 6.12.1-x" in lines[:inc]
    assert lines[inc + 2] == "TEST_START"
    assert lines[inc + 3:] == ["TEST_TYPE = test", "TEST = storm box-step s"]


def test_build_run_forces_the_storms_options(tmp_path):
    run = box.build_run(tmp_path / "linux", "patched", tmp_path / "cfg",
                        tmp_path / "out")
    opts = dict(run.options)
    assert opts["TEST_TYPE"] == "install"
    assert opts["BUILD_TYPE"] == f"useconfig:{tmp_path / 'cfg'}"
    assert opts["ADD_CONFIG"] == str(box.FRAGMENT)
    assert run.localversion == "-storm-patched"
    fragment = box.FRAGMENT.read_text()
    for need in ("CONFIG_MODULES=y", "CONFIG_MODULE_UNLOAD=y",
                 "CONFIG_DEBUG_FS=y", "CONFIG_KPROBES=y"):
        assert need in fragment.splitlines()


def test_nobuild_dir_answers_kernelrelease(tmp_path):
    d = ktest.nobuild_dir("6.1.0-56-amd64", tmp_path)
    out = subprocess.run(["make", "-s", f"O={d}", "kernelrelease"], cwd=d,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "6.1.0-56-amd64"


@pytest.fixture(scope="module")
def ktest_pl():
    return ktest.find_ktest()


def test_ktest_reads_the_config_storm_writes(tmp_path, ktest_pl):
    """ktest.pl itself on the template and storm's variables, with a test
    that touches no box (build type, nothing to build): it reads every
    option, asks nothing, and substitutes STORM_KERNEL."""
    run = ktest.Run("6.1.0-56-amd64", tmp_path, tmp_path, "-storm-x",
                    (("TEST_TYPE", "build"), ("BUILD_TYPE", "nobuild")))
    conf = write(tmp_path / "k.conf", ktest.config_text(BOX_CONF, run, "t"))
    log = tmp_path / "ktest.log"
    rc = ktest.run(ktest_pl, conf, log, timeout=60)
    text = log.read_text()
    assert rc == 0, text[-2000:]
    assert "GRUB_MENU = 6.1.0-56-amd64'" in text
    assert f"BUILD_DIR = {tmp_path}" in text
    assert "1 of 1 tests were successful" in text


@pytest.mark.parametrize("which", ["box.conf ssh-only", "testvm ssh"])
def test_ktest_reads_the_ssh_only_configs(tmp_path, ktest_pl, which):
    """ktest.pl itself on box.conf's ssh-only lines and the test VM's
    ssh-only config: it takes them (no option twice in a section), and
    its CONSOLE is storm-ssh-console on the box's ssh command."""
    conf = ssh_only(tmp_path) if which == "box.conf ssh-only" \
        else vm_config(tmp_path, "ssh")
    run = ktest.Run("6.1.0-56-amd64", tmp_path, tmp_path, "",
                    (("TEST_TYPE", "build"), ("BUILD_TYPE", "nobuild")))
    k = write(tmp_path / "k.conf", ktest.config_text(conf, run, "t"))
    log = tmp_path / "ktest.log"
    rc = ktest.run(ktest_pl, k, log, timeout=60)
    text = log.read_text()
    assert rc == 0, text[-2000:]
    ssh = " ".join(ktest.read_config(conf, STORM_VARS).ssh)
    assert f"CONSOLE = {ktest.SCRIPTS}/storm-ssh-console {ssh}\n" in text
    assert "echo b > /proc/sysrq-trigger" in text
    # ktest.pl's default: storm-ssh-console ends its ssh on INT
    assert "CLOSE_CONSOLE_SIGNAL = INT\n" in text
    assert "1 of 1 tests were successful" in text


def test_ktest_question_stops_the_run(tmp_path, ktest_pl):
    conf = write(tmp_path / "k.conf", "MACHINE = b\nBUILD_DIR = /\n"
                 "OUTPUT_DIR = /tmp\nTEST_START\nTEST_TYPE = boot\n")
    t0 = time.monotonic()
    rc = ktest.run(ktest_pl, conf, tmp_path / "ktest.log", timeout=60)
    assert rc == 125
    assert time.monotonic() - t0 < 30
    assert "ktest.pl asks 'POWER_CYCLE = '" in \
        (tmp_path / "ktest.log").read_text()


def test_mirror_from_deb822_sources(tmp_path):
    src = write(tmp_path / "debian.sources",
                "Types: deb\nURIs: http://security.example/debian-security\n"
                "Suites: bookworm-security\n\n"
                "Types: deb\nURIs: http://mirror.example/debian\n"
                "Suites: bookworm bookworm-updates\nComponents: main\n")
    assert boximage.mirror_from_sources(src) == "http://mirror.example/debian"
    assert boximage.mirror_from_sources(tmp_path / "none") == \
        boximage.DEFAULT_MIRROR


def test_vm_config_points_at_the_template(tmp_path):
    vm = boxvm.VM(tmp_path)
    image = boximage.Image(tmp_path / "img")
    cfg = write(tmp_path / "box.conf",
                boxvm.config_text(vm, image, 4242, "6.1.0-56-amd64"))
    scripts = {"STORM_SCRIPTS": str(ktest.SCRIPTS)}
    read = ktest.read_config(cfg, scripts)
    assert "-p" in read.ssh and "4242" in read.ssh
    assert str(image.key) in read.ssh
    # by default ssh alone: no serial console, no power switch
    console = read.options["CONSOLE"].split()
    assert console[0] == str(ktest.SCRIPTS / "storm-ssh-console")
    assert console[1:] == read.ssh
    assert read.options["POWER_CYCLE"].startswith(" ".join(read.ssh) + " ")
    assert "box vm reset" not in read.options["POWER_CYCLE"]
    serial = write(tmp_path / "serial.conf", boxvm.config_text(
        vm, image, 4242, "6.1.0-56-amd64", console="serial"))
    read = ktest.read_config(serial, scripts)
    assert read.options["CONSOLE"] == f"tail -n0 -F {vm.console}"
    assert read.options["POWER_CYCLE"].endswith("storm box vm reset")
    assert read.options["REBOOT_TYPE"] == "script"
    assert "ls -t vmlinuz-*${STORM_KERNEL} " in read.options["REBOOT_SCRIPT"]
    assert read.variables["BOX_GOOD_KERNEL"] == "6.1.0-56-amd64"
    assert "kexec -l /boot/vmlinuz-$k " in read.options["SWITCH_TO_GOOD"]


def test_unknown_subcommand():
    res = subprocess.run([sys.executable, "-m", "stormsuite", "box", "nope"],
                         cwd=REPO, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO / "scripts")})
    assert res.returncode == 2
    assert "unknown command" in res.stderr


def test_vm_kconfig_needs_a_tree_and_a_file():
    res = subprocess.run([sys.executable, "-m", "stormsuite", "box", "vm",
                          "kconfig", "--out", "/nonexistent/x"],
                         cwd=REPO, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO / "scripts")})
    assert res.returncode == 2
    assert "kconfig needs --tree and --out" in res.stderr


def test_vm_kconfig_of_a_tree_that_is_not_one(tmp_path):
    res = subprocess.run([sys.executable, "-m", "stormsuite", "box", "vm",
                          "kconfig", "--tree", str(tmp_path), "--out",
                          str(tmp_path / "out.config")],
                         cwd=REPO, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO / "scripts"),
                              "PATH": "/usr/bin:/bin"})
    assert res.returncode == 1
    assert res.stderr.startswith("storm box vm: ")
    assert not (tmp_path / "out.config").exists()


def test_ab_checks_out_each_side_apart(tmp_path, monkeypatch):
    """storm ab --box's sources: worktrees of the user's tree at the base,
    and at the base with the patch; the user's checkout untouched."""
    tree = tmp_path / "linux"
    tree.mkdir()

    def git(*a: str, cwd: pathlib.Path = tree) -> str:
        return subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t",
                               "-c", "user.email=t@t", *a], check=True,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (tree / "smp.c").write_text("one\n")
    git("add", "smp.c")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (tree / "smp.c").write_text("two\n")
    patch = tmp_path / "fix.patch"
    patch.write_text(git("diff") + "\n")
    git("checkout", "-q", "smp.c")
    monkeypatch.setattr(box, "SOURCES", tmp_path / "src")
    b = box.checkout(tree, "base", base, None)
    pt = box.checkout(tree, "patched", base, patch)
    assert (b / "smp.c").read_text() == "one\n"
    assert (pt / "smp.c").read_text() == "two\n"
    assert (tree / "smp.c").read_text() == "one\n"
    # again: the same state, whatever was left there
    (pt / "junk.o").write_text("x")
    pt = box.checkout(tree, "patched", base, patch)
    assert not (pt / "junk.o").exists()
    assert (pt / "smp.c").read_text() == "two\n"


FAKE_INSMOD = """#!/bin/sh
m=$(basename "$1" .ko)
mkdir -p "$STORM_RUN_DEBUGFS/$m"
cp "$FAKE_RESULT" "$STORM_RUN_DEBUGFS/$m/result"
"""
FAKE_RMMOD = """#!/bin/sh
rm -rf "$STORM_RUN_DEBUGFS/$1"
"""


@pytest.fixture
def local_box(tmp_path, monkeypatch):
    """A "box" that is this host: ssh is sh in a home directory of its
    own, insmod and rmmod stand-ins that "load" by copying a result
    captured in a guest (as tests/test_run_json.py), no python3 there."""
    release = os.uname().release
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for rel in box.BOX_SCRIPTS:
        shutil.copy(REPO / rel, repo / rel)
    (repo / "build" / release).mkdir(parents=True)
    for s in box.STORMS:
        (repo / "build" / release / f"{s}.ko").write_bytes(b"")
    monkeypatch.setattr(box, "REPO", repo)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("insmod", FAKE_INSMOD), ("rmmod", FAKE_RMMOD)):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    dmesg_file = tmp_path / "dmesg"
    dmesg_file.write_text("[    0.000000] Linux version x\n")
    ssh = ["env", f"HOME={home}", f"FAKE_DMESG={dmesg_file}", "sh", "-c",
           'dmesg() { cat "$FAKE_DMESG"; }; cd && eval "$0"']
    state = {
        "ssh": ssh, "box_dir": "storm", "release": release,
        "storm": "ipistorm", "params": ["numipi=1000", "single=1"],
        "runs": 2, "warmup": 1, "label": "boxlab", "series": "s1",
        "name": "boxlab boot 1/1", "results": str(tmp_path / "results"),
        "out": str(tmp_path / "step-result.json"),
        "env": {"STORM_RUN_INSMOD": str(bin_ / "insmod"),
                "STORM_RUN_RMMOD": str(bin_ / "rmmod"),
                "STORM_RUN_DEBUGFS": str(tmp_path / "debugfs"),
                "STORM_RUN_PYTHON": "", "STORM_ACCEL": "tcg",
                "FAKE_RESULT": str(REPO / "tests" / "data" /
                                   "ipistorm-6.1-single.result")}}
    return state, dmesg_file, home


@pytest.mark.skipif(os.geteuid() != 0, reason="storm run runs as root")
def test_step_runs_on_the_box_and_fetches(local_box):
    state, _, home = local_box
    done = box.step(state)
    files = [pathlib.Path(f) for f in done["files"]]
    assert len(files) == 2
    for f in files:
        doc = runs.load_run(f)
        assert doc["label"] == "boxlab"
        assert doc["run"]["series"] == "s1"
        assert doc["env"]["guest_name"] == "boxlab boot 1/1"
        assert f.parent.parent == pathlib.Path(state["results"]) / "boxlab"
    # the box got storm run and the modules, in the repository's layout
    assert (home / "storm" / "scripts" / "storm-run").is_file()
    assert (home / "storm" / "build" / state["release"] /
            "ipistorm.ko").is_file()
    # and the next boot's fetch finds only its own runs
    assert len(box.step(state)["files"]) == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="storm run runs as root")
def test_step_fails_on_a_splat_or_another_kernel(local_box):
    state, dmesg_file, _ = local_box
    dmesg_file.write_text("[   1.0] WARNING: CPU: 1 PID: 7 at kernel/smp.c\n")
    with pytest.raises(box.BoxError, match="kernel problem: .*WARNING"):
        box.step(state)
    with pytest.raises(box.BoxError, match="not 9.9-other"):
        box.step(dict(state, release="9.9-other"))


@pytest.mark.skipif(os.geteuid() != 0, reason="storm run runs as root")
def test_step_keeps_runs_whose_checks_failed(local_box, tmp_path):
    """A kernel that fails the storm's checks: storm run exits 3 with
    its runs written (and their failures), the box's dmesg has the
    check's report; the step brings the runs back. Any other problem in
    the log still fails the boot."""
    state, dmesg_file, _ = local_box
    failed = tmp_path / "failed.result"
    failed.write_text(
        (REPO / "tests" / "data" / "ipistorm-6.1-single.result").read_text()
        .replace("status: done\n", "status: failed\nfailures: 1\n"))
    state = dict(state, env=dict(state["env"], FAKE_RESULT=str(failed)))
    dmesg_file.write_text("[   1.0] ipistorm: check failed: CPU 1 handled "
                          "999 calls, 1000 were sent to it\n")
    done = box.step(state)
    assert done["checks_failed"] and len(done["files"]) == 2
    for f in done["files"]:
        assert runs.failures_of(runs.load_run(pathlib.Path(f))) == 1
    dmesg_file.write_text(dmesg_file.read_text()
                          + "[   1.1] WARNING: CPU: 1 PID: 7 at x\n")
    with pytest.raises(box.BoxError, match="kernel problem: .*WARNING"):
        box.step(state)


def failed_boot(boot: list[dict], failures: int) -> list[dict]:
    """A boot's runs as if the storm's checks had failed in the first."""
    out = json.loads(json.dumps(boot))
    if failures:
        out[0]["result"]["failures"] = failures
        out[0]["result"]["status"] = "failed"
    return out


def test_bisect_on_failures_decides_without_statistics():
    """--metric failures on the box: a boot with any failed run is bad,
    one without good; the endpoints differ when good has none and bad
    some."""
    sides = [runs.resolve(str(d))[0].boots for d in sorted(AB_000.iterdir())
             if d.is_dir()]
    good = [failed_boot(b, 0) for b in sides[0][:2]]
    bad = [failed_boot(b, 2) for b in sides[0][:2]]
    for boot, want in ((failed_boot(sides[0][2], 0), "good"),
                       (failed_boot(sides[0][2], 1), "bad")):
        v, metric = boxbisect.decide(boot, good, bad, "ipistorm",
                                     "failures")
        assert v.decision == want and metric == "failures"
    differ, what = boxbisect.endpoints_differ(good, bad, "ipistorm",
                                              "failures")
    assert differ and what.startswith("failures: good 0 failures")
    assert not boxbisect.endpoints_differ(good, good, "ipistorm",
                                          "failures")[0]


AB_000 = REPO / "tests" / "data" / "boots" / "ab-seed-000"


@pytest.mark.parametrize("side,want", [(0, "good"), (1, "bad")])
def test_bisect_test_decides_one_boot(side, want):
    """storm box bisect-test's answer for one boot, against endpoints'
    boots: seed 000's stock kernel (good) and the one that sends an IPI
    for every queued call (bad), 3 boots each; the commit's boot is the
    third boot of one side, the levels the first two of each."""
    sides = [runs.resolve(str(d))[0].boots for d in sorted(AB_000.iterdir())
             if d.is_dir()]
    good, bad = sides[0][:2], sides[1][:2]
    v, metric = boxbisect.decide(sides[side][2], good, bad, "ipistorm",
                           "ipis_sent_per_call")
    assert v.decision == want, (v, metric)
    assert metric == "ipistorm.ipis_sent_per_call"
    assert (v.odds > 99) if want == "good" else (v.odds < 1 / 99)


def test_ktest_failure_in_its_own_words(tmp_path):
    log = write(tmp_path / "ktest.log",
                "run test x ... [3 seconds] FAILED!\n"
                "CRITICAL FAILURE... [TEST 1] failed - got a bug report\n")
    assert ktest.failure(log) == \
        "ktest.pl: CRITICAL FAILURE... [TEST 1] failed - got a bug report"
    assert ktest.failure(write(tmp_path / "ok.log", "SUCCESS\n")) == ""
    assert ktest.failure(tmp_path / "none.log") == ""


def stand_in_box(tmp_path: pathlib.Path, extra: str = ""
                 ) -> tuple[pathlib.Path, pathlib.Path]:
    """A box config for ktest.pl whose box is nothing: ssh and reboot do
    nothing, the console prints a boot and a login prompt after each
    reboot. The config and the console script."""
    rebooted = tmp_path / "rebooted"
    console = write(tmp_path / "console.sh", f"""while :; do
    if [ -e {rebooted} ]; then
        rm {rebooted}; echo 'Linux version 6.1.0-test'; echo 'box login:'
    fi
    sleep 0.2
done
""")
    conf = write(tmp_path / "box.conf", f"""MACHINE = standin
SSH_USER = root
SSH_EXEC = true $SSH_COMMAND
REBOOT = touch {rebooted}
REBOOT_TYPE = script
REBOOT_SCRIPT = true
POWER_CYCLE = false
CONSOLE = sh {console}
{extra}BUILD_DIR = ${{STORM_BUILD_DIR}}
OUTPUT_DIR = ${{STORM_OUTPUT_DIR}}
LOCALVERSION = ${{STORM_LOCALVERSION}}
BUILD_TARGET = arch/x86/boot/bzImage
TARGET_IMAGE = /boot/vmlinuz-test
""")
    return conf, console


def test_ktest_boots_and_tests_a_stand_in_box(tmp_path, ktest_pl):
    """ktest.pl's whole boot-and-test path under ktest.run, against a
    stand-in box: ssh and reboot do nothing, the console prints a boot
    and a login prompt, the TEST writes a file. It opens and closes the
    console's pty (ktest.pl must survive that) and runs the TEST."""
    done = tmp_path / "tested"
    conf, console = stand_in_box(tmp_path)
    stub = ktest.nobuild_dir("6.1.0-test", tmp_path)
    run = ktest.Run("6.1.0-test", stub, stub, "", (
        ("TEST_TYPE", "test"), ("BUILD_TYPE", "nobuild"),
        ("NO_INSTALL", "1"), ("TEST", f"touch {done}"),
        ("REBOOT_ON_SUCCESS", "0")))
    k = write(tmp_path / "k.conf", ktest.config_text(conf, run, "t"))
    log = tmp_path / "ktest.log"
    rc = ktest.run(ktest_pl, k, log, timeout=120)
    text = log.read_text()
    assert rc == 0, text[-3000:]
    assert done.is_file()
    assert "KTEST RESULT: TEST 1 SUCCESS" in text
    # and nothing of its console is left running
    left = subprocess.run(["pgrep", "-f", str(console)],
                          capture_output=True, text=True).stdout.split()
    assert left == []


def git_commits(tree: pathlib.Path, files: list[tuple[str, str]]) -> list[str]:
    """A repository whose commits each add one file; their shas."""
    def git(*a: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tree), "-c", "user.name=t",
             "-c", "user.email=t@t", *a],
            check=True, capture_output=True, text=True).stdout.strip()
    tree.mkdir()
    git("init", "-q")
    shas = []
    for name, text in files:
        write(tree / name, text)
        git("add", name)
        git("commit", "-q", "-m", f"add {name}")
        shas.append(git("rev-parse", "HEAD"))
    return shas


@pytest.fixture
def stand_in_bisect(tmp_path, ktest_pl):
    """ktest.pl's bisect as storm box bisect configures it (bisect_run),
    against a stand-in box whose kernel is the checked-out commit, with a
    stand-in for bisect-test (a script of the checkout): run(script) is
    ktest.pl's exit status, its log, the commits and the ones tested."""
    tree = tmp_path / "linux"
    # what ktest.pl makes in a bisect: mrproper, olddefconfig, the build
    mk = ("all mrproper olddefconfig:\n\t@true\n"
          "kernelrelease:\n\t@echo 6.1.0-storm-bisect+\n")
    shas = git_commits(tree, [("Makefile", mk), ("a", ""), ("b", ""),
                              ("slow", ""), ("c", ""), ("d", "")])
    conf, _ = stand_in_box(tmp_path, "BISECT_SLEEP_TIME = 5\n")
    stand_in = box.Box(conf, [], "storm", ktest_pl)
    run = boxbisect.bisect_run(
        stand_in, tree, shas[0], shas[-1], ("good@1", "bad@1"),
        tmp_path / "cfg", box.Design("ipistorm", ("numipi=10",)), "auto",
        tmp_path / "results")
    opts = dict(run.options)
    assert run.kernel == "-storm-bisect+"
    assert opts["BISECT_GOOD"] == shas[0] and opts["BISECT_BAD"] == shas[-1]
    assert opts["MIN_CONFIG"] == str(tmp_path / "cfg")
    assert opts["TEST"].startswith(f"{box.STORM} box bisect-test --config "
                                   f"{conf} --kernel {run.output_dir} "
                                   "--good good@1 --bad bad@1 ")
    write(tmp_path / "cfg", "CONFIG_STORM_TEST=y\n")
    tested = tmp_path / "tested"

    def bisect(script: str):
        verdict = write(tmp_path / "verdict.sh", f"cd {tree}\n"
                        f"git rev-parse HEAD >>{tested}\n{script}")
        # what this test cannot do: install, measure
        opts.update(NO_INSTALL="1", TEST=f"sh {verdict}")
        k = write(tmp_path / "k.conf", ktest.config_text(
            conf, ktest.Run(run.kernel, tree, tree, run.localversion,
                            tuple(opts.items())), "t"))
        log = tmp_path / "ktest.log"
        rc = ktest.run(ktest_pl, k, log, timeout=300)
        return rc, log, shas, tested.read_text().split()
    return bisect


def test_ktest_bisects_with_storm_box_bisects_test(stand_in_bisect):
    """bad where the commit has the file `slow` (or its build lacks the
    configuration the bisect was given): ktest.pl tests the commits git
    bisect asks for and names the one that added it; every commit tested
    is judged in its log as the test said."""
    rc, log, shas, tested = stand_in_bisect("[ ! -e slow ] && grep -qx "
                                            "CONFIG_STORM_TEST=y .config\n")
    assert rc == 0, log.read_text()[-3000:]
    found = boxbisect.outcome(log)
    assert found.first_bad == shas[3]
    assert found.judged[:2] == [("good", shas[0]), ("bad", shas[-1])]
    assert [sha for _, sha in found.judged[2:]] == tested
    assert found.stopped_at is None
    for v, sha in found.judged[2:]:
        assert v == ("bad" if shas.index(sha) >= 3 else "good"), sha
    assert 2 <= len(tested) <= 3


def test_an_undecided_commit_stops_the_bisect(stand_in_bisect):
    """bisect-test's undecided (125) stops ktest.pl's bisect at that
    commit: not a skip, which ktest.pl's run_bisect_test counts as a
    pass (good)."""
    rc, log, shas, tested = stand_in_bisect("exit 125\n")
    text = log.read_text()
    assert rc != 0
    assert len(tested) == 1 and "test abort" in text, text[-3000:]
    found = boxbisect.outcome(log)
    assert found.first_bad is None
    assert found.judged == [("good", shas[0]), ("bad", shas[-1])]
    assert found.stopped_at == tested[0]


def test_bisect_refuses_endpoints_that_are_not_in_order(tmp_path, capsys,
                                                        ktest_pl):
    """storm box bisect says why, before it builds or reaches the box,
    when --good is not an ancestor of --bad or is not a commit."""
    tree = tmp_path / "linux"
    shas = git_commits(tree, [("a", ""), ("b", "")])
    base = ["--config", str(BOX_CONF), "--ktest", str(ktest_pl),
            "--tree", str(tree)]
    storm = ["ipistorm", "numipi=10"]
    assert boxbisect.bisect_main(
        [*base, "--good", shas[1], "--bad", shas[0], *storm]) == 1
    assert "is not an ancestor of" in capsys.readouterr().err
    assert boxbisect.bisect_main(
        [*base, "--good", "nope", "--bad", shas[1], *storm]) == 1
    assert "nope: not a commit in" in capsys.readouterr().err
