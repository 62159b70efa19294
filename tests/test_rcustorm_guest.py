"""rcustorm in real guests (4 vCPUs): grace periods and the IPIs they send.

The cases run in tests/guest/check-rcustorm.sh, in the full boot of each
kernel. Under single-threaded TCG a busy CPU is never in a quiescent
state when an expedited grace period looks at it and an idle one always
is, so the counts are exact: one call-function IPI per grace period to
each busy CPU, none to an idle one (but the guest's stray few), and the
caller's CPU at most one (the wakeup of the caller, queued to its idle
CPU by an IPI).
"""

from __future__ import annotations

import pytest

from conftest import (STRAY_CAL, assert_clean, assert_histogram,
                      assert_injected_failure, assert_refused,
                      assert_start_and_end)
from stormsuite import metrics, result, runfile


def ok(case, status: str = "done") -> dict[str, str]:
    assert case.rc == 0, f"{case.name}: insmod failed: {case.stderr}"
    res = case.result
    assert res["storm"] == "rcustorm" and res["status"] == status
    assert res["failures"] == "0"
    assert_clean(case.dmesg)
    assert_start_and_end(case, "rcustorm")
    assert res["op"] == "gp" and res["op.count"] == res["gps"]
    assert sum(int(v) for k, v in res.items()
               if k.startswith("caller.") and k.endswith(".gps")) \
        == int(res["gps"])
    for k, v in res.items():
        if k.startswith("reader.") and k.endswith(".spanned"):
            assert v == "0", (k, res)
            assert int(res[k.replace("spanned", "sections")]) > 0
    return res


def typed(case) -> dict:
    """The result as a run file holds it, numbers as numbers."""
    return runfile.result_section(case.file("result"))


def cal(res: dict[str, str], cpu: int) -> int:
    return int(res[f"irq.{cpu}.CAL"])


def test_expedited_interrupts_each_busy_cpu_once_per_grace_period(guest):
    res = ok(guest.case("rcu_exp_busy"))
    gps = int(res["gps"])
    assert gps == 200
    for cpu in (1, 2):
        assert gps <= cal(res, cpu) <= gps + STRAY_CAL, (cpu, res)
    assert cal(res, 3) <= STRAY_CAL, res
    assert cal(res, 0) <= gps + STRAY_CAL, res
    assert int(res["busy.CAL"]) == cal(res, 1) + cal(res, 2)
    hist = result.histogram(res, "latency")
    assert hist.count == gps
    assert_histogram(hist)
    rows = {m.name: v for m, v in metrics.primary_of_run(
        "rcustorm", typed(guest.case("rcu_exp_busy"))).items()}
    assert set(rows) == {"rcustorm.time_per_gp_ns", "rcustorm.ipis_per_gp"}
    # two busy CPUs, and at most the caller's wakeup
    assert 2 <= rows["rcustorm.ipis_per_gp"] <= 3 + 3 * STRAY_CAL / gps


def test_expedited_interrupts_no_idle_cpu(guest):
    res = ok(guest.case("rcu_exp_idle"))
    assert res["gps"] == "200"
    assert "busy.CAL" in res and res["param.busy"] == ""
    assert all(cal(res, cpu) <= STRAY_CAL for cpu in range(4)), res


def test_normal_grace_periods_leave_busy_cpus_alone(guest):
    res = ok(guest.case("rcu_normal"))
    assert res["gps"] == "10" and res["param.mode"] == "normal"
    assert cal(res, 1) <= STRAY_CAL and cal(res, 2) <= STRAY_CAL, res


def test_two_callers_and_the_readers_check(guest):
    res = ok(guest.case("rcu_two_callers"))
    assert res["caller.0.gps"] == res["caller.1.gps"] == "100"
    for cpu in (2, 3):
        # grace periods of two callers may be one: at most one IPI each
        assert cal(res, cpu) <= 200 + STRAY_CAL, res
        assert cal(res, cpu) >= 100, res


def test_a_section_across_a_grace_period_fails_the_storm(guest):
    res = assert_injected_failure(guest.case("rcu_miscount"), "rcustorm", [
        "check: injected: CPU 1's reader counted with one section across "
        "a whole grace period",
        "check failed: CPU 1: 1 read-side critical sections lasted across "
        "a whole grace period"])
    assert res["gps"] == "50" and res["reader.1.spanned"] == "0"


def test_timed_storm_without_timing(guest):
    res = ok(guest.case("rcu_timed"))
    assert int(res["runtime_ns"]) >= 10**9
    assert int(res["gps"]) > 0 and "latency.count" not in res
    rows = {m.name for m in metrics.primary_of_run(
        "rcustorm", typed(guest.case("rcu_timed")))}
    assert "rcustorm.runtime_per_gp_ns" in rows


def test_rmmod_and_signal_stop_the_storm(guest):
    case = guest.case("rcu_background_rmmod")
    assert case.rc == 0 and case.file("rmmod_rc").strip() == "0"
    assert case.file("loaded_after").strip() == "0"
    assert int(case.file("stop_seconds")) <= 30
    assert "rcustorm: End of test: FAILURE (interrupted)" in case.dmesg
    assert_clean(case.dmesg)
    case = guest.case("rcu_signal")
    assert case.rc != 0
    assert case.result["status"] == "interrupted"
    assert int(case.file("stop_seconds")) <= 10
    assert_clean(case.dmesg)


@pytest.mark.parametrize("name,reason", [
    ("rcu_bad_mode", "mode=fast: unknown mode (expedited or normal)"),
    ("rcu_bad_busy_caller", "busy=1: CPU 1 is also a caller (cpulist)"),
    ("rcu_bad_busy_range", "busy"),
    ("rcu_bad_unbounded", "timeout"),
    ("rcu_bad_timeout_huge", "timeout"),
    ("rcu_bad_delay_huge", "delay"),
])
def test_bad_parameters_are_refused(guest_once, name, reason):
    assert_refused(guest_once.case(name), reason)
