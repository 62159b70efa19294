# shellcheck shell=sh
# shellcheck disable=SC2154,SC2034 # storm-run sets and reads the variables
# storm-run-trace.sh - the traced runs of storm run (--trace, --bpftrace):
# start the tracer around the load, stop it, leave its raw output and
# what recorded it in $tmp for the run's capture. Sourced by storm-run;
# stormsuite/runfiles/tracesum.py makes the summaries.

# Events of @list (one per line) that this kernel has.
have_events() {
	grep -Fx -f "$1" "$tracefs/available_events" 2>/dev/null
}

start_trace() {
	cat >"$tmp/want-events" <<'EOF'
ipi:ipi_send_cpu
ipi:ipi_send_cpumask
csd:csd_queue_cpu
csd:csd_function_entry
csd:csd_function_exit
irq_vectors:call_function_entry
irq_vectors:call_function_exit
irq_vectors:call_function_single_entry
irq_vectors:call_function_single_exit
irq_vectors:reschedule_entry
tlb:tlb_flush
sched:sched_wake_idle_without_ipi
EOF
	have_events "$tmp/want-events" >"$tmp/trace-events"
	if grep -qx 'ipi:ipi_send_cpu' "$tmp/trace-events"; then
		trace_source="ipi:ipi_send_cpu, ipi:ipi_send_cpumask (stack per event)"
	else
		# No send-side tracepoint before 6.4: kprobe events on the x86
		# send functions. (Not the function tracer: with --func-stack on
		# these functions a 6.1 guest hung while trace-cmd set up.)
		trace_source="kprobe events on the x86 send functions (stack per event)"
		for f in native_send_call_func_single_ipi native_send_call_func_ipi \
			native_smp_send_reschedule; do
			grep -q "^$f\$" "$tracefs/available_filter_functions" 2>/dev/null ||
				continue
			e=${f#native_}
			if echo "p:storm_run/$e $f" >>"$tracefs/kprobe_events" 2>/dev/null; then
				kprobes="$kprobes $e"
				echo "storm_run:$e" >>"$tmp/trace-events"
			fi
		done
	fi
	set --
	while read -r e; do
		set -- "$@" -e "$e"
	done <"$tmp/trace-events"
	# load.sh marks the storm's window; the report counts only inside it
	(cd "$tmp" && STORM_RUN_MARKER=$tracefs/trace_marker \
		exec trace-cmd record -q -T -o "$tmp/trace.dat" "$@" \
		/bin/sh "$tmp/load.sh") >"$tmp/trace-cmd.log" 2>&1 &
	wait_tracer $! trace-cmd
	remove_kprobes
}

# The kprobe events start_trace made, gone again.
remove_kprobes() {
	for e in $kprobes; do
		echo 0 >"$tracefs/events/storm_run/$e/enable" 2>/dev/null
		echo "-:storm_run/$e" >>"$tracefs/kprobe_events" 2>/dev/null
	done
	kprobes=
}

# wait_tracer PID NAME: wait for a tracer that runs load.sh as its child.
# A tracer that has not started the load after TRACER_SETUP seconds, or is
# still running TRACER_GRACE seconds after the load finished, is stopped
# (SIGINT: it still writes what it has), so a run cannot hang for ever.
TRACER_SETUP=600
TRACER_GRACE=300
wait_tracer() {
	pid=$1 name=$2 waited=0
	while kill -0 "$pid" 2>/dev/null; do
		if [ -s "$tmp/insmod.rc" ] || ! [ -e "$tmp/started" ]; then
			waited=$((waited + 1))
		fi
		limit=$TRACER_SETUP
		[ -s "$tmp/insmod.rc" ] && limit=$TRACER_GRACE
		if [ "$waited" -gt "$limit" ]; then
			say "$name still running after ${limit} s: stopping it"
			kill -INT "$pid" 2>/dev/null
			sleep 10
			kill -KILL "$pid" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait "$pid" 2>/dev/null
}

# the trace's raw files for the capture: the report, the events enabled
# and what recorded it (stormsuite/runfiles/tracesum.py summarizes them)
summarize_trace() {
	trace-cmd report -i "$tmp/trace.dat" >"$tmp/trace.txt" 2>"$tmp/trace-report.err" ||
		die "trace-cmd report failed: $(head -n 5 "$tmp/trace-report.err")"
	{
		kv s tool trace-cmd
		kv s version "$(trace-cmd --version 2>/dev/null |
			sed -n 's/.*version *//p' | head -n 1)"
		kv s source "$trace_source, between storm-run's trace markers"
	} >"$tmp/trace.meta"
	if [ -n "$keep" ]; then
		cp "$tmp/trace.txt" "$keep/$storm-$release.trace-report.txt"
		cp "$tmp/trace-events" "$keep/$storm-$release.trace-events"
	fi
}

