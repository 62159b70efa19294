"""ipistorm in real guests (6.1 and 6.12, 4 vCPUs): counts and invariants.

The cases run in tests/guest/check-ipistorm.sh, all in one boot per kernel;
these tests read what each case left behind. Nothing here looks at times.
"""

from __future__ import annotations

import collections
import statistics

import pytest

from conftest import (DEBUG_KERNEL, HLT_IDLE_MISS, KERNELS, STRAY_CAL,
                      assert_clean, assert_histogram,
                      assert_injected_failure, assert_start_and_end, boot)
from stormsuite.kernel import kernels
from stormsuite.machines import vm
from stormsuite.runfiles import interrupts, result

CPUS = {0, 1, 2, 3}


def ok(case):
    assert case.rc == 0, f"{case.name}: insmod failed: {case.stderr}"
    res = case.result
    assert res["status"] == "done", res["status"]
    # every call ran on the CPU it was sent to, exactly once
    assert res["failures"] == "0"
    assert "End of test: SUCCESS" in case.dmesg
    assert_clean(case.dmesg)
    assert_start_and_end(case, "ipistorm")
    return res


# What a case ran is read from its script (case.params), not written again
# here: the helpers below turn its CPU lists into the CPUs a test expects.

def sender_cpus(case) -> set[int]:
    """The CPUs the script's cpulist= names; without one, the module's
    default: every online CPU."""
    if "cpulist" in case.params:
        return set(result.cpulist(case.params["cpulist"]))
    return CPUS


def target(case, res: dict[str, str]) -> int:
    """The one CPU a case's senders call: its targets= if the script gave
    one, else the CPU its one single=1 sender (cpulist=) calls by
    ipistorm.c's ipistorm_target_of(): offset= after it (default 1), in
    mask='s bits only if given, wrapped at the last online CPU + 1."""
    if "targets" in case.params:
        return case.param("targets")
    cpu = case.param("cpulist")
    offset = int(case.params.get("offset", "1"))
    mask = int(case.params.get("mask", "0"), 0)
    t = (cpu & ~mask) + ((cpu + offset) & mask) if mask else cpu + offset
    return t % (max(result.cpulist(res["cpus_online"])) + 1)


def test_guest_run_is_clean(guest):
    assert guest.rc == 0, guest.log[-3000:]
    assert (guest.out / "complete").is_file()
    assert_clean(guest.dmesg)


def test_coldplug_leaves_out_what_no_storm_needs(guest):
    """storm vm's modprobe.blacklist: udev's coldplug of a Debian guest
    loads none of the modules that cost boot time (kvm, SATA, crypto...),
    and still the ones virtme-ng loads for the root (9p; virtio_pci is
    built into 6.12; a kernel built with configs/guest.config has them
    built in)."""
    loaded = {line.split()[0] for line in
              (guest.out / "modules").read_text().splitlines()}
    root = {"9p": "CONFIG_9P_FS", "9pnet_virtio": "CONFIG_NET_9P_VIRTIO"}
    tree = kernels.resolve(guest.kernel).tree
    config = tree / ".config" if tree else None
    if config and config.is_file():
        text = config.read_text()
        root = {m: opt for m, opt in root.items() if f"{opt}=m" in text}
    assert set(root) <= loaded
    assert not loaded & set(vm.UNNEEDED_MODULES)
    assert "modprobe.blacklist=kvm," in (guest.out / "cmdline").read_text()


def test_sparse_cpulist_with_offset_hits_intended_target(guest):
    case = guest.case("ipi_sparse")
    res = ok(case)
    cpu, to = case.param("cpulist"), target(case, res)
    numipi = case.param("numipi")
    assert result.senders(res).keys() == {cpu}
    assert res[f"sender.{cpu}.target"] == str(to)
    assert int(res[f"sender.{cpu}.calls"]) == numipi
    handled = result.per_cpu(res, "handled")
    assert handled[to] == numipi
    assert all(handled[c] == 0 for c in CPUS - {to}), handled


