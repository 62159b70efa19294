#!/bin/sh
# groups: possible
# check-insn.sh - the instruction counter (qemu-plugin/storm-insn.c), for
# tests/test_insn_guest.py. Under the plugin: a known loop between two
# markers (tests/kmod/insnloop.c) and a storm run whose run files carry
# the insn section. The "possible" boot runs without the plugin
# (storm vm --no-insn): there a storm with its markers must still run.
. tests/guest/lib.sh

d=$(case_dir insn)
printf '%s\n' "${STORM_INSN_LOG:-}" >"$d/log"
if [ -z "${STORM_INSN_LOG:-}" ]; then
	storm_case insn_off ipistorm numipi=200 single=1 wait=1 cpulist=0 offset=1
	exit 0
fi

insn_loops "$d"

# storm run's capture, every run file with its window's counts; a known
# change in one boot: the handler's loop adds 2 x handler_loops
# instructions a call on the target (3 loops: 0.55% on 6.1, 0.7% on
# 6.12), against two sets without it (an A/A). The sets' runs are
# interleaved, a few at a time, in a new random order every round, so
# that what drifts during the boot falls on all three and no set is
# always the last (the order each round took is in ab-order).
# Two rounds of 5 runs (10 runs a set): under CI's load (two guests and
# the unit tests on 2 cores) 6 runs a set leave intervals up to +-1.3%
# where a quiet boot's are +-0.15%, too wide for the 0.55%; a storm run
# costs seconds of its own in a TCG guest, a run in it about three.
# the sets in a random order: a0 b0 c3, one a line (a 16-bit seed:
# mawk's srand takes any seed above 2^31 as the same one)
shuffled_sets() {
	seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	printf '%s\n' a0 b0 c3 |
		awk -v seed="$seed" 'BEGIN { srand(seed) } { print rand() " " $0 }' |
		sort -n | cut -d' ' -f2
}

# The verdict on sets of one boot is the drivers' and the plugin's, the
# same on every kernel (the plugin's exactness is the loop's above, on
# each): it runs once (lib.sh's once); the other kernels' boots write one
# set of a few runs, whose run files carry the window.
if ! once; then
	scripts/storm run --runs 3 --warmup 1 --results "$d/ab" --label a0 \
		--series insn-a0 ipistorm numipi=20000 single=1 wait=1 \
		cpulist=0 offset=1 handler_loops=0 >>"$d/ab-a0.out" 2>&1
	echo $? >"$d/ab-a0.rc"
	exit 0
fi
warmup=1
for round in $(seq 1 "${INSN_ROUNDS:-2}"); do
	order=$(shuffled_sets | tr '\n' ' ')
	echo "round $round: $order" >>"$d/ab-order"
	for set in $order; do
		scripts/storm run --runs "${INSN_RUNS:-5}" --warmup $warmup \
			--results "$d/ab" \
			--label "$set" --series "insn-$set" \
			ipistorm numipi=20000 single=1 wait=1 cpulist=0 offset=1 \
			handler_loops="${set#?}" >>"$d/ab-$set.out" 2>&1
		rc=$?
		warmup=0
		[ "$round" = 1 ] || [ "$rc" != 0 ] || continue
		echo $rc >"$d/ab-$set.rc"
	done
done
