#!/bin/sh
# check-safety.sh - storms that must not hurt the kernel they run on, for
# tests/test_safety_guest.py. Expects 4 online CPUs; leaves them online.
#
#  - rmmod the instant a background insmod returns, before the storm's
#    controller thread has run (tests/guest/rmmod-races.sh)
#  - CPU hotplug in the middle of every storm kind
#  - a fixed-count storm bounded by timeout=
#  - more possible than online CPUs: single=1 with the default cpulist
#  - malformed lists and memory beyond the machine, refused
#  - random parameter sets and endings (tests/guest/fuzz.py)
# The last two run once (lib.sh's once): the refusals are the modules' own
# checks, and the fuzz, about what the modules accept and refuse, runs on
# every kernel in tests/e2e/fuzz-storms.
. tests/guest/lib.sh

# ---------------------------------------------------------------------
# rmmod right after `insmod background=1`, many times per module
# (tests/guest/rmmod-races.sh says how the window is opened).
sh tests/guest/rmmod-races.sh

# ---------------------------------------------------------------------
# CPU hotplug mid-storm: a timed storm (timeout=120) in the foreground; 1 s
# after its threads start CPU $cpu goes offline (or online, for "on"), at
# 2 s back. The storm must stop at the first event, insmod must return
# long before the 120 s, and the result must say hotplug. The timeout is
# long so the event always lands inside the storm: on a KASAN guest under
# TCG, finding the threads and taking a CPU down take seconds each, and an
# 8 s storm can be over before the CPU goes. A
# storm that handles the event stops there, so the length costs nothing.

# the load of hotplug_case
hotplug_load() {
	hl_module=$1
	shift
	case_insmod_bg "$hl_module" timeout=120 "$@"
	# shellcheck disable=SC2154 # insmod_pid: set by case_insmod_bg
	hl_pid=$insmod_pid
	# The clock starts with the storm's threads, not with insmod: a load
	# takes over 10 s on a KASAN guest, and an event before the storm
	# starts only gets the load refused.
	storm_started "$hl_pid"
	uptime_s
	# shellcheck disable=SC2154 # uptime_s: set by the function uptime_s
	start=$uptime_s
	sleep 1
	if [ "$event" = on ]; then
		cpu_set "$cpu" 1
	else
		cpu_set "$cpu" 0
		sleep 1
		cpu_set "$cpu" 1
	fi
	wait "$hl_pid"
	hl_rc=$?
	seconds_since "$start" >"$dir/seconds"
	return $hl_rc
}

hotplug_case() {
	name=$1 module=$2 cpu=$3 event=$4
	shift 4
	case_open "$name"
	printf '%s\n' "$*" >"$dir/params"
	[ "$event" = on ] && cpu_set "$cpu" 0
	capture_load "$dir" "$module" hotplug_load "$module" "$@"
	hc_rc=$?
	echo $hc_rc >"$dir/rc"
	case_close "$module"
	storm_threads >"$dir/threads_after"
	read -r hc_seconds <"$dir/seconds"
	echo "case $name: rc=$hc_rc in $hc_seconds s"
}

hotplug_case hp_single_target ipistorm 1 off single=1 cpulist=0 offset=1
hotplug_case hp_single_sender ipistorm 2 off single=1 cpulist=2 offset=1
hotplug_case hp_many ipistorm 2 off cpulist=0 targets=1-3
hotplug_case hp_all ipistorm 3 off
hotplug_case hp_all_nowait ipistorm 3 off wait=0
hotplug_case hp_async ipistorm 2 off single=1 async=1 cpulist=1 offset=1
hotplug_case hp_all_online ipistorm 3 on cpulist=0
hotplug_case hp_tlb_user tlbstorm 2 off cpulist=0 targets=1-3
hotplug_case hp_tlb_kernel tlbstorm 3 off mode=kernel cpulist=0
hotplug_case hp_slab_create slabstorm 2 off mode=create cpu=0 cpulist=1-3
hotplug_case hp_slab_shrink slabstorm 2 off mode=shrink cpu=0 cpulist=1-3
hotplug_case hp_slab_remote slabstorm 2 off mode=remote cpulist=1-3
hotplug_case hp_slab_rcu slabstorm 3 off mode=rcu cpu=0 cpulist=1-3
# rcustorm: a reader's CPU, a caller's CPU
hotplug_case hp_rcu_reader rcustorm 2 off cpulist=0 busy=1-2
hotplug_case hp_rcu_caller rcustorm 1 off cpulist=0-1 busy=2-3

