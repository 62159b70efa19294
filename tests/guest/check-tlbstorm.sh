#!/bin/sh
# check-tlbstorm.sh - tlbstorm cases for the host-side tests
# (tests/test_tlbstorm_guest.py). Expects 4 online CPUs; the flusher is
# CPU 0 unless a case says otherwise, so the workers are on CPUs 1-3.
. tests/guest/lib.sh

TRACE=/sys/kernel/tracing
TLB_EVENT=$TRACE/events/tlb/tlb_flush

# Record the receiving side of every remote user-mm shootdown
# (tlb:tlb_flush with reason TLB_REMOTE_SHOOTDOWN = 1): its "pages:" field
# is the number of pages invalidated one by one, -1 for a full flush.
tlb_trace_on() {
	[ -d "$TLB_EVENT" ] || mount -t tracefs nodev "$TRACE" 2>/dev/null
	[ -w "$TLB_EVENT/enable" ] || return 1
	echo 'reason == 1' >"$TLB_EVENT/filter" || return 1
	echo >"$TRACE/trace"
	echo 1 >"$TLB_EVENT/enable"
}

# tlb_trace_off CASE: stop and keep the events in the case's directory.
tlb_trace_off() {
	[ -w "$TLB_EVENT/enable" ] || return 0
	echo 0 >"$TLB_EVENT/enable"
	cat "$TRACE/trace" >"$(case_dir "$1")/trace"
	echo 0 >"$TLB_EVENT/filter"
	echo >"$TRACE/trace"
}

# Most user-mode cases put workers on CPUs 1-2 only: with all four vCPUs
# spinning, TCG on a small host makes every shootdown round trip far
# slower, and CPU 3 doubles as a CPU that must see no storm. A storm of
# numflush= ends at its count; its timeout=300 only bounds a broken one
# (300 user flushes took over the default 30 s on the debug kernel).

# User mode: the TLB row on the worker CPUs grows with numflush. The
# smaller run also traces what the targets did: pages=1 is one page.
cat /sys/kernel/debug/x86/tlb_single_page_flush_ceiling \
	>"$(case_dir tlb_user_n100)/flush_ceiling" 2>/dev/null
tlb_trace_on
storm_case tlb_user_n100 tlbstorm numflush=100 targets=1-2 timeout=300
tlb_trace_off tlb_user_n100
storm_case tlb_user_n300 tlbstorm numflush=300 targets=1-2 timeout=300

# Only CPU 1 holds the mm: CPUs 2 and 3 see no storm.
storm_case tlb_targets tlbstorm numflush=200 cpulist=0 targets=1 timeout=300

# The flush check: a TLB count one short of the flushes held (injected)
# ends the storm FAILURE
storm_case tlb_miscount tlbstorm numflush=100 cpulist=0 targets=1 \
	inject_miscount=1 timeout=300

# A busy task shares worker CPU 1: while it runs there, CPU 1 is out of
# the mm and a flush may skip it. The worker's oncpu_ns says for how long,
# its flushes_held how many flushes it surely got.
taskset -c 1 sh -c 'while :; do :; done' &
busy=$!
storm_case tlb_contended tlbstorm numflush=200 targets=1-2 timeout=300
kill "$busy"
wait "$busy" 2>/dev/null

# Two flushers, two workers (the default targets): every flush of either
# flusher reaches both workers.
storm_case tlb_two_flushers tlbstorm numflush=50 cpulist=0-1 timeout=300

# 64 pages > the ceiling (33): full flushes on the targets.
tlb_trace_on
storm_case tlb_pages64 tlbstorm numflush=100 pages=64 targets=1-2 timeout=300
tlb_trace_off tlb_pages64

