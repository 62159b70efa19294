"""One source directory for every committed revision ab and bisect build.

kbuild's O= builds put the source tree's absolute path on every compile
command (srctree, -I, -fmacro-prefix-map), so ccache misses whenever the
same revision is built from another tree, a worktree or another clone:
a bisect's endpoint rebuilt from scratch in an ab worktree, a second
checkout of the same source compiled again. So `storm ab` and `storm bisect`
do not build the user's tree: they write the revision to build into one
directory, build/kernel/src, and build from there into build directories
next to it (build/kernel/ab-base, bisect-good, ...). Every compile then
has the same command line whichever tree the revision came from.

A file is written only when its content differs from what the directory
holds, compared by git blob id (the same in every repository holding the
same content, whatever its history), so an unchanged file keeps its
timestamp and make, in every build directory, rebuilds only what changed.
The manifest records each file's blob id with the size and mtime it had
when written, as git's index does: a file whose size or mtime changed
since (a patch applied on top) is hashed again before it is trusted.

One command at a time uses the directory (lock()); commands it starts
(git bisect run's steps) inherit the lock.

A build directory's storms are made against SRC's headers (kbuild's
external modules read the source tree of an O= build), so SRC must hold
what that directory was built from whenever they are made: an ab's base
made while SRC holds the patched revision would take the patch's headers.
checkout() records what SRC holds (HOLDS), each build records what it was
built from (BUILT_FROM), and made_against() puts the two back in step
before the storms are made.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Iterator

from .. import REPO
from .kbuild import BUILD_ROOT, stamp

SRC = BUILD_ROOT / "src"
MANIFEST = BUILD_ROOT / ".src-manifest.json"
LOCK = BUILD_ROOT / ".src.lock"
HOLDS = BUILD_ROOT / ".src-holds.json"
MODULES_LOCK = BUILD_ROOT / ".src-modules.lock"
BUILT_FROM = ".storm-source.json"  # in a build directory
BUILT_PATCH = ".storm-source.patch"  # its patch, kept with it
HELD = "STORM_SOURCE_LOCK"  # set while held, so child commands do not wait


class SourceError(Exception):
    pass


def no_repo_env() -> dict[str, str]:
    """git run in SRC must not find the repository build/ lives in."""
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(BUILD_ROOT)}


@contextlib.contextmanager
def lock(what: str) -> Iterator[None]:
    """Hold the source directory (and the build directories beside it)."""
    if os.environ.get(HELD) == str(LOCK):
        yield
        return
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another storm command"
            print(f"{what}: waiting for {holder} to finish with {SRC}",
                  file=sys.stderr, flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(f"{what} (pid {os.getpid()})\n")
        f.flush()
        os.environ[HELD] = str(LOCK)
        try:
            yield
        finally:
            del os.environ[HELD]
            f.truncate(0)


def entries(tree: pathlib.Path, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) of every file of REV in TREE."""
    res = subprocess.run(["git", "-C", str(tree), "ls-tree", "-r", "-z",
                          "--full-tree", rev], stdin=subprocess.DEVNULL,
                         capture_output=True)
    if res.returncode != 0:
        raise SourceError(f"git ls-tree {rev}: "
                          f"{res.stderr.decode(errors='replace').strip()}")
    out: dict[str, tuple[str, str]] = {}
    for rec in res.stdout.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, blob = meta.decode().split()
        if kind == "blob":  # submodules (commit entries) have no content
            out[os.fsdecode(path)] = (mode, blob)
    return out


def on_disk() -> dict[str, os.stat_result]:
    found: dict[str, os.stat_result] = {}
    for root, dirs, files in os.walk(SRC):
        for name in files + [d for d in dirs
                             if os.path.islink(os.path.join(root, d))]:
            full = os.path.join(root, name)
            found[os.path.relpath(full, SRC)] = os.lstat(full)
    return found


def hash_files(paths: list[str]) -> dict[str, str]:
    """Blob ids of regular files in SRC, as git would store them."""
    if not paths:
        return {}
    res = subprocess.run(["git", "hash-object", "--no-filters",
                          "--stdin-paths"], cwd=SRC, env=no_repo_env(),
                         input="\n".join(paths) + "\n", text=True,
                         capture_output=True)
    if res.returncode != 0:
        raise SourceError(f"git hash-object: {res.stderr.strip()}")
    return dict(zip(paths, res.stdout.split()))


