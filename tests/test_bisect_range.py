"""tests/e2e/bisect-range's history builder on two small trees standing
for linux-source-7.2 and 7.3: the history goes from the one to the other
a directory at a time, the code the build sees in one commit at its
place, the plant in one commit of its own after it, and its top is 7.3
with the plant and nothing else."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from conftest import script_module

QUEUE = "\t__smp_call_single_queue(cpu, &csd->node.llist);\n"


def bisect_range():
    return script_module("tests/e2e/bisect-range")


def git(tree: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), "-c", "user.name=t",
                           "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def tree_with(path: pathlib.Path, files: dict[str, str]) -> str:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for name, text in files.items():
        f = path / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "release")
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path, monkeypatch):
    br = bisect_range()
    old = {"kernel/smp.c": "int smp;\n" + QUEUE, "kernel/sched.c": "1\n",
           "drivers/net/a.c": "a\n", "drivers/gpu/b.c": "b\n",
           "fs/ext4/c.c": "c\n", "sound/d.c": "d\n", "Makefile": "v1\n"}
    new = dict(old, **{"kernel/smp.c": "int smp2;\n" + QUEUE,
                       "kernel/sched.c": "2\n", "drivers/net/a.c": "a2\n",
                       "drivers/gpu/b.c": "b2\n", "fs/ext4/c.c": "c2\n",
                       "Makefile": "v2\n", "mm/e.c": "e\n"})
    del new["sound/d.c"]
    trees = {"7.2": tmp_path / "src-7.2", "7.3": tmp_path / "src-7.3"}
    commits = {s: tree_with(t, f) for (s, t), f in
               zip(trees.items(), (old, new))}
    # the 7.3 build compiled kernel/ (smp.c, sched.c) and nothing else
    built = tmp_path / "debian-7.3"
    (built / "kernel").mkdir(parents=True)
    (built / "vmlinux").write_text("")
    (built / "kernel" / ".smp.o.cmd").write_text(
        "source_kernel/smp.o := /x/build/kernel/src/kernel/smp.c\n")
    monkeypatch.setattr(br, "RANGE", tmp_path / "range")
    monkeypatch.setattr(br, "BUILT_73", built)
    monkeypatch.setattr(br.linux_source, "ensure",
                        lambda series: commits[series])
    monkeypatch.setattr(br.linux_source, "tree_of", lambda s: trees[s])
    return br, commits, new


def test_the_history_goes_from_7_2_to_7_3_a_directory_at_a_time(history):
    br, commits, new = history
    shape = br.make_history(live_at=0.4, plant_at=0.7, nops=5)
    rng = br.RANGE
    log = git(rng, "log", "--reverse", "--format=%H %s",
              f"{br.GOOD_TAG}..{br.BAD_TAG}").splitlines()
    subjects = [line.split(" ", 1)[1] for line in log]
    # every directory the build does not see is a commit of its own,
    # plus the built code's one and the plant's
    assert shape["commits"] == len(log) == shape["directories"] + 2
    dirs = [s for s in subjects if s.endswith(": 7.2 -> 7.3")
            and not s.startswith("the code")]
    # (a removal goes with the built code: sound/ has none left)
    assert dirs == ["drivers/gpu: 7.2 -> 7.3", "drivers/net: 7.2 -> 7.3",
                    "fs/ext4: 7.2 -> 7.3", "mm: 7.2 -> 7.3"]
    live = subjects.index("the code the guest configuration builds: "
                          "7.2 -> 7.3")
    plant = subjects.index("smp: a few instructions before queueing a "
                           "single call")
    assert live == round(0.4 * 4) and plant == round(0.7 * 4) + 1
    assert live < plant
    assert shape["planted"] == log[plant].split()[0]
    # the built code's commit: what the build saw, the rest of a
    # directory it built in, build files, removals
    changed = git(rng, "show", "--name-only", "--format=",
                  log[live].split()[0]).split()
    assert sorted(changed) == ["Makefile", "kernel/sched.c",
                               "kernel/smp.c", "sound/d.c"]
    # the plant changes kernel/smp.c alone, by the NOPs before the queue
    diff = git(rng, "show", "--format=", shape["planted"])
    assert git(rng, "show", "--name-only", "--format=",
               shape["planted"]).split() == ["kernel/smp.c"]
    assert '+\tasm volatile(".rept 5; nop; .endr");' in diff
    # the top is 7.3 with the plant and nothing else; the good tag is 7.2
    top = git(rng, "diff", "--name-only", commits["7.3"], br.BAD_TAG)
    assert top.split() == ["kernel/smp.c"]
    assert git(rng, "rev-parse", f"{br.GOOD_TAG}^{{commit}}") == \
        commits["7.2"]
    assert "sound/d.c" not in git(rng, "ls-tree", "-r", "--name-only",
                                  br.BAD_TAG)


def test_the_same_positions_give_the_same_history(history):
    """Fixed dates and author: a rerun makes the same commits, so the
    bisect's builds are kept."""
    br = history[0]
    first = br.make_history(0.4, 0.7, 5)["planted"]
    assert br.make_history(0.4, 0.7, 5)["planted"] == first


def test_a_large_directory_is_split_a_level_deeper(monkeypatch):
    br = bisect_range()
    monkeypatch.setattr(br, "GROUP_FILES", 2)
    groups = br.split_by_directory(
        ["drivers/net/x/1.c", "drivers/net/y/2.c", "drivers/net/y/3.c",
         "fs/a.c", "README"])
    assert groups == {"(top)": ["README"],
                      "drivers/net/x": ["drivers/net/x/1.c"],
                      "drivers/net/y": ["drivers/net/y/2.c",
                                        "drivers/net/y/3.c"],
                      "fs": ["fs/a.c"]}
