"""scripts/storm-run on the host: the JSON it writes, the environment it
records, and every refusal.

The host cannot load modules, so the whole script runs with stand-ins for
insmod and rmmod (STORM_RUN_INSMOD/RMMOD) that "load" by copying a real
result file captured in a guest into a fake debugfs (STORM_RUN_DEBUGFS).
The refusals that need no module (not root, no module for this kernel,
bad usage) run against the real thing.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import shutil
import subprocess

import pytest

from conftest import REPO

DATA = pathlib.Path(__file__).parent / "data"
STORM_RUN = REPO / "scripts" / "storm-run"

FAKE_INSMOD = """#!/bin/sh
ko=$1; shift
m=$(basename "$ko" .ko)
echo "$*" >>"$FAKE_LOG"
if [ -n "${FAKE_FAIL_AT:-}" ] && [ "$(wc -l <"$FAKE_LOG")" -ge "$FAKE_FAIL_AT" ]; then
    FAKE_RC=1
fi
if [ "${FAKE_RC:-0}" != 0 ]; then
    echo "insmod: ERROR: could not insert module $ko: Invalid parameters" >&2
    exit "$FAKE_RC"
fi
mkdir -p "$STORM_RUN_DEBUGFS/$m"
cp "$FAKE_RESULT" "$STORM_RUN_DEBUGFS/$m/result"
"""
FAKE_RMMOD = """#!/bin/sh
rm -rf "$STORM_RUN_DEBUGFS/$1"
"""


@pytest.fixture
def fake(tmp_path):
    """A module directory, stand-in insmod/rmmod and a results directory."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("insmod", FAKE_INSMOD), ("rmmod", FAKE_RMMOD)):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    ko = tmp_path / "ko"
    ko.mkdir()
    (ko / "ipistorm.ko").write_bytes(b"")
    env = dict(os.environ,
               STORM_RUN_INSMOD=str(bin_ / "insmod"),
               STORM_RUN_RMMOD=str(bin_ / "rmmod"),
               STORM_RUN_DEBUGFS=str(tmp_path / "debugfs"),
               FAKE_RESULT=str(DATA / "ipistorm-6.1-single.result"),
               FAKE_LOG=str(tmp_path / "insmod.log"),
               STORM_ACCEL="tcg")
    env.pop("STORM_RESULTS", None)

    class Fake:
        results = tmp_path / "results"
        log = tmp_path / "insmod.log"
        ko_dir = ko
        environ = env

        def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
            e = dict(env, **extra)
            return subprocess.run(
                [str(STORM_RUN), "--results", str(self.results), "--ko-dir",
                 str(ko), *args], env=e, text=True, capture_output=True,
                timeout=120)

        def files(self) -> list[pathlib.Path]:
            return sorted(self.results.rglob("run-*.json")) \
                if self.results.exists() else []

    return Fake()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs as root")


@needs_root
def test_one_valid_json_file_per_run(fake):
    p = fake.run("--runs", "3", "--warmup", "2", "--label", "lab",
                 "ipistorm", "numipi=1000", "single=1", "cpulist=1",
                 "offset=2")
    assert p.returncode == 0, p.stderr
    written = [pathlib.Path(x) for x in p.stdout.split()]
    assert written == fake.files() and len(written) == 3
    # warm-ups ran but left nothing
    assert len(fake.log.read_text().splitlines()) == 5
    assert "warm-up 2/2" in p.stderr and "run 3/3" in p.stderr
    series = written[0].parent
    assert series == fake.results / "lab" / \
        "ipistorm-cpulist_1-numipi_1000-offset_2-single_1"
    for n, f in enumerate(written, 1):
        assert f.name.startswith("run-") and f.name.endswith(f"-{n}.json")
        doc = json.loads(f.read_text())
        assert doc["schema"] == 1 and doc["kind"] == "storm-run"
        assert doc["storm"] == "ipistorm" and doc["label"] == "lab"
        # parameters as given, in order, as strings
        assert list(doc["params"].items()) == [
            ("numipi", "1000"), ("single", "1"), ("cpulist", "1"),
            ("offset", "2")]
        assert doc["run"]["index"] == n and doc["run"]["runs"] == 3
        assert doc["run"]["warmup"] == 2 and doc["run"]["traced"] is False
        assert isinstance(doc["run"]["insmod_ns"], int)
    # each run file and its capture, no temporary files left behind
    assert sorted(series.iterdir()) == sorted(
        written + [f.with_suffix(".raw") for f in written])