def test_mask_keeps_the_unmasked_cpu_bits(guest):
    case = guest.case("ipi_mask")
    res = ok(case)
    to = target(case, res)
    assert res[f"sender.{case.param('cpulist')}.target"] == str(to)
    assert result.per_cpu(res, "handled")[to] == case.param("numipi")


def test_single_to_hlt_idle_target_costs_an_ipi_per_call(guest):
    case = guest.case("ipi_idle")
    res = ok(case)
    to = target(case, res)
    calls = int(res[f"sender.{case.param('cpulist')}.calls"])
    assert result.per_cpu(res, "handled")[to] == calls == \
        case.param("numipi")
    # One IPI per call (see conftest.HLT_IDLE_MISS), and what the rest of
    # the guest sent the target meanwhile: the calls and 0 to 4 more in
    # the recorded CI runs.
    cal = result.per_cpu(res, "CAL")
    assert (1 - HLT_IDLE_MISS) * calls <= cal[to] <= calls + STRAY_CAL, cal
    # /proc/interrupts agrees with the module's own irq_stat reading.
    proc = interrupts.per_cpu(case.irq_delta, "CAL")
    assert proc[to] >= cal[to]


@pytest.mark.boots("full", "idle")
@pytest.mark.parametrize("kernel", KERNELS)
def test_idle_poll_target_gets_far_fewer_ipis(kernel):
    """Seed 004: a polling idle CPU is woken without an IPI."""
    # Two vCPUs for the idle=poll boot: every polling vCPU keeps a host
    # core busy under TCG, and the case needs only CPU 0 -> CPU 1.
    guest = boot(kernel)
    guest_poll = boot(kernel, "idle=poll", "idle", cpus=2)
    assert "idle=poll" in (guest_poll.out / "cmdline").read_text()
    assert guest_poll.rc == 0, guest_poll.log[-3000:]
    assert_clean(guest_poll.dmesg)
    halting = guest.case("ipi_idle")
    res = ok(halting)
    hlt = result.per_cpu(res, "CAL")[target(halting, res)]
    polling = guest_poll.case("ipi_idle")
    polled = ok(polling)
    to, calls = target(polling, polled), polling.param("numipi")
    assert result.per_cpu(polled, "handled")[to] == calls
    poll = result.per_cpu(polled, "CAL")[to]
    # the same calls: an IPI each to the HLT-idle target, none to the
    # polling one, which took only the guest's stray ones (0 to 3 recorded)
    assert hlt >= (1 - HLT_IDLE_MISS) * calls, hlt
    # a debug kernel's guest sends IPIs of its own (conftest)
    assert poll < hlt / 2 if DEBUG_KERNEL else poll <= STRAY_CAL, (poll, hlt)


@pytest.mark.parametrize("name", ["ipi_all", "ipi_all_nowait"])
def test_all_reaches_every_other_online_cpu(guest, name):
    case = guest.case(name)
    res = ok(case)
    handled = result.per_cpu(res, "handled")
    senders = set(result.senders(res))
    per_call = {c: int(s["calls"]) for c, s in result.senders(res).items()}
    for cpu in CPUS:
        # every sender except the CPU itself calls it once per call
        expect = sum(n for c, n in per_call.items() if c != cpu)
        assert handled[cpu] == expect, (cpu, handled, per_call)
    assert senders == sender_cpus(case)


def test_targets_reach_exactly_those_cpus(guest):
    case = guest.case("ipi_many")
    res = ok(case)
    targets = set(result.cpulist(case.params["targets"]))
    # every sender calls every target numipi times
    calls = case.param("numipi") * len(sender_cpus(case))
    handled = result.per_cpu(res, "handled")
    assert handled == {c: calls if c in targets else 0 for c in CPUS}
    # one IPI per call to each target idling in HLT, as for single=1
    # (within one of the calls, recorded), none to the other CPUs but the
    # guest's stray ones
    cal = result.per_cpu(res, "CAL")
    for cpu in targets:
        assert cal[cpu] >= (1 - HLT_IDLE_MISS) * calls, cal
    assert all(cal[c] <= STRAY_CAL for c in CPUS - targets), cal