# pages a multiple of 512 (2 MiB): 6.12 aligns such an anonymous mapping
# to 2 MiB and Debian's THP is "always", yet the storm's mm takes no
# transparent huge page: thp_fault_alloc in /proc/vmstat stays put.
thp_hook() {
	# a kernel built without THP (the debug kernel) has no counter
	[ -d /sys/kernel/mm/transparent_hugepage ] || echo none >"$2/no_thp"
	grep '^thp_fault_alloc ' /proc/vmstat >"$2/vmstat.$1"
}
STORM_HOOK=thp_hook
storm_case tlb_pages512 tlbstorm numflush=50 pages=512 targets=1-2 timeout=300
# shellcheck disable=SC2034 # read by lib.sh's hook()
STORM_HOOK=

# A worker that fails at its first store (docs/safety.md, item 6):
# failalloc fails every user page of the worker on CPU 1, so its
# MAP_POPULATE maps nothing and its first put_user() gets -EFAULT. The
# storm sees the error before it releases the flusher: no flush, status
# failed. failalloc's count says the failure was the one asked for.
if insmod "$KO/failalloc.ko" comm=tlbstorm-w/1 2>"$(case_dir \
	tlb_worker_fails)/failalloc.err"; then
	storm_case tlb_worker_fails tlbstorm numflush=50 targets=1-2 timeout=60
	cat /sys/module/failalloc/parameters/failed \
		>"$OUT/tlb_worker_fails/failalloc_failed"
	rmmod failalloc
fi

# Kernel range: an IPI to every other online CPU, in CAL and not in TLB.
storm_case tlb_kernel tlbstorm mode=kernel numflush=300
storm_case tlb_kernel_pages64 tlbstorm mode=kernel numflush=200 pages=64

# Timed, with a delay between flushes and without latency histogram.
storm_case tlb_timed tlbstorm timeout=2 delay=1000 latency=0 targets=1-2

# Refused parameters: insmod fails, the reason is in dmesg. Once
# (lib.sh's once): the module's own checks are the same C on every kernel,
# and the kernel's parsers they go through (cpulist_parse(), the
# parameter parser) are refused on every kernel in check-ipistorm.sh.
refused "tlbstorm once"

# insmod in a memory cgroup whose limit leaves less than twice what the
# flusher would map (its pages are charged there): refused; a quarter of
# that runs. On every kernel: it reads the kernel's struct mem_cgroup.
memcg=/sys/fs/cgroup/storm-memcg
if echo +memory >/sys/fs/cgroup/cgroup.subtree_control &&
	mkdir -p "$memcg" && echo 24M >"$memcg/memory.max"; then
	(
		# 0: the writer, this subshell, and so its insmods
		echo 0 >"$memcg/cgroup.procs"
		storm_quick_case tlb_bad_memcg tlbstorm numflush=10 pages=4096 cpulist=0
		storm_quick_case tlb_memcg_fits tlbstorm numflush=10 pages=1024 cpulist=0
	)
	rmdir "$memcg"
fi

# Offline CPUs: refused as flusher and as target (the module's check
# against the online mask: once); the default targets skip them (every
# kernel).
if echo 0 >/sys/devices/system/cpu/cpu3/online; then
	refused "tlbstorm offline once"
	storm_case tlb_user_with_offline tlbstorm numflush=300 timeout=300
	storm_case tlb_kernel_with_offline tlbstorm mode=kernel numflush=100
	echo 1 >/sys/devices/system/cpu/cpu3/online
fi

# background=1 without rmmod: insmod returns at once, the storm ends on
# its own and its result appears.
storm_background_done_case tlb_background_done tlbstorm numflush=100 \
	targets=1-2

# background=1: rmmod in the middle of a timed storm stops it promptly;
# the storm was still running when rmmod came, the module is gone after.
storm_background_case tlb_background_rmmod tlbstorm timeout=120

# A fatal signal to a foreground insmod ends a timed storm early.
storm_signal_case tlb_signal tlbstorm timeout=120

# After all of that the kernel still storms, on every CPU again.
storm_case tlb_after tlbstorm numflush=100 timeout=300
