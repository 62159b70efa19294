"""scripts/storm itself, before setup: the list of subcommands and every
subcommand's --help need only python3 (no .venv, no numpy, scipy or
matplotlib), and a subcommand that would run says how to get what it
needs."""

from __future__ import annotations

import shutil
import subprocess

import re

import pytest

from conftest import REPO

from stormsuite import cli, seeds
from stormsuite.designs import boxcli, options

# every command line that has a --help of its own
HELPS = ([[name] for name in cli.SUBCOMMANDS if name not in ("kernel",)]
         + [["kernel"]] + [["kernel", w] for w in cli.KERNEL]
         + [["box", c] for c in boxcli.COMMANDS]
         + [["seed", n] for n in seeds.SEEDS] + [["lkp", "install"]])
# env -i: nothing of the caller's, no .venv on PATH; the system python3
BARE = ["env", "-i", "PATH=/usr/bin:/bin"]


@pytest.fixture(scope="module")
def bare_storm(tmp_path_factory):
    """A checkout's scripts/ and the data its help reads (the seeds' job
    files and what they name), with no .venv next to them."""
    tmp = tmp_path_factory.mktemp("bare")
    for d in ("scripts", "seeds", "patches", "configs"):
        shutil.copytree(REPO / d, tmp / d,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return str(tmp / "scripts" / "storm")


def test_help_without_the_venv(bare_storm):
    """A checkout where scripts/setup has not run yet (no .venv)."""
    for words in ([], ["--help"], ["help"]):
        res = subprocess.run([*BARE, bare_storm, *words],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("usage: storm SUBCOMMAND")
        assert "  matrix " in res.stdout
    res = subprocess.run([*BARE, bare_storm, "show", "results"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "scripts/setup --no-apt" in res.stderr
    # after --, --help is the guest command's: storm vm does not run
    res = subprocess.run([*BARE, bare_storm, "vm", "--", "true", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "scripts/setup --no-apt" in res.stderr


def test_system_python_has_no_numpy():
    """What the next test proves holds only where python3 lacks them."""
    res = subprocess.run([*BARE, "python3", "-c", "import numpy"],
                         capture_output=True, text=True, timeout=60)
    if res.returncode == 0:
        pytest.skip("the system python3 has numpy: nothing to prove")


@pytest.mark.parametrize("words", HELPS, ids=" ".join)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_help_without_the_venv(bare_storm, words, flag):
    res = subprocess.run([*BARE, bare_storm, *words, flag],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: storm "), res.stdout[:200]
    assert "Traceback" not in res.stderr


def test_help_anywhere_in_the_arguments(bare_storm):
    res = subprocess.run([*BARE, bare_storm, "seed", "003", "--cpus", "8",
                          "--help"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: storm seed 003")


def test_the_stand_in_says_what_is_missing(tmp_path):
    """Computing with a stood-in package fails with what to do, not an
    AttributeError."""
    code = ("import sys; sys.path.insert(0, 'scripts');"
            "from stormsuite import cli; cli.help_without_heavy();"
            "import numpy; numpy.array([1])")
    res = subprocess.run([*BARE, "python3", "-c", code], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    if "No module named" in res.stderr or res.returncode == 0:
        pytest.skip("the system python3 has numpy")
    assert "ImportError: numpy is not installed: run scripts/setup" \
        in res.stderr


def test_top_level_help_lists_every_box_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    box = next(line for line in out.splitlines()
               if line.startswith("  box "))
    for c in ("bisect", "image", "vm", "build", "--box"):
        assert c in box


def test_box_help_has_a_usage_line(capsys):
    assert cli.main(["box", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: storm box {build,bisect,bisect-test,"
                          "image,vm}")
    assert "storm box bisect " in out and "storm box image" in out
    for design in ("matrix", "ab", "bisect"):
        assert re.search(rf"storm {design} +--box BOX", out), design


@pytest.mark.parametrize("moved", ["run", "matrix", "ab"])
def test_box_designs_moved_to_box_option(capsys, moved):
    """storm box run|matrix|ab are storm matrix|ab --box: the old
    commands say so and do nothing."""
    assert cli.main(["box", moved, "--config", "x.conf"]) == 2
    err = capsys.readouterr().err
    assert "--box CONFIG" in err and "docs/box.md" in err


def test_stated_default_boots_are_options_figures(capsys):
    """The help's default boots: the figures options.py decides with."""
    with pytest.raises(SystemExit):
        cli.main(["matrix", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"default {options.BOOTS_COUNTED} where instructions" in out
    for storm, n in options.BOOTS_TIMED.items():
        assert f"{storm} {n}" in out
    assert f"default {options.RUNS_COUNTED} where instructions" in out
    for storm, n in options.RUNS_TIMED.items():
        assert f"{storm} {n}" in out


def test_docs_state_options_default_boots():
    """README and docs/drivers.md say the boots options.py decides with,
    where time is primary (--no-insn)."""
    timed = options.BOOTS_TIMED
    readme = " ".join((REPO / "README.md").read_text().split())
    assert (f"--no-insn` {timed['ipistorm']} for ipistorm, "
            f"{timed['tlbstorm']} for tlbstorm, {timed['slabstorm']} for "
            "slabstorm") in readme
    drivers = " ".join((REPO / "docs/drivers.md").read_text().split())
    assert (f"with `--no-insn`, where time is primary: "
            f"{timed['ipistorm']} for ipistorm, {timed['tlbstorm']} for "
            f"tlbstorm, {timed['slabstorm']} for slabstorm") in drivers
    assert f"default {options.BOOTS_COUNTED} where instructions are " \
        "counted" in drivers


def test_pyproject_installs_every_driver_package():
    """pyproject.toml (pip install -e .): every package under
    scripts/stormsuite, its data, and the console script's function."""
    import importlib
    import tomllib
    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    tool = doc["tool"]["setuptools"]
    root = REPO / tool["package-dir"][""]
    found = sorted(str(p.parent.relative_to(root)).replace("/", ".")
                   for p in (root / "stormsuite").rglob("__init__.py")
                   if "__pycache__" not in p.parts)
    assert sorted(tool["packages"]) == found
    data = {}
    for p in (root / "stormsuite").rglob("*"):
        if p.is_file() and p.suffix not in (".py", ".pyc"):
            package = str(p.parent.relative_to(root)).replace("/", ".")
            data.setdefault(package, []).append(p.name)
    assert data == tool["package-data"]
    module, func = doc["project"]["scripts"]["storm-py"].split(":")
    assert callable(getattr(importlib.import_module(module), func))
    deps = {d.split(">")[0] for d in doc["project"]["dependencies"]}
    assert deps == {"numpy", "scipy", "matplotlib"}


def test_every_stated_number_default_is_the_parsers():
    """Where an option's help says "(default N)", N is the default the
    parser gives (every command with options)."""
    import argparse
    import re
    checked = 0
    for words in HELPS:
        if words in (["kernel"], ["seed"]):
            continue
        p, _ = cli.parser(words)
        for a in p._actions:
            if not a.help or a.help == argparse.SUPPRESS or \
                    isinstance(a.default, bool) or \
                    not isinstance(a.default, (int, float)):
                continue
            m = re.search(r"\(default:? ([-+]?\d+(?:\.\d+)?)",
                          " ".join(a.help.split()))
            if m:
                assert float(m.group(1)) == float(a.default), \
                    (words, a.option_strings, a.help)
                checked += 1
    assert checked >= 40