# ---------------------------------------------------------------------
# timeout= bounds a fixed-count storm too: status "timeout".
storm_timed_case() {
	name=$1
	shift
	# the clock is the storm's: udev's backlog from the hotplug cases
	# can take a minute to settle on the debug kernel
	udev_settle >/dev/null
	uptime_s
	start=$uptime_s
	storm_case "$name" "$@"
	seconds_since "$start" >"$OUT/$name/seconds"
}
# shellcheck disable=SC2154 # storm_names: set by lib.sh
for storm in $storm_names; do
	# shellcheck disable=SC2046 # the example's parameters, split
	storm_timed_case "bound_$storm" "$storm" \
		"$(storm_field "$storm" 2)=1000000000000" timeout=2 \
		$(storm_field "$storm" 3)
done

# A finished background storm is done, not interrupted by the rmmod after.
storm_background_done_case bg_finished ipistorm numipi=200 single=1 cpulist=0

# RCU-Tasks during a long storm: every storm thread yields with an
# RCU-Tasks quiescent state, so bpftrace detaching a kfunc probe (the
# kernel frees its ftrace ops after synchronize_rcu_tasks()) returns
# while the storm still runs. With cond_resched() alone it waited for the
# storm's end: 89 s of a 90 s ipistorm on 6.1. bpftrace starts first (its
# start took over 300 s on a KASAN guest with a storm running) and says
# when its probes run; then the storm starts on CPUs 0-1, leaving 2-3 to
# bpftrace, and 2 s in bpftrace gets SIGINT: the seconds from there to its
# exit are its detach. The storm's timeout=600 bounds a detach held off;
# otherwise the unload ends it.
rcu_tasks_case() {
	name=$1 module=$2
	shift 2
	dir=$(case_dir "$name")
	if ! command -v bpftrace >/dev/null 2>&1; then
		echo "no bpftrace" >"$dir/skipped"
		return
	fi
	udev_settle >/dev/null
	dmesg_mark
	bpftrace -B line -e 'kfunc:vmlinux:vfs_read { @n = count(); }
		interval:s:1 { printf("running\n"); }' \
		>"$dir/bpftrace.out" 2>"$dir/bpftrace.err" &
	bt_pid=$!
	bt_wait=0
	until grep -q '^running' "$dir/bpftrace.out"; do
		if ! kill -0 "$bt_pid" 2>/dev/null || [ $bt_wait -ge 1200 ]; then
			echo "bpftrace did not start in $bt_wait s" >>"$dir/bpftrace.err"
			break
		fi
		sleep 1
		bt_wait=$((bt_wait + 1))
	done
	insmod "$KO/$module.ko" background=1 timeout=600 "$@" 2>"$dir/stderr"
	sleep 2
	uptime_s
	start=$uptime_s
	kill -INT "$bt_pid" 2>/dev/null
	wait "$bt_pid"
	echo $? >"$dir/rc"
	seconds_since "$start" >"$dir/seconds"
	# a storm that is over has its result file
	[ -e "/sys/kernel/debug/$module/result" ] && echo over >"$dir/over"
	unload "$module" "$dir"
	storm_threads >"$dir/threads_after"
	# shellcheck disable=SC2154 # mark: set by dmesg_mark
	dmesg_since "$mark" >"$dir/dmesg"
	echo "case $name: bpftrace started in $bt_wait s, detached in $(cat "$dir/seconds") s (rc=$(cat "$dir/rc"))"
}
# shellcheck disable=SC2154 # storm_names: set by lib.sh
for storm in $storm_names; do
	# shellcheck disable=SC2046 # the example's parameters, split
	rcu_tasks_case "rcu_tasks_$storm" "$storm" $(storm_field "$storm" 3)
done

# More possible than online CPUs: with CPU 3 offline, single=1 and the
# default cpulist wraps at the last online CPU (2 -> 0), as the original
# ipistorm wraps at the number of online CPUs.
cpu_set 3 0
storm_case possible_single ipistorm numipi=100 single=1 offset=1
storm_case possible_mask ipistorm numipi=100 single=1 offset=1 mask=1
cpu_set 3 1

# Malformed lists (include/storm.c's own syntax check, before
# cpulist_parse()) and storms bigger than the machine: refused. Once.
refused "safety once"

# Parameter fuzzing: a fixed-seed share of tests/e2e/fuzz-storms. Once.
if once; then
	python3 tests/guest/fuzz.py --ko "$KO" --seed "${FUZZ_SEED:-1}" \
		--loads "${FUZZ_LOADS:-30}" --out "$OUT/fuzz.json" >"$OUT/fuzz.log" 2>&1
	echo $? >"$OUT/fuzz.rc"
	tail -n 1 "$OUT/fuzz.log"
fi

storm_threads >"$OUT/safety_threads_at_end"
echo complete >"$OUT/safety_complete"
