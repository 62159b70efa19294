"""storm vm --numa in a small guest (4 vCPUs, 2 nodes): the guest sees
the nodes and CPUs asked for, a storm from node 0 to node 1 lands there
with an IPI sent per flush and target, and the full boots (one node) run
the same case. tests/guest/check-numa.sh is the guest side."""

from __future__ import annotations

import json

import pytest

import conftest
from conftest import assert_clean
from stormsuite.runfiles import result

# the numa boot's arguments (conftest.BOOT_GROUPS)
NUMA_APPEND = conftest.BOOT_GROUPS["numa"][0]

# A target CPU is skipped when its worker is not running the mm at the
# flush (lazy TLB; test_tlbstorm_guest.TOLERANCE). Here the storm runs
# right after the guest came up, and how often a target is caught lazy
# varies: recorded 187 of 200 on both targets in one NUMA boot, 152 and
# 155 in another (the full boots' same case: 198 to 200). The test is
# about where the flushes land (node 1, not node 0's other CPU, which
# gets at most 5%), so the bound on the targets is half the flushes.
TOLERANCE = 0.5


def nodes(run: conftest.GuestRun) -> dict[int, str]:
    text = run.case("numa_nodes").file("cpus")
    return {int(n): cpus for n, cpus in (line.split() for line in
                                         text.splitlines())}


@pytest.mark.boots("numa", kernel="6.1")
def test_numa_guest_has_the_nodes_asked_for():
    run = conftest.boot("6.1", NUMA_APPEND, "numa")
    assert run.rc == 0, run.log[-3000:]
    assert run.case("numa_nodes").file("online").strip() == "0-1"
    assert nodes(run) == {0: "0-1", 1: "2-3"}
    assert_clean(run.dmesg)


@pytest.mark.boots("numa", kernel="6.1")
def test_tlbstorm_from_node_0_lands_on_node_1():
    run = conftest.boot("6.1", NUMA_APPEND, "numa")
    case = run.case("numa_tlb_across")
    assert case.rc == 0, case.stderr
    res = case.result
    numflush = case.param("numflush")
    assert int(res["flushes"]) == numflush
    got = result.per_cpu(res, "TLB")
    sent = result.per_cpu(res, "CAL", "sent")
    for cpu in result.cpulist(case.params["targets"]):
        assert got[cpu] >= TOLERANCE * numflush, got
        assert sent[cpu] >= TOLERANCE * numflush, sent
    # node 0's other CPU, beside the flusher, holds no part of the mm:
    # (almost) nothing there
    (other,) = set(result.cpulist(nodes(run)[0])) - set(
        result.cpulist(case.params["cpulist"]))
    assert got.get(other, 0) <= 0.05 * numflush, got
    assert_clean(case.dmesg)


def recorded_nodes(run: conftest.GuestRun) -> str:
    files = sorted((run.out / "numa_run").glob("numa/*/run-*.json"))
    assert len(files) == 1, (run.out / "numa_run" / "files").read_text()
    return json.loads(files[0].read_text())["env"]["numa_node_cpus"]


@pytest.mark.boots("numa", kernel="6.1")
def test_storm_run_records_each_nodes_cpus():
    """What seed 001 checks its guests against."""
    assert recorded_nodes(conftest.boot("6.1", NUMA_APPEND, "numa")) == "0:0-1 1:2-3"


def test_full_boot_has_one_node(guest_once):
    """In the full boot of the first kernel under test only
    (tests/guest/check-numa.sh)."""
    assert nodes(guest_once) == {0: "0-3"}
    assert guest_once.case("numa_tlb_across").rc == 0
    assert recorded_nodes(guest_once) == "0:0-3"