start_bpftrace() {
	: >"$tmp/probes.bt"
	# count only while the module's init (the storm) runs, when we can
	gate=
	if grep -q '^do_init_module$' "$tracefs/available_filter_functions" 2>/dev/null; then
		gate="/@storm_on/ "
		cat >>"$tmp/probes.bt" <<'EOF'
kprobe:do_init_module { @storm_on = 1; }
kretprobe:do_init_module { @storm_on = 0; }
EOF
	fi
	if grep -qx 'ipi:ipi_send_cpu' "$tracefs/available_events"; then
		bpf_source="tracepoint:ipi:ipi_send_cpu, tracepoint:ipi:ipi_send_cpumask"
		printf '%s %s{ @send[kstack(12)] = count(); }\n' \
			"$bpf_source" "$gate" >>"$tmp/probes.bt"
	else
		set --
		for f in native_send_call_func_single_ipi native_send_call_func_ipi \
			native_smp_send_reschedule; do
			if grep -q "^$f\$" "$tracefs/available_filter_functions" 2>/dev/null; then
				set -- "$@" "kprobe:$f"
			fi
		done
		[ $# -gt 0 ] ||
			die "--bpftrace: no ipi:* tracepoints and no x86 send functions to kprobe"
		bpf_source=$(echo "$*" | sed 's/ /, /g')
		printf '%s %s{ @send[kstack(12)] = count(); }\n' \
			"$bpf_source" "$gate" >>"$tmp/probes.bt"
	fi
	for v in call_function call_function_single; do
		grep -qx "irq_vectors:${v}_entry" "$tracefs/available_events" || continue
		cat >>"$tmp/probes.bt" <<EOF
tracepoint:irq_vectors:${v}_entry ${gate}{ @${v}_ts[cpu] = nsecs; }
tracepoint:irq_vectors:${v}_exit /@${v}_ts[cpu]/ { @handler_ns["$v"] = hist(nsecs - @${v}_ts[cpu]); @handled["$v", cpu] = count(); delete(@${v}_ts[cpu]); }
EOF
	done
	clears=
	for m in storm_on call_function_ts call_function_single_ts; do
		if grep -q "@$m" "$tmp/probes.bt"; then
			clears="$clears clear(@$m);"
		fi
	done
	echo "END {$clears }" >>"$tmp/probes.bt"
	# -c: the load starts only once every probe is attached
	(cd "$tmp" && exec bpftrace "$tmp/probes.bt" \
		-c "/bin/sh $tmp/load.sh") >"$tmp/bpftrace.out" 2>"$tmp/bpftrace.err" &
	wait_tracer $! bpftrace
}

summarize_bpftrace() {
	{
		kv s tool bpftrace
		kv s version "$(bpftrace --version 2>/dev/null | sed -n 's/^bpftrace *//p')"
		kv s source "$bpf_source${gate:+, while the module init runs}"
	} >"$tmp/bpftrace.meta"
	if [ -n "$keep" ]; then
		cp "$tmp/bpftrace.out" "$keep/$storm-$release.bpftrace.out"
		cp "$tmp/probes.bt" "$keep/$storm-$release.probes.bt"
	fi
}

