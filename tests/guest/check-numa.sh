#!/bin/sh
# groups: numa
# check-numa.sh - the NUMA nodes `storm vm --numa` made, for the host-side
# tests (tests/test_numa_guest.py): each node's CPUs, and a tlbstorm from
# CPU 0 (node 0) to CPUs 2 and 3 (node 1 of a 2-node, 4-vCPU guest) with
# the sends counted, as `storm seed 001` runs it. In the full boot of the
# first kernel under test too (lib.sh's once), where there is one node:
# what storm run records of it is the drivers' and the same on every
# kernel, and check-sent.sh counts a tlbstorm's sends on every kernel.
. tests/guest/lib.sh
[ "${GROUP:-full}" = numa ] || once || exit 0

d=$(case_dir numa_nodes)
cat /sys/devices/system/node/online >"$d/online"
for n in /sys/devices/system/node/node[0-9]*; do
	printf '%s %s\n' "${n##*/node}" "$(cat "$n/cpulist")"
done >"$d/cpus"
storm_case numa_tlb_across tlbstorm numflush=200 cpulist=0 targets=2-3 \
	count_sent=1 timeout=300
# what storm run records of the nodes (seed 001 checks it)
mkdir -p "$OUT/numa_run"
scripts/storm run --runs 1 --warmup 0 --results "$OUT/numa_run" \
	--label numa ipistorm numipi=100 >"$OUT/numa_run/files" 2>&1
