#!/bin/sh
# groups: bigcpus
# check-bigcpus.sh - a kernel with 2048 possible CPUs (possible_cpus=2048
# on 2 vCPUs; 6.1 has the option, 6.12 ignores it), for
# tests/test_safety_guest.py. With count_sent=1 a CPU's row of send
# counters (one per possible target and vector) would pass the per-CPU
# allocator's 32 KiB: the load is refused with the figures. The storms
# without count_sent run.
. tests/guest/lib.sh
[ "${GROUP:-full}" = bigcpus ] || exit 0

cat /sys/devices/system/cpu/possible >"$OUT/cpus_possible"
storm_case bigcpus_count_sent ipistorm numipi=10 single=1 cpulist=0 count_sent=1
storm_case bigcpus_count_sent_tlb tlbstorm numflush=10 count_sent=1
storm_case bigcpus_storm ipistorm numipi=100 single=1 cpulist=0
