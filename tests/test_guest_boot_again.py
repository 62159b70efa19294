"""The test harness boots a guest again, once, when it died before its
check scripts wrote anything (conftest.died_before_the_checks): a death
in boot with no storm loaded says nothing of the storms. Any other
ending is the boot's result, and the first death's log is kept."""

from __future__ import annotations

import conftest
from stormsuite.machines import vm


def test_only_a_boot_death_with_nothing_written_is_retried(tmp_path):
    assert conftest.died_before_the_checks(vm.EXIT_NO_RUN, tmp_path)
    assert not conftest.died_before_the_checks(vm.EXIT_KERNEL_PROBLEM,
                                               tmp_path)
    assert not conftest.died_before_the_checks(1, tmp_path)
    (tmp_path / "ipi_idle").mkdir()
    assert not conftest.died_before_the_checks(vm.EXIT_NO_RUN, tmp_path)


def guest_that_dies(tmp_path, deaths: int) -> list[str]:
    """A stand-in for storm vm that dies in boot DEATHS times, then
    writes a case into OUT and passes."""
    count = tmp_path / "boots"
    out = tmp_path / "out"
    out.mkdir()
    script = (f'n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); '
              f'echo $n >{count}; if [ $n -le {deaths} ]; then '
              f'echo "guest died in boot $n"; exit {vm.EXIT_NO_RUN}; fi; '
              f'mkdir {out}/case; echo ran')
    return ["sh", "-c", script], out, count


def test_a_boot_death_is_booted_again_once(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "_booted_again", [])
    cmd, out, count = guest_that_dies(tmp_path, 1)
    rc, log, _ = conftest._run_guest(cmd, out, slot=False)
    assert (rc, log.strip()) == (0, "ran")
    assert count.read_text().strip() == "2"
    assert (out / "died-in-boot.log").read_text() == "guest died in boot 1\n"
    assert conftest._booted_again == ["out: guest died in boot 1"]


def test_a_second_death_is_the_boot_s_result(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "_booted_again", [])
    cmd, out, count = guest_that_dies(tmp_path, 2)
    rc, log, _ = conftest._run_guest(cmd, out, slot=False)
    assert rc == vm.EXIT_NO_RUN and "died in boot 2" in log
    assert count.read_text().strip() == "2"
    assert (out / "vm.rc").read_text().strip() == str(vm.EXIT_NO_RUN)
