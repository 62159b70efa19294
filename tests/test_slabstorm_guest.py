"""slabstorm in real guests (6.1 and 6.12, 4 vCPUs): counts and invariants.

The cases run in tests/guest/check-slabstorm.sh, all in one boot per
kernel; these tests read what each case left behind. Nothing here looks at
times. IPI counts are compared with what the mechanism must produce (one
flush work item per touched CPU per destroy or shrink) or must not (one
IPI per other CPU per creation, as before seed 002's fix), with room for
the background interrupts of a guest.
"""

from __future__ import annotations

import re

import pytest

from conftest import (DEBUG_KERNEL, assert_clean, assert_histogram,
                      assert_injected_failure,
                      assert_start_and_end)
from refusals import load
from stormsuite.runfiles import interrupts, result

CPUS = (0, 1, 2, 3)
# A destroy or shrink queues a flush work item on each CPU that holds a cpu
# slab of the cache, and the CPU, idling in HLT, is woken by an IPI for it:
# one per op. A CPU still busy at that moment (its touch just ending, a
# kworker) needs none, so some ops may cost none. In the recorded CI runs
# (6.1 and 6.12) a touching CPU got at least 94% of one per op (47 and 48
# of 50 in one slab_shrink), 98% or more in every other case.
PER_OP = 0.9
PHASE_IRQ = re.compile(r"phase\.(\w+)\.irq\.(\d+)\.(CAL|RES|TLB)$")
SUMMARY = re.compile(r"summary: mode=(\w+) (\w+)=(\d+) runtime=(\d+) ns .* "
                     r"status=(\w+)")

RUNS = ["slab_untouched", "slab_touched", "slab_touched_shrink",
        "slab_shrink", "slab_shrink_offline", "slab_remote",
        "slab_remote_ring", "slab_timed", "slab_remote_timed",
        "slab_nolatency", "slab_rcu", "slab_after"]
MAIN_THREAD_RUNS = [n for n in RUNS if "remote" not in n]


def ok(case):
    assert case.rc == 0, f"{case.name}: insmod failed: {case.stderr}"
    res = case.result
    assert res["storm"] == "slabstorm"
    assert res["status"] == "done", res["status"]
    assert res["failures"] == "0"
    assert res["error"] == "0"
    assert "End of test: SUCCESS" in case.dmesg
    assert_clean(case.dmesg)
    assert_start_and_end(case, "slabstorm")
    return res


def count(res, phase):
    return int(res[f"phase.{phase}.count"])


def milli(res, phase):
    return int(res[f"phase.{phase}.ipis_per_op_milli"])


def phase_irqs(res, phase, field):
    """{cpu: count} of one IPI row (CAL, RES, TLB) in one phase."""
    out = {}
    for name, value in res.items():
        m = PHASE_IRQ.match(name)
        if m and m.group(1) == phase and m.group(3) == field:
            out[int(m.group(2))] = int(value)
    return out


def phase_ipis(res, phase):
    """{cpu: CAL + RES} in one phase: the IPIs that arrived there."""
    cal, rescheds = phase_irqs(res, phase, "CAL"), phase_irqs(res, phase, "RES")
    return {cpu: cal[cpu] + rescheds[cpu] for cpu in cal}


def script_cpus(case, param: str = "cpulist") -> list[int]:
    """The CPUs a cpulist parameter of CASE's script line names: what the
    test expects of them is not written again here."""
    return result.cpulist(case.params[param])


def bystander(case) -> int:
    """The one CPU the script has CASE neither run on (cpu=) nor touch its
    caches from (cpulist=): the baseline of an untouched CPU."""
    (cpu,) = set(CPUS) - set(script_cpus(case)) - {case.param("cpu")}
    return cpu


def slabs(case, name):
    listing = case.file(name).split()
    assert listing, f"{case.name}: no {name}"
    return listing


def test_guest_ran_every_slab_case(guest):
    assert guest.rc == 0, guest.log[-3000:]
    assert (guest.out / "complete").is_file()
    guest.case("slab_after")