@needs_root
def test_udev_settles_before_each_run(fake, tmp_path):
    """The uevents of the previous run's rmmod (or of anything else that
    loaded modules) are udev's work before a run's counts start, not
    during them (docs/safety.md, udev settled before every case)."""
    path = tmp_path / "udevadm-bin"
    path.mkdir()
    udevadm = path / "udevadm"
    udevadm.write_text('#!/bin/sh\necho "udevadm $*" >>"$FAKE_LOG"\n')
    udevadm.chmod(0o755)
    p = fake.run("--runs", "2", "--warmup", "1", "ipistorm", "numipi=1",
                 PATH=f"{path}:{os.environ['PATH']}")
    assert p.returncode == 0, p.stderr
    settle = "udevadm settle --timeout=60"
    assert fake.log.read_text().splitlines() == [settle, "numipi=1"] * 3


@needs_root
def test_result_numbers_are_numbers(fake):
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1000")
    assert p.returncode == 0, p.stderr
    res = json.loads(fake.files()[0].read_text())["result"]
    assert res["runtime_ns"] == 12811980
    assert res["param.numipi"] == 1000 and res["irq.3.CAL"] == 681
    assert res["schema"] == 1
    # CPU lists stay strings even when they are one CPU
    assert res["param.cpulist"] == "1" and res["cpus_online"] == "0-3"
    assert res["kernel"] == "6.1.0-56-amd64"
    assert res["latency.hist"].startswith("2560:1 2688:6")
    # and the histogram still parses into the same percentiles
    from stormsuite.runfiles import result
    text = (DATA / "ipistorm-6.1-single.result").read_text()
    h1 = result.histogram(result.parse(text), "latency")
    h2 = result.histogram({k: str(v) for k, v in res.items()}, "latency")
    assert h1.percentile(99) == h2.percentile(99)


@needs_root
def test_environment_is_recorded(fake):
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1")
    assert p.returncode == 0, p.stderr
    doc = json.loads(fake.files()[0].read_text())
    env = doc["env"]
    assert env["kernel_release"] == platform.release()
    assert env["cmdline"] == pathlib.Path("/proc/cmdline").read_text().strip()
    assert env["cpu_count"] == os.cpu_count()
    online = pathlib.Path("/sys/devices/system/cpu/online").read_text()
    assert env["cpus_online"] == online.strip()
    assert env["virtualization"] == "tcg"       # STORM_ACCEL wins
    assert env["virtualization_source"] == "STORM_ACCEL"
    assert env["hostname"] == platform.node()
    assert env["suite_version"] == subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=REPO, text=True,
        capture_output=True).stdout.strip()
    for key in ("cpu_model", "numa_nodes", "cpuidle_driver", "clocksource",
                "idle", "memory_kb", "kernel_version"):
        assert key in env
    assert isinstance(env["numa_node_count"], int)
    # /proc/interrupts: every row, per CPU, before/after/delta
    irq = doc["interrupts"]
    assert len(irq["cpus"]) == os.cpu_count()
    assert "LOC" in irq["rows"] and "CAL" in irq["rows"]
    for row in irq["rows"].values():
        # the difference modulo 2^32: the kernel's counters are unsigned
        # int, and one may wrap between the snapshots
        assert [(a - b) % 2 ** 32 for a, b in zip(row["after"],
                                                  row["before"])] == \
            row["delta"]
        assert row["total"] == sum(row["delta"])


@needs_root
def test_virtualization_without_storm_accel(fake):
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1",
                 STORM_ACCEL="")
    assert p.returncode == 0, p.stderr
    env = json.loads(fake.files()[0].read_text())["env"]
    assert env["virtualization_source"] in (
        "cpuinfo", "dmesg", "systemd-detect-virt")
    if "hypervisor" not in pathlib.Path("/proc/cpuinfo").read_text():
        assert env["virtualization"] == "bare-metal"


@needs_root
def test_default_label_is_the_kernel_release(fake):
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm")
    assert p.returncode == 0, p.stderr
    f = fake.files()[0]
    label = f.parent.parent.name
    assert label.startswith(platform.release())
    assert f.parent.name == "ipistorm-default"
    cmdline = pathlib.Path("/proc/cmdline").read_text().split()
    for arg in cmdline:
        if arg.split("=")[0] in ("idle", "mitigations", "nohz_full"):
            assert arg.replace("/", "_") in label


