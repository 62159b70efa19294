"""A full boot split over two guests (STORM_TEST_SPLIT, for a debug
kernel): run-all.sh runs only the check scripts it is given, and the two
guests' outputs merge into the directory the guest tests read."""

import pathlib
import shutil
import subprocess

import pytest

import conftest

RUN_ALL = conftest.REPO / "tests" / "guest" / "run-all.sh"


def _guest_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """run-all.sh beside three check scripts that only say they ran."""
    d = tmp_path / "guest"
    d.mkdir()
    shutil.copy(RUN_ALL, d)
    for name, groups in (("alpha", ""), ("beta", "# groups: idle\n"),
                         ("gamma", "")):
        (d / f"check-{name}.sh").write_text(
            f"#!/bin/sh\n{groups}echo {name} >\"$OUT/{name}\"\n")
    return d


def _ran(tmp_path, *args) -> list[str]:
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(["sh", str(_guest_dir(tmp_path) / "run-all.sh"),
                    str(out), *args], check=True, capture_output=True)
    shutil.rmtree(tmp_path / "guest")
    return sorted(p.name for p in out.iterdir()
                  if p.name in ("alpha", "beta", "gamma"))


def test_run_all_runs_every_check_of_the_group(tmp_path):
    assert _ran(tmp_path, "full") == ["alpha", "beta", "gamma"]
    assert _ran(tmp_path, "idle") == ["beta"]


def test_run_all_runs_only_the_named_checks(tmp_path):
    assert _ran(tmp_path, "full", "gamma") == ["gamma"]
    assert _ran(tmp_path, "full", "alpha", "gamma") == ["alpha", "gamma"]
    # a name is a whole name, not a prefix
    assert _ran(tmp_path, "full", "alph") == []


def _boot_dir(d: pathlib.Path, case: str, dmesg: str, complete: bool):
    (d / case).mkdir(parents=True)
    (d / case / "rc").write_text("0\n")
    (d / "dmesg").write_text(dmesg)
    (d / "kmemleak").write_text(f"leaks of {case}\n")
    (d / "cmdline").write_text("console=ttyS0\n")
    if complete:
        (d / "complete").write_text("complete\n")


def test_merge_keeps_every_case_and_both_logs(tmp_path):
    out, second = tmp_path / "out", tmp_path / "second"
    _boot_dir(out, "hp_all", "[ 1.0] first boot\n", True)
    _boot_dir(second, "drivers", "[ 2.0] BUG: second boot\n", True)
    (second / "safety_complete").write_text("complete\n")
    conftest._merge(out, second)
    assert (out / "drivers" / "rc").read_text() == "0\n"
    # files of the second guest's checks, and paths a run file names in it
    assert (out / "safety_complete").is_file()
    assert (second / "drivers" / "rc").is_file()
    assert (out / "cmdline").read_text() == "console=ttyS0\n"
    assert (out / "hp_all" / "rc").read_text() == "0\n"
    # a splat in either boot is in the log the tests scan
    assert "BUG: second boot" in (out / "dmesg").read_text()
    assert "first boot" in (out / "dmesg").read_text()
    assert (out / "kmemleak").read_text() == \
        "leaks of hp_all\nleaks of drivers\n"
    assert (out / "complete").is_file()


def test_merge_is_incomplete_when_the_second_guest_is(tmp_path):
    out, second = tmp_path / "out", tmp_path / "second"
    _boot_dir(out, "hp_all", "", True)
    _boot_dir(second, "drivers", "", False)
    conftest._merge(out, second)
    assert not (out / "complete").exists()


def test_split_puts_every_check_in_one_guest():
    first, second = conftest.split_checks(["drivers", "safety"])
    assert second == ["drivers", "safety"]
    assert "drivers" not in first and "faults" in first
    every = sorted(p.name[6:-3] for p in
                   (conftest.REPO / "tests" / "guest").glob("check-*.sh"))
    assert sorted(first + second) == every


def test_split_refuses_a_name_with_no_check_script():
    with pytest.raises(ValueError, match="driver"):
        conftest.split_checks(["driver"])
