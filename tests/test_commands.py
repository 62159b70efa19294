"""Every Python subcommand's main, run in-process the way users reach it
(cli.main, what scripts/storm runs), on the committed fixtures
(tests/data/): the commands that read results on real run files, and
those that need a guest, a kernel build or a box on their paths that
need none (--dry-run, a refused argument, a missing tree or config).
Each asserts on what the command printed, so that a crash anywhere in a
main's argument handling (a NameError in a branch no other test takes)
fails here. No guest is booted and nothing is built."""

from __future__ import annotations

import subprocess

import pytest

from conftest import REPO

from stormsuite import cli, seeds
from stormsuite.designs import options
from stormsuite.kernel import kernels
from stormsuite.machines import box

DATA = REPO / "tests" / "data"
MATRIX = DATA / "boots" / "matrix-6.1-6.12"
BASE, CAND = MATRIX / "6.1.0-56-amd64", MATRIX / "6.12.117+deb12-amd64"
INSN = DATA / "boots" / "insn-aa"
RUN = next((DATA / "runs" / "6.1.0-56-amd64").glob("*/run-*-1.json"))


def storm(capsys, *words: str) -> tuple[int, str, str]:
    """storm WORDS... in this process: exit status, stdout, stderr (an
    argparse refusal is its SystemExit's code)."""
    try:
        rc = cli.main([str(w) for w in words])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return rc, out.out, out.err


def stock(series: str) -> bool:
    try:
        kernels.resolve(series)
    except kernels.KernelNotFound:
        return False
    return True


needs_stock = pytest.mark.skipif(
    not (stock("6.1") and stock("6.12")),
    reason="Debian's 6.1 and 6.12 kernels are not installed (scripts/setup)")


@pytest.fixture
def tree(tmp_path):
    """A kernel tree as far as ab and bisect look before building: a git
    tree with a tag v1 and a commit after it."""
    t = tmp_path / "linux"
    t.mkdir()
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for cmd in (["init", "-q"], [*ident, "commit", "-q", "--allow-empty",
                                 "-m", "one"], ["tag", "v1"],
                [*ident, "commit", "-q", "--allow-empty", "-m", "two"]):
        subprocess.run(["git", "-C", str(t), *cmd], check=True)
    return t


def test_every_subcommand_is_covered():
    """A new subcommand gets a test here."""
    covered = {"vm", "show", "compare", "report", "matrix", "kernel", "ab",
               "bisect", "simulate", "calibrate", "seed", "lkp", "box",
               "arm64"}
    assert set(cli.SUBCOMMANDS) == covered
    assert set(cli.KERNEL) == {"build", "source"}


# -- the commands that read results: on real run files

def test_show(capsys):
    rc, out, err = storm(capsys, "show", RUN)
    assert rc == 0, err
    assert out.startswith("ipistorm on 6.1.0-56-amd64: done")
    assert "cpu 0 -> 1: 500 calls" in out
    assert "latency: min" in out and "p99" in out and "(n=500)" in out
    rc, out, err = storm(capsys, "show", DATA / "ipistorm-6.1-all.result")
    assert rc == 0, err
    assert "cpu 3 -> 0-3: 300 calls" in out


def test_arm64_show_says_what_was_fetched(capsys, monkeypatch, tmp_path):
    """storm arm64 show: each series' image and headers, from the root
    fetched; nothing fetched is exit 1 with where it looked."""
    from stormsuite.kernel import arm64
    monkeypatch.setattr(arm64, "ROOT", tmp_path / "root")
    monkeypatch.setattr(arm64, "HEADERS", tmp_path / "headers")
    rc, out, err = storm(capsys, "arm64", "show")
    assert rc == 1 and "nothing fetched" in err
    (tmp_path / "root" / "boot").mkdir(parents=True)
    (tmp_path / "root" / "boot" / "vmlinuz-6.12.1+deb12-arm64").touch()
    kdir = tmp_path / "headers/usr/src/linux-headers-6.12.1+deb12-arm64"
    kdir.mkdir(parents=True)
    (kdir / "Makefile").touch()
    rc, out, err = storm(capsys, "arm64", "show")
    assert rc == 0, err
    assert out == (f"6.12: {tmp_path}/root/boot/vmlinuz-6.12.1+deb12-arm64, "
                   f"headers {kdir}\n")


