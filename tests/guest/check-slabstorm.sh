#!/bin/sh
# check-slabstorm.sh - slabstorm cases for the host-side tests
# (tests/test_slabstorm_guest.py). Expects 4 online CPUs. Every case also
# lists /sys/kernel/slab before and after it (slabs.before, slabs.after):
# no cache of the storm may outlive it, whatever way the run ended.
. tests/guest/lib.sh

RESULT=/sys/kernel/debug/slabstorm/result

# The cache names, with no program to run (a glob is a shell builtin):
# every exec is slow in a TCG guest on a busy host.
slabs() {
	for f in /sys/kernel/slab/*; do
		printf '%s\n' "${f##*/}"
	done
}

# slab_case NAME [PARAM=VALUE...]: storm_case with the cache lists around it
slab_case() {
	sname=$1
	shift
	sdir=$(case_dir "$sname")
	slabs >"$sdir/slabs.before"
	storm_case "$sname" slabstorm "$@"
	slabs >"$sdir/slabs.after"
}

# Untouched caches: creating and destroying them should cost (almost) no
# IPIs, the point of seed 002. timeout=300: a KASAN guest sharing the host
# takes tens of ms a cache, past the default 30 s for 1000 of them.
slab_case slab_untouched mode=create numcache=1000 timeout=300
# Touched on CPUs 1 and 2 from CPU 0: every destroy flushes their cpu slabs
# with a work item each, so the destroy IPIs land there; CPU 3 stays out.
slab_case slab_touched mode=create numcache=200 cpu=0 cpulist=1-2
# shrink=1 flushes them first: the cost moves from destroy to shrink.
slab_case slab_touched_shrink mode=create numcache=100 cpu=0 cpulist=1-2 \
	shrink=1 fill=20 objsize=256
slab_case slab_shrink mode=shrink numcache=50 cpu=0 cpulist=1-3 fill=50
slab_case slab_remote mode=remote numobj=10000
slab_case slab_remote_ring mode=remote numobj=3000 cpulist=1-3
slab_case slab_timed mode=create timeout=1
slab_case slab_remote_timed mode=remote timeout=1 cpulist=2-3
slab_case slab_nolatency mode=create numcache=100 latency=0 cpulist=3

# rcu: the cache list is also taken while the module is still loaded: on
# 6.1 the destroy only queues the cache, and the storm must wait for it.
dir=$(case_dir slab_rcu)
slabs >"$dir/slabs.before"
mark=$(dmesg_mark)
cat /proc/interrupts >"$dir/interrupts.before"
insmod "$KO/slabstorm.ko" mode=rcu numcache=20 cpu=0 cpulist=1-3 \
	2>"$dir/stderr"
echo $? >"$dir/rc"
cat /proc/interrupts >"$dir/interrupts.after"
slabs >"$dir/slabs.loaded"
cat "$RESULT" >"$dir/result" 2>/dev/null
rmmod slabstorm
echo $? >"$dir/rmmod_rc"
slabs >"$dir/slabs.after"
dmesg_since "$mark" >"$dir/dmesg"

