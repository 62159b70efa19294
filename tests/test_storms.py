"""The registry of storms (scripts/stormsuite/storms.py) against what it
stands for: the modules in the tree, their parameters as modinfo -p lists
them, the op.* keys their results carry, and the guest fuzzer's tables
made from them."""

from __future__ import annotations

import re

import pytest

from conftest import REPO, script_module
from stormsuite import storms
from stormsuite.lkp import modparams
from stormsuite.runfiles import metrics


def fuzz_module():
    return script_module("tests/guest/fuzz.py")


def test_every_module_in_the_tree_is_registered():
    """A storm is a directory <name>/<name>.c that the Makefile builds;
    each has an entry, and each entry a module."""
    in_tree = {p.parent.name for p in REPO.glob("*/*storm.c")
               if p.stem == p.parent.name}
    assert in_tree == set(storms.NAMES)


@pytest.mark.parametrize("name", storms.NAMES)
def test_the_module_says_the_registered_operation(name):
    """The result's op: line is the registry's op (storm_show_op()), and
    the example's parameters are the module's."""
    src = (REPO / name / f"{name}.c").read_text()
    ops = re.findall(r'\.name = "(\w+)"', src)
    assert ops == [storms.STORMS[name].op]
    params = {p.name for p in modparams.of_storm(name)}
    entry = storms.STORMS[name]
    assert entry.count_param in params
    assert {p.split("=")[0] for p in entry.example.split()} <= params
    assert {"timeout", "background"} <= params


@pytest.mark.parametrize("name", storms.NAMES)
def test_fuzz_knows_every_parameter(name):
    """The fuzzer's table of a storm is made from modinfo -p: every
    parameter, each of a kind its type and description give, with a
    valid value that is the example's or the module's own choice."""
    fuzz = fuzz_module()
    ko = modparams.module_file(name).parent
    table = fuzz.module_params(str(ko), name)
    params = {p.name: p for p in modparams.of_storm(name)}
    assert set(table) == set(params)
    example = dict(p.split("=", 1)
                   for p in storms.STORMS[name].example.split())
    for prm, (kind, valid, choices) in table.items():
        assert kind in ("bool", "cpus", "mode", "count", "secs", "us",
                        "ns", "num"), prm
        assert valid == example.get(prm, valid)
        if kind == "mode":
            assert valid in choices and params[prm].default in choices
        if kind == "bool":
            assert valid in ("0", "1")
        if kind in ("count", "secs", "num", "us", "ns"):
            assert valid.isdigit(), (prm, valid)
    assert table["timeout"][0] == "secs"
    assert table[storms.STORMS[name].count_param][0] == "count"


def test_fuzz_kinds_follow_the_descriptions():
    """Units and choices as the modules' descriptions say them."""
    fuzz = fuzz_module()

    def table(name):
        return fuzz.module_params(
            str(modparams.module_file(name).parent), name)
    ipi, slab = table("ipistorm"), table("slabstorm")
    assert ipi["delay"][0] == "us" and ipi["handler_ns"][0] == "ns"
    assert ipi["targets"][0] == "cpus" and ipi["latency"][0] == "num"
    assert slab["numcache"][0] == slab["numobj"][0] == "count"
    assert slab["mode"][2] == ["create", "rcu", "shrink", "remote"]
    assert table("tlbstorm")["mode"][2] == ["user", "kernel"]
    assert table("rcustorm")["busy"][0] == "cpus"


def test_a_string_parameters_choices_are_read_from_its_description():
    def choices(desc):
        return modparams.Param("mode", desc, "charp").choices
    assert choices("a: one thing; b: another (default a)") == ["a", "b"]
    assert choices("x, y (why) or z (default x)") == ["x", "y", "z"]
    assert choices("Sending CPUs (default all online)") == []
    assert modparams.Param("n", "a: b (default 1)", "ulong").choices == []


