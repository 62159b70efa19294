"""A storm's parameters, as its module declares them: `modinfo -p` of the
module built here (build/<release>/<storm>.ko), the one source of their
names, types and descriptions."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import subprocess

from .. import REPO

# "(default 64)" at the end of a description, before the type
DEFAULT = re.compile(r"\(default ([^;)]*)[;)]")
# A string parameter's choices, as the modules list them: "a: what;
# b: what" or "a, b (why) or c", each first in its clause
CHOICE = re.compile(r"(?:^|[;,] |\bor )([a-z]+)\b(?=[:,;]| or | \(|$)")


class ParamsError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    description: str        # without the type
    type: str               # bool, charp, int, uint, ulong, ...

    @property
    def default(self) -> str | None:
        """The default its description states, if any."""
        m = DEFAULT.search(self.description)
        return m.group(1).strip() if m else None

    @property
    def choices(self) -> list[str]:
        """The values a string parameter that is not a CPU list takes,
        as its description lists them ([] for any other)."""
        if self.type != "charp" or "CPU" in self.description:
            return []
        head = DEFAULT.split(self.description)[0].strip()
        return CHOICE.findall(head)


def module_file(storm: str, build: pathlib.Path = REPO / "build"
                ) -> pathlib.Path:
    """The newest build of the storm's module."""
    built = sorted(build.glob(f"*/{storm}.ko"),
                   key=lambda p: p.stat().st_mtime)
    if not built:
        raise ParamsError(f"no build/*/{storm}.ko: build the modules "
                          "first (make)")
    return built[-1]


def parse(text: str) -> list[Param]:
    """modinfo -p's "name:description (type)" lines."""
    out = []
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            continue
        m = re.fullmatch(r"(.*?)\s*\((\w+)\)", rest)
        desc, type_ = (m.group(1), m.group(2)) if m else (rest, "")
        out.append(Param(name, desc, type_))
    return out


def of_module(ko: pathlib.Path) -> list[Param]:
    try:
        p = subprocess.run(["modinfo", "-p", str(ko)], capture_output=True,
                           text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise ParamsError(f"modinfo -p {ko}: {e}") from e
    return parse(p.stdout)


def of_storm(storm: str) -> list[Param]:
    return of_module(module_file(storm))
