"""Storms that never hurt the kernel they measure (6.1 and 6.12 guests).

The cases run in tests/guest/check-safety.sh, in the same boot as the
other check scripts; these tests read what they left behind.
"""

from __future__ import annotations

import json

import pytest

import guestcases
from conftest import KERNELS, assert_clean, boot
from stormsuite import storms
from stormsuite.runfiles import dmesg, result
# the one CPU a single=1 case calls, by ipistorm's rule
from test_ipistorm_guest import target

MODULES = storms.NAMES


@pytest.mark.parametrize("module", MODULES)
def test_rmmod_right_after_background_insmod(guest, module):
    """rmmod the instant insmod background=1 returns, many times: no
    storm thread survives its module, nothing in dmesg, and the window
    (rmmod before the controller ran) was hit for real, at least twice
    (rmmod-race.py goes on past 40 rounds until it was, up to 1000)."""
    assert (guest.out / "safety_complete").is_file(), guest.log[-3000:]
    case = guest.case(f"race_{module}")
    assert case.rc == 0, case.stderr
    out = case.file("out").split()
    assert out[0::2] == ["rounds", "failed", "early"], out
    rounds, failed, early_seen = map(int, out[1::2])
    assert rounds >= 40 and failed == 0, (out, case.stderr)
    assert case.file("loaded_after").strip() == "0"
    assert case.file("threads_after").strip() == "", case.file(
        "threads_after")
    assert_clean(case.dmesg)
    early = case.dmesg.count("unloaded before the storm could report")
    # The test must reach the race it is about; printed for the record.
    print(f"{guest.kernel} {module}: {rounds} rounds, {early} unloaded "
          f"before the controller reported")
    assert early == early_seen and early >= 2, (early, early_seen, rounds)
    assert case.dmesg.count("End of test") + early == rounds


# NAME -> MODULE CPU off|on PARAM=VALUE...
HOTPLUG = guestcases.defined("hotplug_case", "check-safety.sh")


@pytest.mark.parametrize("name", sorted(HOTPLUG))
def test_hotplug_mid_storm_stops_it_and_says_so(guest, name):
    case = guest.case(name)
    assert case.rc == 0, case.stderr
    res = case.result
    assert res["status"] == "hotplug", res["status"]
    events = int(res["hotplug.offline"]) + int(res["hotplug.online"])
    # The scheduler pushes a bound thread off a CPU going down before any
    # hotplug callback runs: a lone sender may see it first and stop.
    moved = [k for k, v in res.items() if k.endswith(".moved") and v == "1"]
    assert events >= 1 or moved, res
    module = HOTPLUG[name][0]
    assert f"{module}: End of test: FAILURE (hotplug)" in case.dmesg
    # stopped at the event (1 s in), not at timeout=120: half of it
    # leaves room for CPUs going down slowly (seconds each on a KASAN
    # guest sharing a host core with another)
    assert int(res["runtime_ns"]) < 60 * 10**9, res["runtime_ns"]
    assert int(case.file("seconds")) < 60, case.file("seconds")
    assert case.file("threads_after").strip() == ""
    assert_clean(case.dmesg)


def test_hotplug_keeps_cpus_that_went_away_in_the_result(guest):
    res = guest.case("hp_all").result
    # CPU 3 went offline and came back: still reported
    assert "irq.3.CAL" in res and "handled.3" in res
    senders = result.senders(res)
    assert 3 in senders


@pytest.mark.parametrize("module", MODULES)
def test_timeout_bounds_a_fixed_count_storm(guest, module):
    case = guest.case(f"bound_{module}")
    assert case.rc == 0, case.stderr
    res = case.result
    assert res["status"] == "timeout"
    assert "End of test: FAILURE (timeout)" in case.dmesg
    # the script's timeout=: the storm's own clock stops within a call
    # of it, and the kernel's clock from its Start of test to its End of
    # test (its setup and teardown too) within seconds of that; the run
    # of its count would take days. (The wall clock of the case also
    # counts udev, insmod's load and rmmod: a minute on a KASAN guest.)
    timeout = case.param("timeout")
    assert int(res["runtime_ns"]) < 2 * timeout * 10**9, res["runtime_ns"]
    start, end = dmesg.storm_lines(case.dmesg, module)
    assert end.seconds - start.seconds < 10, (start, end)
    assert_clean(case.dmesg)


@pytest.mark.parametrize("module", MODULES)
def test_bpftrace_detaches_while_a_long_storm_runs(guest, module):
    """bpftrace attaches a kfunc probe, then a background storm of up to
    600 s starts on CPUs 0-1 (ipistorm single, tlbstorm user, slabstorm
    remote), and 2 s in bpftrace gets SIGINT: its detach, which waits
    for an RCU-Tasks grace period, returns while the storm still runs
    (no result file yet), and the unload interrupts the storm."""
    case = guest.case(f"rcu_tasks_{module}")
    if (case.dir / "skipped").is_file():
        pytest.skip(case.file("skipped"))
    assert case.rc == 0, case.file("bpftrace.err")
    assert not (case.dir / "over").is_file(), case.file("seconds")
    assert case.file("threads_after").strip() == ""
    assert f"{module}: End of test: FAILURE (interrupted)" in case.dmesg
    assert_clean(case.dmesg)
    print(f"{guest.kernel} {module}: bpftrace's detach during the storm "
          f"{case.file('seconds').strip()} s")


def test_finished_background_storm_is_done(guest):
    case = guest.case("bg_finished")
    assert case.rc == 0
    assert case.result["status"] == "done"
    assert "End of test: SUCCESS" in case.dmesg
    assert "interrupted" not in case.dmesg