def test_show_says_where_arm64_counts_come_from(capsys):
    """An arm64 tlbstorm result: its IPI rows' source and why its flushes
    take none, from the module's own lines."""
    rc, out, err = storm(capsys, "show", DATA / "tlbstorm-6.12-arm64.result")
    assert rc == 0, err
    assert out.startswith("tlbstorm on 6.12.117+deb12-arm64: done")
    assert "  irq.source: IPI irqs RES 1 CAL 2, TLB none, LOC arch_timer " \
        "irq 11\n" in out
    assert "  flush_ipi: none (broadcast TLBI)\n" in out
    assert "irq.source" not in storm(capsys, "show", RUN)[1]


def test_show_refuses_what_is_not_a_run(capsys, tmp_path):
    rc, out, err = storm(capsys, "show", tmp_path)
    assert rc == 1 and out == ""
    assert "storm show: " in err and "not a readable run" in err


def test_compare(capsys):
    rc, out, err = storm(capsys, "compare", BASE, CAND)
    assert rc == 0, err
    assert out.startswith("ipistorm  cpulist=0 numipi=20000 offset=1 "
                          "single=1 wait=1\n")
    assert "sets: 6.1.0-56-amd64 3 boots x 5 runs, 6.12.117+deb12-amd64 " \
        "3 boots x 5 runs" in out
    verdict = next(line for line in out.splitlines()
                   if line.startswith("time per call "))
    # 6.12 is faster: the change is called, with its interval
    assert "-24.5% [" in verdict and "3+3 boots x 5 runs" in verdict


def test_compare_fail_above_gates_a_regression(capsys):
    """6.12 against 6.1 as baseline is faster: no failure; the other way
    round 6.1 is slower by more than 5%: exit 1."""
    assert storm(capsys, "compare", "--fail-above", "5", BASE, CAND)[0] == 0
    assert storm(capsys, "compare", "--fail-above", "5", CAND, BASE)[0] == 1


def test_compare_refuses_a_missing_set(capsys, tmp_path):
    rc, out, err = storm(capsys, "compare", BASE, tmp_path / "nothing")
    assert rc == 2
    assert "storm compare" in err and "nothing" in err


@pytest.mark.parametrize("style", ["0day", "mmtests"])
def test_report(capsys, style):
    rc, out, err = storm(capsys, "report", "--style", style, BASE, CAND)
    assert rc == 0, err
    assert "sets: 6.1.0-56-amd64 3 boots x 5 runs" in out
    assert "time per call" in out
    if style == "0day":
        assert "%stddev" in out and "%change" in out
    else:
        assert "AMean" in out or "Amean" in out


def test_calibrate(capsys):
    rc, out, err = storm(capsys, "calibrate", INSN / "6.1.0-56-amd64.a",
                         INSN / "6.1.0-56-amd64.b")
    assert rc == 0, err
    for row in ("sender", "target"):
        assert f"ipistorm on 6.1: ipistorm.insn_per_call.{row}: boot " \
            "spread " in out
    assert "8 boots x 6 runs" in out


def test_calibrate_refuses_a_set_without_instructions(capsys):
    """Time-only run files (6.1's matrix) calibrate nothing."""
    rc, out, err = storm(capsys, "calibrate", BASE)
    assert rc == 2 and out == ""
    assert "storm calibrate: no instruction counts in" in err


def test_simulate_on_the_model(capsys):
    rc, out, err = storm(capsys, "simulate", "--model", "--trials", "10",
                         "--only", "aa", "--boots", "3", "--runs", "3")
    assert rc == 0, err
    assert "noise: lognormal, per-run CV 10%, per-boot drift 6%; 3 boots " \
        "x 3 runs a side; 10 trials" in out
    assert out.splitlines()[-1].startswith("A/A: ")


