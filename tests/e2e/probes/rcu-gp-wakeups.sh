#!/bin/sh
# rcu-gp-wakeups.sh - in a debug guest: what sends the other CPUs IPIs
# while slabstorm creates and destroys 1000 untouched caches on CPU 0
# (slab_untouched; docs/safety.md, "What the debug kernel changes"): the
# case under the function tracer on the x86 senders, with their stacks.
#
#   scripts/storm vm --kernel build/kernel/debug-6.1 --cpus 4 \
#       --timeout 1800 --rwdir DIR -- \
#       sh -c 'OUT=$1 sh tests/e2e/probes/rcu-gp-wakeups.sh >$1/console 2>&1' x DIR
. tests/guest/lib.sh
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T
echo scan=off >/sys/kernel/debug/kmemleak 2>/dev/null
traced_case() {
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 65536 >$T/buffer_size_kb
	echo 'native_send_call_func_single_ipi native_send_call_func_ipi native_smp_send_reschedule' >$T/set_ftrace_filter
	echo function >$T/current_tracer
	echo 1 >$T/options/func_stack_trace
	echo 1 >$T/tracing_on
	ps -eo pid,psr,stat,pcpu,comm >"$OUT/$1.ps"
	storm_case "$@"
	echo 0 >$T/tracing_on
	cat $T/trace >"$OUT/$1.trace"
	echo 0 >$T/options/func_stack_trace
	echo nop >$T/current_tracer
}
traced_case untouched slabstorm mode=create numcache=1000 timeout=300
dmesg >"$OUT/dmesg"
echo complete >"$OUT/complete"
