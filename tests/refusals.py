"""tests/guest/refused.txt: the parameter sets the storms refuse, each
with what the kernel log says why. The guest loads them (lib.sh's
`refused SECTION`); tests/test_refused_guest.py asserts them."""

from __future__ import annotations

import dataclasses
import pathlib
import re

TABLE = pathlib.Path(__file__).parent / "guest" / "refused.txt"
EINVAL = "Invalid parameters"
SECTION = re.compile(r"^\[(.+)\]$")


@dataclasses.dataclass(frozen=True)
class Refusal:
    section: str
    name: str
    storm: str
    params: tuple[str, ...]
    reason: str
    errno: str = EINVAL

    @property
    def once(self) -> bool:
        """Run in the first kernel's full boot only (lib.sh's once)."""
        return self.section.endswith("once")


def load(text: str | None = None) -> list[Refusal]:
    text = TABLE.read_text() if text is None else text
    out: list[Refusal] = []
    section = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        fields = [f.strip() for f in line.split("|")]
        words = fields[0].split()
        if section is None or len(words) < 2 or not 2 <= len(fields) <= 3 \
                or not fields[1]:
            raise ValueError(f"{TABLE.name}:{n}: not [SECTION] or "
                             f"NAME STORM PARAM=VALUE... | REASON [| ERRNO]")
        out.append(Refusal(section, words[0], words[1], tuple(words[2:]),
                           fields[1], *fields[2:]))
    return out


def named(section_suffix: str = "") -> dict[str, Refusal]:
    return {r.name: r for r in load() if r.section.endswith(section_suffix)}