@pytest.mark.parametrize("name", ["ipi_async", "ipi_async_nowait"])
def test_async_calls_all_complete(guest, name):
    case = guest.case(name)
    res = ok(case)
    sends = result.senders(res)
    # the script's cpulist= for ipi_async, every online CPU for
    # ipi_async_nowait; each calls the next one (offset=1, the default)
    assert sorted(sends) == sorted(sender_cpus(case)), sends
    numipi = case.param("numipi")
    handled = result.per_cpu(res, "handled")
    for cpu, s in sends.items():
        assert int(s["target"]) == (cpu + 1) % len(CPUS)
        assert int(s["calls"]) == numipi
        assert handled[int(s["target"])] == numipi


def sampled(n: int, every: int) -> tuple[int, int]:
    """How many of n calls the module times with latency=every: one at a
    random place in each block of `every` calls (ipistorm_next_skip()),
    so floor(n / every), plus one if the unfinished last block got there."""
    return n // every, -(-n // every)


def check_latency(res: dict[str, str]) -> int:
    """The histograms of one result against the sampler's exact bounds;
    returns the number of timed calls."""
    every = int(res["param.latency"])
    if every == 0:
        assert not [k for k in res
                    if k.startswith("latency.") or ".latency." in k]
        return 0
    assert int(res["latency.sampled_every"]) == every
    sends = result.senders(res)
    assert sends
    hists = []
    for cpu, s in sends.items():
        n = int(s["calls"]) + int(s["errors"])
        hist = result.histogram(res, f"sender.{cpu}.latency")
        assert hist is not None, cpu
        lo, hi = sampled(n, every)
        assert lo <= hist.count <= hi, (cpu, n, every, hist.count)
        assert_histogram(hist)
        hists.append(hist)
    merged = result.histogram(res, "latency")
    assert merged is not None
    assert_histogram(merged)
    # the senders' histograms added up (storm_hist_merge)
    total = sum(h.count for h in hists)
    assert merged.count == total
    added = collections.Counter()
    for h in hists:
        added.update(dict(h.buckets))
    assert dict(merged.buckets) == dict(added)
    if total:
        assert merged.min_ns == min(h.min_ns for h in hists if h.count)
        assert merged.max_ns == max(h.max_ns for h in hists)
    return total


def test_every_result_keeps_the_sampling_bounds(guest):
    """Every ipistorm case that left a result (fixed-count, timed,
    interrupted, every kind): the histogram counts are what the sampler
    guarantees, exactly."""
    seen = {}
    for d in sorted(p for p in guest.out.iterdir() if p.is_dir()):
        f = d / "result"
        if not f.is_file() or not f.stat().st_size:
            continue
        res = guest.case(d.name).result
        if res["storm"] == "ipistorm":
            seen[d.name] = check_latency(res)
    must = {"ipi_sparse", "ipi_timed", "ipi_all_nowait", "ipi_many",
            "ipi_async", "ipi_signal", "ipi_rmmod_during", "ipi_sampled",
            "ipi_nolatency"}
    assert must <= seen.keys(), sorted(seen)
    # the timed and interrupted runs made enough calls to be sampled
    assert seen["ipi_timed"] > 0 and seen["ipi_signal"] > 0


def test_latency_histogram_is_consistent(guest):
    case = guest.case("ipi_sparse")
    res = ok(case)
    assert res["param.latency"] == res["latency.sampled_every"] == \
        case.params["latency"]
    hist = result.histogram(res, f"sender.{case.param('cpulist')}.latency")
    assert hist is not None
    # latency=1: every call timed
    assert hist.count == case.param("numipi")
    assert_histogram(hist)
    # every call waits for an IPI's round trip to another vCPU: thousands
    # of instructions, never 0 ns on a clock that cannot stall
    assert hist.min_ns > 0, hist


