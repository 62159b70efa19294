#!/bin/sh
# check-slabstorm.sh - slabstorm cases for the host-side tests
# (tests/test_slabstorm_guest.py). Expects 4 online CPUs. Every case also
# lists /sys/kernel/slab before it, while the module is in and after it
# (slabs.before, slabs.loaded, slabs.after): no cache of the storm may
# outlive it, whatever way the run ended.
. tests/guest/lib.sh

# The cache names, with no program to run (a glob is a shell builtin):
# every exec is slow in a TCG guest on a busy host.
slabs() {
	for f in /sys/kernel/slab/*; do
		printf '%s\n' "${f##*/}"
	done
}

slabs_hook() {
	slabs >"$2/slabs.$1"
}
# shellcheck disable=SC2034 # read by lib.sh's hook()
STORM_HOOK=slabs_hook

# Untouched caches: creating and destroying them should cost (almost) no
# IPIs, the point of seed 002. timeout=300 on the counted storms here: a
# KASAN guest sharing the host takes tens of ms a cache, past the default
# 30 s for 1000 of them (and for 200 touched ones, or 10000 remote frees).
storm_case slab_untouched slabstorm mode=create numcache=1000 timeout=300
# Touched on CPUs 1 and 2 from CPU 0: every destroy flushes their cpu slabs
# with a work item each, so the destroy IPIs land there; CPU 3 stays out.
storm_case slab_touched slabstorm mode=create numcache=200 cpu=0 cpulist=1-2 \
	timeout=300
# shrink=1 flushes them first: the cost moves from destroy to shrink.
storm_case slab_touched_shrink slabstorm mode=create numcache=100 cpu=0 cpulist=1-2 \
	shrink=1 fill=20 objsize=256 timeout=300
storm_case slab_shrink slabstorm mode=shrink numcache=50 cpu=0 cpulist=1-3 fill=50
storm_case slab_remote slabstorm mode=remote numobj=10000 timeout=300
storm_case slab_remote_ring slabstorm mode=remote numobj=3000 cpulist=1-3
storm_case slab_timed slabstorm mode=create timeout=1
storm_case slab_remote_timed slabstorm mode=remote timeout=1 cpulist=2-3
# The objects check: an object counted as changed in crossing (injected)
# ends the storm FAILURE
storm_case slab_remote_miscount slabstorm mode=remote numobj=1000 \
	inject_miscount=1 timeout=300
storm_case slab_nolatency slabstorm mode=create numcache=100 latency=0 cpulist=3 \
	timeout=300

# rcu: the cache list is also taken while the module is still loaded
# (slabs.loaded): on 6.1 the destroy only queues the cache, and the storm
# must wait for it.
storm_case slab_rcu slabstorm mode=rcu numcache=20 cpu=0 cpulist=1-3

# Refused parameters: insmod fails, the reason is in dmesg. Once
# (lib.sh's once): the module's own checks are the same C on every kernel,
# and the kernel's parsers they go through (cpulist_parse(), the
# parameter parser) are refused on every kernel in check-ipistorm.sh.
refused "slabstorm once"
# Offline CPU 3: refused as a toucher and as the main CPU (the module's
# check against the online mask: once); the shrink default (every online
# CPU) then leaves it out (every kernel).
if echo 0 >/sys/devices/system/cpu/cpu3/online; then
	refused "slabstorm offline once"
	storm_case slab_shrink_offline slabstorm mode=shrink numcache=20
	echo 1 >/sys/devices/system/cpu/cpu3/online
fi

# A fatal signal to a foreground insmod ends the storm after the cache in
# hand is destroyed; the result says interrupted.
storm_signal_case slab_signal slabstorm mode=create timeout=60 cpu=0 cpulist=1-2
storm_signal_case slab_signal_remote slabstorm mode=remote timeout=60 cpulist=0-3

# background=1: insmod returns at once, rmmod stops the storm promptly
# (the caches while it runs: slabs.loaded).
storm_background_case slab_background_rcu slabstorm mode=rcu timeout=60 cpu=0 cpulist=1-3
storm_background_case slab_background_shrink slabstorm mode=shrink timeout=60 fill=50

# After all of that the kernel still runs a storm.
storm_case slab_after slabstorm mode=create numcache=100 cpu=0 cpulist=1 \
	timeout=300
