"""The guest cases' definitions: tests/guest/refused.txt and the check
scripts that load it agree (each section is loaded by a check script and
each section a script names is there, names are unique, storms and
parameters are the storms' own), and guestcases.py reads the cases a
script defines."""

from __future__ import annotations

import pathlib
import re

import pytest

import guestcases
import refusals
from stormsuite import storms
from stormsuite.lkp import modparams

GUEST = pathlib.Path(__file__).parent / "guest"
CALL = re.compile(r"^\s*refused\s+(?:\"([^\"]+)\"|(\S+))\s*$", re.M)


def loaded_sections() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for script in sorted(GUEST.glob("check-*.sh")):
        for m in CALL.finditer(script.read_text()):
            out.setdefault(m.group(1) or m.group(2), []).append(script.name)
    return out


def test_every_section_is_loaded_once_and_every_loaded_one_exists():
    table = {r.section for r in refusals.load()}
    loaded = loaded_sections()
    assert set(loaded) == table, (sorted(table ^ set(loaded)))
    assert all(len(v) == 1 for v in loaded.values()), loaded


def test_names_are_unique_and_the_storms_and_parameters_real():
    cases = refusals.load()
    names = [r.name for r in cases]
    assert len(names) == len(set(names))
    for r in cases:
        assert r.storm in storms.NAMES, r
        assert r.params and all("=" in p for p in r.params), r
        known = {p.name for p in modparams.of_storm(r.storm)}
        assert {p.split("=", 1)[0] for p in r.params} <= known, r


def test_no_refusal_is_also_a_case_of_a_check_script():
    text = "\n".join(s.read_text() for s in GUEST.glob("check-*.sh"))
    for r in refusals.load():
        assert not re.search(rf"\b{r.name}\b", text), r.name


def test_a_malformed_line_is_refused():
    with pytest.raises(ValueError):
        refusals.load("[s]\nbad_x ipistorm numipi=1\n")
    with pytest.raises(ValueError):
        refusals.load("bad_x ipistorm numipi=1 | reason\n")
    (r,) = refusals.load("[a once]\nbad_x ipistorm numipi=1 | why | ERANGE\n")
    assert r.once and r.errno == "ERANGE" and r.params == ("numipi=1",)


def test_cases_are_read_from_the_script_that_defines_them(tmp_path,
                                                          monkeypatch):
    hotplug = guestcases.defined("hotplug_case", "check-safety.sh")
    assert hotplug["hp_tlb_kernel"] == ["tlbstorm", "3", "off",
                                        "mode=kernel", "cpulist=0"]
    assert {args[0] for args in hotplug.values()} <= set(storms.NAMES)
    monkeypatch.setattr(guestcases, "GUEST", tmp_path)
    (tmp_path / "s.sh").write_text("f a ipistorm x=1 \\\n\ty=2\n"
                                   "\tf b tlbstorm  # why\n")
    assert guestcases.defined("f", "s.sh") == {
        "a": ["ipistorm", "x=1", "y=2"], "b": ["tlbstorm"]}
    (tmp_path / "s.sh").write_text("f a ipistorm\nf a tlbstorm\n")
    with pytest.raises(ValueError):
        guestcases.defined("f", "s.sh")