@pytest.mark.parametrize("name", RUNS)
def test_phase_accounting_adds_up(guest, name):
    """Totals are the sums of the per-CPU rows, the per-op figure is
    ipis * 1000 // count, and the phases together saw no more interrupts
    on any CPU than the whole run (they are disjoint windows within it)."""
    case = guest.case(name)
    res = ok(case)
    phases = res["phases"].split()
    online = set(result.cpulist(res["cpus_online"]))
    # mode=remote runs its phases on several CPUs at once: no per-phase
    # interrupt counts there, only the run's; every other mode has them
    counted = [p for p in phases if f"phase.{p}.CAL" in res]
    assert counted == ([] if res["param.mode"] == "remote" else phases)
    for p in counted:
        per_cpu = {f: phase_irqs(res, p, f) for f in ("CAL", "RES", "TLB")}
        for f, rows in per_cpu.items():
            assert set(rows) == online
            assert int(res[f"phase.{p}.{f}"]) == sum(rows.values())
        ipis = int(res[f"phase.{p}.ipis"])
        assert ipis == int(res[f"phase.{p}.CAL"]) + int(res[f"phase.{p}.RES"])
        n = count(res, p)
        assert milli(res, p) == (ipis * 1000 // n if n else 0)
        assert res[f"phase.{p}.ipis_per_op"] == \
            f"{milli(res, p) // 1000}.{milli(res, p) % 1000:03d}"
    for field in ("CAL", "RES", "TLB"):
        run = result.per_cpu(res, field)
        assert int(res[f"run.{field}"]) == sum(run.values())
        assert set(run) == online
        for cpu in online:
            in_phases = sum(phase_irqs(res, p, field).get(cpu, 0)
                            for p in phases)
            assert in_phases <= run[cpu], (field, cpu, in_phases, run)
    # /proc/interrupts around insmod saw at least what the module counted.
    proc = interrupts.per_cpu(case.irq_delta, "CAL")
    for cpu, cal in result.per_cpu(res, "CAL").items():
        assert proc[cpu] >= cal, (cpu, proc, cal)


@pytest.mark.parametrize("name", MAIN_THREAD_RUNS)
def test_every_op_runs_every_phase(guest, name):
    res = ok(guest.case(name))
    ops = int(res["rounds" if res["param.mode"] == "shrink" else "caches"])
    assert ops > 0
    if res["param.mode"] == "shrink":
        assert res["phases"] == "touch shrink"
        assert count(res, "touch") == count(res, "shrink") == ops
        assert "phase.create.count" not in res
        return
    assert res["phases"] == "create touch shrink destroy"
    assert count(res, "create") == count(res, "destroy") == ops
    touched = res["param.cpulist"] != ""
    assert count(res, "touch") == (ops if touched else 0)
    assert count(res, "shrink") == (ops if res["param.shrink"] == "1" else 0)


def destroy_waits_for_rcu(res: dict) -> bool:
    """7.x's kmem_cache_destroy() starts with kvfree_rcu_barrier_on_cache():
    an rcu_barrier() on every destroy. Its IPIs are RCU's, to every CPU
    whatever the cache: the barrier's callbacks entrained by
    smp_call_function_single() and the remote wakeups (ttwu_queue_wakelist)
    of what the barrier's completion wakes, about one of each per CPU and
    destroy (storm run --trace of slabstorm on 7.3 names rcu_barrier and
    rcu_core as their senders; nothing of slab's own). Told by version:
    mm/slab_common.c is not in the headers, and 7.3 is the 7.x tested."""
    return int(res["kernel"].split(".")[0]) >= 7


def assert_interrupts_no_other_cpu(res: dict, phase: str) -> None:
    """Creating (or destroying) caches on CPU 0 that no other CPU touched
    interrupts no other CPU: fewer than one IPI in two ops in all (one to
    each of the three others per op would be 3000 milli)."""
    if DEBUG_KERNEL:
        # SLUB_DEBUG_ON keeps caches from merging, so every creation is a
        # new cache with its sysfs and debugfs entries and RCU callbacks;
        # CPU 0, busy creating, reports each quiescent state by waking the
        # RCU grace-period kthread on the CPU where it runs (an IPI; the
        # largest group of the IPIs sent while slab_untouched runs there,
        # with its tick's nohz idle-balance kicks next:
        # docs/safety.md, "What the debug kernel changes"). That kthread is on one CPU at
        # a time, one or two CPUs over a storm, so the CPU least
        # interrupted tells the op apart: one IPI to every other CPU per
        # op (kick_all_cpus_sync(), seed 002) would give each at least n.
        ipis = phase_ipis(res, phase)
        n = int(res[f"phase.{phase}.count"])
        assert min(ipis[c] for c in (1, 2, 3)) < n / 2, ipis
    elif phase == "destroy" and destroy_waits_for_rcu(res):
        # the barrier's own: one IPI a CPU and destroy on every CPU, and
        # more on one of them (7.3, 1000 destroys: 1000-1009 on three
        # CPUs, 2035 in one run and 3011 in another on the fourth); one
        # to each CPU per destroy, as seed 002's kick, would put every
        # CPU at 2n or more: the least interrupted CPU tells them apart
        ipis = phase_ipis(res, phase)
        n = int(res[f"phase.{phase}.count"])
        assert min(ipis[c] for c in CPUS) < 1.5 * n, ipis
    else:
        assert milli(res, phase) < 500, res[f"phase.{phase}.ipis_per_op"]


def test_untouched_caches_cost_almost_no_ipis(guest):
    """Seed 002: creating a cache must not interrupt the other CPUs. One
    IPI to each of them per creation would be 3000 milli here."""
    case = guest.case("slab_untouched")
    res = ok(case)
    assert res["param.cpulist"] == ""
    assert res["param.cpu"] == "0"
    assert int(res["caches"]) == case.param("numcache")
    assert count(res, "touch") == 0
    assert not [k for k in res if k.startswith("touch.")]
    assert_interrupts_no_other_cpu(res, "create")
    # nothing to flush: no cpu slab anywhere
    assert_interrupts_no_other_cpu(res, "destroy")


def test_destroy_of_touched_caches_interrupts_the_touching_cpus(guest):
    case = guest.case("slab_touched")
    res = ok(case)
    n = int(res["caches"])
    assert n == case.param("numcache")
    assert res["param.cpulist"] == case.params["cpulist"]
    touching = script_cpus(case)
    for cpu in touching:
        assert int(res[f"touch.{cpu}.objects"]) == n
    for cpu in set(CPUS) - set(touching):
        assert f"touch.{cpu}.objects" not in res
    destroy = phase_ipis(res, "destroy")
    # a flush work item on each CPU that holds a cpu slab: one wakeup each
    for cpu in touching:
        assert destroy[cpu] >= PER_OP * n, destroy
    # The bystander never held a slab of these caches. On 6.12 every
    # destroy also waits in kvfree_rcu_barrier(), which costs every
    # CPU some IPIs (about n/2 each here), so compare what the touching
    # CPUs get on top of that. Under generic KASAN (the debug kernel),
    # destroying a cache whose freed objects sit in KASAN's quarantine is
    # itself an IPI to every CPU (kasan_cache_shutdown ->
    # kasan_quarantine_remove_cache -> on_each_cpu, mm/kasan/quarantine.c):
    # there the bystander is no baseline. On 7.x every destroy's RCU
    # barrier interrupts every CPU (destroy_waits_for_rcu): it is no
    # baseline there either.
    if not DEBUG_KERNEL and not destroy_waits_for_rcu(res):
        idle = bystander(case)
        for cpu in touching:
            assert destroy[cpu] - destroy[idle] >= 0.4 * n, destroy
    # a flush on each touching CPU per destroy, in milli
    per_destroy = len(touching) * PER_OP * 1000
    assert milli(res, "destroy") >= per_destroy
    untouched = ok(guest.case("slab_untouched"))
    # at least the touching CPUs' flushes more than an untouched destroy;
    # on Debian's kernels an untouched one costs next to nothing, on the
    # debug kernel the guest's own IPIs over its longer op (1649 milli
    # against 5725 touched: docs/safety.md)
    assert milli(res, "destroy") - milli(untouched, "destroy") >= \
        per_destroy
    assert DEBUG_KERNEL or destroy_waits_for_rcu(res) or \
        milli(res, "destroy") > 4 * milli(untouched, "destroy")
    # creating does not depend on what happened to the previous cache
    assert_interrupts_no_other_cpu(res, "create")


@pytest.mark.parametrize("name", ["slab_touched", "slab_shrink"])
def test_touch_is_not_charged_the_harness_wakeups(guest, name):
    """Waking a touch helper is an IPI to its CPU, and a helper waking the
    main thread back would be one to CPU 0: the harness's, not the
    touch's. They are taken before the touch's snapshot and the main
    thread polls, so a touch (allocate and free a few objects, no IPI of
    its own) is charged less than one IPI per op over all CPUs. Charged
    to the touch, the wakeups would make it about 3 per op on 6.1 (600
    CAL for 200 touches by two helpers)."""
    case = guest.case(name)
    res = ok(case)
    n = count(res, "touch")
    main = case.param("cpu")
    # the helpers where the script put them, none on the main CPU
    assert n and res["param.cpulist"] == case.params["cpulist"], res
    assert main not in script_cpus(case), res
    touch = phase_ipis(res, "touch")
    # the main CPU is not woken at the end of a touch
    assert touch[main] < 0.5 * n, touch
    # A debug kernel (KFENCE, KASAN, kmemleak) sends IPIs of its own in
    # the window, more than one per touch on a helper CPU in slab_shrink:
    # there only the main CPU's share tells the harness's wakeups apart.
    if not DEBUG_KERNEL:
        assert sum(touch.values()) < n, touch
    # the wakeups still happen, charged to no phase: on the run's totals
    run = {c: int(res[f"irq.{c}.CAL"]) + int(res[f"irq.{c}.RES"])
           for c in CPUS}
    charged = {c: sum(phase_ipis(res, p)[c] for p in
                      res["phases"].split()) for c in CPUS}
    assert all(run[c] >= charged[c] for c in CPUS), (run, charged)


def test_shrink_flag_moves_the_flush_from_destroy_to_shrink(guest):
    case = guest.case("slab_touched_shrink")
    res = ok(case)
    n = int(res["caches"])
    assert n == case.param("numcache")
    for name in ("objsize", "fill"):
        assert res[f"param.{name}"] == case.params[name], name
    touching = script_cpus(case)
    for cpu in touching:
        assert int(res[f"touch.{cpu}.objects"]) == case.param("fill") * n
    shrink, destroy = phase_ipis(res, "shrink"), phase_ipis(res, "destroy")
    if destroy_waits_for_rcu(res):
        # Every destroy's RCU barrier interrupts every CPU, about as much
        # as the flush did: the flush is in shrink, to the touching CPUs
        # alone, and destroy carries at least one IPI an op less than
        # slab_touched's destroy, which still flushes two CPUs.
        for cpu in touching:
            assert shrink[cpu] >= PER_OP * n, shrink
        assert shrink[bystander(case)] < 0.5 * n, shrink
        touched = ok(guest.case("slab_touched"))
        assert milli(res, "destroy") <= \
            milli(touched, "destroy") - PER_OP * 1000, (shrink, destroy)
        return
    for cpu in touching:
        assert shrink[cpu] >= PER_OP * n, shrink
        # the flush is gone from destroy: what is left there is 6.12's
        # kvfree_rcu_barrier() share, which reaches untouched CPUs too
        assert shrink[cpu] - destroy[cpu] >= 0.4 * n, (shrink, destroy)
        if DEBUG_KERNEL:
            # The debug kernel's own wakeup when a cache goes (about one
            # per destroy on one or two CPUs, see slab_untouched) lands
            # on a touching CPU as often as not: 91 and 75 of 100 on CPU
            # 1 in two runs, against 143 and 138 in shrink, which also
            # carries KASAN's quarantine IPI to every CPU. Were the flush
            # still in destroy, destroy would carry the most (slab_touched:
            # 1.9 to 7.4 per destroy on a touching CPU).
            assert destroy[cpu] < shrink[cpu], (shrink, destroy)
        else:
            assert destroy[cpu] < 0.5 * shrink[cpu], (shrink, destroy)


def test_shrink_mode_flushes_every_touching_cpu(guest):
    case = guest.case("slab_shrink")
    res = ok(case)
    n = int(res["rounds"])
    assert n == case.param("numcache")
    assert res["param.cpulist"] == case.params["cpulist"]
    shrink = phase_ipis(res, "shrink")
    touching = script_cpus(case)
    for cpu in touching:
        assert shrink[cpu] >= PER_OP * n, shrink
        assert int(res[f"touch.{cpu}.objects"]) == case.param("fill") * n
    for cpu in set(CPUS) - set(touching):
        assert f"touch.{cpu}.objects" not in res


def test_shrink_mode_defaults_to_every_online_cpu(guest):
    case = guest.case("slab_shrink_offline")
    res = ok(case)
    assert res["cpus_online"] == "0-2"
    assert res["param.cpulist"] == "0-2"
    assert "touch.3.objects" not in res
    for cpu in (0, 1, 2):
        # one object a round: fill's default
        assert int(res[f"touch.{cpu}.objects"]) == case.param("numcache")


def remote_ok(res, per_cpu):
    cpus = result.cpulist(res["param.cpulist"])
    total = 0
    for cpu in cpus:
        allocs = int(res[f"remote.{cpu}.allocs"])
        # every object is freed on another CPU: the next one in cpulist
        frm = int(res[f"remote.{cpu}.from"])
        assert frm in cpus and frm != cpu
        assert int(res[f"remote.{cpu}.frees"]) == \
            int(res[f"remote.{frm}.allocs"])
        assert res[f"remote.{cpu}.errors"] == "0"
        if per_cpu is not None:
            assert allocs == per_cpu
        total += allocs
    assert total > 0
    assert int(res["objects.allocated"]) == int(res["objects.freed"]) == total
    assert res["objects.outstanding"] == "0"
    assert res["objects.drained"] == "0"
    assert count(res, "alloc") == count(res, "free") == int(res["frees"]) == total
    return cpus


def test_remote_frees_cost_no_ipis_and_leave_no_objects(guest):
    case = guest.case("slab_remote")
    res = ok(case)
    numobj = case.param("numobj")
    assert res["phases"] == "alloc free"
    cpus = remote_ok(res, numobj)
    assert cpus == [0, 1]
    assert res["remote.0.from"] == "1" and res["remote.1.from"] == "0"
    # An IPI per cross-CPU free would be 1000 milli.
    assert int(res["run.ipis_per_op_milli"]) < 100, res["run.ipis_per_op"]
    for p in ("alloc", "free"):
        hist = result.histogram(res, f"phase.{p}.latency")
        # every object of every CPU
        assert hist is not None and hist.count == len(cpus) * numobj
        assert sum(c for _, c in hist.buckets) == len(cpus) * numobj


def test_an_object_changed_in_crossing_ends_the_storm_failure(guest):
    """The objects check: every other remote case ends
    with failures 0 (ok()), each object found on the freeing CPU as its
    allocating CPU wrote it, and every one back in the allocator; here
    one object counted as changed, injected at the check, fails the
    storm, names the CPUs, and is a problem in the log for every scan of
    it."""
    case = guest.case("slab_remote_miscount")
    res = assert_injected_failure(case, "slabstorm", [
        "check: injected: one object CPU 0 freed counted as not intact",
        "check failed: CPU 0 found 1 objects from CPU 1 changed"])
    assert res["error"] == "0"
    # the storm itself ran clean: only the check's count was one off
    assert remote_ok(res, case.param("numobj")) == [0, 1]
    assert summary(case).group(5) == "failed"
    no_cache_outlives(case)


def test_remote_ring_frees_the_previous_cpus_objects(guest):
    case = guest.case("slab_remote_ring")
    res = ok(case)
    cpus = script_cpus(case)
    assert remote_ok(res, case.param("numobj")) == cpus
    # each CPU frees the objects of the one before it, the first the last's
    assert {c: res[f"remote.{c}.from"] for c in cpus} == \
        {c: str(cpus[i - 1]) for i, c in enumerate(cpus)}
    assert int(res["run.ipis_per_op_milli"]) < 100


def test_timed_runs_until_timeout(guest):
    case = guest.case("slab_timed")
    res = ok(case)
    assert res["param.numcache"] == "0"
    assert int(res["caches"]) > 0
    # the deadline is in jiffies, the runtime in ktime: under TCG the two
    # drift apart by a fraction of a percent
    assert int(res["runtime_ns"]) >= 0.98 * case.param("timeout") * 10**9
    case = guest.case("slab_remote_timed")
    res = ok(case)
    assert res["param.numobj"] == "0"
    remote_ok(res, None)
    assert int(res["runtime_ns"]) >= 0.98 * case.param("timeout") * 10**9


def test_latency_histograms_are_consistent(guest):
    case = guest.case("slab_touched")
    res = ok(case)
    for p in ("create", "touch", "destroy"):
        hist = result.histogram(res, f"phase.{p}.latency")
        assert hist is not None
        assert hist.count == count(res, p) == case.param("numcache")
        assert_histogram(hist)
    hist = result.histogram(res, "phase.shrink.latency")
    assert hist is not None and hist.count == 0 and not hist.buckets
    assert_histogram(hist)


def test_latency_off_records_no_histogram(guest):
    case = guest.case("slab_nolatency")
    res = ok(case)
    assert res["param.latency"] == case.params["latency"]
    assert not [k for k in res if ".latency." in k]
    n = case.param("numcache")
    assert int(res["caches"]) == count(res, "destroy") == n
    for cpu in script_cpus(case):
        # one object a cache: fill's default
        assert int(res[f"touch.{cpu}.objects"]) == n
        # the IPI accounting does not depend on timing
        assert phase_ipis(res, "destroy")[cpu] >= PER_OP * n


def test_rcu_caches_are_gone_before_insmod_returns(guest):
    """6.1 frees a destroyed SLAB_TYPESAFE_BY_RCU cache later, from a work
    item after rcu_barrier(); the storm waits for that (rcu_release_ns).
    6.12 waits in kmem_cache_destroy() itself."""
    case = guest.case("slab_rcu")
    res = ok(case)
    assert slabs(case, "slabs.loaded") == slabs(case, "slabs.before")
    assert case.file("rmmod_rc").strip() == "0"
    assert res["param.mode"] == case.params["mode"]
    n = case.param("numcache")
    assert int(res["caches"]) == count(res, "destroy") == n
    # a grace period passed between the last destroy and the end of the
    # run: the slabs freed through RCU were waited for, on either kernel
    assert res["rcu_gp_since_last_destroy"] == "1"
    # ... by the storm itself on 6.1 only
    if res["kernel"].startswith("6.1."):
        assert int(res["rcu_release_ns"]) > 0
    else:
        assert int(res["rcu_release_ns"]) == 0
    destroy = phase_ipis(res, "destroy")
    for cpu in script_cpus(case):
        assert destroy[cpu] >= PER_OP * n, destroy


SLAB_CASES = RUNS + ["slab_signal", "slab_signal_remote",
                     "slab_background_rcu", "slab_background_shrink"]

# its refusals (tests/guest/refused.txt), loaded with the slab hook
REFUSED = sorted(r.name for r in load() if r.section.startswith("slabstorm"))


def no_cache_outlives(case):
    before, after = slabs(case, "slabs.before"), slabs(case, "slabs.after")
    assert not [s for s in after if s.startswith("slabstorm")], after
    assert after == before, sorted(set(after) ^ set(before))


@pytest.mark.parametrize("name", sorted(SLAB_CASES))
def test_no_cache_outlives_a_case(guest, name):
    no_cache_outlives(guest.case(name))


@pytest.mark.parametrize("name", REFUSED)
def test_no_cache_outlives_a_refusal(guest_once, name):
    no_cache_outlives(guest_once.case(name))


def test_a_cache_of_the_storm_shows_in_the_slab_list(guest):
    """The leftover check above can see our caches: a storm's own cache is
    in /sys/kernel/slab while it runs, by its name (it is never merged)."""
    case = guest.case("slab_background_shrink")
    assert "slabstorm-shrink" in slabs(case, "slabs.loaded")
    assert "slabstorm-shrink" not in slabs(case, "slabs.after")


def summary(case):
    m = SUMMARY.search(case.dmesg)
    assert m, case.dmesg
    return m


@pytest.mark.parametrize("name", ["slab_signal", "slab_signal_remote"])
def test_signal_to_insmod_ends_the_storm_early_and_cleanly(guest, name):
    case = guest.case(name)
    assert case.rc != 0                     # insmod died of the TERM
    res = case.result
    assert res["status"] == "interrupted"
    assert res["param.timeout"] == case.params["timeout"]
    assert int(case.file("stop_seconds")) <= 15
    assert int(res["runtime_ns"]) < 30 * 10**9
    assert "stopping the storm early" in case.dmesg
    assert "End of test: FAILURE (interrupted)" in case.dmesg
    assert case.file("rmmod_rc").strip() == "0"
    assert_clean(case.dmesg)
    if res["param.mode"] == "remote":
        remote_ok(res, None)
    else:
        # the cache in hand was destroyed before the storm stopped
        n = int(res["caches"])
        assert n > 0
        assert count(res, "create") == count(res, "touch") == \
            count(res, "destroy") == n


@pytest.mark.parametrize("name", ["slab_background_rcu",
                                  "slab_background_shrink"])
def test_rmmod_stops_background_storm_promptly(guest, name):
    case = guest.case(name)
    assert case.rc == 0
    assert case.file("rmmod_rc").strip() == "0"
    assert int(case.file("stop_seconds")) <= 15
    m = summary(case)
    assert m.group(5) == "interrupted"
    assert int(m.group(3)) > 0
    # ended by the rmmod, before its timeout (the slabs hook before the
    # rmmod reads every cache: 25 s on a KASAN guest)
    assert int(m.group(4)) < case.param("timeout") * 10**9
    assert "End of test: FAILURE (interrupted)" in case.dmesg
    assert_clean(case.dmesg)


def test_kernel_still_storms_after_everything(guest):
    case = guest.case("slab_after")
    res = ok(case)
    n = case.param("numcache")
    assert int(res["caches"]) == n
    for cpu in script_cpus(case):
        assert phase_ipis(res, "destroy")[cpu] >= PER_OP * n
