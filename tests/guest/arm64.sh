#!/bin/sh
# arm64.sh - the storms in an arm64 guest (storm vm --arch arm64), for
# tests/test_arm64_guest.py. Expects 4 online CPUs and the instruction
# counter (storm vm's default: nohz=off, the plugin). One boot: the
# storms' cases through lib.sh, then storm run itself into $OUT/results.
. tests/guest/lib.sh

# An idle target takes one function-call IPI (IPI1, CAL) per call.
storm_case a64_single ipistorm numipi=2000 single=1 wait=1 cpulist=0 offset=1
storm_case a64_many ipistorm numipi=300 cpulist=0 targets=2-3
storm_case a64_all ipistorm numipi=300 cpulist=0
storm_case a64_async ipistorm numipi=500 single=1 async=1 cpulist=1 offset=1
# the IPIs counted where arm64 sends them, against where they land
storm_case a64_sent ipistorm numipi=1000 single=1 wait=1 cpulist=0 offset=1 \
	count_sent=1
storm_case a64_loops ipistorm numipi=200 single=1 wait=1 cpulist=0 offset=1 \
	handler_loops=1000
# arm64 flushes other CPUs' TLBs by broadcast TLBI: no IPI, said so
storm_case a64_tlb_user tlbstorm numflush=200 targets=1-2 timeout=300
storm_case a64_tlb_kernel tlbstorm mode=kernel numflush=200
# no TLB interrupt to miscount: the check's injection is refused
storm_quick_case a64_tlb_inject tlbstorm numflush=10 inject_miscount=1
storm_case a64_slab_touched slabstorm mode=create numcache=100 cpu=0 \
	cpulist=1-2 timeout=300
storm_case a64_slab_remote slabstorm mode=remote numobj=3000 cpulist=1-3
# an expedited grace period interrupts each busy CPU once
storm_case a64_rcu rcustorm numgp=100 cpulist=0 busy=1-2
storm_quick_case a64_bad_cpu ipistorm numipi=10 single=1 cpulist=64

# the instruction counter's known loop: subs, b.ne
insn_loops "$(case_dir insn)"

# the product's own command: run files with instruction counts
mkdir -p "$OUT/results"
STORM_RESULTS=$OUT/results scripts/storm run --runs 3 ipistorm \
	numipi=2000 single=1 wait=1 cpulist=0 offset=1 >"$OUT/storm-run.log" 2>&1
echo "$?" >"$OUT/storm-run.rc"
uname -m >"$OUT/uname-m"
