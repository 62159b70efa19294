"""Every `storm ...` example in README.md and docs/*.md, checked against
the command it names, as benchstat's doc tests check its examples: the
subcommand exists, every option the example uses is one the
subcommand's parser accepts (the Python subcommands' argparse parsers
themselves; storm run's own shell parser), a synopsis lists every option
there is, and an example that needs no guest (compare, report, show,
simulate on files in the repository) runs."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import re
import subprocess
import sys

import pytest

from doc_examples import REPO, SUBCOMMANDS, Example, examples
from stormsuite import cli, seeds
from stormsuite.report import compare

EXAMPLES = examples()
STORM = REPO / "scripts" / "storm"
# a placeholder for a seed's number in prose (storm seed NNN)
SEED_PLACEHOLDER = "NNN"
# the subcommands that need no guest, no root and no kernel build: their
# examples run when every file they name is in the repository
RUNNABLE = ("compare", "report", "show", "simulate")


def ids(items: list[Example]) -> list[str]:
    return [e.where for e in items]


def test_examples_found():
    # the extraction itself: a README or docs change that hid every
    # example from it would make the checks below vacuous
    assert len(EXAMPLES) > 150
    assert {e.words()[0] for e in EXAMPLES} == set(SUBCOMMANDS)
    assert set(SUBCOMMANDS) == set(cli.SUBCOMMANDS) | set(cli.SHELL)
    # output lines that quote a command's name are not examples
    assert not [e for e in EXAMPLES if e.words()[1:2]
                and e.words()[1].endswith(":")]


def test_no_unknown_subcommand():
    # `scripts/storm WORD` is always a command: WORD must be one (or one
    # the suite runs itself, as bisect-step and box-step)
    known = set(SUBCOMMANDS) | set(cli.INTERNAL)
    unknown = []
    for doc in {e.doc for e in EXAMPLES}:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for m in re.finditer(r"scripts/storm ([a-z][\w-]*)", line):
                if m.group(1) not in known:
                    unknown.append(f"{doc.name}:{n}: {m.group(0)}")
    assert not unknown


def flags(words: list[str]) -> list[str]:
    """The options among an example's words (synopsis brackets, a|b
    alternatives and =VALUE dropped)."""
    out = []
    for w in words:
        w = w.strip("[](){}.,;")
        for alt in w.split("|"):
            alt = alt.split("=", 1)[0]
            if re.fullmatch(r"--?[A-Za-z][\w-]*", alt):
                out.append(alt)
    return out


def split_guest_command(words: list[str]) -> tuple[list[str], list[str]]:
    """storm vm's own words, and the guest command after its --."""
    if "--" in words:
        i = words.index("--")
        return words[:i], words[i + 1:]
    return words, []


def shell_options(script: pathlib.Path) -> set[str]:
    """The options a shell subcommand's `case $1 in` loop takes: its arms
    that name options (-h | --help), not the -* catch-all."""
    out = set()
    for m in re.finditer(r"^\t(-[-\w| ]*)\)", script.read_text(), re.M):
        out |= {o.strip() for o in m.group(1).split("|")}
    return out - {"--"}


def pytest_options() -> set[str]:
    # storm test passes its arguments to pytest; its parser, with the
    # built-in plugins' options
    from _pytest.config import get_config
    return set(get_config()._parser.optparser._option_string_actions)


def accepted(words: list[str]) -> tuple[set[str], list[str]]:
    """The options `storm WORDS...` accepts, and the words they are
    checked among (after storm kernel build's or seed NNN's two)."""
    name = words[0]
    if name in cli.SHELL:
        if name == "test":
            return pytest_options() | {"-h", "--help"}, words[1:]
        return shell_options(REPO / "scripts" / f"storm-{name}"), words[1:]
    if name == "seed" and words[1:2] in ([], [SEED_PLACEHOLDER]):
        # the seed list, or any seed: every seed's options
        return (set().union(*(set(seeds.parser(n)._option_string_actions)
                              for n in seeds.SEEDS)), words[2:])
    if name == "kernel" and len(words) == 1:
        return set(), []
    p, rest = cli.parser(words)
    return set(p._option_string_actions), rest


