"""The long-run commands under tests/e2e/: each says what it does with
--help, and those that take counts refuse a bad one before booting a
guest or writing under the results directory (their guest runs are the
long runs themselves, written under $STORM_RESULTS or results/)."""

import os
import subprocess

import pytest

from conftest import REPO

E2E = sorted(p for p in (REPO / "tests" / "e2e").iterdir() if p.is_file())


def run(script, *args, env=None):
    return subprocess.run([str(script), *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=env)


@pytest.mark.parametrize("script", E2E, ids=[p.name for p in E2E])
def test_help_names_the_command(script):
    res = run(script, "--help")
    assert res.returncode == 0, res.stderr
    assert script.name in res.stdout.splitlines()[0]


@pytest.mark.parametrize("script,args", [
    ("rmmod-race", ["--rounds", "many"]),
    ("rmmod-race", ["--rounds", ""]),
    ("rmmod-race", ["--bogus"]),
    ("fuzz-storms", ["--loads", "-5"]),
    ("fuzz-storms", ["--seed", "x1"]),
    ("fuzz-storms", ["--bogus"]),
    ("bisect-range", ["--live-at", "0.8", "--plant-at", "0.7"]),
    ("bisect-range", ["--nops", "0"]),
    ("bisect-range", ["--bogus"]),
    ("time-design", ["--design", "8x"]),
    ("time-design", ["--boots", "8", "--design", "8x15"]),
    ("time-design", ["--runs", "5", "--design", "8x15"]),
    ("time-design", ["--vary", "handler_loops=0"]),
    ("time-design", ["bogusstorm"]),
])
def test_bad_arguments_are_refused_before_anything_runs(script, args,
                                                      tmp_path):
    results = tmp_path / "results"
    res = run(REPO / "tests" / "e2e" / script, *args,
              env={**os.environ, "STORM_RESULTS": str(results)})
    assert res.returncode == 2
    assert res.stderr.startswith(f"{script}: "), res.stderr
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert not results.exists()
