"""source.py: one directory every ab and bisect build compiles from.

What matters to make and ccache: the content is exactly the revision's,
and a file whose content did not change keeps its mtime.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

from stormsuite.kernel import source


@pytest.fixture
def src(tmp_path, monkeypatch):
    root = tmp_path / "build" / "kernel"
    root.mkdir(parents=True)
    monkeypatch.setattr(source, "BUILD_ROOT", root)
    monkeypatch.setattr(source, "SRC", root / "src")
    monkeypatch.setattr(source, "MANIFEST", root / ".src-manifest.json")
    monkeypatch.setattr(source, "LOCK", root / ".src.lock")
    monkeypatch.setattr(source, "REPO", tmp_path)
    monkeypatch.setattr(source, "HOLDS", root / ".src-holds.json")
    monkeypatch.setattr(source, "MODULES_LOCK", root / ".src-modules.lock")
    return root / "src"


def repo(path: pathlib.Path, files: dict[str, str], when: str = "1") -> str:
    """A git repository at PATH with one commit per call: its sha."""
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{when} +0000",
           "GIT_COMMITTER_DATE": f"@{when} +0000"}
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c",
           "user.email=t@t"]
    if not (path / ".git").exists():
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(git[:3] + ["init", "-q"], check=True)
    for name, text in files.items():
        f = path / name
        if text is None:
            f.unlink()
            continue
        f.parent.mkdir(parents=True, exist_ok=True)
        if text.startswith("->"):
            f.unlink(missing_ok=True)
            f.symlink_to(text[2:])
        else:
            f.write_text(text)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "c", "--allow-empty"], check=True,
                   env=env)
    return subprocess.run(git[:3] + ["rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def mtimes(src: pathlib.Path) -> dict[str, int]:
    return {str(p.relative_to(src)): p.lstat().st_mtime_ns
            for p in src.rglob("*") if p.is_file() or p.is_symlink()}


def tree_of(src: pathlib.Path) -> dict[str, str]:
    out = {}
    for p in src.rglob("*"):
        rel = str(p.relative_to(src))
        if p.is_symlink():
            out[rel] = "->" + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_text()
    return out


def assert_resync_undoes(tmp_path, src, rev, before, expected):
    """Syncing REV again writes and removes EXPECTED files, restores
    FILES, and leaves an untouched file's mtime alone."""
    time.sleep(0.01)
    assert source.sync(tmp_path / "a", rev) == expected
    assert tree_of(src) == FILES
    assert mtimes(src)["Makefile"] == before["Makefile"]


FILES = {"Makefile": "all:\n", "kernel/smp.c": "int a;\n",
         "kernel/sched/core.c": "int b;\n", "scripts/run.sh": "#!/bin/sh\n",
         "include/link.h": "->../kernel/smp.c"}


def test_a_revision_is_written_once_and_then_left_alone(tmp_path, src):
    a = repo(tmp_path / "a", FILES)
    assert source.sync(tmp_path / "a", a) == (len(FILES), 0)
    assert tree_of(src) == FILES
    before = mtimes(src)
    time.sleep(0.01)
    assert source.sync(tmp_path / "a", a) == (0, 0)
    assert mtimes(src) == before


def test_another_tree_with_the_same_content_writes_nothing(tmp_path, src):
    """A second checkout, even with its own history (another commit date,
    so other shas), is the same source: nothing to rebuild."""
    a = repo(tmp_path / "a", FILES, when="1")
    b = repo(tmp_path / "b", FILES, when="2")
    assert a != b
    source.sync(tmp_path / "a", a)
    before = mtimes(src)
    assert source.sync(tmp_path / "b", b) == (0, 0)
    assert mtimes(src) == before


def test_one_commit_away_rewrites_only_what_differs(tmp_path, src):
    a = repo(tmp_path / "a", FILES)
    b = repo(tmp_path / "a", {"kernel/smp.c": "int a2;\n",
                              "kernel/sched/core.c": None,
                              "scripts/run.sh": "#!/bin/sh\n"}, when="2")
    source.sync(tmp_path / "a", a)
    before = mtimes(src)
    time.sleep(0.01)
    assert source.sync(tmp_path / "a", b) == (1, 1)
    after = mtimes(src)
    assert after["kernel/smp.c"] > before["kernel/smp.c"]
    assert after["Makefile"] == before["Makefile"]
    assert not (src / "kernel" / "sched").exists()  # emptied dirs go too
    assert (src / "kernel" / "smp.c").read_text() == "int a2;\n"


def test_a_patch_on_top_is_undone_by_the_next_sync(tmp_path, src):
    a = repo(tmp_path / "a", FILES)
    source.sync(tmp_path / "a", a)
    before = mtimes(src)
    patch = tmp_path / "fix.patch"
    patch.write_text(textwrap.dedent("""\
        --- a/kernel/smp.c
        +++ b/kernel/smp.c
        @@ -1 +1 @@
        -int a;
        +int fixed;
        """))
    source.apply_patch(patch, check=True)
    assert (src / "kernel" / "smp.c").read_text() == "int a;\n"
    source.apply_patch(patch)
    assert (src / "kernel" / "smp.c").read_text() == "int fixed;\n"
    with pytest.raises(source.SourceError):
        source.apply_patch(patch, check=True)  # already applied
    assert_resync_undoes(tmp_path, src, a, before, (1, 0))


