"""The small outputs the docs cite for a measured figure
(tests/data/measured/): every one is cited, every citation is there, and
what a doc says of an output holds in it."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO
from stormsuite.runfiles import result

MEASURED = REPO / "tests" / "data" / "measured"
LINK = re.compile(r"\]\(\.\./tests/data/measured/([^)#]*)\)")


def cited() -> set[str]:
    out = set()
    for doc in (REPO / "docs").glob("*.md"):
        out |= set(LINK.findall(doc.read_text()))
    return out


def test_every_output_is_cited_and_every_citation_is_there():
    files = {str(p.relative_to(MEASURED)) for p in MEASURED.rglob("*")
             if p.is_file()}
    links = cited() - {""}
    assert links <= files, links - files
    assert files <= links, files - links


def test_docs_cite_no_evidence_folder():
    for doc in (REPO / "docs").glob("*.md"):
        assert "evidence/" not in doc.read_text(), doc
    assert not (REPO / "docs" / "evidence").exists()


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_fuzz_runs_found_no_problem(kernel):
    """docs/safety.md: 500 loads a kernel, 0 splats, 0 problems."""
    doc = json.loads((MEASURED / f"fuzz-500-{kernel}.json").read_text())
    assert doc["loads"] == 500 == sum(doc["outcomes"].values())
    assert doc["splats"] == 0 and doc["problems"] == []


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_contended_worker_got_at_least_the_flushes_it_held(kernel):
    """docs/tlbstorm.md: each worker CPU's TLB count is at least the
    flushes its worker held, the contended one short of all flushes."""
    res = result.parse((MEASURED / f"tlb-contended-{kernel}.result")
                       .read_text())
    flushes = int(res["flushes"])
    short = []
    for cpu in result.cpulist(res["param.targets"]):
        held = int(res[f"worker.{cpu}.flushes_held"])
        tlb = int(res[f"irq.{cpu}.TLB"])
        assert held <= tlb <= flushes, (cpu, held, tlb)
        short.append(tlb < flushes)
    assert any(short)


def test_arm64_table_says_what_the_doc_says():
    """docs/arm64.md: IPIs per operation agree between the
    architectures but for TLB flushes, which take none on arm64."""
    rows = {}
    for line in (MEASURED / "arch-table-6.12.txt").read_text().splitlines():
        f = line.split()
        if len(f) == 6 and f[1] in ("x86_64", "arm64"):
            rows[f[0], f[1]] = float(f[3])
    for case in ("ipi-single", "ipi-many", "ipi-all", "rcu-expedited"):
        assert rows[case, "x86_64"] == rows[case, "arm64"], case
    assert rows["tlb-kernel", "arm64"] == 0.0
    assert rows["tlb-user", "arm64"] == 0.205
    assert rows["tlb-user", "x86_64"] >= 2 and rows["tlb-kernel", "x86_64"] == 3
    aa = (MEASURED / "arm64-aa-6.12.txt").read_text()
    verdicts = [x for x in aa.splitlines() if "(p=" in x]
    assert len(verdicts) == 3 and all("  ~  (p=" in x for x in verdicts)


def test_arm64_73_show_says_what_the_doc_says():
    """docs/arm64.md: the cross-built 7.3 on arm64, one CAL per call,
    no IPI for a flush, one per busy CPU per grace period."""
    text = (MEASURED / "arm64-7.3-show.txt").read_text()
    assert "ipistorm on 7.3.4-storm-arm64: done" in text
    assert "2000 calls" in text and "target CAL +2000" in text
    assert "flush_ipi: none (broadcast TLBI)" in text
    assert "CAL by cpu: 0:0 1:0 2:0 " in text      # tlbstorm's flusher, mm
    assert "CAL by cpu: 0:50 1:50 2:50 " in text   # rcustorm


def test_arm64_ab_says_what_the_doc_says():
    text = (MEASURED / "arm64-ab-comment-7.3.txt").read_text()
    assert "insn per call (sender)  371.4 -> 371.4   ~" in text
    assert "insn per call (target)  1104 -> 1104   ~" in text
    assert text.count("cannot tell: one boot") == 2
    assert "builds 319 s" in text


def test_arm64_bisect_refused_what_the_doc_says():
    text = (MEASURED / "arm64-bisect-comment-7.3.txt").read_text()
    assert "built af833ee29f2f in 133 s" in text
    assert "built d70325d0382f in 137 s" in text
    assert "refusing to bisect: the endpoints do not differ" in text
    assert "8+8 boots x 10 runs" in text
