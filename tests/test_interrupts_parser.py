"""stormsuite.runfiles.interrupts: /proc/interrupts snapshots and their deltas."""

import pathlib

import pytest

from stormsuite.runfiles import interrupts

DATA = pathlib.Path(__file__).parent / "data"


def snap(name):
    return interrupts.parse((DATA / name).read_text())


def test_real_guest_snapshot():
    s = snap("interrupts-6.1-4cpu.before")
    assert s.cpus == [0, 1, 2, 3]
    for row in ("CAL", "TLB", "RES", "LOC", "NMI", "0", "25"):
        assert row in s.rows, row
        assert len(s.rows[row].counts) == 4
    assert s.rows["CAL"].description == "Function call interrupts"
    assert s.rows["ERR"].counts == [0]


def test_delta_of_real_storm_matches_module():
    before = snap("interrupts-6.1-4cpu.before")
    after = snap("interrupts-6.1-4cpu.after")
    d = interrupts.delta(before, after)
    cal = interrupts.per_cpu(d, "CAL")
    # ipistorm cpulist=1 offset=2: the IPIs land on CPU 3
    # (the others see insmod's own IPIs: module loading, text patching)
    assert cal[3] > 600
    assert max(cal[0], cal[1], cal[2]) < cal[3] / 5
    # no counter wrapped in this capture, so every row's delta is the
    # plain difference, column by column (a row read into the wrong
    # columns, or one snapshot's row matched to another's, would not be)
    assert d.rows.keys() == after.rows.keys() == before.rows.keys()
    for name, row in d.rows.items():
        assert row.counts == [a - b for a, b in zip(
            after.rows[name].counts, before.rows[name].counts)], name


def test_lkp_name():
    s = snap("interrupts-6.1-4cpu.before")
    cal, tlb = s.rows["CAL"], s.rows["TLB"]
    assert interrupts.lkp_name(cal.name, cal.description) == \
        "interrupts.CAL:Function_call_interrupts"
    assert interrupts.lkp_name(tlb.name, tlb.description, 3) == \
        "interrupts.CPU3.TLB:TLB_shootdowns"
    # numbered IRQs: the chip, the hardware IRQ and the actions, by "."
    irq = next(r for n, r in s.rows.items() if n.isdigit()
               and "virtio" in r.description)
    name = interrupts.lkp_name(irq.name, irq.description)
    assert name == "interrupts." + irq.name + ":" + ".".join(
        irq.description.split())
    assert " " not in name and "_" not in name.split(":", 1)[1]


SPARSE_BEFORE = """\
           CPU0       CPU2
 CAL:         10         20   Function call interrupts
 TLB:          1          2   TLB shootdowns
"""
SPARSE_AFTER = """\
           CPU0       CPU1       CPU2
 CAL:         15          7         29   Function call interrupts
 TLB:          1          0          2   TLB shootdowns
 NEW:          1          1          1   Appeared later
"""


def test_delta_matches_cpus_by_number_not_column():
    d = interrupts.delta(interrupts.parse(SPARSE_BEFORE),
                         interrupts.parse(SPARSE_AFTER))
    assert interrupts.per_cpu(d, "CAL") == {0: 5, 1: 7, 2: 9}
    assert interrupts.per_cpu(d, "NEW") == {0: 1, 1: 1, 2: 1}


def test_short_rows_are_padded():
    s = interrupts.parse("   CPU0 CPU1\n  7:   5   IO-APIC  7-edge  thing\n")
    assert s.rows["7"].counts == [5, 0]


@pytest.mark.parametrize("text", ["", "garbage\n", "  7: 1 2\n"])
def test_not_proc_interrupts(text):
    with pytest.raises(ValueError):
        interrupts.parse(text)


def test_arm64_ipis_take_x86_tags():
    """An arm64 guest's IPI0/IPI1 are RES/CAL, its arch_timer IRQ LOC,
    and the IPIs x86 has no tag for keep arm64's names."""
    s = snap("interrupts-6.12-arm64-4cpu.after")
    assert s.cpus == [0, 1, 2, 3]
    assert s.rows["CAL"].description == "Function call interrupts"
    assert s.rows["CAL"].kernel_name == "IPI1"
    assert s.rows["RES"].kernel_name == "IPI0"
    assert s.rows["IWI"].kernel_name == "IPI5"
    assert s.rows["LOC"].kernel_name == "11"
    assert "IPI1" not in s.rows and "11" not in s.rows
    for name in ("IPI2", "IPI3", "IPI4", "IPI6", "IPI7", "27"):
        assert name in s.rows and len(s.rows[name].counts) == 4, name
    assert s.rows["Err"].counts == [0]
    raw = (DATA / "interrupts-6.12-arm64-4cpu.after").read_text()
    cal_line = next(x for x in raw.splitlines() if x.startswith("IPI1:"))
    assert s.rows["CAL"].counts == [int(v) for v in cal_line.split()[1:5]]


def test_arm64_delta_names_the_ipis_by_tag():
    before = snap("interrupts-6.12-arm64-4cpu.before")
    after = snap("interrupts-6.12-arm64-4cpu.after")
    d = interrupts.delta(before, after)
    assert d.rows.keys() == after.rows.keys()
    assert interrupts.per_cpu(d, "LOC")[0] > 0
    assert d.rows["CAL"].kernel_name == "IPI1"   # ticks moved in between
    assert interrupts.lkp_name("CAL", "Function call interrupts") == \
        "interrupts.CAL:Function_call_interrupts"


def test_arm64_section_keeps_the_kernels_names():
    """A run file's interrupts section says which arm64 row a tag is."""
    raw = [(DATA / f"interrupts-6.12-arm64-4cpu.{w}").read_text()
           for w in ("before", "after")]
    rows = interrupts.section(*raw)["rows"]
    assert rows["CAL"]["kernel_name"] == "IPI1"
    assert rows["LOC"]["kernel_name"] == "11"
    assert "kernel_name" not in rows["IPI2"]