def test_simulate_against_a_pools_other_side(capsys):
    rc, out, err = storm(capsys, "simulate", "--data", "ipistorm-6.1-plant",
                         "--level", "handler_loops=0", "--against",
                         "handler_loops=55", "--boots", "2", "--runs", "15",
                         "--trials", "2", "--changes", "4,6", "--only",
                         "power")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("power: a 4% change called in ")
    assert lines[2].startswith("power: a 6% change called in ")
    assert lines[3].startswith("power: the real change to handler_loops=55 "
                               "called in ")


@pytest.mark.parametrize("args,says", [
    (["--against", "handler_loops=55", "--model"], "not with --model"),
    (["--data", "ipistorm-6.1-plant", "--level", "handler_loops=0",
      "--against", "handler_loops=7"], "has levels handler_loops=0, "
     "handler_loops=55"),
    (["--changes", "5,x"], "--changes 5,x: percents"),
])
def test_simulate_refuses_bad_against_and_changes(capsys, args, says):
    rc, out, err = storm(capsys, "simulate", *args)
    assert rc == 2 and out == ""
    assert says in err


def test_simulate_refuses_an_unknown_data_set(capsys):
    rc, out, err = storm(capsys, "simulate", "--data", "nope")
    assert rc == 2
    assert "no data set 'nope'" in err


# -- the commands that boot guests: their plans and refusals

@needs_stock
def test_matrix_dry_run(capsys):
    rc, out, err = storm(capsys, "matrix", "--dry-run", "--kernel", "6.1",
                         "--kernel", "6.12", "ipistorm", "numipi=20000",
                         "single=1")
    assert rc == 0, err
    assert out.startswith(f"storm matrix: 2 sides x {options.BOOTS_COUNTED}"
                          f" boots = {2 * options.BOOTS_COUNTED} boots")
    assert "ipistorm numipi=20000 single=1; about " in out


@needs_stock
@pytest.mark.parametrize("storm_", sorted(options.BOOTS_TIMED))
def test_matrix_dry_run_boots_where_time_is_primary(capsys, storm_):
    """The defaults the help and docs state (options.BOOTS_TIMED) are the
    boots matrix plans."""
    rc, out, err = storm(capsys, "matrix", "--dry-run", "--no-insn",
                         storm_)
    assert rc == 0, err
    n = options.BOOTS_TIMED[storm_]
    assert out.startswith(f"storm matrix: 1 sides x {n} boots = {n} boots")
    assert f"each 1 warm-up + {options.RUNS_TIMED[storm_]} runs" in out


def test_matrix_refuses_an_unknown_kernel(capsys):
    rc, out, err = storm(capsys, "matrix", "--dry-run", "--kernel", "9.99",
                         "ipistorm")
    assert rc == 2 and out == ""
    assert "9.99" in err


def test_matrix_refuses_one_boot_of_time(capsys):
    rc, out, err = storm(capsys, "matrix", "--dry-run", "--no-insn",
                         "--boots", "1", "ipistorm")
    assert rc == 2
    assert "--boots 1 can never show a change in time" in err


def test_matrix_refuses_a_parameter_without_a_value(capsys):
    rc, out, err = storm(capsys, "matrix", "--dry-run", "ipistorm", "numipi")
    assert rc == 2
    assert "numipi: parameters are NAME=VALUE" in err


def test_ab_dry_run(capsys, tree):
    rc, out, err = storm(capsys, "ab", "--tree", tree, "--base", "v1",
                         "--patched", "HEAD", "--dry-run", "ipistorm",
                         "numipi=100")
    assert rc == 0, err
    assert out.startswith("storm ab: 2 sides x 3 boots = 6 boots")
    assert "storm ab: to build: " in out


