"""The seed commands' cheap parts: the patches apply to linux-source-6.1,
the job files load and a bad one is refused saying why, every command
has --help, refuses bad options and plans with --dry-run, the
seed-format answers compute what they say, and storm vm's --numa makes
the nodes asked for (in a small guest). The full runs are e2e:
docs/seeds.md has them, measured."""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import tarfile

import pytest

from conftest import REPO
from stormsuite import seeds
from stormsuite.kernel import linux_source
from stormsuite.machines import vm
from stormsuite.seeds import SEEDS, answers, job, load

STORM = REPO / "scripts" / "storm"
PATCHES = sorted((REPO / "patches").glob("seed-*.patch"))


def storm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(STORM), *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture(scope="module")
def source_files(tmp_path_factory) -> pathlib.Path:
    """The files the seed patches touch, out of the linux-source-6.1
    tarball (scripts/setup installs it)."""
    tar = linux_source.tarball()
    assert tar is not None, "linux-source-6.1 is not installed (scripts/setup)"
    wanted = {f"{linux_source.PACKAGE}/{m}"
              for p in PATCHES
              for m in re.findall(r"^\+\+\+ b/(\S+)", p.read_text(), re.M)}
    out = tmp_path_factory.mktemp("src")
    with tarfile.open(tar) as t:
        members = [m for m in t if m.name in wanted]
        t.extractall(out, members=members, filter="data")
    assert len(members) == len(wanted), wanted - {m.name for m in members}
    return out / linux_source.PACKAGE


def test_every_seed_kernel_patch_exists():
    jobs = [load(nnn) for nnn in job.jobs()]
    named = {k.patch for j in jobs for k in j.kernels if k.patch}
    assert {k.stock for j in jobs for k in j.kernels} == {None, "6.1",
                                                            "6.12"}
    assert named == {p.name for p in PATCHES}
    # a job is named for its seed and for what it reproduces
    assert sorted(job.jobs()) == ["000", "002", "003", "004"]
    for nnn, path in job.jobs().items():
        assert load(nnn).seed == nnn
        assert re.fullmatch(rf"{nnn}-[a-z0-9-]+\.toml", path.name)


BASE_JOB = """seed = "9"
title = "t"
about = "a"
storm = "ipistorm"
params = "numipi=1"
guest = { boots = 2, runs = 1 }
compare = "first-against-rest"
answer = { format = "lkp" }
[[kernels]]
name = "stock"
"""


@pytest.mark.parametrize("text,says", [
    ("seed = [", "Invalid"),
    ('seed = "9"\ntitle = "t"\n', "no about, storm"),
    ("bogus = 1\n" + BASE_JOB, "unknown keys bogus"),
    (BASE_JOB, "two kernels at least"),
    (BASE_JOB.replace('"lkp"', '"csv"'), "format one of mmtests, lkp"),
    (BASE_JOB.replace('"first-against-rest"', '"all"'),
     "compare: one of first-against-rest"),
    (BASE_JOB + '[[kernels]]\nname = "x"\npatch = "none.patch"\n',
     "kernel x: no "),
])
def test_a_bad_job_file_is_refused_saying_why(tmp_path, text, says):
    f = tmp_path / "9-x.toml"
    f.write_text(text)
    with pytest.raises(job.JobError, match=says):
        job.load(f)
    res = storm("seed", str(f), "--dry-run")
    assert res.returncode == 2 and says in res.stderr, res.stderr


