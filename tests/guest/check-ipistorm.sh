#!/bin/sh
# groups: idle
# check-ipistorm.sh - ipistorm cases for the host-side tests
# (tests/test_ipistorm_guest.py). Expects 4 online CPUs. In the "idle"
# group (the idle=poll boot) only the idle-target case runs.
. tests/guest/lib.sh

# single=1 wait=1 to a HLT-idle target: one CAL per call. With idle=poll
# the kernel skips the IPI to a polling target. The delay lets the target
# get back to HLT (or to polling) between calls; back to back, a call often
# finds it still in the idle loop with polling set, under TCG especially.
storm_case ipi_idle ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50
[ "${GROUP:-full}" = full ] || exit 0

# sparse cpulist: target = (1 + 2) mod nr_cpu_ids = 3; every call timed
storm_case ipi_sparse ipistorm numipi=1000 single=1 cpulist=1 offset=2 latency=1
# mask: base = 2 & ~1 = 2, offset bits = (2 + 1) & 1 = 1 -> CPU 3
storm_case ipi_mask ipistorm numipi=500 single=1 cpulist=2 offset=1 mask=1
storm_case ipi_all ipistorm numipi=300 cpulist=0
storm_case ipi_all_nowait ipistorm numipi=300 wait=0
storm_case ipi_many ipistorm numipi=300 cpulist=0 targets=2-3
storm_case ipi_async ipistorm numipi=500 single=1 async=1 cpulist=1
storm_case ipi_async_nowait ipistorm numipi=500 single=1 async=1 wait=0
storm_case ipi_nolatency ipistorm numipi=500 single=1 latency=0 cpulist=0
# Sampled timing: the default times one call in each block of 64, so
# 6400 calls per sender give exactly 100 samples each; 1050 calls with
# latency=100 give 10 or 11 (the last block is unfinished); the largest
# latency is accepted.
storm_case ipi_sampled ipistorm numipi=6400 single=1 cpulist=0-3 offset=1
storm_case ipi_sampled_partial ipistorm numipi=1050 latency=100 single=1 offset=1
storm_case ipi_latency_max ipistorm numipi=100 latency=1048576 single=1 cpulist=0
storm_case ipi_handler ipistorm numipi=200 single=1 handler_ns=200000 cpulist=0 latency=1
# handler_ns where calls reach the target back to back (wait=0; two
# senders on one target): the target busy-waits at most half its time
storm_case ipi_handler_flood ipistorm numipi=1000 single=1 wait=0 handler_ns=1000000 cpulist=0
storm_case ipi_handler_two ipistorm numipi=300 cpulist=0,2 targets=1 handler_ns=1000000
# handler_loops where calls can reach the target back to back: the same
# budget, the loops timed into it
storm_case ipi_loops_flood ipistorm numipi=300 single=1 wait=0 handler_loops=100000 cpulist=0
storm_case ipi_delay ipistorm numipi=50 single=1 delay=1000 cpulist=0
# wait=1, one sender per target: the sender pays the handler's time back
# in sleep (paced); loops of at most 1000 add their instructions alone
storm_case ipi_loops_paced ipistorm numipi=100 single=1 handler_loops=100000 cpulist=0 latency=1
storm_case ipi_loops_free ipistorm numipi=100 single=1 handler_loops=1000 cpulist=0
# three senders on a CPU that does not send: allowed up to pileup=
storm_case ipi_pileup_at_limit ipistorm numipi=100 cpulist=0,2,3 targets=1 pileup=3