def check(words: list[str]) -> list[str]:
    """What is wrong with `storm WORDS...`: unknown commands or options;
    a storm command run in a guest (storm vm -- storm run ...) too."""
    try:
        ok, rest = accepted(words)
    except ValueError as e:
        return [str(e)]
    inner: list[str] = []
    if words[0] == "vm":
        rest, inner = split_guest_command(rest)
    bad = [f"storm {' '.join(words[:len(words) - len(rest)])}: no option "
           f"{f}" for f in flags(rest) if f not in ok]
    if inner and inner[0] in ("storm", "scripts/storm"):
        bad += check(inner[1:])
    elif inner:
        # a script of the repository run in the guest exists
        script = inner[1] if inner[0] == "sh" and len(inner) > 1 else inner[0]
        if script.startswith(("tests/", "scripts/")) and \
                not (REPO / script).exists():
            bad.append(f"no {script} in the repository")
    return bad


@pytest.mark.parametrize("example", EXAMPLES, ids=ids(EXAMPLES))
def test_options_exist(example):
    assert not check(example.words()), example.text


def synopses() -> list[Example]:
    """The fenced usage lines: `storm SUB [--option ...] ...`."""
    return [e for e in EXAMPLES if e.fenced and "[-" in e.text]


@pytest.mark.parametrize("example", synopses(), ids=ids(synopses()))
def test_synopsis_lists_every_option(example):
    words = example.words()
    ok, _ = accepted(words)
    given = set(flags(words))
    if "[compare options]" in example.text:
        # the statistics and view options compare, matrix, ab and report
        # share
        stat = argparse.ArgumentParser(add_help=False)
        compare.add_stat_options(stat)
        compare.add_view_options(stat)
        given |= set(stat._option_string_actions)
    # one spelling of an option is enough (-j or --jobs); --help goes
    # without saying
    missing = []
    for action in (cli.parser(words)[0]._actions
                   if words[0] not in cli.SHELL else []):
        if action.help == "==SUPPRESS==" or not action.option_strings:
            continue
        if "-h" in action.option_strings:
            continue
        if not given & set(action.option_strings):
            missing.append(action.option_strings[-1])
    if words[0] == "run":
        missing = sorted(ok - given - {"-h", "--help"})
    assert not missing, example.text


def test_synopses_found():
    # the drivers' reference documents each driver: one synopsis each
    assert {e.words()[0] for e in synopses()} >= {
        "vm", "run", "compare", "matrix", "simulate", "kernel", "ab",
        "bisect"}


def runnable(example: Example) -> bool:
    """A command of RUNNABLE that its parser takes as it stands, whose
    every positional word is a file or directory of the repository (not
    a placeholder)."""
    words = example.words()
    if words[0] not in RUNNABLE or "[" in example.text:
        return False
    p, rest = cli.parser(words)
    p.exit_on_error = False
    try:
        # a placeholder example fails here, its usage message unshown
        with contextlib.redirect_stderr(io.StringIO()):
            p.parse_args(rest)
    except (argparse.ArgumentError, SystemExit):
        return False
    takes_value = {s for a in p._actions if a.nargs != 0
                   for s in a.option_strings}
    positional = []
    skip = False
    for w in rest:
        if skip:
            skip = False
        elif w in takes_value:
            skip = True
        elif not w.startswith("-"):
            positional.append(w)
    return all((REPO / w).exists() for w in positional)


# each command once, where it first appears
RUNS = list({tuple(e.words()): e for e in reversed(EXAMPLES)
             if runnable(e)}.values())[::-1]


def test_some_examples_run():
    assert {e.words()[0] for e in RUNS} >= {"compare", "simulate"}