def write_blobs(tree: pathlib.Path, todo: dict[str, tuple[str, str]]) -> None:
    """Write each path's blob from TREE's object store (git cat-file
    --batch), through a temporary name so a file is never half written."""
    if not todo:
        return
    proc = subprocess.Popen(["git", "-C", str(tree), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    items = list(todo.items())
    requests = b"".join(blob.encode() + b"\n" for _, (_, blob) in items)

    def feed() -> None:
        # a thread: git answers while it reads, and both pipes are finite
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(requests)
            proc.stdin.close()
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    for path, (mode, blob) in items:
        header = proc.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            proc.kill()
            raise SourceError(f"{tree}: cannot read {path} ({blob})")
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        dest = SRC / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        tmp = dest.with_name(f".{dest.name}.storm-tmp")
        tmp.unlink(missing_ok=True)
        if mode == "120000":
            tmp.symlink_to(os.fsdecode(data))
        else:
            tmp.write_bytes(data)
            tmp.chmod(0o755 if mode == "100755" else 0o644)
        os.replace(tmp, dest)
    feeder.join()
    proc.wait()


def link_blob(target: str) -> str:
    """The blob id git gives a symbolic link: that of its target text."""
    data = os.fsencode(target)
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def executable(st: os.stat_result) -> bool:
    return bool(st.st_mode & 0o100)


def sync(tree: pathlib.Path, rev: str) -> tuple[int, int]:
    """Make SRC hold REV of TREE, writing only what differs.
    (files written, files removed)."""
    want = entries(tree, rev)
    try:
        known = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        known = {}
    # gone until the directory is consistent again: an interrupted sync
    # leaves no manifest, and the next one hashes every file
    MANIFEST.unlink(missing_ok=True)
    SRC.mkdir(parents=True, exist_ok=True)
    have = on_disk()
    removed = 0
    for path in sorted(set(have) - set(want), reverse=True):
        (SRC / path).unlink()
        removed += 1
    for root, dirs, _ in os.walk(SRC, topdown=False):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, d))  # only the empty ones
    unsure = []
    todo: dict[str, tuple[str, str]] = {}
    for path, (mode, blob) in want.items():
        st = have.get(path)
        if st is None:
            todo[path] = (mode, blob)
            continue
        rec = known.get(path)
        if rec == [mode, blob, st.st_mtime_ns, st.st_size]:
            continue
        full = SRC / path
        if mode == "120000" and full.is_symlink():
            if link_blob(os.readlink(full)) != blob:
                todo[path] = (mode, blob)
        elif mode != "120000" and full.is_file() and not full.is_symlink():
            unsure.append(path)
        else:
            todo[path] = (mode, blob)  # a link for a file, a file for a link
    hashed = hash_files(unsure)
    for path in unsure:
        mode, blob = want[path]
        if hashed.get(path) != blob:
            todo[path] = (mode, blob)
        elif executable(have[path]) != (mode == "100755"):
            # chmod keeps the mtime: make has nothing to redo
            (SRC / path).chmod(0o755 if mode == "100755" else 0o644)
    write_blobs(tree, todo)
    manifest = {}
    for path, (mode, blob) in want.items():
        st = os.lstat(SRC / path)
        manifest[path] = [mode, blob, st.st_mtime_ns, st.st_size]
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest))
    os.replace(tmp, MANIFEST)
    return len(todo), removed


def apply_patch(patch: pathlib.Path, check: bool = False) -> None:
    """git apply PATCH in SRC (or only check that it applies)."""
    res = subprocess.run(["git", "apply", *(["--check"] if check else []),
                          str(patch.resolve())], cwd=SRC, env=no_repo_env(),
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True)
    if res.returncode != 0:
        raise SourceError(res.stderr.strip() or f"git apply exit "
                          f"{res.returncode}")


def check_patch(tree: pathlib.Path, rev: str, patch: pathlib.Path) -> None:
    """SourceError unless PATCH applies to REV of TREE: checked in a
    scratch index, so neither TREE's checkout nor SRC is touched."""
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "GIT_INDEX_FILE": f"{scratch}/index"}
        for args in (["read-tree", rev],
                     ["apply", "--check", "--cached", str(patch.resolve())]):
            res = subprocess.run(["git", "-C", str(tree), *args], env=env,
                                 stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True)
            if res.returncode != 0:
                raise SourceError(res.stderr.strip()
                                  or f"git {args[0]} exit {res.returncode}")


def build_dir(name: str) -> pathlib.Path:
    """build/kernel/NAME, a build directory of SRC. One left by a build
    of another tree (before SRC existed) is ours to empty: kbuild would
    refuse to mix the two."""
    out = BUILD_ROOT / name
    link = out / "source"
    if link.is_symlink() and link.resolve() != SRC.resolve():
        shutil.rmtree(out)
    return out


def origin(tree: pathlib.Path, rev: str,
           patch: pathlib.Path | None = None) -> dict[str, str | None]:
    """What SRC holds, or a build was built from: enough to write it
    again."""
    return {"tree": str(tree.resolve()), "rev": rev,
            "patch": str(patch.resolve()) if patch else None,
            "revision": revision_id(rev, patch)}