def test_module_params_reads_modinfo():
    text = ("numipi:Calls per sending CPU; 0 = timed run (default 0) "
            "(ulong)\ncpulist:Sending CPUs (default all online) (charp)\n")
    ps = modparams.parse(text)
    assert [(p.name, p.type, p.default) for p in ps] == [
        ("numipi", "ulong", "0"), ("cpulist", "charp", "all online")]


def result_with_op(**op: str) -> dict:
    res = {"runtime_ns": 1000, "irq.0.CAL": 4, "irq.1.CAL": 6,
           "irq.1.RES": 10, "sent.0.CAL": 3, "sent.1.CAL": 7}
    res.update({("op" if k == "op" else f"op.{k}"): v
                for k, v in op.items()})
    return res


def test_metrics_follow_the_op_keys_not_the_name():
    """A storm the drivers have never heard of: its primary rows come
    from its op.* keys alone."""
    res = result_with_op(op="grace", count=10, ipi_rows="CAL RES",
                         senders="0", targets="1")
    rows = {m.name: v for m, v in metrics.primary_of_run("newstorm",
                                                         res).items()}
    assert rows == {"newstorm.time_per_grace_ns": 100.0,
                    "newstorm.ipis_per_grace": 2.0,
                    "newstorm.ipis_sent_per_grace": 1.0}
    assert metrics.insn_sides("newstorm", res) == {"sender": {0},
                                                   "target": {1}}
    res = result_with_op(op="grace", count=10, ipi_rows="CAL", senders="0")
    assert metrics.insn_sides("newstorm", res) == {"sender": {0}}
    assert metrics.ipis_of("newstorm", res) == 10.0
    res = result_with_op(op="grace", count=10, ipi_rows="CAL",
                         timed="latency")
    rows = {m.name for m in metrics.primary_of_run("newstorm", res)}
    assert "newstorm.runtime_per_grace_ns" in rows


@pytest.mark.parametrize("name", ["ipistorm", "tlbstorm", "slabstorm"])
def test_results_from_before_the_op_keys_read_as_before(name):
    """Run files written before the modules said op.*: their metrics as
    those modules' keys give them (tests/data's runs)."""
    import json
    files = sorted((REPO / "tests" / "data").rglob("run-*.json"))
    docs = [json.loads(f.read_text()) for f in files]
    docs = [d for d in docs if d.get("storm") == name
            and "op" not in d["result"]]
    if not docs:
        pytest.skip(f"no {name} run file from before the op keys")
    for doc in docs[:20]:
        rows = metrics.primary_of_run(name, doc["result"])
        entry = storms.STORMS[name]
        names = {m.name for m in rows}
        assert entry.ipi_metric in names or not rows
        assert names & {entry.time_metric, entry.untimed_metric} \
            or not rows


def doc_table(text: str) -> dict[str, str] | None:
    """A storm doc's `| parameter | default | meaning |` table: name ->
    default, or None where the doc has no such table."""
    lines = text.splitlines()
    try:
        start = lines.index("| parameter | default | meaning |")
    except ValueError:
        return None
    out = {}
    for line in lines[start + 2:]:
        m = re.match(r"\| `([a-z_]+)` \| ([^|]*) \|", line)
        if not m:
            break
        out[m.group(1)] = m.group(2).strip().strip("`")
    return out


@pytest.mark.parametrize("name", storms.NAMES)
def test_the_docs_name_every_parameter_with_the_modules_default(name):
    """docs/<storm>.md says what the module declares: its table (or its
    Parameters section) has every parameter and no other, each numeric
    default the module's."""
    text = (REPO / "docs" / f"{name}.md").read_text()
    declared = {p.name: p for p in modparams.of_storm(name)}
    table = doc_table(text)
    if table is None:
        section = text.split("### Parameters", 1)[1].split("\n#", 1)[0]
        assert set(declared) <= set(re.findall(r"`([a-z_]+)`", section))
        return
    assert set(table) == set(declared), set(table) ^ set(declared)
    for prm in declared.values():
        default = (prm.default or "").split(",")[0].split()
        if default and default[0].isdigit():
            assert table[prm.name] == default[0], (prm.name, table[prm.name])