@pytest.mark.parametrize("example", RUNS, ids=ids(RUNS))
def test_example_runs(example, tmp_path):
    words = example.words()
    if words[0] == "simulate" and "--trials" not in words:
        # the example's figure with fewer trials: what it runs, not what
        # it estimates, is checked here
        words += ["--trials", "5"]
    env = dict(os.environ, STORM_RESULTS=str(tmp_path / "results"),
               MPLBACKEND="Agg")
    proc = subprocess.run([str(STORM), *words], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_storm_run_parses_its_examples(tmp_path):
    # storm run parses its options before its refusals (not root, no
    # module): an example it parses fails with 1 there, not 2 (usage)
    concrete = []
    for e in EXAMPLES:
        words = e.words()
        if words[0] == "vm":
            words = split_guest_command(words)[1][1:] or ["vm"]
        if words[0] == "run" and len(words) > 2 and "[" not in e.text \
                and "..." not in words:
            concrete.append((e, words))
    assert concrete
    for e, words in concrete:
        proc = subprocess.run(
            [str(STORM), "run", "--ko-dir", str(tmp_path / "no-modules"),
             *words[1:]], cwd=REPO, capture_output=True, text=True,
            env=dict(os.environ, STORM_RESULTS=str(tmp_path / "results")))
        assert proc.returncode == 1, (e.where, proc.stderr)
        assert "usage" not in proc.stderr, (e.where, proc.stderr)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("words", [
    ["test", "--help"], ["demo", "--help"], ["run", "--help"],
    ["pairs", "--help"],
    *([w] for w in cli.SUBCOMMANDS if w not in ("kernel", "seed")),
    ["kernel", "build"], ["kernel", "source"],
    *(["seed", n] for n in seeds.SEEDS)], ids=" ".join)
def test_help(words):
    # every subcommand's help prints without side effects and with its
    # percent signs formatted (a %% in a help string is argparse's %)
    if words[0] in cli.SHELL:
        proc = subprocess.run([str(STORM), *words], cwd=REPO,
                              capture_output=True, text=True, timeout=10)
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout
    else:
        text = cli.parser(words)[0].format_help()
    assert text.strip()
    assert "%%" not in text and "%(" not in text
    # the results default is spelled as the command will use it
    assert "NNN" not in text


@pytest.mark.parametrize("words", [
    *([w] for w in cli.SUBCOMMANDS if w not in ("kernel", "seed")),
    ["kernel", "build"], ["kernel", "source"],
    *(["seed", n] for n in seeds.SEEDS)], ids=" ".join)
def test_help_states_the_defaults_used(words):
    # a number a help text gives as the default is the one the parser
    # uses (storm bisect --help once said --runs 5 and used 10)
    p = cli.parser(words)[0]
    stated = 0
    for action in p._actions:
        if not action.help or action.help == argparse.SUPPRESS or \
                isinstance(action.default, bool) or \
                not isinstance(action.default, (int, float)):
            continue
        text = p._get_formatter()._expand_help(action)
        m = re.search(r"\(default:? ([^)\s,;:]+)", text)
        if m:
            stated += 1
            assert m.group(1).rstrip("%") in (
                f"{action.default:g}", str(action.default)), \
                (action.option_strings, m.group(1), action.default)
    assert stated or words[0] in ("show", "report", "compare", "kernel",
                                  "lkp", "box", "calibrate", "arm64")


def help_examples() -> list[tuple[str, list[str]]]:
    """The example commands of the Python subcommands' help (their
    epilogs, `;`-separated, a storm command ending at a shell `&&`) and of storm run's usage text."""
    texts = []
    for name in cli.SUBCOMMANDS:
        if name not in ("kernel", "seed"):
            texts.append((name, cli.parser([name])[0].epilog or ""))
    run_usage = subprocess.run([str(STORM), "run", "--help"],
                               capture_output=True, text=True).stdout
    texts.append(("run", run_usage.partition("examples:")[2]))
    out = []
    for name, text in texts:
        for m in re.finditer(r"(?:scripts/)?storm [a-z]+[^;\n&]*", text):
            words = m.group(0).split()[1:]
            if words[0] in SUBCOMMANDS:
                out.append((name, words))
    return out


def test_help_examples_are_commands():
    found = help_examples()
    # compare, matrix, ab, bisect and storm run give examples
    assert {n for n, _ in found} >= {"compare", "matrix", "ab", "bisect",
                                     "run"}
    bad = {" ".join(w): check(w) for _, w in found if check(w)}
    assert not bad
