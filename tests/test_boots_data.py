"""tests/data/boots/: the run files of whole guest boots kept as data.
Each set is described in its README, loads as the result sets `storm
compare` reads, and has the boots and runs the README says; the
`storm compare` commands the docs give on them run without a guest."""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

from conftest import REPO
from stormsuite.runfiles import runs

BOOTS = REPO / "tests" / "data" / "boots"
README = (BOOTS / "README.md").read_text()

# set -> (label directories, storms, boots per series, runs per boot,
#         series per label directory)
SETS = {
    "aa-6.1-storms": (["6.1.0-56-amd64.a", "6.1.0-56-amd64.b"],
                      {"ipistorm", "tlbstorm", "slabstorm"}, 3, 5, 1),
    "noise-levers-6.1": (["short"], {"ipistorm"}, 16, 7, 1),
    "matrix-6.1-6.12": (["6.1.0-56-amd64", "6.12.117+deb12-amd64"],
                        {"ipistorm"}, 3, 5, 2),
    "insn-aa": (["6.1.0-56-amd64.a", "6.1.0-56-amd64.b",
                 "6.12.117+deb12-amd64.a", "6.12.117+deb12-amd64.b"],
                {"ipistorm"}, 4, 6, 1),
    "insn-aa-tlbstorm": (["6.1.0-56-amd64.a", "6.1.0-56-amd64.b"],
                         {"tlbstorm"}, 4, 6, 1),
    "ab-seed-000": (["6.1.192-storm-dec3602",
                     "6.1.192-storm-dec3602-seed-000-ipi-for-eve"],
                    {"ipistorm"}, 3, 5, 1),
}


def test_every_set_is_described():
    have = sorted(p.name for p in BOOTS.iterdir() if p.is_dir())
    assert have == sorted(SETS)
    for name in have:
        assert f"`{name}/" in README, name


@pytest.mark.parametrize("name", sorted(SETS))
def test_set_loads_with_its_boots(name):
    labels, storms, nboots, nruns, nseries = SETS[name]
    assert sorted(p.name for p in (BOOTS / name).iterdir()) == sorted(labels)
    for label in labels:
        sets = runs.resolve(str(BOOTS / name / label))
        assert {s.storm for s in sets} == storms
        for s in sets:
            assert len(s.series_ids) == 1 and len(s.left_out) == nseries - 1
            assert len(s.boots) == nboots, (label, s.storm)
            assert {len(b) for b in s.boots} == {nruns}, (label, s.storm)
            # only the run files: the raw captures stay in history
            assert not list(s.dir.glob("*.raw"))


def doc_compare_commands() -> list[list[str]]:
    """Every `scripts/storm compare tests/data/boots/...` in the docs."""
    cmds = []
    for md in [REPO / "README.md", BOOTS / "README.md",
               *sorted((REPO / "docs").glob("*.md"))]:
        text = md.read_text().replace("\\\n", " ")
        for m in re.finditer(r"scripts/storm compare (tests/data/boots/[^`\n]+)",
                             text):
            cmds.append(m.group(1).split())
    return cmds


@pytest.mark.parametrize("args", doc_compare_commands(),
                         ids=lambda a: a[0].split("/")[3])
def test_doc_compare_commands_run(args):
    proc = subprocess.run([str(REPO / "scripts" / "storm"), "compare", *args],
                          cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"(3\+3 boots x 5|4\+4 boots x 6) runs", proc.stdout)
    assert "IPIs per call" in proc.stdout
