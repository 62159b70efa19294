"""The `storm ...` example commands of README.md and docs/*.md, as
tests/test_doc_examples.py checks them: every fenced code line and every
inline code span that starts a storm command, with its document and line."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex

REPO = pathlib.Path(__file__).resolve().parents[1]
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
# the words `storm` takes; a line whose second word is not one of them
# ("storm bisect: endpoints ...", output) is not a command
SUBCOMMANDS = ("vm", "show", "compare", "report", "matrix", "kernel", "ab",
               "bisect", "simulate", "seed", "run", "test", "demo", "lkp",
               "box", "calibrate", "pairs", "arm64")
COMMAND = re.compile(r"(?<![\w/.-])(?:scripts/)?storm (?:%s)(?![\w:-])"
                     % "|".join(SUBCOMMANDS))


@dataclasses.dataclass(frozen=True)
class Example:
    doc: pathlib.Path
    line: int
    text: str           # from `storm` or `scripts/storm` to the end
    fenced: bool        # in a code block (a command as typed, or a synopsis)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"

    def words(self) -> list[str]:
        """The command's words as sh splits them, from the subcommand on;
        a comment ends it. Placeholders stay words (BASE, <series>, ...)."""
        lex = shlex.shlex(self.text, posix=True, punctuation_chars=False)
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            words = list(lex)
        except ValueError:      # an unbalanced quote in a prose span
            words = self.text.split()
        return words[1:]


def _fenced(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, command) for each command line of the code blocks,
    continuation lines joined."""
    out: list[tuple[int, str]] = []
    inside = False
    pending: tuple[int, str] | None = None
    last = 0            # the line the last command ended on
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            pending = None
            continue
        if not inside:
            continue
        if pending is not None:
            start, text = pending
            text += " " + line.strip()
        elif out and last == n - 1 and line[:1].isspace() \
                and line.strip().startswith("["):
            # a synopsis's options go on under it, indented
            start, text = out.pop()
            text += " " + line.strip()
        else:
            start, text = n, line.strip()
            if text.startswith("$ "):
                text = text[2:]
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip())
            continue
        pending = None
        out.append((start, text))
        last = n
    return out


def _spans(text: str) -> list[tuple[int, str]]:
    """(line number, content) of each inline code span outside code
    blocks; a span may cross a line break."""
    out = []
    prose = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"),
                   text, flags=re.S | re.M)
    for m in re.finditer(r"`([^`]+)`", prose):
        line = prose.count("\n", 0, m.start()) + 1
        out.append((line, " ".join(m.group(1).split())))
    return out


def examples(docs=DOCS) -> list[Example]:
    found = []
    for doc in docs:
        text = doc.read_text()
        for fenced, items in ((True, _fenced(text.splitlines())),
                              (False, _spans(text))):
            for line, chunk in items:
                m = COMMAND.search(chunk)
                # a fenced line is a command only from its start
                if not m or (fenced and chunk[:m.start()].strip()):
                    continue
                example = Example(doc, line, chunk[m.start():], fenced)
                # output that names its command ("storm seed 004: ...")
                if not any(w.endswith(":") for w in example.words()[:3]):
                    found.append(example)
    return found