def test_default_times_one_call_in_64(guest):
    case = guest.case("ipi_sampled")
    res = ok(case)
    # no latency= in the script: the module's default
    assert res["param.latency"] == res["latency.sampled_every"] == "64"
    sends = result.senders(res)
    assert sends.keys() == sender_cpus(case)
    numipi = case.param("numipi")
    blocks, started = sampled(numipi, 64)
    assert blocks == started, f"numipi={numipi}: not whole blocks of 64"
    for cpu, s in sends.items():
        assert int(s["calls"]) == numipi
        # whole blocks of 64: exactly one timed call in each
        assert int(s["latency.count"]) == blocks, (cpu, s)
    assert int(res["latency.count"]) == blocks * len(sends)
    assert case.dmesg.count(f"timed={blocks} ") == len(sends), case.dmesg


def test_sampling_an_unfinished_block(guest):
    case = guest.case("ipi_sampled_partial")
    res = ok(case)
    assert res["latency.sampled_every"] == case.params["latency"]
    sends = result.senders(res)
    assert sends.keys() == sender_cpus(case)
    numipi = case.param("numipi")
    lo, hi = sampled(numipi, case.param("latency"))
    for cpu, s in sends.items():
        assert int(s["calls"]) == numipi
        assert lo <= int(s["latency.count"]) <= hi, (cpu, s)


def test_largest_latency_is_accepted(guest):
    case = guest.case("ipi_latency_max")
    res = ok(case)
    assert res["param.latency"] == case.params["latency"]
    numipi = case.param("numipi")
    assert int(res[f"sender.{case.param('cpulist')}.calls"]) == numipi
    # fewer calls than the block: at most one timed
    _, most = sampled(numipi, case.param("latency"))
    assert int(res["latency.count"]) <= most


def test_latency_off_records_no_histogram(guest):
    case = guest.case("ipi_nolatency")
    res = ok(case)
    assert res["param.latency"] == case.params["latency"]
    assert "latency.hist" not in res
    assert "latency.sampled_every" not in res
    assert not [k for k in res if ".latency." in k]
    assert int(res[f"sender.{case.param('cpulist')}.calls"]) == \
        case.param("numipi")


def test_the_window_holds_the_last_call_of_a_wait_0_storm(guest):
    """wait=0: the last sender ends as soon as its last call is queued;
    the closing counts wait until every call has been handled. A single
    call to a HLT-idle target is one IPI, in the window."""
    cal = []
    for i in range(1, 6):
        case = guest.case(f"ipi_nowait_last_{i}")
        res = case.result
        assert res["status"] == "done" and res["failures"] == "0"
        to, calls = target(case, res), case.param("numipi")
        assert result.per_cpu(res, "handled")[to] == calls
        assert int(res["window_ns"]) >= int(res["runtime_ns"])
        cal.append(result.per_cpu(res, "CAL")[to])
    # a call may find the target polling and need no IPI: HLT_IDLE_MISS
    assert sum(c == 0 for c in cal) <= 5 * HLT_IDLE_MISS, cal
    assert max(cal) <= calls + STRAY_CAL, cal


def test_a_miscounted_call_ends_the_storm_failure(guest):
    """The calls check: every other case ends with
    failures 0 (ok()), for every kind of call; here a count one off,
    injected at the check, fails the storm, names the CPU, and is a
    problem in the log for every scan of it."""
    case = guest.case("ipi_miscount")
    # the count injected is the first online CPU's, whatever the storm
    res = assert_injected_failure(case, "ipistorm", [
        "check: injected: CPU 0's count one too many",
        "check failed: CPU 0 ran 1 calls, 0 were sent to it"])
    numipi = case.params["numipi"]
    assert res[f"sender.{case.param('cpulist')}.calls"] == numipi
    assert res[f"handled.{target(case, res)}"] == numipi