@needs_root
def test_never_overwrites(fake):
    """Two series in the same second get distinct names for every run."""
    for _ in range(2):
        p = fake.run("--runs", "2", "--warmup", "0", "--label", "x",
                     "ipistorm", "numipi=5")
        assert p.returncode == 0, p.stderr
    files = fake.files()
    assert len(files) == 4 and len({f.name for f in files}) == 4


@needs_root
def test_strings_are_escaped(fake):
    value = 'a"b\\c'
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm",
                 f"mode={value}")
    assert p.returncode == 0, p.stderr
    doc = json.loads(fake.files()[0].read_text())
    assert doc["params"]["mode"] == value


def test_interrupts_section_on_real_data():
    """The run file's interrupts section from two real 6.1 snapshots."""
    from stormsuite.runfiles import interrupts
    before = (DATA / "interrupts-6.1-4cpu.before").read_text()
    after = (DATA / "interrupts-6.1-4cpu.after").read_text()
    sec = interrupts.section(before, after)
    assert sec["cpus"] == [0, 1, 2, 3]
    cal = sec["rows"]["CAL"]
    assert cal["delta"] == [62, 24, 28, 687] and cal["total"] == 801
    assert [a - b for a, b in zip(cal["after"], cal["before"])] == \
        cal["delta"]
    assert cal["description"] == "Function call interrupts"
    assert sec["rows"]["ERR"]["delta"] == [0]   # one system-wide number
    assert len(sec["rows"]["ERR"]["before"]) == 1
    # every row of the second snapshot, numbered IRQs included
    assert set(sec["rows"]) == set(interrupts.parse(after).rows)
    assert "0" in sec["rows"] and sec["rows"]["0"]["description"]


def test_interrupt_counters_wrap_at_32_bits():
    from stormsuite.runfiles import interrupts
    sec = interrupts.section(
        "           CPU0       CPU1\n"
        "CAL: 4294967290  7  Function call interrupts\n",
        "           CPU0       CPU1\n"
        "CAL:          4  9  Function call interrupts\n")
    row = sec["rows"]["CAL"]
    assert row["delta"] == [10, 2] and row["total"] == 12
    assert row["before"] == [4294967290, 7]


def test_a_cpu_that_came_online_counts_from_zero():
    from stormsuite.runfiles import interrupts
    sec = interrupts.section(
        "  CPU0 CPU2\nCAL: 5 6 Function call interrupts\n",
        "  CPU0 CPU1 CPU2\nCAL: 8 3 9 Function call interrupts\n")
    assert sec["cpus"] == [0, 1, 2]
    assert sec["rows"]["CAL"]["before"] == [5, 0, 6]
    assert sec["rows"]["CAL"]["delta"] == [3, 3, 3]


def test_kv_and_result_types():
    """Numbers as numbers, CPU lists and non-decimals as strings."""
    from stormsuite.runfiles import runfile
    kv = runfile.parse_kv("s name a b  c\nn n1 12\nn n2 1.50\nn n3 0x10\n"
                          "n n4 \nb t yes\nb f 0\nj o {\"a\": [1]}\n")
    assert kv == {"name": "a b  c", "n1": 12, "n2": 1.5, "n3": None,
                  "n4": None, "t": True, "f": False, "o": {"a": [1]}}
    res = runfile.result_section(
        "storm: ipistorm\nschema: 1\nstatus: done\nparam.cpulist: 1\n"
        "targets: 3\nruntime_ns: 0012\nlat.p50_ns: 1.25\nrelease: 6.1\n"
        "empty:\n")
    assert res["param.cpulist"] == "1" and res["targets"] == "3"
    assert res["runtime_ns"] == "0012"      # not a plain decimal: as is
    assert res["lat.p50_ns"] == 1.25 and res["release"] == 6.1
    assert res["empty"] == "" and res["schema"] == 1


@needs_root
def test_every_run_file_has_its_capture(fake):
    """run-X.json next to run-X.raw/, and the JSON is what the capture
    makes: the run file can always be made again from the raw files."""
    from stormsuite.runfiles import runfile
    p = fake.run("--runs", "2", "--warmup", "0", "ipistorm", "numipi=1")
    assert p.returncode == 0, p.stderr
    files = fake.files()
    assert len(files) == 2
    for f in files:
        raw = f.with_suffix(".raw")
        assert sorted(x.name for x in raw.iterdir()) == [
            "dmesg", "env", "header", "interrupts.after",
            "interrupts.before", "params", "result", "run", "stats.json",
            "sysenv"]
        assert runfile.build(raw) == json.loads(f.read_text())


