#!/bin/sh
# debug-idle-ipis.sh OUT - in a debug guest: the call-function IPIs an
# idle guest sends itself, and from where (docs/safety.md, "What the debug
# kernel changes"): 20 s traced with KFENCE sampling on, 20 s with it off.
#
#   scripts/storm vm --kernel build/kernel/debug-6.1 --cpus 4 \
#       --timeout 2400 --rwdir DIR -- sh tests/e2e/probes/debug-idle-ipis.sh DIR
OUT=$1
T=/sys/kernel/tracing
cal() { awk '/CAL:/ { print $2, $3, $4, $5 }' /proc/interrupts; }
traced() {
	cal >"$OUT/cal.$1.before"
	echo 1 >$T/events/kprobes/enable
	sleep 20
	echo 0 >$T/events/kprobes/enable
	cal >"$OUT/cal.$1.after"
	cat $T/trace >"$OUT/trace.$1"
	echo >$T/trace
}
mountpoint -q $T || mount -t tracefs none $T
echo 'p:ipisend native_send_call_func_single_ipi cpu=%di:s32' >$T/kprobe_events
echo 'p:ipimask native_send_call_func_ipi' >>$T/kprobe_events
echo stacktrace >$T/events/kprobes/ipisend/trigger
echo stacktrace >$T/events/kprobes/ipimask/trigger
echo 16384 >$T/buffer_size_kb
traced kfence_on
echo 0 >/sys/module/kfence/parameters/sample_interval
traced kfence_off
ps -eo pid,psr,comm >"$OUT/ps"