def test_the_watchdog_stops_a_storm_whose_target_takes_no_tick(guest):
    """The storms' watchdog: CPU 1 held in one 6 s hardirq (irqoff.ko) during
    a 30 s storm that calls it: the storm ends "starved", CPU 1 named,
    after three checks without a tick there, long before its timeout and
    before the kernel's detectors report (a clean log). No other storm
    of the boot was stopped by it."""
    case = guest.case("ipi_starved")
    assert case.file("irqoff_rc").strip() == "0", case.file("irqoff.err")
    assert case.rc == 0, case.stderr
    res = case.result
    assert res["status"] == "starved", res["status"]
    assert res["starved.cpu"] == "1"
    assert int(res["runtime_ns"]) < 20 * 10**9
    assert ("ipistorm: watchdog: CPU 1 took no timer interrupt in 3 checks"
            in case.dmesg), case.dmesg
    assert_start_and_end(case, "ipistorm", "End of test: FAILURE (starved)")
    assert_clean(case.dmesg)
    assert guest.dmesg.count("took no timer interrupt") == 1


def test_handler_time_and_delay_runs(guest):
    case = guest.case("ipi_handler")
    res = ok(case)
    numipi = case.param("numipi")
    assert result.per_cpu(res, "handled")[target(case, res)] == numipi
    # Each call waits for its handler_ns handler, which spins on the clock
    # the sender times the call with: no sample can read less, whatever
    # the host does to the guest's ticks (local_clock() would read 0 ns
    # for a call after a late tick). latency=1: every call timed.
    hist = result.histogram(res, f"sender.{case.param('cpulist')}.latency")
    assert hist is not None and hist.count == numipi
    assert hist.min_ns >= case.param("handler_ns"), hist
    case = guest.case("ipi_delay")
    res = ok(case)
    assert int(res[f"sender.{case.param('cpulist')}.calls"]) == \
        case.param("numipi")


def test_one_waiting_sender_per_target_gets_its_whole_handler(guest):
    """wait=1, one sender per target: the sender calls again only once
    the handler has returned, so no budget and nothing trimmed; and it
    sleeps as long as its calls took once they took 1 ms (paced), so the
    target works at most half the storm and one budget."""
    case = guest.case("ipi_handler")
    res = ok(case)
    to, cpu = target(case, res), case.param("cpulist")
    assert res["handler.busy_budget"] == "0"
    assert res["handler.paced"] == "1"
    assert res[f"handler.{to}.trimmed"] == "0"
    busy = int(res[f"handler.{to}.busy_ns"])
    # every call busy-waited its whole handler_ns
    assert busy == case.param("numipi") * case.param("handler_ns")
    # each sleep is asked in whole us (at most 1 us short) for what the
    # calls took, each at least its handler; the last ms is not slept off
    sleeps = busy // 10**6
    assert int(res[f"sender.{cpu}.paced_ns"]) >= \
        busy - 10**6 - sleeps * 1000, res
    assert busy <= int(res[f"sender.{cpu}.runtime_ns"]) / 2 + 10**6, res


def test_long_loops_are_paced_short_ones_add_their_instructions_alone(
        guest):
    """handler_loops=100000 with one waiting sender: 30-50 us a call on
    hardware, back to back; paced as handler_ns is. 1000 loops cost no
    more than the call: no pacing, no clock read added."""
    case = guest.case("ipi_loops_paced")
    res = ok(case)
    cpu, numipi = case.param("cpulist"), case.param("numipi")
    assert res["handler.busy_budget"] == "0" and res["handler.paced"] == "1"
    assert result.per_cpu(res, "handled")[target(case, res)] == numipi
    calls = result.histogram(res, f"sender.{cpu}.latency")
    # latency=1: every call timed
    assert calls.count == numipi
    # every call's time is owed; the sender sleeps off all but the last
    # ms, each sleep at most 1 us short
    took = calls.count * calls.mean_ns
    assert int(res[f"sender.{cpu}.paced_ns"]) >= \
        took - 10**6 - calls.count * 1000, res
    assert "(paced)" in case.dmesg
    case = guest.case("ipi_loops_free")
    res = ok(case)
    assert res["handler.busy_budget"] == "0" and res["handler.paced"] == "0"
    assert f"sender.{case.param('cpulist')}.paced_ns" not in res
    assert result.per_cpu(res, "handled")[target(case, res)] == \
        case.param("numipi")


