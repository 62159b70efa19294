"""scripts/storm itself, before setup: the list of subcommands needs only
python3, and a subcommand says how to get what it needs."""

from __future__ import annotations

import shutil
import subprocess

from conftest import REPO


def test_help_without_the_venv(tmp_path):
    """A checkout where scripts/setup has not run yet (no .venv)."""
    shutil.copytree(REPO / "scripts", tmp_path / "scripts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    storm = str(tmp_path / "scripts" / "storm")
    for words in ([], ["--help"], ["help"]):
        res = subprocess.run([storm, *words], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("usage: storm SUBCOMMAND")
        assert "  matrix " in res.stdout
    res = subprocess.run([storm, "show", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2
    assert "scripts/setup --no-apt" in res.stderr