# The storms' watchdog (docs/safety.md): 1 s into a timed storm that
# calls CPU 1, tests/kmod/irqoff.ko holds CPU 1 in one 6 s hardirq; the
# controller (insmod, kept on CPU 2) stops the storm "starved" after three
# checks a second apart without a tick there, before the kernel's
# detectors (10 s and more) would report.
# shellcheck disable=SC2154 # insmod_pid, dir: set by lib.sh's case_insmod_bg, case_open
starve_load() {
	insmod_cpu=2 case_insmod_bg "$@"
	storm_started "$insmod_pid"
	sleep 1
	taskset -c 3 insmod "$KO/irqoff.ko" cpu=1 ms=6000 2>"$dir/irqoff.err"
	echo $? >"$dir/irqoff_rc"
	wait "$insmod_pid"
	sl_rc=$?
	rmmod irqoff
	return $sl_rc
}
case_open ipi_starved
capture_load "$dir" ipistorm starve_load ipistorm numipi=0 timeout=30 single=1 wait=0 cpulist=0 offset=1
echo $? >"$dir/rc"
case_close ipistorm
# wait=0: the window's closing counts wait for the calls still in flight;
# one call each: without the wait its IPI would fall outside the window
for i in 1 2 3 4 5; do
	storm_quick_case "ipi_nowait_last_$i" ipistorm numipi=1 single=1 wait=0 \
		cpulist=0 offset=1 latency=0
done
# the calls check: a count one off (injected) ends the storm FAILURE
storm_case ipi_miscount ipistorm numipi=100 single=1 cpulist=0 inject_miscount=1
storm_case ipi_timed ipistorm timeout=2 single=1 cpulist=0

# The window's end (docs/safety.md, item 9): 20 short storms to an
# HLT-idle target, each window taken by the last worker as it ends. The
# tick length is the kernel's: jiffies over a second of its clock
# (/proc/timer_list).
jiffies_at() {
	awk '/^now at/ { ns = $3 } /^jiffies:/ { print ns, $2; exit }' \
		/proc/timer_list
}
window=$(case_dir ipi_window)
jiffies_at >"$window/jiffies"
sleep 1
jiffies_at >>"$window/jiffies"
# storm_quick_case: the test reads no interrupt counts of these, and 20
# loads then cost what 20 insmods do.
i=1
while [ $i -le 20 ]; do
	storm_quick_case "ipi_window_$i" ipistorm numipi=100 single=1 \
		cpulist=0 offset=1 delay=50
	i=$((i + 1))
done

# Refused parameters (tests/guest/refused.txt: which, and why): on every
# kernel, the refusals the kernel's code decides, a value its parameter
# parser cannot parse (ulong, bool, uint: the types of every storm's
# parameters but a charp's and slabstorm's cpu) and a CPU list its
# cpulist_parse() refuses; the module's own checks (include/storm.c and
# ipistorm.c, the same C on every kernel) once (lib.sh's once), as every
# other script's refusals, the kernel's parsers being these same ones.
refused ipistorm
refused "ipistorm once"

# Offline CPUs: as sender and as target. The refusals are the module's
# own check against the online mask: once, like those above; the storm
# that skips the offline CPU runs on every kernel.
if echo 0 >/sys/devices/system/cpu/cpu3/online; then
	refused "ipistorm offline once"
	storm_case ipi_all_with_offline ipistorm numipi=100 cpulist=0
	# a hole in the online CPUs: CPU 0 -> 1 lands on it
	if once && echo 0 >/sys/devices/system/cpu/cpu1/online; then
		refused "ipistorm hole once"
		echo 1 >/sys/devices/system/cpu/cpu1/online
	fi
	echo 1 >/sys/devices/system/cpu/cpu3/online
fi

# A fatal signal to insmod ends a timed storm early; the result says so.
storm_signal_case ipi_signal ipistorm timeout=60 single=1 cpulist=0
# rmmod during the storm is refused at once; after it, rmmod works.
# timeout=15: on a KASAN guest the shell's sleep and rmmod alone took over
# the 4 s this storm had, so the early rmmod found it over.
storm_rmmod_during_case ipi_rmmod_during ipistorm timeout=15 single=1 cpulist=0
# background=1: rmmod stops the storm promptly.
storm_background_case ipi_background ipistorm timeout=60 single=1 cpulist=0

# After all of that the kernel still runs a storm.
storm_case ipi_after ipistorm numipi=500 single=1 cpulist=0