def test_senders_may_pile_up_on_a_cpu_to_the_limit(guest):
    """Three senders on a CPU that sends nothing: refused at pileup=2
    (tests/guest/refused.txt), run at pileup=3."""
    case = guest.case("ipi_pileup_at_limit")
    res = ok(case)
    assert res["param.pileup"] == case.params["pileup"]
    # every sender's numipi calls, on the one target
    assert result.per_cpu(res, "handled")[target(case, res)] == \
        case.param("numipi") * len(sender_cpus(case))


@pytest.mark.parametrize("name", ["ipi_handler_flood", "ipi_handler_two"])
def test_handler_ns_never_holds_a_target_in_hardirq(guest, name):
    """Calls that reach the target back to back (wait=0; two senders on
    one target) with 1 ms handlers would keep it in hardirq for the whole
    storm. The target busy-waits at most 1 ms in every 2 ms window: over
    the storm at most half its time, and a window more for the calls
    still in flight at the end; the calls past the budget are counted."""
    case = guest.case(name)
    res = ok(case)
    to = target(case, res)
    # every sender's numipi calls, on the one target
    calls = case.param("numipi") * len(sender_cpus(case))
    assert res["handler.busy_budget"] == "1"
    assert result.per_cpu(res, "handled")[to] == calls
    busy = int(res[f"handler.{to}.busy_ns"])
    trimmed = int(res[f"handler.{to}.trimmed"])
    runtime = int(res["runtime_ns"])
    budget = int(res["handler.budget_ns"])
    window = int(res["handler.window_ns"])
    assert busy <= budget * (runtime // window + 5), (busy, runtime)
    # every call not trimmed busy-waited its whole handler_ns
    assert busy >= (calls - trimmed) * case.param("handler_ns"), \
        (busy, trimmed)
    if name == "ipi_handler_flood":
        # wait=0: the sender queues while the handler runs
        assert trimmed > 0, res


def test_handler_loops_share_the_budget(guest):
    """handler_loops where calls reach the target back to back (wait=0:
    the sender queues its next call as the target starts on the last, and
    the target runs its queue in one go): the loops are in handler_ns's
    budget, timed into busy_ns, each run whole or not at all, and the
    calls past the budget are counted (a 6.1 guest trimmed 294 of 300)."""
    case = guest.case("ipi_loops_flood")
    res = ok(case)
    to, calls = target(case, res), case.param("numipi")
    assert res["handler.busy_budget"] == "1"
    assert result.per_cpu(res, "handled")[to] == calls
    busy = int(res[f"handler.{to}.busy_ns"])
    trimmed = int(res[f"handler.{to}.trimmed"])
    assert 0 < trimmed < calls, res
    # each loop that ran was timed: an iteration takes at least 0.1 ns
    # (100000 take tens of microseconds on hardware, more under TCG)
    loop_ns = case.param("handler_loops") // 10
    assert busy >= (calls - trimmed) * loop_ns, res


def test_timed_mode_runs_until_timeout(guest):
    case = guest.case("ipi_timed")
    res = ok(case)
    assert int(res[f"sender.{case.param('cpulist')}.calls"]) > 0
    # The deadline is in jiffies, runtime_ns is ktime: under a loaded TCG
    # host the two drift apart by tenths of a second; a second's slack.
    assert int(res["runtime_ns"]) >= (case.param("timeout") - 1) * 10**9


WINDOW_RUNS = 20


def test_the_window_ends_at_the_last_workers_end(guest):
    """Item 9 (docs/safety.md): the last worker takes the end snapshot as
    it ends, so the interrupt counts cover the storm and the snapshots,
    not a tail of idle background. window_ns, from just before the start
    snapshot to just after the end one, exceeds runtime_ns by the two
    snapshots: a few hundred microseconds under TCG (more when the host
    stalls the guest). A controller that took the snapshot once its next
    tick woke it would add a uniform 0 to 1 tick: the median of 20 such
    tails would be half a tick, not under a quarter. The HLT-idle target
    took a CAL per call and the stray few, as in ipi_idle."""
    stamps = [int(x) for x in guest.case("ipi_window").file("jiffies").split()]
    assert len(stamps) == 4, stamps
    ns0, j0, ns1, j1 = stamps
    # under TCG the ticks fall behind the clock by a few percent
    measured = (j1 - j0) * 10**9 / (ns1 - ns0)
    hz = min((100, 250, 300, 1000), key=lambda h: abs(h - measured))
    assert abs(measured - hz) < 0.1 * hz, measured
    tails = []
    for i in range(1, WINDOW_RUNS + 1):
        case = guest.case(f"ipi_window_{i}")
        res = ok(case)
        to, calls = target(case, res), case.param("numipi")
        assert result.per_cpu(res, "handled")[to] == calls
        assert res[f"sender.{case.param('cpulist')}.calls"] == str(calls)
        tails.append(int(res["window_ns"]) - int(res["runtime_ns"]))
        cal = result.per_cpu(res, "CAL")[to]
        # not on a debug kernel, whose guest's own IPIs reach the target
        # (conftest)
        assert DEBUG_KERNEL or \
            (1 - HLT_IDLE_MISS) * calls <= cal <= calls + STRAY_CAL, (i, cal)
    assert min(tails) >= 0, tails
    assert statistics.median(tails) < 10**9 / hz / 4, (tails, hz)
    print(f"{guest.kernel}: window_ns - runtime_ns of {WINDOW_RUNS} storms "
          f"(us): {sorted(t // 1000 for t in tails)}")


def test_all_skips_an_offline_cpu(guest):
    case = guest.case("ipi_all_with_offline")
    res = ok(case)
    # the script takes CPU 3 offline for this case
    assert res["cpus_online"] == "0-2"
    # every online CPU but the one sender, once a call
    cpu, numipi = case.param("cpulist"), case.param("numipi")
    assert result.per_cpu(res, "handled") == {
        c: 0 if c == cpu else numipi
        for c in result.cpulist(res["cpus_online"])}


def test_signal_to_insmod_ends_storm_early(guest):
    case = guest.case("ipi_signal")
    res = case.result
    assert res["status"] == "interrupted"
    assert int(case.file("stop_seconds")) <= 5
    assert int(res["runtime_ns"]) < 30 * 10**9
    assert "stopping the storm early" in case.dmesg
    assert "End of test: FAILURE (interrupted)" in case.dmesg
    assert case.file("rmmod_rc").strip() == "0"
    assert_clean(case.dmesg)


def test_rmmod_during_storm_is_refused_then_works(guest):
    case = guest.case("ipi_rmmod_during")
    assert case.file("early_rmmod_rc").strip() != "0"
    assert case.rc == 0
    assert case.result["status"] == "done"
    assert case.file("rmmod_rc").strip() == "0"
    assert_clean(case.dmesg)


def test_rmmod_stops_background_storm_promptly(guest):
    case = guest.case("ipi_background")
    assert case.rc == 0
    assert case.file("rmmod_rc").strip() == "0"
    # a quarter of the storm's timeout, as for the other modules: an
    # unload took 5 s on the debug kernel
    assert int(case.file("stop_seconds")) <= case.param("timeout") // 4
    assert "End of test: FAILURE (interrupted)" in case.dmesg
    assert_clean(case.dmesg)


def test_kernel_still_storms_after_everything(guest):
    case = guest.case("ipi_after")
    res = ok(case)
    assert result.per_cpu(res, "handled")[target(case, res)] == \
        case.param("numipi")