@needs_root
def test_runs_finished_before_a_failure_are_kept(fake):
    """The third load fails (warm-up, run 1, run 2): storm-run exits 1,
    and run 1, finished, is kept as its capture, which storm compare
    reads; nothing is half-written."""
    from stormsuite.runfiles import runs
    p = fake.run("--runs", "3", "--warmup", "1", "ipistorm", "numipi=1",
                 FAKE_FAIL_AT="3")
    assert p.returncode == 1
    assert "insmod ipistorm.ko numipi=1 failed" in p.stderr
    assert "kept the finished runs' captures" in p.stderr
    assert fake.files() == []
    d, = {f.parent for f in fake.results.rglob("run-*.raw")}
    kept = runs.run_files(d)
    assert [f.name.endswith("-1.raw") for f in kept] == [True]
    assert runs.load_run(kept[0])["run"]["index"] == 1
    assert not list(fake.results.rglob(".*"))


@needs_root
def test_without_python_the_capture_is_the_run(fake):
    """A box without python3: storm-run writes the captures only, and
    storm compare reads them as runs."""
    from stormsuite.runfiles import runs
    p = fake.run("--runs", "2", "--warmup", "0", "ipistorm", "numipi=1",
                 STORM_RUN_PYTHON="")
    assert p.returncode == 0, p.stderr
    assert fake.files() == []
    assert "no python3 here" in p.stderr
    d, = {f.parent for f in fake.results.rglob("run-*.raw")}
    found = runs.run_files(d)
    assert [f.suffix for f in found] == [".raw", ".raw"]
    assert [str(f) for f in found] == p.stdout.split()
    docs = [runs.load_run(f) for f in found]
    assert [doc["run"]["index"] for doc in docs] == [1, 2]
    assert docs[0]["result"]["status"] == "done"
    # the interrupt counts are the capture's two snapshots, in order
    from stormsuite.runfiles import interrupts
    assert docs[0]["interrupts"] == interrupts.section(
        (found[0] / "interrupts.before").read_text(),
        (found[0] / "interrupts.after").read_text())


# ---------------------------------------------------------------------
# Refusals: nothing is written, and the message says what to do

@needs_root
def test_insmod_failure_writes_nothing(fake):
    p = fake.run("--runs", "2", "ipistorm", "cpulist=64", FAKE_RC="1")
    assert p.returncode == 1
    assert "insmod ipistorm.ko cpulist=64 failed (exit 1)" in p.stderr
    assert "Invalid parameters" in p.stderr
    assert "nothing written" in p.stderr
    assert fake.files() == [] and p.stdout == ""


@needs_root
@pytest.mark.parametrize("status", ["interrupted", "failed"])
def test_run_not_done_writes_nothing(fake, tmp_path, status):
    bad = tmp_path / "bad.result"
    text = (DATA / "ipistorm-6.1-single.result").read_text()
    bad.write_text(text.replace("status: done", f"status: {status}"))
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1",
                 FAKE_RESULT=str(bad))
    assert p.returncode == 1
    assert f"status is '{status}', not done" in p.stderr
    assert fake.files() == []


@needs_root
def test_a_call_error_without_check_failures_writes_nothing(fake, tmp_path):
    """status failed with failures 0 is the storm failing to run (a
    call's error), not the kernel failing its checks: refused as ever."""
    bad = tmp_path / "bad.result"
    text = (DATA / "ipistorm-6.1-single.result").read_text()
    bad.write_text(text.replace("status: done", "status: failed\nfailures: 0"))
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1",
                 FAKE_RESULT=str(bad))
    assert p.returncode == 1
    assert "status is 'failed', not done" in p.stderr
    assert fake.files() == []