def test_any_job_file_runs_as_a_seed_does(tmp_path):
    """A job file of one's own: storm seed FILE takes it as it takes the
    seeds' (its options, --dry-run), and a patch that is not there is
    refused before anything is built."""
    text = (REPO / "seeds" / "004-tif-notify-ipi.toml").read_text()
    f = tmp_path / "mine.toml"
    f.write_text(text.replace('seed = "004"', 'seed = "mine"'))
    res = storm("seed", str(f), "--numipi", "500", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("storm seed mine: kernels: stock, "
                                 "004-revert")
    assert "numipi=500 single=1" in res.stdout
    f.write_text(text.replace("seed-004-ipi", "seed-999-ipi"))
    res = storm("seed", str(f), "--dry-run")
    assert res.returncode == 2 and "no " in res.stderr \
        and "seed-999-ipi" in res.stderr


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_patch_applies_to_linux_source_6_1(patch, source_files):
    res = subprocess.run(["git", "apply", "--check", str(patch)],
                         cwd=source_files, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    # a header saying what it reverts and where the seed's code is in 6.1
    head = patch.read_text().split("\ndiff --git", 1)[0]
    assert "Seed 00" in head and "6.1" in head


def test_seed_help_lists_all_five():
    res = storm("seed", "--help")
    assert res.returncode == 0
    assert re.findall(r"^  (\d{3})  ", res.stdout, re.M) == list(SEEDS)
    assert "seed" in storm("--help").stdout


@pytest.mark.parametrize("nnn", list(SEEDS))
def test_each_seed_help_and_dry_run(nnn):
    res = storm("seed", nnn, "--help")
    assert res.returncode == 0 and "--dry-run" in res.stdout
    res = storm("seed", nnn, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"storm seed {nnn}: ")


@pytest.mark.parametrize("args,says", [
    (["999"], "no seed"),
    (["/nonexistent/job.toml"], "No such file"),
    (["003", "--kernel", "9.99"], "no Debian 9.99 kernel"),
    (["003", "--cpus", "8"], "guests are sized by --sizes"),
    (["004", "--cpus", "16"], "at least 17"),
    (["004", "--boots", "1"], "--boots"),
    (["003", "--sizes", "1,4"], "between 2"),
    (["003", "--sizes", "x"], "vCPU counts"),
    (["001", "--nodes", "3"], "do not split"),
    (["001", "--cpus", "4", "--nodes", "4"], "2 vCPUs"),
    (["002", "--numcache", "0"], "at least 1"),
    (["000", "--cpus", "2"], "at least 3"),
])
def test_seed_refuses(args, says):
    res = storm("seed", *args)
    assert res.returncode == 2
    assert says in res.stderr


def test_numa_nodes_split_cpus_and_memory():
    assert vm.numa_nodes(8, "2G", 1) == []
    assert vm.numa_nodes(8, "2G", 2) == ["1024M,cpus=0-3", "1024M,cpus=4-7"]
    assert vm.numa_nodes(8, "2048M", 4)[3] == "512M,cpus=6-7"
    for bad in ((8, "2G", 3), (4, "1025M", 2)):
        with pytest.raises(ValueError):
            vm.numa_nodes(*bad)
    res = storm("vm", "--numa", "3", "--", "true")
    assert res.returncode == 2 and "equal nodes" in res.stderr


def test_numa_guest_gets_a_socket_per_node(tmp_path):
    """vng's one-socket -smp with two nodes makes the kernel warn at boot
    (an LLC shared across nodes): a socket per node instead."""
    from stormsuite.kernel import kernels
    args = vm.argparse.Namespace(accel="tcg", append="", cpus=8, numa=2,
                                 memory="2G", verbose=False)
    k = kernels.Kernel(image=tmp_path, release="r", kdir=None)
    cmd = vm.vng_command(args, k, tmp_path, [])
    specs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--numa"]
    assert specs == ["1024M,cpus=0-3", "1024M,cpus=4-7"]
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert "-smp 8,sockets=2,cores=4,threads=1" in opts
    args.numa = 1
    cmd = vm.vng_command(args, k, tmp_path, [])
    assert "--numa" not in cmd and "-smp" not in " ".join(cmd)


def doc(metric_means: dict[str, tuple[float, float]],
        labels=("base", "cand")) -> dict:
    """A comparison JSON of two sides with these means."""
    return {"baseline": labels[0], "candidates": [labels[1]],
            "metrics": {m: {"values": {labels[0]: {"mean": a},
                                       labels[1]: {"mean": b}},
                            "changes": {}}
                        for m, (a, b) in metric_means.items()}}


def measured(j: job.Job, docs: list[dict], sets=None) -> list[job.Measured]:
    """Every variant of job J with these comparisons, in its pairs."""
    return [job.Measured(v, j.kernels, sets or [], [
        job.Comparison(j.kernels[b], j.kernels[c], d)
        for (b, c), d in zip(j.pairs(), docs)]) for v in j.variants]


def test_seed_004_answer_normalizes_runtime_to_stock():
    j = load("004")
    args = argparse.Namespace(**{"numipi": 100000, "cpus": 17, "boots": 3,
                          "runs": 3})
    d = doc({"ipistorm.runtime_ns": (2.0e9, 1.62e9),
             "ipistorm.irq.CPU16.CAL": (12.0, 100000.0),
             "ipistorm.handled": (100000.0, 100000.0)})
    text = answers.mmtests(j, args, measured(j, [d]), "accel tcg").text
    assert "1.00 [  0.00]" in text
    # 1.62 / 2.0 = 0.81, 19% better, as the seed prints it
    assert "0.81 [ 19.00]" in text
    assert re.search(r"stock 6.1 \+ revert .* 100000 +0 ", text)
    assert re.search(r"stock 6.1 +1.00 .* 12 +99988 ", text)
    assert "  default idle (HLT):" in text and "  idle=poll:" in text
    assert "tip + revert 0.81 [19.36]" in text


def test_seed_000_answer_states_the_change_in_the_seeds_direction():
    j = load("000")
    args = argparse.Namespace(**{"numipi": 5000, "cpus": 4, "boots": 3,
                          "runs": 5})
    d = doc({"interrupts.CAL:Function_call_interrupts": (45000.0, 15000.0),
             "ipistorm.ipis_sent": (45000.0, 15000.0),
             "ipistorm.runtime_ns": (1e9, 9e8)})
    # the rows restate primary metrics; their verdicts are the primaries'
    d["metrics"]["ipistorm.ipis_sent_per_call"] = {"changes": {"cand": {
        "pct": -66.7, "ci_low": -67.0, "ci_high": -66.4, "p": 1e-9,
        "significant": True}}}
    text = answers.lkp(j, args, measured(j, [d, d]), "accel tcg").text
    assert '"interrupts.CAL:Function_call_interrupts": 15000.0, \u219366.7%' \
        '  (ipis_per_call: ~)' in text
    assert '"ipistorm.ipis_sent": 15000.0, \u219366.7%  (ipis_sent_per_call: ' \
        '-66.7% [-67.0%, -66.4%] p=1e-09)' in text
    assert text.count("Base (seed-000-") == 4
    assert text.count("This patch (stock 6.1, which has it):") == 4
    assert "ipistorm numipi=5000 single=0 cpulist=0-3 latency=0 " \
        "count_sent=1 wait=1" in text


def test_seed_002_answer_in_the_seeds_form():
    j = load("002")
    args = argparse.Namespace(**{"numcache": 10000, "cpus": 4, "boots": 2,
                          "runs": 3})

    def series(create0, create, destroy):
        return type("S", (), {"runs": [{"result": {
            "phase.create.irq.0.CAL": str(create0),
            "phase.create.CAL": str(create),
            "phase.destroy.CAL": str(destroy)}}]})()
    sets = [series(10000, 30000, 30000), series(1, 3, 30000),
            series(1, 3, 30000)]
    text = answers.loops(j, args, measured(j, [{}, {}], sets),
                         "accel tcg").text
    assert "10000 loops: +10000 ipis   (all CPUs +30000, 3.000 a cache; " \
        "destroy +30000)" in text
    assert "10000 loops: +1 ipis   (all CPUs +3, 0.000 a cache" in text
    assert "SLAB, fix reverted (the seed's unpatched)" in text


def test_seed_002_reads_the_create_phase_of_each_run():
    runs = [{"result": {"phase.create.irq.0.CAL": "9", "phase.create.CAL":
                        "27", "phase.destroy.CAL": "30"}},
            {"result": {"phase.create.irq.0.CAL": "11", "phase.create.CAL":
                        "33", "phase.destroy.CAL": "30"}}]
    series = type("S", (), {"runs": runs})()
    assert answers.phase_means(series) == {"phase.create.irq.0.CAL": 10.0,
                                           "phase.create.CAL": 30.0,
                                           "phase.destroy.CAL": 30.0}


def test_the_jobs_compare_as_their_seeds_read():
    """004 and 002: stock (or the reverted kernel) first, against each
    other; 000: each kernel without the fix against stock, last."""
    assert load("004").pairs() == [(0, 1)]
    assert load("002").pairs() == [(0, 1), (0, 2)]
    assert load("000").pairs() == [(0, 2), (1, 2)]
    assert load("003").pairs() == []
    j = load("000")
    args = argparse.Namespace(**{"numipi": 7, "cpus": 6})
    assert j.storm_params(args, j.variants[0]) == [
        "numipi=7", "single=0", "cpulist=0-5", "latency=0", "count_sent=1",
        "wait=0"]


def test_answers_are_never_overwritten(tmp_path):
    from stormsuite.seeds import common
    a = common.write_answer(tmp_path, "one\n")
    b = common.write_answer(tmp_path, "two\n")
    assert a != b and a.read_text() == "one\n" and b.read_text() == "two\n"
    common.write_json(tmp_path, b, {"x": 1})
    assert json.loads(b.with_suffix(".json").read_text()) == {"x": 1}


def test_seed_001_places_storms_by_node_and_compares_like_with_like():
    from stormsuite.seeds import s001
    args = argparse.Namespace(**{"cpus": 8, "nodes": "1,2,4", "numflush": 300,
                          "numipi": 2000, "boots": 2, "runs": 3})
    runs4 = s001.runs_of(args, 4)
    # node 0 to node B: the last 8/4-1 CPUs of B, the same count for all B
    assert [p[2][2] for p in runs4 if p[1] == "tlbstorm"][:4] == [
        "targets=1", "targets=3", "targets=5", "targets=7"]
    assert runs4[-1] == ("all nodes", "tlbstorm",
                         ["numflush=300", "cpulist=0,2,4,6", "count_sent=1"])
    cells = [s001.Cell(2, "pair 0-0", "tlbstorm", 4000.0, 1.0, 3.0, {},
                       [3990.0, 4010.0]),
             s001.Cell(2, "pair 0-1", "tlbstorm", 5000.0, 1.0, 3.0, {},
                       [4990.0, 5010.0]),
             s001.Cell(4, "pair 0-0", "tlbstorm", 1000.0, 1.0, 1.0, {},
                       [800.0, 1200.0]),
             s001.Cell(4, "pair 0-1", "tlbstorm", 1100.0, 1.0, 1.0, {},
                       [900.0, 1300.0])]
    text = s001.answer(args, "r", cells, "accel tcg")
    # a clear difference is stated with its interval; noise is ~
    assert re.search(r"2 nodes, tlbstorm  pair 0-1: 5.00 us against 4.00 us"
                     r"  \+25.0% \[\+\d", text), text
    assert re.search(r"4 nodes, tlbstorm  pair 0-1: 1.10 us against 1.00 us"
                     r"  ~ \[", text), text


def test_kernel_source_refuses_a_directory_that_is_not_a_git_tree(tmp_path):
    (tmp_path / "stray").write_text("x")
    res = storm("kernel", "source", str(tmp_path))
    assert res.returncode == 1
    assert "is not a git tree" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stray"]


def test_storm_without_venv_says_run_setup(tmp_path):
    """A clone before scripts/setup: a sentence, not a traceback."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "storm").write_bytes(STORM.read_bytes())
    (scripts / "storm").chmod(0o755)
    res = subprocess.run([str(scripts / "storm"), "seed", "--help"],
                         capture_output=True, text=True,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2
    assert "run scripts/setup first" in res.stderr
    assert "Traceback" not in res.stderr


def test_built_holds_the_source_lock_over_the_boots(monkeypatch):
    # the seed commands' one opening: build, then boot under the same
    # lock, the clock lapping each
    from stormsuite.seeds import common
    held = []

    class Lock:
        def __init__(self, who):
            self.who = who

        def __enter__(self):
            held.append(self.who)

        def __exit__(self, *exc):
            held.remove(self.who)

    monkeypatch.setattr(common.source, "lock", Lock)
    monkeypatch.setattr(common, "build",
                        lambda kernels, who: {k.name: k.name
                                              for k in kernels})
    clock = common.Clock()
    with common.built([common.Kernel("stock")], "storm seed 999", clock) as outs:
        assert outs == {"stock": "stock"}
        assert held == ["storm seed 999"]
        assert [w for w, _ in clock.parts] == ["builds"]
    assert held == []
    assert [w for w, _ in clock.parts] == ["builds", "boots and runs"]


def test_at_least_names_the_option_and_why():
    from stormsuite.seeds import common
    p = seeds.parser("000")
    args = p.parse_args(["--cpus", "2"])
    with pytest.raises(SystemExit):
        common.at_least(p, args, "three CPUs", cpus=3)
    common.at_least(p, args, cpus=2, numipi=1)


def test_seed_003_answers_by_size_from_each_runs_histogram(tmp_path):
    """Per kernel and size: the boots' mean of the runs' means, and the
    p99 and max of every broadcast timed, merged over runs; a plot."""
    j = load("003")
    args = argparse.Namespace(numipi=2000, boots=2, runs=1,
                              sizes="4,16", kernel=[])

    def run(mean_ns, max_ns):
        return {"result": {"latency.mean_ns": str(mean_ns),
                           "latency.min_ns": "1000",
                           "latency.max_ns": str(max_ns),
                           "latency.count": "10",
                           "latency.hist": f"1024:9 {max_ns}:1"},
                "env": {"seconds_since_boot": "20"}}

    def series(*boots):
        return type("S", (), {"boots": [[run(*b)] for b in boots],
                              "runs": [run(*b) for b in boots]})()
    sets4 = [series((2000, 8192), (4000, 8192)),
             series((3000, 16384), (3000, 16384))]
    sets16 = [series((9000, 65536), (11000, 65536)),
              series((9000, 32768), (9000, 32768))]
    ms = [job.Measured(v, j.kernels, sets, [])
          for v, sets in zip(j.variants_for(args), (sets4, sets16))]
    answer = answers.broadcast(j, args, ms, "accel tcg")
    assert re.search(r"6.1 +4 +3.0us +\(47.1%\)", answer.text), answer.text
    assert re.search(r"6.12 +16 +9.0us +\(0.0%\) .* 32.8us ", answer.text)
    assert [(c["kernel"], c["cpus"]) for c in answer.data["cells"]] == [
        ("6.1", 4), ("6.12", 4), ("6.1", 16), ("6.12", 16)]
    png = answer.plot(tmp_path / "a.png")
    assert png.stat().st_size > 1000