def test_ab_arm64_plans_builds_of_its_own(monkeypatch):
    """An arm64 ab builds into directories of its own (objects of two
    architectures never mix), cross-compiled."""
    from stormsuite.designs import ab
    args = ab.parser().parse_args(["--tree", ".", "--base", "v1",
                                   "--patched", "v2", "--arch", "arm64",
                                   "ipistorm"])
    plans = ab.plan_builds("a" * 40, "b" * 40, args)
    assert [out.name for _, out, _, _, _ in plans] == [
        "ab-base-arm64", "ab-patched-arm64"]
    args.arch = "x86_64"
    assert [out.name for _, out, _, _, _ in ab.plan_builds(
        "a" * 40, "b" * 40, args)] == ["ab-base", "ab-patched"]


@pytest.mark.parametrize("command", ["matrix", "ab", "bisect"])
def test_a_box_is_the_architecture_it_is(capsys, command, tree, tmp_path):
    conf = tmp_path / "box.conf"
    conf.write_text("")
    revs = {"matrix": [],
            "ab": ["--tree", tree, "--base", "v1", "--patched", "HEAD"],
            "bisect": ["--tree", tree, "--good", "v1", "--bad", "HEAD"]
            }[command]
    rc, out, err = storm(capsys, command, *revs, "--box", conf, "--arch",
                         "arm64", "--dry-run", "ipistorm")
    assert rc == 2
    assert "--arch: a box is the architecture it is (--box)" in err


@pytest.mark.parametrize("command, extra, says", [
    ("matrix", ["--box", "BOX", "--append", "nohz=off"],
     "--append: a box boots with its ktest.pl config's command line"),
    ("ab", ["--box", "BOX", "--config", "FRAG"],
     "--config: fragments of a guest kernel"),
    ("ab", ["--box", "BOX", "--append", "nohz=off"],
     "--append: a box boots with its ktest.pl config's command line"),
    ("ab", ["--kconfig", "FRAG"], "--kconfig: the start of a box's builds"),
    ("bisect", ["--box", "BOX", "--append", "nohz=off"],
     "--append: not with --box"),
    ("bisect", ["--box", "BOX", "--config", "FRAG"],
     "--config: not with --box"),
    ("bisect", ["--box", "BOX", "--dry-run"], "--dry-run: not with --box"),
    ("bisect", ["--kconfig", "FRAG"],
     "--kconfig: the start of a box's builds"),
    ("bisect", ["--box", "BOX", "--resume", "STATE"],
     "--resume: a bisect on a box is ktest.pl's"),
])
def test_box_options_that_do_not_go_together(capsys, tree, tmp_path,
                                             command, extra, says):
    """What a box's design cannot take is refused before anything is
    built or booted, each with its reason."""
    (tmp_path / "box.conf").write_text("")
    (tmp_path / "frag.config").write_text("CONFIG_SMP=y\n")
    (tmp_path / "state").mkdir()
    extra = [{"BOX": tmp_path / "box.conf", "FRAG": tmp_path / "frag.config",
              "STATE": tmp_path / "state"}.get(w, w) for w in extra]
    revs = {"matrix": [],
            "ab": ["--tree", tree, "--base", "v1", "--patched", "HEAD"],
            "bisect": ["--tree", tree, "--good", "v1", "--bad", "HEAD"]
            }[command]
    rc, out, err = storm(capsys, command, *revs, *extra, "ipistorm")
    assert rc == 2, err
    assert says in err


def test_bisect_arm64_builds_apart(tmp_path):
    """An arm64 bisect's three build directories are its own."""
    from stormsuite.designs import bisect_measure, bisect_state
    state = bisect_state.BisectState(
        dir=str(tmp_path), tree=".", good="a" * 40, bad="b" * 40,
        reading=None, arch="arm64", parent="c" * 40)
    names = [bisect_measure.build_for(state, sha)[0].name
             for sha in ("a" * 40, "c" * 40, "d" * 40)]
    assert names == ["bisect-good-arm64", "bisect-parent-arm64",
                     "bisect-arm64"]


