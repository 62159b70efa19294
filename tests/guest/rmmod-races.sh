#!/bin/sh
# rmmod-races.sh - in the guest: rmmod the instant `insmod background=1`
# returns, ROUNDS times per storm at least (default 40), each storm's
# evidence in $OUT/race_<storm>/ for tests/test_safety_guest.py. Run by
# check-safety.sh in every full boot, and by tests/e2e/rmmod-race for the
# long run. Expects 4 online CPUs; leaves them online.
#
# The window: the controller kthread must not have run when rmmod comes.
# rmmod-race.py loads and unloads from one process with no exec between,
# SCHED_FIFO on CPU 0, with only CPUs 0 and 1 online: the controller is
# woken on the other CPU, which single-threaded TCG runs only after CPU 0
# gives up its turn. How often the module goes before its controller ever
# ran depends on the kernel, the storm and the host (ipistorm: about half
# the rounds on 6.1, as few as one in a hundred on 6.12 alone on the host;
# about 70 ms a round), so the
# loop runs ROUNDS rounds and then on until EARLY of them hit the window,
# MAX rounds at most; dmesg then says "unloaded before the storm could
# report" at least EARLY times. Before storm_module_exit() stopped the workers
# itself, each such round left them running in the freed module.
. tests/guest/lib.sh

ROUNDS=${ROUNDS:-40} EARLY=${EARLY:-2}
MAX=${MAX:-$((ROUNDS > 1000 ? ROUNDS : 1000))}
race_loop() {
	module=$1
	shift
	dir=$(case_dir "race_$module")
	printf '%s\n' "$*" >"$dir/params"
	dmesg_mark
	chrt -f 10 taskset -c 0 python3 tests/guest/rmmod-race.py \
		"$KO/$module.ko" "$module" "$ROUNDS" "$EARLY" "$MAX" "$@" \
		>"$dir/out" 2>"$dir/stderr"
	echo $? >"$dir/rc"
	grep -c "^$module " /proc/modules >"$dir/loaded_after"
	storm_threads >"$dir/threads_after"
	# shellcheck disable=SC2154 # mark: set by dmesg_mark
	dmesg_since "$mark" >"$dir/dmesg"
	echo "race $module: $(cat "$dir/out"), $(grep -c 'unloaded before' "$dir/dmesg") before the report"
}

cpu_set 2 0
cpu_set 3 0
# shellcheck disable=SC2154 # storm_names: set by lib.sh
for storm in $storm_names; do
	# shellcheck disable=SC2046 # the example's parameters, split
	race_loop "$storm" timeout=60 $(storm_field "$storm" 3)
done
cpu_set 2 1
cpu_set 3 1
