"""kmemleak's report, as the debug kernel run reads it."""

from __future__ import annotations

import pathlib

import kmemleak

# Two objects of the report after every check script on the 6.1 debug
# kernel: names of slabstorm caches whose sysfs entry failed
# under failslab.
RECORDED = (pathlib.Path(__file__).parent / "data" /
            "kmemleak-6.1-debug.txt").read_text()

# A leak of the storm's own: an object its init allocated and lost.
STORMS_OWN = """\
unreferenced object 0xffff888005d0d000 (size 64):
  comm "insmod", pid 812, jiffies 4295116432
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<ffffffff812e38c8>] __kmalloc+0x48/0x150
    [<ffffffffa00289de>] 0xffffffffa00289de
    [<ffffffff81001373>] do_one_initcall+0xc3/0x310
"""


def test_parse_reads_every_object():
    leaks = kmemleak.parse(RECORDED + STORMS_OWN)
    assert [(leak.address, leak.size) for leak in leaks] == [
        ("0xffff88800b660f20", 32), ("0xffff888005266d00", 16),
        ("0xffff888005d0d000", 64)]
    assert leaks[0].text.startswith("slabstorm-remote.kkk")
    assert leaks[0].frames[:5] == [
        "__kmalloc_node_track_caller", "kstrdup_const",
        "kobject_set_name_vargs", "kobject_init_and_add", "sysfs_slab_add"]
    assert leaks[2].frames == ["__kmalloc", "do_one_initcall"]


def test_only_the_kernels_slab_name_leak_is_excused():
    assert kmemleak.storms_leaks(RECORDED) == []
    left = kmemleak.storms_leaks(RECORDED + STORMS_OWN)
    assert [leak.address for leak in left] == ["0xffff888005d0d000"]
    # the same path holding another name is not ours to excuse
    other = RECORDED.replace("slabstorm-remote", "dentry-cache-xyz")
    assert len(kmemleak.storms_leaks(other)) == 1
    assert kmemleak.storms_leaks("") == []


def test_the_debug_runs_count(tmp_path, capsys):
    # what tests/e2e/debug-kernel prints for each boot's report
    report = tmp_path / "kmemleak"
    report.write_text(RECORDED + STORMS_OWN)
    assert kmemleak.main([str(report)]) == 0
    assert capsys.readouterr().out == (
        "3 objects, 1 not the kernel's own sysfs_slab_add() name leak\n")
