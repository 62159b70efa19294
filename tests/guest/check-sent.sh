#!/bin/sh
# groups: idle
# check-sent.sh - the send-side IPI counts (count_sent=1) of every storm,
# for tests/test_sent_guest.py. Expects 4 online CPUs (2 in the idle=poll
# boot, where only the idle-target case runs).
. tests/guest/lib.sh

# single=1 wait=1 to an idle target, as check-ipistorm.sh's ipi_idle:
# with HLT idle every IPI sent arrives; with idle=poll almost none is sent.
storm_case sent_idle ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50 count_sent=1
[ "${GROUP:-full}" = full ] || exit 0

# Every CPU calls every other one, wait=0: calls queue up behind a pending
# IPI, and the kernel sends one only to an empty queue.
storm_case sent_all_nowait ipistorm numipi=300 wait=0 latency=0 count_sent=1
storm_case sent_many ipistorm numipi=300 cpulist=0 targets=2-3 count_sent=1
storm_case sent_async ipistorm numipi=500 single=1 async=1 cpulist=1 count_sent=1
# timeout=300 on the counted storms below: a KASAN guest takes longer
# than the default 30 s for some
storm_case sent_tlb_user tlbstorm numflush=200 targets=1-2 count_sent=1 \
	timeout=300
storm_case sent_tlb_kernel tlbstorm mode=kernel numflush=200 count_sent=1
storm_case sent_slab slabstorm mode=create numcache=100 cpu=0 cpulist=1-2 \
	count_sent=1 timeout=300
storm_case sent_slab_remote slabstorm mode=remote numobj=2000 count_sent=1
# count_sent is a bool like the others: the kernel's bool parser, refused
# on every kernel in check-ipistorm.sh (wait=maybe); this one once
refused "sent once"
