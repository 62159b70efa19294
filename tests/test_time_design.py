"""tests/e2e/time-design's cutting of a pool into trials: its disjoint
trials share no boot (what makes their counts independent trials), use
every whole block, and pair the blocks as its help says."""

from __future__ import annotations

import itertools

import pytest

from conftest import script_module


def time_design():
    return script_module("tests/e2e/time-design")


@pytest.mark.parametrize("sizes,boots", [([48, 48], 12), ([48, 48], 9),
                                         ([24, 24], 8), ([18, 17], 4),
                                         ([4, 4], 2)])
def test_disjoint_trials_share_no_boot(sizes, boots):
    plants, aas = time_design().disjoint_trials(sizes, boots)
    # as many plant trials as both sides have whole blocks
    assert len(plants) == min(n // boots for n in sizes)
    # each side's A/A trials: its whole blocks in pairs
    for side in (0, 1):
        assert len([a for a in aas if a[0] == side]) == \
            sizes[side] // boots // 2
    for ia, ib in plants:
        assert ia == ib and len(ia) == boots
    for side in (0, 1):
        used = [i for ia, ib in plants for i in (ia, ib)[side]]
        assert len(used) == len(set(used))
        assert max(used) < sizes[side]
        used = [i for s, ia, ib in aas if s == side
                for i in itertools.chain(ia, ib)]
        assert len(used) == len(set(used))
        assert not used or max(used) < sizes[side]
    for _, ia, ib in aas:
        assert len(ia) == len(ib) == boots and not set(ia) & set(ib)


def test_a_pool_too_small_for_a_design_has_no_trials():
    plants, aas = time_design().disjoint_trials([7, 7], 8)
    assert plants == [] and aas == []
    plants, aas = time_design().disjoint_trials([8, 8], 8)
    assert len(plants) == 1 and aas == []


def test_a_design_takes_each_boots_first_runs_in_run_order(tmp_path):
    """first_runs: a boot's first R runs by their index, whatever the
    order its run files were read in."""
    td = time_design()

    def doc(boot: int, index: int) -> dict:
        return {"storm": "ipistorm", "params": {"numipi": "10"},
                "_path": f"b{boot}/run-{index}.json",
                "run": {"index": index, "boot": boot},
                "result": {"status": "done"}}
    boots = [[doc(b, i) for i in (3, 1, 2, 0)] for b in range(2)]

    class Pool:
        dir = tmp_path
    s = td.first_runs(Pool, boots, 2, "A")
    got = sorted((r["run"]["boot"], r["run"]["index"]) for r in s.runs)
    assert got == [(0, 0), (0, 1), (1, 0), (1, 1)]
