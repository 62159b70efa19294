"""storm box end to end, on the test box: a Debian VM built from Debian
packages (storm box image, cached under build/box/ by its inputs), booted
under TCG and reached on a loopback ssh port, driven by ktest.pl.

One `storm matrix --box` of Debian's 6.1 against 6.12, two boots a side:
ktest.pl reboots the box (kexec) before every boot, alternating the
kernels; storm run runs on the box, the run files come back here, and
compare prints the verdict. The box is reached over ssh alone, as most
test boxes are: no serial console and no power switch (storm box vm
start's default console, configs/box/testvm-ssh.conf): ktest.pl reads
each boot from scripts/storm-ssh-console. Assertions are on counts and invariants (the
boots, the order, the IPIs), never on times; the costs are printed.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

import conftest
from conftest import REPO
from stormsuite.kernel import kernels
from stormsuite.machines import box, boximage, boxvm

pytestmark = pytest.mark.guest

BOOTS, RUNS = 2, 3
NUMIPI = 2000
PARAMS = ["numipi=2000", "single=1", "wait=1", "cpulist=0", "offset=1"]
SERIES = ("6.1", "6.12")


def loop_job():
    """The whole loop, once: image, VM, the matrix; what each cost.
    Started at collection (conftest.GUEST_JOB)."""
    costs = {}
    t0 = time.monotonic()
    image = boximage.build(quiet=True)
    costs["image"] = time.monotonic() - t0
    releases = [kernels.resolve(s).release for s in SERIES]
    results = REPO / "build" / "test" / "box-results"
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    # one of the two guest slots: the box is one more QEMU thread
    with conftest._guest_slots:
        res, costs = run_loop(image, releases, results, costs)
    return res, results, releases, costs


GUEST_JOB = loop_job


@pytest.fixture(scope="module")
def loop():
    res, results, releases, costs = conftest.start_job(loop_job).result()
    sys.stderr.write("box loop costs: " + ", ".join(
        f"{k} {v:.0f} s" for k, v in costs.items()) + "\n"
        + "".join(res.stderr.splitlines(keepends=True)[-1:]))
    return res, results, releases


def run_loop(image, releases, results, costs):
    vm, costs["power-on to ssh"] = boxvm.start(image, releases[0],
                                               console="ssh")
    try:
        t1 = time.monotonic()
        res = subprocess.run(
            [str(REPO / "scripts" / "storm"), "matrix",
             "--box", str(vm.config), "--kernel", SERIES[0],
             "--kernel", SERIES[1], "--boots", str(BOOTS), "--runs",
             str(RUNS), "--results", str(results), "--no-plot",
             "ipistorm", *PARAMS],
            cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=3600)
        costs["matrix"] = time.monotonic() - t1
    finally:
        boxvm.stop(vm)
    return res, costs


def run_docs(results: pathlib.Path) -> list[dict]:
    return [json.loads(f.read_text())
            for f in sorted(results.glob("*/ipistorm-*/run-*.json"))]


def test_matrix_on_the_box_gives_a_verdict(loop):
    res, _, _ = loop
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    verdicts = [line for line in res.stdout.splitlines()
                if line.startswith("IPIs per call")]
    assert len(verdicts) == 1, res.stdout
    # two boots a side: enough for a test, and the verdict says how many
    assert f"{BOOTS}+{BOOTS} boots x {RUNS} runs" in verdicts[0]


def test_every_boot_on_its_kernel_after_a_reboot(loop):
    _, results, releases = loop
    docs = run_docs(results)
    assert len(docs) == len(releases) * BOOTS * RUNS
    boots: dict[str, list[dict]] = {}
    for d in docs:
        boots.setdefault(d["env"]["boot_id"], []).append(d)
    # each boot a boot of its own (a reboot between every two), RUNS runs
    assert len(boots) == len(releases) * BOOTS
    assert all(len(b) == RUNS for b in boots.values())
    for b in boots.values():
        assert len({d["env"]["kernel_release"] for d in b}) == 1
        assert {d["label"] for d in b} == {b[0]["env"]["kernel_release"]}
    # alternating: A B, B A in time
    first = sorted(boots.values(), key=lambda b: min(d["run"]["started"]
                                                     for d in b))
    order = [b[0]["env"]["kernel_release"] for b in first]
    assert order == [releases[0], releases[1], releases[1], releases[0]]
    # the box is the test VM: an emulated 2-CPU Debian with sshd
    assert {d["env"]["hostname"] for d in docs} == {"stormbox"}
    assert {d["env"]["cpu_count"] for d in docs} == {2}


def test_ipis_counted_on_the_box(loop):
    _, results, _ = loop
    for d in run_docs(results):
        assert d["result"]["status"] == "done"
        assert d["result"]["sender.0.calls"] == NUMIPI
        assert d["result"]["sender.0.errors"] == 0
        # every call reaches the HLT-idle target as an IPI; the odd extra
        # is the box's own (a timer's, a workqueue's)
        cal = d["interrupts"]["rows"]["CAL"]["delta"][1]
        assert NUMIPI <= cal <= NUMIPI * 1.1


def test_ktest_drove_each_boot(loop):
    res, _, releases = loop
    starts = re.findall(r"storm: (\S+) boot (\d)/\d \(\d+/\d+\) on the box",
                        res.stderr)
    assert len(starts) == len(releases) * BOOTS
    results = re.findall(r"ktest: KTEST RESULT: TEST 1 SUCCESS", res.stderr)
    assert len(results) == len(releases) * BOOTS, res.stderr[-3000:]


def test_each_boot_read_over_ssh_alone(loop):
    """ktest.pl read every boot from storm-ssh-console, not from a serial
    console: its CONSOLE is the script, its POWER_CYCLE a sysrq over ssh;
    each boot's log has the booted kernel's banner, then the console's
    login line, before the test ran; nothing of the serial console."""
    _, results, releases = loop
    docs = run_docs(results)
    series = {d["run"]["series"] for d in docs}
    assert len(series) == 1
    logs = sorted((box.LOGS / series.pop()).glob("*/ktest.log"))
    assert len(logs) == len(releases) * BOOTS
    for log in logs:
        text = log.read_text(errors="replace")
        consoles = re.findall(r"^CONSOLE = (.*)$", text, re.M)
        assert consoles and all(
            c.split()[0].endswith("/scripts/storm-ssh-console")
            for c in consoles), (log, consoles)
        assert "tail -n0 -F" not in text and "console.log" not in text, log
        cycles = re.findall(r"^POWER_CYCLE = (.*)$", text, re.M)
        assert cycles and all("/proc/sysrq-trigger" in c for c in cycles)
        # the boot's kernel (the log's directory names its label)
        release = next(r for r in releases if f"-{r}-" in log.parent.name)
        banner = text.find(f"Linux version {release} ")
        login = text.find("storm-ssh-console: login: stormbox answers ssh "
                          f"(up ", banner)
        test = text.find("run test ", login)
        assert -1 < banner < login < test, (log, banner, login, test)
