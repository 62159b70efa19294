#!/bin/sh
# udev-after-faults.sh - in a guest: what sends CALs right after
# check-faults.sh (docs/safety.md, udev settled before every case): the
# ipi_idle case under the function tracer on the x86 senders, before
# check-faults.sh, right after it and 20 s later.
#
#   scripts/storm vm --kernel build/kernel/debug-6.1 --cpus 4 \
#       --timeout 1800 --rwdir DIR -- \
#       sh -c 'OUT=$1 sh tests/e2e/probes/udev-after-faults.sh >$1/console 2>&1' x DIR
. tests/guest/lib.sh
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
traced_case() {
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 16384 >$T/buffer_size_kb
	echo 'native_send_call_func_single_ipi native_send_call_func_ipi' >$T/set_ftrace_filter
	echo function >$T/current_tracer
	echo 1 >$T/options/func_stack_trace
	echo 1 >$T/events/irq/irq_handler_entry/enable
	echo 1 >$T/tracing_on
	ps -eo pid,psr,stat,pcpu,comm >"$OUT/$1.ps"
	cat /proc/irq/21/effective_affinity_list >"$OUT/$1.irq21" 2>&1
	storm_case "$@"
	echo 0 >$T/tracing_on
	cat $T/trace >"$OUT/$1.trace"
	echo 0 >$T/options/func_stack_trace
	echo nop >$T/current_tracer
	echo 0 >$T/events/irq/irq_handler_entry/enable
}
echo scan=off >/sys/kernel/debug/kmemleak 2>/dev/null
traced_case pre_idle ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50
sh tests/guest/check-faults.sh >"$OUT/faults.console" 2>&1
traced_case post_idle ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50
sleep 20
traced_case late_idle ipistorm numipi=500 single=1 wait=1 cpulist=0 offset=1 delay=50
dmesg >"$OUT/dmesg"
echo complete >"$OUT/complete"
