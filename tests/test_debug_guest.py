"""The storms on a debug kernel (configs/debug.config: KASAN, lockdep,
kmemleak, fault injection): collected only when tests/e2e/debug-kernel
runs the guest tests on such a kernel (STORM_TEST_DEBUG=1,
STORM_TEST_KERNELS=<its build directory>); the other guest test files
run on it as they run on Debian's kernels.
"""

from __future__ import annotations

import json

from conftest import assert_clean
import kmemleak
from stormsuite import storms

MODULES = storms.NAMES


def test_whole_boot_is_clean(guest):
    """Every check script ran, and the debug kernel found nothing in the
    whole boot: no KASAN report, lockdep splat, sleeping in atomic
    context, debug-objects or list corruption report."""
    assert (guest.out / "complete").is_file(), guest.log[-3000:]
    # their reports; "kfence: initialized" is in every boot
    assert "BUG: KASAN" not in guest.dmesg
    assert "BUG: KFENCE" not in guest.dmesg
    assert "possible circular locking" not in guest.dmesg
    assert_clean(guest.dmesg)


def test_no_leaks_after_every_storm(guest):
    """kmemleak, scanned after every check script ran, holds nothing that
    leaked while they did (run-all.sh clears what the boot left), but for
    6.1's own leak of a slab cache's name when its sysfs entry fails,
    which fault injection into kmem_cache_create() brings out."""
    leaks = guest.out / "kmemleak"
    assert leaks.is_file(), "this kernel has no kmemleak"
    report = leaks.read_text()
    excused = len(kmemleak.parse(report)) - len(kmemleak.storms_leaks(report))
    print(f"kmemleak: {len(kmemleak.parse(report))} objects, {excused} of "
          f"them the kernel's sysfs_slab_add() name leak")
    assert kmemleak.storms_leaks(report) == [], report[:4000]


def test_every_injected_allocation_failure_is_a_clean_refusal(guest):
    """failslab and fail_page_alloc fail each allocation of a storm's load
    in turn (tests/guest/faults.py): every load is refused (the module
    not loaded) or runs to a status the result states; nothing is left
    (module, thread, cache); failures were injected in every case, some
    of them inside the storm's own init; the log is clean but for the
    reports the kernel makes of the failures asked for."""
    assert not (guest.out / "faults_absent").exists()
    assert (guest.out / "faults.rc").read_text().strip() == "0", \
        (guest.out / "faults.log").read_text()[-3000:]
    cases = json.loads((guest.out / "faults.json").read_text())
    assert {(c["injector"], c["module"]) for c in cases} == {
        (i, m) for i in ("failslab", "fail_page_alloc") for m in MODULES}
    for c in cases:
        what = f"{c['injector']} {c['module']} {c['params']}"
        assert c["loader_calls"] > 0, (what, c)
        # exact for failslab; fail_page_alloc's count moves (faults.py)
        if c["injector"] == "failslab":
            assert c["calls"] > c["loader_calls"], (what, c)
        injected = [ld for ld in c["loads"] if ld["injected"]]
        assert injected, (what, c["loads"])
        for ld in c["loads"]:
            assert not ld["left_loaded"], (what, ld)
            assert ld["left_threads"] == [], (what, ld)
            assert ld["left_caches"] == [], (what, ld)
            assert "unload_error" not in ld, (what, ld)
            if "refused" in ld:
                continue
            assert ld["status"] in ("done", "failed"), (what, ld)
        print(f"{what}: {c['calls']} allocations ({c['loader_calls']} the "
              f"loader's), {len(c['loads'])} loads, {len(injected)} "
              f"injected, {sum('refused' in ld for ld in injected)} "
              f"refused")
    # past the loader: the storms' own allocations were failed too
    assert any(ld["injected"] and ld["nth"] > c["loader_calls"]
               for c in cases for ld in c["loads"])
    assert_clean((guest.out / "faults.dmesg").read_text())


def test_failures_while_storms_run_end_them_cleanly(guest):
    """failslab and fail_page_alloc, filtered to the storm's own threads
    (make-it-fail) once a background storm runs, fail their 1st, 7th or
    50th allocation from then on (tests/guest/faults.py RUN_CASES): each
    storm still reports a status within its time, unloads, and leaves no
    module, thread or cache; and failures reached the storms: at least
    one storm of each module says `failed`. (A storm may also end `done`
    with a failure injected: a MAP_POPULATE that could not populate, or
    an allocation the kernel retries, is not an error it sees.)"""
    runs = json.loads((guest.out / "faults-run.json").read_text())
    assert {(r["injector"], r["module"]) for r in runs} == {
        (i, m) for i in ("failslab", "fail_page_alloc")
        for m in ("tlbstorm", "slabstorm")}
    for r in runs:
        what = f"{r['injector']} {r['module']} {r['params']} every " \
               f"{r['interval']}"
        assert "refused" not in r, (what, r)
        assert r["marked"] > 0, (what, r)
        assert r["status"] in ("done", "failed"), (what, r)
        assert not r["left_loaded"], (what, r)
        assert r["left_threads"] == [], (what, r)
        assert r["left_caches"] == [], (what, r)
        assert "unload_error" not in r, (what, r)
        print(f"{what}: {r['marked']} threads, {r['injected']} injected, "
              f"{r['status']} in {r['seconds']} s, "
              f"{len(r.get('missed', []))} runs that the marking missed")
    for module in ("tlbstorm", "slabstorm"):
        assert any(r["module"] == module and r["injected"] and
                   r["status"] == "failed" for r in runs), module
    assert_clean((guest.out / "faults.dmesg").read_text())