def test_without_a_manifest_files_are_hashed_not_rewritten(tmp_path, src):
    """An interrupted sync leaves no manifest; the next one must still
    keep every unchanged file's mtime (and catch a changed one)."""
    a = repo(tmp_path / "a", FILES)
    source.sync(tmp_path / "a", a)
    source.MANIFEST.unlink()
    (src / "kernel" / "smp.c").write_text("int edited;\n")
    (src / "stray.o").write_text("")
    before = mtimes(src)
    assert_resync_undoes(tmp_path, src, a, before, (1, 1))


def test_a_mode_change_is_a_chmod(tmp_path, src):
    a = repo(tmp_path / "a", FILES)
    source.sync(tmp_path / "a", a)
    (tmp_path / "a" / "scripts" / "run.sh").chmod(0o755)
    b = repo(tmp_path / "a", {}, when="2")
    before = mtimes(src)
    source.MANIFEST.unlink()  # make it look, not trust
    source.sync(tmp_path / "a", b)
    assert os.access(src / "scripts" / "run.sh", os.X_OK)
    assert mtimes(src) == before


def test_git_in_the_source_directory_sees_no_repository(tmp_path, src):
    """build/ is inside this repository: kbuild's setlocalversion and our
    git apply must not find it from build/kernel/src."""
    a = repo(tmp_path / "a", FILES)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    source.sync(tmp_path / "a", a)
    res = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=src,
                         env=source.no_repo_env(), capture_output=True)
    assert res.returncode != 0


def test_a_second_command_waits_for_the_first(tmp_path, src, capfd):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""\
            import sys, time
            sys.path.insert(0, {str(pathlib.Path(source.__file__).parents[2])!r})
            from stormsuite.kernel import source
            import pathlib
            source.LOCK = pathlib.Path({str(source.LOCK)!r})
            with source.lock("storm bisect"):
                print("held", flush=True)
                time.sleep(1.5)
            """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    with source.lock("storm ab"):
        waited = time.monotonic() - started
        # a command it starts (git bisect run's step) does not wait again
        with source.lock("storm bisect-step"):
            pass
    holder.wait()
    assert waited > 0.5
    assert source.HELD not in os.environ
    assert "storm ab: waiting for storm bisect (pid" in capfd.readouterr().err


PATCH = textwrap.dedent("""\
    --- a/kernel/smp.c
    +++ b/kernel/smp.c
    @@ -1 +1 @@
    -int a;
    +int fixed;
    """)


def built(src: pathlib.Path, name: str, revision: str) -> pathlib.Path:
    """A build directory of SRC, as kbuild leaves one, recorded."""
    from stormsuite.kernel import kbuild
    out = src.parent / name
    out.mkdir()
    (out / "source").symlink_to(src)
    (out / kbuild.STAMP).write_text(f'{{"revision": "{revision}"}}\n')
    source.record(out)
    return out


def test_the_storms_of_a_build_are_made_against_what_it_was_built_from(
        tmp_path, src):
    """ab builds base then patched, then makes base's storms: SRC must
    hold base again, patch undone, for as long as they are made."""
    a = repo(tmp_path / "a", FILES)
    b = repo(tmp_path / "a", {"kernel/smp.c": "int b;\n"}, when="2")
    patch = tmp_path / "fix.patch"
    patch.write_text(PATCH)
    source.checkout(tmp_path / "a", a, "t")
    base = built(src, "ab-base", source.revision_id(a))
    source.checkout(tmp_path / "a", a, "t", patch)
    patched_id = source.revision_id(a, patch)
    patched = built(src, "ab-patched", patched_id)
    patch.unlink()  # the user's file may go: the build kept a copy
    source.checkout(tmp_path / "a", b, "t")
    with source.made_against(base, "storm vm"):
        assert tree_of(src) == FILES
    with source.made_against(patched, "storm vm"):
        assert (src / "kernel" / "smp.c").read_text() == "int fixed;\n"
    before = mtimes(src)
    time.sleep(0.01)
    with source.made_against(patched, "storm vm"):
        assert mtimes(src) == before  # already there: nothing written
    assert source.holds()["revision"] == patched_id


def test_an_unrecorded_build_is_trusted_only_where_src_holds_its_revision(
        tmp_path, src):
    from stormsuite.kernel import kbuild
    a = repo(tmp_path / "a", FILES)
    b = repo(tmp_path / "a", {"kernel/smp.c": "int b;\n"}, when="2")
    source.checkout(tmp_path / "a", a, "t")
    old = built(src, "debug-6.1", source.revision_id(a))
    (old / source.BUILT_FROM).unlink()
    source.checkout(tmp_path / "a", b, "t")
    with pytest.raises(source.SourceError, match="build it again"):
        with source.made_against(old, "storm vm"):
            pass
    (old / kbuild.STAMP).write_text(
        f'{{"revision": "{source.revision_id(b)}"}}\n')
    with source.made_against(old, "storm vm"):
        pass
    assert source.built_from(old)["revision"] == source.revision_id(b)


def test_a_kernel_not_built_from_src_is_left_alone(tmp_path, src):
    a = repo(tmp_path / "a", FILES)
    source.checkout(tmp_path / "a", a, "t")
    headers = tmp_path / "linux-headers"
    headers.mkdir()
    before = mtimes(src)
    with source.made_against(headers, "storm vm"):
        pass
    assert mtimes(src) == before and not source.LOCK.exists()