def test_single_wraps_at_the_last_online_cpu(guest):
    """More possible than online CPUs (CPU 3 offline): the default
    cpulist is accepted, CPU 2 calls CPU 0."""
    for name in ("possible_single", "possible_mask"):
        case = guest.case(name)
        assert case.rc == 0, case.dmesg
        res = case.result
        assert res["status"] == "done"
        assert res["cpus_online"] == "0-2"
        assert res["sender.2.target"] == "0"
        assert_clean(case.dmesg)
    case = guest.case("possible_single")
    numipi = case.param("numipi")
    assert result.per_cpu(case.result, "handled") == \
        {0: numipi, 1: numipi, 2: numipi}


POSSIBLE_DONE = ("possible_boot_single", "possible_boot_all",
                 "possible_boot_async", "possible_boot_tlb",
                 "possible_boot_tlb_kernel", "possible_boot_slab",
                 "possible_boot_slab_create")
# NAME -> the parameter in which the script names the CPU that never
# came up: refused as "PARAM=N: CPU N is not online"
POSSIBLE_REFUSED = {
    "possible_boot_offline_target": "targets",
    "possible_boot_offline_sender": "cpulist",
}


@pytest.mark.boots("possible")
@pytest.mark.parametrize("kernel", KERNELS)
def test_booted_with_more_possible_than_online_cpus(kernel):
    """`maxcpus=2` on 3 vCPUs (tests/guest/check-possible.sh): every storm
    kind runs on the two online CPUs with its default CPU lists, the CPU
    that never came up is refused by name, and nothing is counted for
    it."""
    run = boot(kernel, "maxcpus=2", "possible", cpus=3)
    assert (run.out / "cpus_possible").read_text().strip() == "0-2", run.log
    assert (run.out / "cpus_online").read_text().strip() == "0-1"
    for name in POSSIBLE_DONE:
        case = run.case(name)
        assert case.rc == 0, (name, case.dmesg)
        res = case.result
        assert res["status"] == "done", (name, res["status"])
        assert res["cpus_online"] == "0-1"
        assert_clean(case.dmesg)
        assert not any(key.startswith(("irq.2.", "handled.2", "sender.2.",
                                       "worker.2.", "remote.2."))
                       and value not in ("0", "0.0")
                       for key, value in res.items()), (name, res)
    single = run.case("possible_boot_single").result
    assert single["sender.1.target"] == "0"
    assert single["sender.0.target"] == "1"
    for name in ("possible_boot_single", "possible_boot_all",
                 "possible_boot_async"):
        case = run.case(name)
        handled = result.per_cpu(case.result, "handled")
        # each online CPU calls the other one numipi times
        numipi = case.param("numipi")
        assert {cpu: n for cpu, n in handled.items() if n} == \
            {0: numipi, 1: numipi}, (name, handled)
    case = run.case("possible_boot_tlb")
    tlb = case.result
    assert tlb["param.targets"] == "1", tlb
    assert tlb["flushes"] == case.params["numflush"], tlb
    case = run.case("possible_boot_slab")
    slab = case.result
    assert (slab["remote.0.from"], slab["remote.1.from"]) == ("1", "0")
    # each CPU frees the other's numobj objects
    assert slab["remote.0.frees"] == slab["remote.1.frees"] == \
        case.params["numobj"]
    for name, param in POSSIBLE_REFUSED.items():
        case = run.case(name)
        assert case.rc != 0 and not case.has_result, name
        cpu = case.params[param]
        assert f"{param}={cpu}: CPU {cpu} is not online" in case.dmesg, \
            (name, case.dmesg)
        assert_clean(case.dmesg)


@pytest.mark.boots("bigcpus", kernel="6.1")
def test_count_sent_is_refused_past_the_per_cpu_limit():
    """2048 possible CPUs (tests/guest/check-bigcpus.sh): a CPU's row of
    send counters would be 2 x 2048 + 1 counters, past the per-CPU
    allocator's 32 KiB, which would WARN. count_sent=1 is refused with
    the figures; a storm without it runs."""
    run = boot("6.1", "possible_cpus=2048", "bigcpus", cpus=2)
    assert (run.out / "cpus_possible").read_text().strip() == "0-2047", \
        run.log[-3000:]
    for name in ("bigcpus_count_sent", "bigcpus_count_sent_tlb"):
        case = run.case(name)
        assert case.rc != 0 and not case.has_result, name
        assert (f"count_sent={case.params['count_sent']}: 2048 possible "
                "CPUs need 32776 bytes of counters per CPU") in case.dmesg, \
            case.dmesg
        assert "at most 2047 possible CPUs" in case.dmesg
        assert_clean(case.dmesg)
    case = run.case("bigcpus_storm")
    assert case.rc == 0, case.stderr
    res = case.result
    assert res["status"] == "done" and res["cpus_online"] == "0-1", res
    assert result.per_cpu(res, "handled").get(target(case, res)) == \
        case.param("numipi"), res
    assert_clean(case.dmesg)


def test_fuzzed_loads_are_refused_with_reason_or_end_cleanly(guest_once):
    guest = guest_once
    figures = json.loads((guest.out / "fuzz.json").read_text())
    log = (guest.out / "fuzz.log").read_text()
    assert figures["problems"] == [], log[-3000:]
    assert figures["splats"] == 0
    assert (guest.out / "fuzz.rc").read_text().strip() == "0"
    assert figures["loads"] >= 30
    # both sides of the line were fuzzed
    outcomes = figures["outcomes"]
    assert outcomes.get("refused", 0) > 0 and outcomes.get("success", 0) > 0
    print(f"{guest.kernel}: {log.splitlines()[-1]}")


def test_no_storm_thread_left(guest):
    assert (guest.out / "safety_threads_at_end").read_text().strip() == ""
