#!/bin/sh
# groups: idle
# check-drivers.sh - in the guest: `storm run` cases for the host-side
# tests in tests/test_drivers_guest.py, in the same boots as the other
# check scripts. Each case leaves NAME.out (the files written, one a
# line), NAME.err (progress and errors) and NAME.rc in $OUT/drivers; the
# run files go to $OUT/drivers/results/<label>/..., raw tracer output to
# $OUT/drivers/keep/.
#
# GROUP full: every case; idle (the idle=poll boot): the ipistorm series.
# The cases after the traced one test the drivers' own plumbing (run files,
# labels, the refusal path), the same on every kernel: they run only where
# STORM_CHECK_ONCE is not 0 (lib.sh's once), the full boot of the first
# kernel under test.
OUT=${OUT:?OUT must name the output directory}/drivers
group=${GROUP:-full}
R=$OUT/results
mkdir -p "$R" "$OUT/keep"

case_run() {
	name=$1
	shift
	scripts/storm run --results "$R" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	echo $? >"$OUT/$name.rc"
	echo "drivers: $name rc=$(cat "$OUT/$name.rc")"
}

# The HLT-vs-poll case: with a delay the target is back in idle between
# calls, so every call needs an IPI (HLT) or none (polling).
case_run ipistorm --runs 5 ipistorm numipi=500 single=1 wait=1 cpulist=0 \
	offset=1 delay=50
[ "$group" = full ] || exit 0

# every kernel: what the tracers attach to is the kernel's (kprobes on the
# x86 send functions before 6.6, the ipi:* and csd:* tracepoints since)
case_run traced --runs 1 --warmup 0 --trace --bpftrace --keep-trace "$OUT/keep" \
	--label traced ipistorm numipi=200 single=1 wait=1 cpulist=0 offset=1 delay=50
# the rest once (lib.sh's once; this script does not source lib.sh)
[ "${STORM_CHECK_ONCE:-1}" != 0 ] || exit 0
if [ -f tlbstorm/tlbstorm.c ]; then
	case_run tlbstorm --runs 2 tlbstorm numflush=100 targets=1-2
fi
if [ -f slabstorm/slabstorm.c ]; then
	case_run slabstorm --runs 2 slabstorm mode=shrink numcache=50
fi
# the send-side counts reach the run files
case_run sent --runs 2 --warmup 0 --label sent ipistorm numipi=300 wait=0 \
	latency=0 count_sent=1
# refused by the module: the reason comes from dmesg, nothing is written
case_run bad_cpulist --runs 1 --label refused ipistorm numipi=10 cpulist=64