@needs_root
def test_a_run_whose_checks_failed_is_written_and_exits_3(fake, tmp_path):
    """The kernel under test failed the storm's checks: every run is
    written (the evidence), the warm-up is named but not written, and
    storm run exits 3 naming each run and its failures."""
    bad = tmp_path / "check.result"
    text = (DATA / "ipistorm-6.1-single.result").read_text()
    bad.write_text(text.replace("status: done", "status: failed\nfailures: 2"))
    p = fake.run("--runs", "2", "--warmup", "1", "ipistorm", "numipi=1",
                 FAKE_RESULT=str(bad))
    assert p.returncode == 3, p.stderr
    written = [pathlib.Path(x) for x in p.stdout.split()]
    assert written == fake.files() and len(written) == 2
    for f in written:
        doc = json.loads(f.read_text())
        assert doc["result"]["status"] == "failed"
        assert doc["result"]["failures"] == 2
    assert "FAILURE: the storm's checks failed" in p.stderr
    for what in ("warm-up 1/1: 2 check failures (a warm-up: not written)",
                 "run 1/2: 2 check failures", "run 2/2: 2 check failures"):
        assert what in p.stderr


@needs_root
def test_result_of_another_storm_is_refused(fake, tmp_path):
    bad = tmp_path / "other.result"
    text = (DATA / "ipistorm-6.1-single.result").read_text()
    bad.write_text(text.replace("storm: ipistorm", "storm: tlbstorm"))
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm",
                 FAKE_RESULT=str(bad))
    assert p.returncode == 1 and "not ipistorm" in p.stderr
    assert fake.files() == []