def test_ab_refuses_a_missing_patch(capsys, tree, tmp_path):
    rc, out, err = storm(capsys, "ab", "--tree", tree, "--base", "v1",
                         "--patch", tmp_path / "no.patch", "ipistorm")
    assert rc == 2
    assert "no.patch: no such patch file" in err


def test_ab_refuses_a_missing_tree(capsys, tmp_path):
    rc, out, err = storm(capsys, "ab", "--tree", tmp_path / "nowhere",
                         "--base", "v1", "--patched", "HEAD", "--dry-run",
                         "ipistorm")
    assert rc == 2 and out == ""
    assert "storm ab: " in err and "nowhere" in err


def test_bisect_dry_run(capsys, tree):
    rc, out, err = storm(capsys, "bisect", "--tree", tree, "--good", "v1",
                         "--bad", "HEAD", "--dry-run", "ipistorm",
                         "numipi=100")
    assert rc == 0, err
    first, second = out.splitlines()[:2]
    # one commit after v1: no step, the endpoints and the parent check
    assert first.startswith("storm bisect: 1 commits from ")
    assert first.endswith("about 0 steps, 3 kernel builds (the endpoints, "
                          "a build a step, the first bad's parent)")
    assert second.startswith("storm bisect: endpoints 3 to 20 boots each")


def test_bisect_dry_run_of_failures_says_no_statistics(capsys, tree):
    """--metric failures: every kernel its --boots boots once, no odds,
    no endpoint rounds."""
    rc, out, err = storm(capsys, "bisect", "--tree", tree, "--good", "v1",
                         "--bad", "HEAD", "--dry-run", "--metric",
                         "failures", "--boots", "2", "ipistorm",
                         "numipi=100")
    assert rc == 0, err
    second = out.splitlines()[1]
    assert second.startswith("storm bisect: --metric failures, no "
                             "statistics: every kernel 2 boots once")
    assert "endpoints 2 to" not in out and "odds" not in out


def test_bisect_dry_run_counts_the_commits(capsys, tree):
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for i in range(14):
        subprocess.run(["git", "-C", str(tree), *ident, "commit", "-q",
                        "--allow-empty", "-m", f"c{i}"], check=True)
    rc, out, err = storm(capsys, "bisect", "--tree", tree, "--good", "v1",
                         "--bad", "HEAD", "--dry-run", "ipistorm")
    assert rc == 0, err
    # 15 commits: git bisect's halving names the first bad in 4 steps
    assert "15 commits from " in out and "about 4 steps, 7 kernel builds" \
        in out


def test_bisect_dry_run_refuses_a_missing_tree(capsys, tmp_path):
    rc, out, err = storm(capsys, "bisect", "--tree", str(tmp_path / "nope"),
                         "--good", "v1", "--bad", "HEAD", "--dry-run",
                         "ipistorm")
    assert rc == 2 and "storm bisect: " in err


def test_bisect_refuses_good_after_bad(capsys, tree):
    rc, out, err = storm(capsys, "bisect", "--tree", tree, "--good", "HEAD",
                         "--bad", "v1", "ipistorm", "numipi=1")
    assert rc == 2
    assert "--good HEAD is not an ancestor of --bad v1" in err


def test_bisect_dry_run_takes_a_dirty_tree(capsys, tree):
    """The bisect runs in a worktree of its own: uncommitted changes in
    the user's tree are no reason to refuse."""
    (tree / "f").write_text("x")
    subprocess.run(["git", "-C", str(tree), "add", "f"], check=True)
    rc, out, err = storm(capsys, "bisect", "--tree", tree, "--good", "v1",
                         "--bad", "HEAD", "--dry-run", "ipistorm", "numipi=1")
    assert rc == 0, err
    assert "storm bisect: 1 commits from " in out


def test_bisect_step_without_state(capsys):
    rc, out, err = storm(capsys, "bisect-step")
    assert rc == 2
    assert "usage: storm bisect-step STATE.json" in out + err


