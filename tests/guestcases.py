"""The cases the guest runs, read from where they are defined: the check
scripts (tests/guest/*.sh: `FUNCTION NAME MODULE ARG...` lines, and
case_open/case_dir NAME) and tests/guest/refused.txt. A test names a
case; what the case ran (its module and parameters) is read from here,
not written again, and a name no script defines is an error at once."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import shlex

import refusals

GUEST = pathlib.Path(__file__).parent / "guest"
NAME = r"\"?([a-z0-9_]*(?:\$\{?[a-z_]+\}?[a-z0-9_]*)*)\"?"
# a case function's call with its name first: storm_case NAME MODULE ...
CALL = re.compile(rf"^[ \t]*([a-z_]+_case)[ \t]+{NAME}[ \t]*(.*)$", re.M)
# a case made by hand: case_open NAME, $(case_dir NAME)
OPEN = re.compile(rf"\b(case_open|case_dir)[ \t]+{NAME}")
VARIABLE = re.compile(r"\$\{?[a-z_]+\}?")


@dataclasses.dataclass(frozen=True)
class Definition:
    name: str               # a name, or a pattern where it holds a $var
    script: str
    function: str
    words: tuple[str, ...]  # after the name: the module first, if any

    @property
    def module(self) -> str | None:
        first = self.words[0] if self.words else ""
        return first if first.endswith("storm") and "$" not in first \
            else None

    @property
    def params(self) -> dict[str, str]:
        """The key=value words of the module's parameters."""
        return dict(w.split("=", 1) for w in self.words[1:] if "=" in w
                    and "$" not in w)

    @property
    def pattern(self) -> re.Pattern[str]:
        parts = VARIABLE.split(self.name)
        return re.compile("[a-z0-9_]+".join(map(re.escape, parts)))


def read_script(script: str) -> list[Definition]:
    """Every case SCRIPT defines with a name that is not a bare variable
    (that is a case function's own body, passing its caller's name on)."""
    text = (GUEST / script).read_text().replace("\\\n", " ")
    out = []
    for m in CALL.finditer(text):
        fn, name, rest = m.groups()
        if name and VARIABLE.sub("", name):
            out.append(Definition(name, script, fn,
                                  tuple(shlex.split(rest, comments=True))))
    for m in OPEN.finditer(text):
        if m.group(2) and VARIABLE.sub("", m.group(2)):
            out.append(Definition(m.group(2), script, m.group(1), ()))
    return out


@functools.lru_cache(maxsize=None)
def cases() -> dict[str, Definition]:
    """name (or pattern) -> its definition: every script's, and every
    refusal's. A name defined twice with different words is an error;
    case_dir of a name a case function defines is the same case."""
    out: dict[str, Definition] = {}
    found = [d for s in sorted(GUEST.glob("*.sh")) for d in
             read_script(s.name)]
    found += [Definition(r.name, "refused.txt", "refused",
                         (r.storm, *r.params)) for r in refusals.load()]
    # the case functions' definitions first: case_dir adds to those
    found.sort(key=lambda d: d.function in ("case_dir", "case_open"))
    for d in found:
        old = out.get(d.name)
        if old and d.function not in ("case_dir", "case_open"):
            raise ValueError(f"{d.script}: case {d.name} defined twice "
                             f"(also in {old.script})")
        out.setdefault(d.name, d)
    return out


def definition(name: str) -> Definition:
    """The definition of the case NAME, literal or a pattern's."""
    table = cases()
    if name in table:
        return table[name]
    for d in table.values():
        if "$" in d.name and d.pattern.fullmatch(name):
            return d
    raise KeyError(f"case {name}: no script in tests/guest defines it, "
                   "and no line of tests/guest/refused.txt")


def defined(function: str, script: str) -> dict[str, list[str]]:
    """NAME -> the words after it (the module first), of every line of
    tests/guest/SCRIPT that calls FUNCTION with a literal name."""
    out: dict[str, list[str]] = {}
    for d in read_script(script):
        if d.function != function or "$" in d.name:
            continue
        if d.name in out:
            raise ValueError(f"{script}: {d.name} defined twice")
        out[d.name] = list(d.words)
    if not out:
        raise ValueError(f"{script}: no {function} cases")
    return out
