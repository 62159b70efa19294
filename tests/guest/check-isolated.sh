#!/bin/sh
# groups: numa
# check-isolated.sh - the storms' default CPUs on a box with an isolated
# CPU (the numa boot has isolcpus=3), and nice=1, for the host-side tests
# (tests/test_isolated_guest.py). 4 online CPUs.
. tests/guest/lib.sh
[ "${GROUP:-full}" = numa ] || exit 0

# defaults leave CPU 3 out; a list that names it is obeyed
storm_case iso_ipi_default ipistorm numipi=100
storm_case iso_ipi_named ipistorm numipi=100 single=1 cpulist=2 offset=1
storm_case iso_tlb_default tlbstorm numflush=50
storm_case iso_slab_default slabstorm mode=shrink numcache=5

# nice=1: every storm thread at nice 19 while the storm runs
case_open iso_nice
case_insmod ipistorm numipi=0 timeout=60 single=1 cpulist=0-1 offset=1 \
	background=1 nice=1
# shellcheck disable=SC2154 # dir: set by lib.sh's case_open
echo $? >"$dir/rc"
for f in /proc/[0-9]*/comm; do
	read -r comm <"$f" 2>/dev/null || continue
	case $comm in
	# comm has no space: the 19th field of stat is nice
	ipistorm/*) awk -v c="$comm" '{ print c, $19 }' "${f%/comm}/stat" ;;
	esac
done >"$dir/nice"
keep_result "$dir" ipistorm
case_close ipistorm