def test_missing_module_says_how_to_build(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    p = subprocess.run([str(STORM_RUN), "--results", str(tmp_path / "r"),
                        "--ko-dir", str(tmp_path / "none"), "ipistorm",
                        "numipi=1"], capture_output=True, text=True)
    assert p.returncode == 1
    assert f"KDIR=/lib/modules/{platform.release()}/build" in p.stderr
    assert "storm vm" in p.stderr
    assert not (tmp_path / "r").exists()


def test_unknown_storm(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    p = subprocess.run([str(STORM_RUN), "--ko-dir", str(tmp_path),
                        "nosuchstorm"], capture_output=True, text=True)
    assert p.returncode == 1 and "no such storm" in p.stderr


def test_not_root_is_refused(tmp_path):
    cmd = [str(STORM_RUN), "--results", str(tmp_path / "r"), "ipistorm",
           "numipi=1"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("no setpriv to drop root")
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
               *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 1
    assert "must run as root" in p.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args,message", [
    ([], "name a storm"),
    (["--runs", "0", "ipistorm"], "--runs 0"),
    (["--runs", "x", "ipistorm"], "--runs x"),
    (["--warmup", "-1", "ipistorm"], "--warmup -1"),
    (["ipistorm", "numipi"], "parameters are NAME=VALUE"),
    (["ipistorm", "a=1", "a=2"], "a given twice"),
    (["ipistorm", "Bad=1"], "not a parameter name"),
    (["--label", "a/b", "ipistorm"], "--label a/b"),
    (["--label", "..", "ipistorm"], "--label .."),
    (["Ipi storm"], "not a storm name"),
    (["--frobnicate", "ipistorm"], "unknown option"),
    (["--runs"], "--runs needs a value"),
])
def test_usage_errors(args, message):
    p = subprocess.run([str(STORM_RUN), *args], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert message in p.stderr


def test_help():
    for cmd in ([str(STORM_RUN), "--help"],
                [str(REPO / "scripts" / "storm"), "run", "-h"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0
        assert "usage: storm run" in p.stdout
        for opt in ("--runs", "--warmup", "--label", "--trace", "--bpftrace"):
            assert opt in p.stdout


def test_shellcheck_clean():
    if not shutil.which("shellcheck"):
        pytest.skip("no shellcheck")
    p = subprocess.run(["shellcheck", "-S", "warning", str(STORM_RUN),
                        str(REPO / "scripts" / "storm-run-trace.sh"),
                        str(REPO / "scripts" / "storm-pairs"),
                        str(REPO / "scripts" / "storm-ssh-console"),
                        str(REPO / "tests" / "guest" / "check-drivers.sh")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout


def test_a_traced_capture_makes_its_trace_sections(tmp_path, fake):
    """A --trace/--bpftrace run's capture holds the tracers' raw output
    (the trace-cmd report gzipped); the run file's sections and the
    summary storm-run prints come from it, through tracesum."""
    import gzip
    from stormsuite.runfiles import runfile, tracesum
    p = fake.run("--runs", "1", "--warmup", "0", "ipistorm", "numipi=1")
    assert p.returncode == 0, p.stderr
    raw = fake.files()[0].with_suffix(".raw")
    trace = DATA / "trace"
    (raw / "trace.txt.gz").write_bytes(
        (trace / "ipistorm-6.12.117+deb12-amd64.trace-report.txt.gz")
        .read_bytes())
    events = gzip.decompress(
        (trace / "ipistorm-6.12.117+deb12-amd64.trace-events.gz")
        .read_bytes()).decode()
    (raw / "trace-events").write_text(events)
    (raw / "trace.meta").write_text(
        "s tool trace-cmd\ns version 3.1.6\ns source ipi:ipi_send_cpu\n")
    bpf = gzip.decompress(
        (trace / "ipistorm-6.12.117+deb12-amd64.bpftrace.out.gz")
        .read_bytes()).decode()
    (raw / "bpftrace.out").write_text(bpf)
    (raw / "bpftrace.meta").write_text(
        "s tool bpftrace\ns version v0.17.0\ns source tracepoint:ipi\n")
    out = tmp_path / "run.json"
    summary = runfile.write(raw, out)
    doc = json.loads(out.read_text())
    want, text = tracesum.trace_report(
        gzip.decompress((raw / "trace.txt.gz").read_bytes()).decode(
            "utf-8", "replace"), tool="trace-cmd", version="3.1.6",
        source="ipi:ipi_send_cpu", events=events.split())
    assert doc["trace"] == want and text in summary
    assert "ipistorm_sender_fn" in {
        s["function"] for s in doc["trace"]["senders"]}
    assert doc["bpftrace"]["tool"] == "bpftrace"
    assert doc["bpftrace"]["handler_ns"]["call_function_single"]["count"] > 0
    assert "IPI senders in the traced run (bpftrace: tracepoint:ipi)" in \
        summary


@needs_root
def test_an_unparsable_capture_is_kept_aside(fake):
    """runfile on a capture whose result is not a storm result: exit 1,
    no run file, the capture renamed *.unreadable (out of every reader's
    way, kept for a look); the good capture next to it still made."""
    from stormsuite.runfiles import runfile, runs
    p = fake.run("--runs", "2", "--warmup", "0", "ipistorm", "numipi=1",
                 STORM_RUN_PYTHON="")
    assert p.returncode == 0, p.stderr
    good, bad = sorted(fake.results.rglob("run-*.raw"))
    (bad / "result").write_text("not a result\n")
    assert runfile.main([str(good), str(bad)]) == 1
    assert runfile.run_file_of(good).is_file()
    assert not bad.exists() and not runfile.run_file_of(bad).exists()
    kept = bad.with_name(bad.name[:-len(".raw")] + ".unreadable")
    assert (kept / "result").read_text() == "not a result\n"
    assert runs.run_files(good.parent) == [runfile.run_file_of(good)]


@needs_root
def test_a_boot_gets_the_run_files_its_storm_runs_listed(fake,
                                                        monkeypatch):
    # guest.run_storm as matrix, ab and bisect call it, with the guest's
    # command run here instead of in storm vm: the run files come back
    # from what storm run printed, not from a scan of the results
    from stormsuite.machines import guest

    def here(cmd, prefix=""):
        command = cmd[cmd.index("--") + 1:]
        return subprocess.run(command, cwd=REPO, env=fake.environ,
                              stdin=subprocess.DEVNULL).returncode

    monkeypatch.setattr(guest, "run_command", here)
    boot = guest.Boot(guest.Guest("6.1"), "lab", "s-1", "lab boot 1/1",
                      (guest.Step("ipistorm", ("numipi=1000", "single=1",
                                               "cpulist=1", "offset=2")),
                       guest.Step("ipistorm", ("numipi=10", "single=1",
                                               "cpulist=1", "offset=2"))))
    done = guest.run_storm(boot, runs=2, warmup=0, results=fake.results,
                           extra=("--ko-dir", str(fake.ko_dir)))
    assert done.files == fake.files() and len(done.files) == 4
    # the listing is gone: the results directory holds runs only
    assert not list(fake.results.glob(".run-files-*"))
    # a traced run listed is not one of the boot's runs
    traced = done.files[0].with_name("run-traced.json")
    doc = json.loads(done.files[0].read_text())
    doc["run"]["traced"] = True
    traced.write_text(json.dumps(doc))
    listing = fake.results / "listing"
    listing.write_text(f"{done.files[1]}\n{traced}\n\n")
    assert guest.untraced_runs(listing) == [done.files[1]]
