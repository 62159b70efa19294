"""The storms' default CPUs leave out isolated and nohz_full CPUs (issue
46 item 8): the NUMA boot of 6.1 also isolates CPU 3 (isolcpus=3), and
tests/guest/check-isolated.sh runs each storm there with its default
lists, with a list naming CPU 3, and with nice=1."""

from __future__ import annotations

import pytest

import conftest
from conftest import assert_clean, assert_start_and_end
from stormsuite.runfiles import result

# the numa boot's arguments (conftest.BOOT_GROUPS)
NUMA_APPEND = conftest.BOOT_GROUPS["numa"][0]


def done(run: conftest.GuestRun, name: str, module: str) -> dict[str, str]:
    case = run.case(name)
    assert case.rc == 0, case.stderr
    res = case.result
    assert res["status"] == "done", res["status"]
    assert res["failures"] == "0"
    assert_clean(case.dmesg)
    assert_start_and_end(case, module)
    return res


@pytest.mark.boots("numa", kernel="6.1")
def test_default_cpus_leave_out_an_isolated_cpu():
    run = conftest.boot("6.1", NUMA_APPEND, "numa")
    res = done(run, "iso_ipi_default", "ipistorm")
    # smp_call_function() would call CPU 3 too: _many() to the others
    assert res["param.cpulist"] == "0-2" and res["param.targets"] == "0-2"
    assert res["kind"] == "many"
    handled = result.per_cpu(res, "handled")
    assert handled.get(3, 0) == 0, handled
    # every sender calls the two others numipi times
    numipi = run.case("iso_ipi_default").param("numipi")
    assert all(handled[c] == 2 * numipi for c in (0, 1, 2)), handled
    res = done(run, "iso_tlb_default", "tlbstorm")
    assert res["param.targets"] == "1-2", res["param.targets"]
    res = done(run, "iso_slab_default", "slabstorm")
    assert res["param.cpulist"] == "0-2", res["param.cpulist"]


@pytest.mark.boots("numa", kernel="6.1")
def test_a_list_that_names_an_isolated_cpu_is_obeyed():
    run = conftest.boot("6.1", NUMA_APPEND, "numa")
    case = run.case("iso_ipi_named")
    res = done(run, "iso_ipi_named", "ipistorm")
    # the script's sender calls the isolated CPU
    assert res[f"sender.{case.param('cpulist')}.target"] == "3"
    assert result.per_cpu(res, "handled")[3] == case.param("numipi")


@pytest.mark.boots("numa", kernel="6.1")
def test_nice_runs_every_storm_thread_at_nice_19():
    run = conftest.boot("6.1", NUMA_APPEND, "numa")
    case = run.case("iso_nice")
    assert case.rc == 0, case.stderr
    threads = dict(line.split() for line in case.file("nice").splitlines())
    assert set(threads) == {"ipistorm/0", "ipistorm/1", "ipistorm/ctl"}, \
        threads
    assert set(threads.values()) == {"19"}, threads
    assert "nice=1" in case.dmesg
    assert_clean(case.dmesg)
