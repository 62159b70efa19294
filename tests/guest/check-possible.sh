#!/bin/sh
# groups: possible
# check-possible.sh - a machine booted with more possible than online CPUs
# (`maxcpus=2` on 3 vCPUs: CPU 2 possible, never brought up), as servers
# with hotplug slots, `nosmt` or `maxcpus=` are; for
# tests/test_safety_guest.py. check-safety.sh covers the same condition
# made at run time (a CPU taken offline through sysfs); here the kernel
# never had the CPU online, so nothing of it (per-CPU threads, irq_stat
# entries) was ever set up.
. tests/guest/lib.sh
[ "${GROUP:-full}" = possible ] || exit 0

cat /sys/devices/system/cpu/possible >"$OUT/cpus_possible"
cat /sys/devices/system/cpu/online >"$OUT/cpus_online"

# the default cpulist wraps at the last online CPU: 1 -> 0
storm_case possible_boot_single ipistorm numipi=100 single=1 offset=1
storm_case possible_boot_all ipistorm numipi=100
storm_case possible_boot_async ipistorm numipi=100 async=1 single=1 offset=1
# the CPU that never came up, named: refused
storm_case possible_boot_offline_target ipistorm numipi=10 cpulist=0 targets=2
storm_case possible_boot_offline_sender tlbstorm numflush=10 cpulist=2
storm_case possible_boot_tlb tlbstorm numflush=50
storm_case possible_boot_tlb_kernel tlbstorm mode=kernel numflush=50
storm_case possible_boot_slab slabstorm mode=remote numobj=200
storm_case possible_boot_slab_create slabstorm mode=create numcache=20
