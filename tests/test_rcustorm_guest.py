"""rcustorm in real guests (4 vCPUs): grace periods and the IPIs they send.

The cases run in tests/guest/check-rcustorm.sh, in the full boot of each
kernel. Under single-threaded TCG a busy CPU is never in a quiescent
state when an expedited grace period looks at it, so each busy CPU takes
exactly one call-function IPI per grace period (the guest's stray few
aside). The other CPUs take no such request, only the grace-period
machinery's own wakeups, each an IPI to an idle CPU through the wakelist:
of the caller when its grace period ends, and of the expedited-GP
kthread workers (rcu_exp_gp_kworker, and rcu_exp_par_gp_kworker where the
kernel has it) that drive it: at most WAKEUPS a grace period, on whichever
idle CPUs those threads last slept (6.1 in a fresh boot: none; 6.12 in
the full boot: 2 a grace period on CPU 3 and 1 on the caller's).
"""

from __future__ import annotations

from conftest import (STRAY_CAL, assert_clean, assert_histogram,
                      assert_injected_failure,
                      assert_start_and_end)
from stormsuite.runfiles import metrics, result, runfile


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


# a grace period's own wakeups off the busy CPUs: the caller's and two
# kthread workers'
WAKEUPS = 3


def cal(res: dict[str, str], cpu: int) -> int:
    return int(res[f"irq.{cpu}.CAL"])


def script_cpus(case, param: str) -> set[int]:
    """The CPUs a cpulist parameter of CASE's script line names (busy=,
    cpulist=): what the test expects of them is not written again here."""
    return set(result.cpulist(case.params[param]))


def off_busy(res: dict[str, str], busy: set[int]) -> int:
    """CAL over the window on the CPUs not kept busy."""
    return sum(cal(res, cpu) for cpu in range(4) if cpu not in busy)


def test_expedited_interrupts_each_busy_cpu_once_per_grace_period(guest):
    case = guest.case("rcu_exp_busy")
    res = ok(case)
    gps = int(res["gps"])
    assert gps == case.param("numgp")
    busy = script_cpus(case, "busy")
    for cpu in busy:
        assert gps <= cal(res, cpu) <= gps + STRAY_CAL, (cpu, res)
    # the idle CPU and the caller's: wakeups only
    assert off_busy(res, busy) <= WAKEUPS * gps + STRAY_CAL, res
    assert int(res["busy.CAL"]) == sum(cal(res, cpu) for cpu in busy)
    hist = result.histogram(res, "latency")
    assert hist.count == gps
    assert_histogram(hist)
    rows = {m.name: v for m, v in metrics.primary_of_run(
        "rcustorm", typed(case)).items()}
    assert set(rows) == {"rcustorm.time_per_gp_ns", "rcustorm.ipis_per_gp"}
    # one a grace period to each busy CPU, and the wakeups
    assert len(busy) <= rows["rcustorm.ipis_per_gp"] \
        <= len(busy) + WAKEUPS + 4 * STRAY_CAL / gps


def test_expedited_without_busy_cpus_sends_only_its_wakeups(guest):
    case = guest.case("rcu_exp_idle")
    res = ok(case)
    gps = int(res["gps"])
    assert gps == case.param("numgp")
    assert "busy.CAL" in res and res["param.busy"] == ""
    assert off_busy(res, set()) <= WAKEUPS * gps + STRAY_CAL, res
    # no CPU took a request a grace period: at most its wakeups there
    assert all(cal(res, cpu) <= 2 * gps + STRAY_CAL for cpu in range(4))


def test_normal_grace_periods_leave_busy_cpus_alone(guest):
    case = guest.case("rcu_normal")
    res = ok(case)
    assert res["gps"] == case.params["numgp"]
    assert res["param.mode"] == case.params["mode"]
    for cpu in script_cpus(case, "busy"):
        assert cal(res, cpu) <= STRAY_CAL, res


def test_two_callers_and_the_readers_check(guest):
    case = guest.case("rcu_two_callers")
    res = ok(case)
    numgp = case.param("numgp")         # per caller
    callers = script_cpus(case, "cpulist")
    for cpu in callers:
        assert res[f"caller.{cpu}.gps"] == case.params["numgp"], res
    for cpu in script_cpus(case, "busy"):
        # grace periods of the callers may be one: at most one IPI each
        assert cal(res, cpu) <= len(callers) * numgp + STRAY_CAL, res
        assert cal(res, cpu) >= numgp, res


def test_a_section_across_a_grace_period_fails_the_storm(guest):
    case = guest.case("rcu_miscount")
    res = assert_injected_failure(case, "rcustorm", [
        "check: injected: CPU 1's reader counted with one section across "
        "a whole grace period",
        "check failed: CPU 1: 1 read-side critical sections lasted across "
        "a whole grace period"])
    assert res["gps"] == case.params["numgp"]
    assert res["reader.1.spanned"] == "0"


def test_timed_storm_without_timing(guest):
    case = guest.case("rcu_timed")
    res = ok(case)
    # a deadline in jiffies, up to a tick (10 ms at the coarsest HZ) short
    # of the timeout
    assert int(res["runtime_ns"]) >= case.param("timeout") * 10**9 - 10**7
    gps = int(res["gps"])
    for cpu in script_cpus(case, "busy"):
        assert gps <= cal(res, cpu) <= gps + STRAY_CAL, res
    assert gps > 0 and "latency.count" not in res
    rows = {m.name for m in metrics.primary_of_run(
        "rcustorm", typed(case))}
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