def test_vm_refusals(capsys):
    rc, out, err = storm(capsys, "vm")
    assert rc == 2 and "give a command after --" in err
    rc, out, err = storm(capsys, "vm", "--kernel", "9.99", "--", "true")
    assert rc == 2 and "no Debian 9.99 kernel in /boot" in err
    rc, out, err = storm(capsys, "vm", "--cpus", "0", "--", "true")
    assert rc == 2 and "--cpus and --timeout must be positive" in err
    rc, out, err = storm(capsys, "vm", "--numa", "3", "--", "true")
    assert rc == 2 and "4 vCPUs do not split into 3 equal nodes" in err


def test_kernel_build_refusals(capsys, tmp_path):
    rc, out, err = storm(capsys, "kernel", "build", tmp_path / "nowhere")
    assert rc == 1
    assert "nowhere: not a kernel source tree" in err
    rc, out, err = storm(capsys, "kernel", "build")
    assert rc == 2
    assert "give a TREE or --series, one of them" in err
    rc, out, err = storm(capsys, "kernel", "nope")
    assert rc == 2
    assert err.startswith("usage: storm kernel build TREE")


def test_kernel_source_refusals(capsys, tmp_path):
    (tmp_path / "stray").write_text("x")
    rc, out, err = storm(capsys, "kernel", "source", tmp_path)
    assert rc == 1
    assert "exists and is not a git tree" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stray"]
    rc, out, err = storm(capsys, "kernel", "source", "--series", "9.9")
    assert rc == 2
    assert "invalid choice: '9.9'" in err


def test_kernel_source_into_an_empty_directory(capsys, monkeypatch,
                                               tmp_path):
    """An empty DIR becomes the tree (it was once moved into
    DIR/linux-source-6.1, then not found); a stand-in tarball."""
    from stormsuite.kernel import linux_source
    src = tmp_path / "pkg" / "linux-source-6.1"
    src.mkdir(parents=True)
    (src / "Makefile").write_text("kernelversion:\n\t@echo 6.1.0\n")
    tar = tmp_path / "linux-source-6.1.tar.xz"
    subprocess.run(["tar", "-cJf", str(tar), "-C", str(src.parent),
                    "linux-source-6.1"], check=True)
    monkeypatch.setattr(linux_source, "tarball", lambda series="6.1": tar)
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out, err = storm(capsys, "kernel", "source", empty)
    assert rc == 0, err
    assert out.startswith(f"{empty} storm-linux-source ")
    assert (empty / "Makefile").is_file() and (empty / ".git").is_dir()


@needs_stock
@pytest.mark.parametrize("nnn", sorted(seeds.SEEDS))
def test_seed_dry_run(capsys, nnn):
    rc, out, err = storm(capsys, "seed", nnn, "--dry-run")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"storm seed {nnn}: ")
    # the plan, then what it will cost, from the stated per-step figures
    assert lines[-1].startswith(f"storm seed {nnn}: estimated time about ")
    assert " min: " in lines[-1] and "70 s a boot and 2 s a run" in lines[-1]


def test_seed_003_refuses_cpus(capsys):
    """Its guests are sized by --sizes: --cpus is refused, not ignored."""
    rc, out, err = storm(capsys, "seed", "003", "--cpus", "8", "--dry-run")
    assert rc == 2
    assert "--cpus 8: seed 003's guests are sized by --sizes" in err


@needs_stock
def test_seed_003_sizes_its_guests(capsys):
    rc, out, err = storm(capsys, "seed", "003", "--sizes", "8", "--dry-run")
    assert rc == 0, err
    assert "guests of 8 vCPUs" in out
    assert "2 boots 2 at a time" in out.splitlines()[-1] \
        or "4 boots 2 at a time" in out.splitlines()[-1]


