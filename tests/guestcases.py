"""The cases a check script defines (tests/guest/check-*.sh), read from
the script itself, so that a test file names them without writing them
again: `FUNCTION NAME MODULE ARG...` lines, continuations joined."""

from __future__ import annotations

import pathlib
import re
import shlex

GUEST = pathlib.Path(__file__).parent / "guest"


def defined(function: str, script: str) -> dict[str, list[str]]:
    """NAME -> the words after it (the module first), of every line of
    tests/guest/SCRIPT that calls FUNCTION with a literal name."""
    text = (GUEST / script).read_text().replace("\\\n", " ")
    call = re.compile(rf"^\s*{re.escape(function)}\s+([a-z0-9_]+)\s+(.*)$",
                      re.M)
    out: dict[str, list[str]] = {}
    for m in call.finditer(text):
        if m.group(1) in out:
            raise ValueError(f"{script}: {m.group(1)} defined twice")
        out[m.group(1)] = shlex.split(m.group(2), comments=True)
    if not out:
        raise ValueError(f"{script}: no {function} cases")
    return out
