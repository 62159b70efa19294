"""The guest cases' definitions: tests/guest/refused.txt and the check
scripts that load it agree (each section is loaded by a check script and
each section a script names is there, names are unique, storms and
parameters are the storms' own); guestcases.py reads the cases a script
defines; and the join between a script and the tests that assert on its
cases holds both ways: every case defined is read by a test, every case
a test names is defined."""

from __future__ import annotations

import ast
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
    (tmp_path / "s.sh").write_text("f_case a ipistorm x=1 \\\n\ty=2\n"
                                   "\tf_case b tlbstorm  # why\n"
                                   "\tf_case \"$name\" \"$@\"\n")
    assert guestcases.defined("f_case", "s.sh") == {
        "a": ["ipistorm", "x=1", "y=2"], "b": ["tlbstorm"]}
    (tmp_path / "s.sh").write_text("f_case a ipistorm\nf_case a tlbstorm\n")
    with pytest.raises(ValueError):
        guestcases.defined("f_case", "s.sh")


TESTS = pathlib.Path(__file__).parent


def test_every_definition_names_a_real_storm_and_its_parameters():
    for d in guestcases.cases().values():
        if d.module is None:
            continue
        assert d.module in storms.NAMES, d
        known = {p.name for p in modparams.of_storm(d.module)}
        assert set(d.params) <= known, d


def read_by(defn: guestcases.Definition, text: str) -> bool:
    """A test reads the case: by its name in quotes, by an f-string of
    the pattern's shape, or by every case of its function in its script
    (guestcases.defined)."""
    if "$" in defn.name:
        shape = guestcases.VARIABLE.split(defn.name)
        return re.search(r'f"' + r"\{[^}]+\}".join(map(re.escape, shape))
                         + '"', text) is not None
    return f'"{defn.name}"' in text or re.search(
        rf'defined\("{defn.function}", "{re.escape(defn.script)}"\)',
        text) is not None


def test_every_case_a_script_defines_is_read_by_a_test():
    text = "\n".join(f.read_text() for f in TESTS.glob("test_*.py"))
    unread = [f"{d.script}: {d.name}" for d in guestcases.cases().values()
              if d.script != "refused.txt" and not read_by(d, text)]
    assert not unread, unread


def names_tests_read() -> list[tuple[str, str]]:
    """(file, name) of every literal case name a guest test passes to
    .case() or lists under a parametrize argument called name."""
    out = []
    for f in sorted(TESTS.glob("test_*_guest.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr == "case" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                out.append((f.name, node.args[0].value))
            if isinstance(fn, ast.Attribute) and fn.attr == "parametrize" \
                    and isinstance(node.args[0], ast.Constant):
                names = [n.strip() for n in node.args[0].value.split(",")]
                if "name" not in names:
                    continue
                i = names.index("name")
                try:
                    values = ast.literal_eval(node.args[1])
                except ValueError:      # made by code: read at run time
                    continue
                for v in values:
                    out.append((f.name, v[i] if len(names) > 1 else v))
    return out


def test_every_case_a_test_names_is_defined():
    read = names_tests_read()
    assert len(read) > 60
    missing = []
    for f, name in read:
        try:
            guestcases.definition(name)
        except KeyError:
            missing.append((f, name))
    assert not missing, missing


def test_a_name_is_looked_up_literally_or_by_its_pattern():
    assert guestcases.definition("tlb_user_n100").params == {
        "numflush": "100", "targets": "1-2", "timeout": "300"}
    assert guestcases.definition("ipi_window_7").name == "ipi_window_$i"
    assert guestcases.definition("bad_cpu_range").script == "refused.txt"
    with pytest.raises(KeyError, match="no script in tests/guest"):
        guestcases.definition("tlb_user_n1000")