def test_seed_refusals(capsys):
    rc, out, err = storm(capsys, "seed", "999")
    assert rc == 2 and "no seed '999'" in err
    rc, out, err = storm(capsys, "seed", "000", "--runs", "0", "--dry-run")
    assert rc == 2 and "--runs must be at least 1" in err
    rc, out, err = storm(capsys, "seed")
    assert rc == 0 and out.startswith("usage: storm seed NNN")
    assert all(f"  {n}  " in out for n in seeds.SEEDS)


def test_lkp(capsys, tmp_path):
    rc, out, err = storm(capsys, "lkp", "install", tmp_path / "nowhere")
    assert rc == 1
    assert "not an lkp-tests checkout" in err
    rc, out, err = storm(capsys, "lkp")
    assert rc == 2
    assert "usage: storm lkp" in err


BOX_CONF = REPO / "configs" / "box" / "box.conf"


@pytest.mark.parametrize("words", [
    ["box", "bisect", "--tree", "TREE", "--good", "v1", "--bad", "HEAD",
     "--config"],
    ["box", "bisect-test", "--kernel", "TREE", "--good", "a", "--bad", "b",
     "--config"],
    ["matrix", "--kernel", "6.1", "--kernel", "6.12", "--box"],
    ["ab", "--tree", "TREE", "--base", "HEAD", "--patched", "HEAD",
     "--box"],
    ["bisect", "--tree", "TREE", "--good", "HEAD~1", "--bad", "HEAD",
     "--box"],
], ids=lambda w: " ".join(w[:2]))
def test_box_refuses_a_missing_config(capsys, tree, tmp_path, words):
    words = [str(tree) if w == "TREE" else w for w in words]
    conf = tmp_path / "no.conf"
    rc, out, err = storm(capsys, *words, conf, "ipistorm", "numipi=1")
    assert rc != 0
    assert f"{conf}: No such file" in err, err
    assert err.startswith(f"storm {words[0]}"), err


def test_box_build_dry_run(capsys, monkeypatch, tree, tmp_path):
    """ktest.pl's config for a build, written and printed; nothing built
    (the logs go to tmp_path)."""
    monkeypatch.setattr(box, "LOGS", tmp_path / "logs")
    ktest_pl = tmp_path / "ktest.pl"
    ktest_pl.write_text("exit 0;\n")
    kconfig = tmp_path / "kconfig"
    kconfig.write_text("CONFIG_SMP=y\n")
    rc, out, err = storm(capsys, "box", "build", "--config", BOX_CONF,
                         "--ktest", ktest_pl, "--tree", tree, "--name", "x",
                         "--kconfig", kconfig, "--dry-run")
    assert rc == 0, err
    assert "TEST_TYPE = install" in out
    assert f"BUILD_TYPE = useconfig:{kconfig}" in out
    assert out.rstrip().endswith("ktest.conf")


def test_box_vm_refusals(capsys):
    rc, out, err = storm(capsys, "box", "vm", "kconfig")
    assert rc == 2 and "kconfig needs --tree and --out" in err
    rc, out, err = storm(capsys, "box", "nope")
    assert rc == 2 and "unknown command 'nope'" in err


def test_box_step_without_state(capsys):
    rc, out, err = storm(capsys, "box-step")
    assert rc == 2
    assert "usage: storm box-step STATE" in out + err


def test_unknown_subcommand(capsys):
    rc, out, err = storm(capsys, "nope")
    assert rc == 2
    assert "unknown subcommand 'nope'" in err and "usage: storm" in err


@pytest.mark.parametrize("words", [["matrix"], ["ab"]])
def test_the_measuring_commands_take_compares_view_options(words):
    """matrix and ab, on guests or a box, print as compare does."""
    p, rest = cli.parser(words)
    option_strings = {o for a in p._actions for o in a.option_strings}
    assert {"--metrics", "--explain"} <= option_strings


def test_matrix_passes_the_view_options_to_its_comparison():
    from stormsuite.report import compare
    p, _ = cli.parser(["matrix"])
    args = p.parse_args(["--metrics", "CAL", "--explain", "ipistorm"])
    settings = compare.Settings.of(args)
    assert settings.metrics == "CAL" and settings.explain