def holds() -> dict[str, str | None] | None:
    """What the last finished checkout() wrote to SRC (None: unknown)."""
    try:
        return json.loads(HOLDS.read_text())
    except (OSError, ValueError):
        return None


def checkout(tree: pathlib.Path, rev: str, what: str,
             patch: pathlib.Path | None = None) -> pathlib.Path:
    """SRC at REV of TREE (plus PATCH), with a line on what it took."""
    started = time.monotonic()
    HOLDS.unlink(missing_ok=True)  # unknown until the checkout is whole
    written, removed = sync(tree, rev)
    if patch is not None:
        apply_patch(patch)
    HOLDS.write_text(json.dumps(origin(tree, rev, patch)) + "\n")
    print(f"{what}: {SRC.relative_to(REPO)} at "
          f"{rev[:12]}" + (f" + {patch.name}" if patch else "")
          + f" from {tree}: {written} files written, {removed} removed "
          f"({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)
    return SRC


def revision_id(rev: str, patch: pathlib.Path | None = None) -> str:
    """What a build records as its revision: the commit, and the patch
    by name and content."""
    from .kbuild import file_id
    return rev[:12] + (f"+{patch.name}@{file_id(patch)}" if patch else "")


def build_revision(tree: pathlib.Path, rev: str, name: str, what: str, *,
                   patch: pathlib.Path | None = None,
                   fragments: tuple[pathlib.Path, ...] = (),
                   localversion: str, arch: str = "x86_64") -> pathlib.Path:
    """build/kernel/NAME holding REV of TREE (plus PATCH) built with
    FRAGMENTS: found there already, or written to SRC and built. The
    caller holds lock() until its last boot of it."""
    from . import kbuild
    revision = revision_id(rev, patch)
    out = build_dir(name)
    if kbuild.built_as(out, revision, fragments, localversion, arch):
        # its storms are made before the boots (matrix.measure)
        print(f"{what}: {out.relative_to(REPO)} already holds {revision}",
              file=sys.stderr, flush=True)
        record(out, origin(tree, rev[:12], patch))
        return out
    checkout(tree, rev[:12], what, patch)
    print(f"{what}: building {out.relative_to(REPO)} ({revision})",
          file=sys.stderr, flush=True)
    built = kbuild.build(SRC, out, fragments=fragments,
                         localversion=localversion, revision=revision,
                         arch=arch)
    record(out)
    print(f"{what}: {built.release} built in {built.seconds:.0f} s",
          file=sys.stderr, flush=True)
    return out


def record(out: pathlib.Path,
           held: dict[str, str | None] | None = None) -> None:
    """Write down in build directory OUT what it was built from (HELD,
    or what SRC holds now), its patch copied beside it: the storms are
    made against it again long after SRC has moved on."""
    held = dict(held or holds() or {})
    if not held:
        raise SourceError(f"{SRC} holds no finished checkout")
    if held.get("patch"):
        kept = out / BUILT_PATCH
        if pathlib.Path(held["patch"]).resolve() != kept.resolve():
            shutil.copyfile(held["patch"], kept)
        held["patch"] = str(kept)
    (out / BUILT_FROM).write_text(json.dumps(held) + "\n")


def built_revision(out: pathlib.Path) -> str | None:
    return (stamp(out) or {}).get("revision")


def built_from(out: pathlib.Path) -> dict[str, str | None] | None:
    try:
        return json.loads((out / BUILT_FROM).read_text())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def made_against(kdir: pathlib.Path, what: str) -> Iterator[None]:
    """For as long as the storms are made against KDIR: if it is a build
    of SRC, SRC holds what KDIR was built from (written again if SRC has
    moved on), and no other command moves it. Any other KDIR: nothing."""
    link = kdir / "source"
    if not (link.is_symlink() and link.resolve() == SRC.resolve()):
        yield
        return
    want = built_from(kdir)
    with lock(what), open(MODULES_LOCK, "a") as f:
        # the storms of two builds made at once (two guests of an ab
        # starting together) would each move SRC under the other's make
        fcntl.flock(f, fcntl.LOCK_EX)
        have = holds()
        if want is None and have is not None \
                and have["revision"] == built_revision(kdir):
            record(kdir, have)  # built before builds were recorded
            want = have
        if want is None:
            raise SourceError(
                f"{kdir} records nothing of what it was built from, and "
                f"{SRC} may hold another revision now: build it again "
                "with the command that built it")
        if have is None or have["revision"] != want["revision"]:
            patch = want.get("patch")
            checkout(pathlib.Path(want["tree"]), want["rev"], what,
                     pathlib.Path(patch) if patch else None)
            # under the build's own name for it (its patch's first name)
            HOLDS.write_text(json.dumps(want) + "\n")
        yield