# Refused parameters: insmod fails, the reason is in dmesg. What the host
# test reads of a refusal (rc, stderr, dmesg, no result) with half the
# programs storm_case runs: there are many of these.
bad_case() {
	bdir=$(case_dir "$1")
	shift
	slabs >"$bdir/slabs.before"
	bmark=$(dmesg_mark)
	insmod "$KO/slabstorm.ko" "$@" 2>"$bdir/stderr"
	brc=$?
	echo $brc >"$bdir/rc"
	# accepted after all (the host test fails it): unload for the next
	[ $brc -eq 0 ] && rmmod slabstorm
	dmesg_since "$bmark" >"$bdir/dmesg"
	slabs >"$bdir/slabs.after"
}
bad_case slab_bad_mode mode=bogus numcache=10
bad_case slab_bad_mode_empty mode= numcache=10
bad_case slab_bad_cpulist_range numcache=10 cpulist=64
bad_case slab_bad_cpulist_syntax numcache=10 cpulist=1-x
bad_case slab_bad_cpulist_empty numcache=10 cpulist=
bad_case slab_bad_cpu_range numcache=10 cpu=64
bad_case slab_bad_cpu_negative numcache=10 cpu=-2
bad_case slab_bad_unbounded numcache=0 timeout=0
bad_case slab_bad_unbounded_remote mode=remote numobj=0 timeout=0
bad_case slab_bad_timeout_zero numcache=10 timeout=0
bad_case slab_bad_objsize_zero numcache=10 objsize=0
bad_case slab_bad_objsize_huge numcache=10 objsize=1000000
bad_case slab_bad_fill_zero numcache=10 fill=0
bad_case slab_bad_fill_huge numcache=10 fill=100000
bad_case slab_bad_numcache_huge numcache=10000000000000
bad_case slab_bad_numcache_negative numcache=-1
bad_case slab_bad_timeout_huge timeout=999999999
bad_case slab_bad_remote_one_cpu mode=remote numobj=10 cpulist=1
bad_case slab_bad_remote_numcache mode=remote numcache=10
bad_case slab_bad_remote_cpu mode=remote numobj=10 cpu=1
bad_case slab_bad_create_numobj mode=create numobj=10
bad_case slab_bad_shrink_flag mode=shrink numcache=10 shrink=1
bad_case slab_bad_latency_value numcache=10 latency=maybe

# Offline CPU 3: refused as a toucher and as the main CPU; the shrink
# default (every online CPU) then leaves it out.
if echo 0 >/sys/devices/system/cpu/cpu3/online; then
	bad_case slab_bad_cpulist_offline numcache=10 cpulist=2-3
	bad_case slab_bad_cpu_offline numcache=10 cpu=3
	slab_case slab_shrink_offline mode=shrink numcache=20
	echo 1 >/sys/devices/system/cpu/cpu3/online
fi

# A fatal signal to a foreground insmod ends the storm after the cache in
# hand is destroyed; the result says interrupted. $1 = case, rest = params.
signal_case() {
	dir=$(case_dir "$1")
	shift
	slabs >"$dir/slabs.before"
	mark=$(dmesg_mark)
	insmod "$KO/slabstorm.ko" "$@" 2>"$dir/stderr" &
	pid=$!
	sleep 2
	start=$(date +%s)
	kill -TERM "$pid"
	wait "$pid"
	echo $? >"$dir/rc"
	echo $(($(date +%s) - start)) >"$dir/stop_seconds"
	cat "$RESULT" >"$dir/result" 2>/dev/null
	rmmod slabstorm
	echo $? >"$dir/rmmod_rc"
	slabs >"$dir/slabs.after"
	dmesg_since "$mark" >"$dir/dmesg"
}
signal_case slab_signal mode=create timeout=60 cpu=0 cpulist=1-2
signal_case slab_signal_remote mode=remote timeout=60 cpulist=0-3

# background=1: insmod returns at once, rmmod stops the storm promptly.
background_case() {
	dir=$(case_dir "$1")
	shift
	slabs >"$dir/slabs.before"
	mark=$(dmesg_mark)
	insmod "$KO/slabstorm.ko" background=1 "$@" 2>"$dir/stderr"
	echo $? >"$dir/rc"
	sleep 2
	slabs >"$dir/slabs.during"
	start=$(date +%s)
	rmmod slabstorm
	echo $? >"$dir/rmmod_rc"
	echo $(($(date +%s) - start)) >"$dir/stop_seconds"
	slabs >"$dir/slabs.after"
	dmesg_since "$mark" >"$dir/dmesg"
}
background_case slab_background_rcu mode=rcu timeout=60 cpu=0 cpulist=1-3
background_case slab_background_shrink mode=shrink timeout=60 fill=50

# After all of that the kernel still runs a storm.
slab_case slab_after mode=create numcache=100 cpu=0 cpulist=1
