# senders.awk - who sent the IPIs: kernel stacks of the send path, reduced
# to "caller via api" and counted. Shared by trace-report.awk and
# bpftrace-report.awk; needs json.awk.
#
# A stack is given innermost frame first (the arch send function). Frames
# of the tracer itself are dropped; the IPI plumbing (arch send functions,
# kernel/smp.c, on_each_cpu*, the x86 TLB-flush IPI path) is walked over:
# "via" is its outermost frame (the API the caller used), "function" the
# first frame beyond it, the kernel function that asked for the IPI.

# "=> generic_exec_single (ffffffff8116c3f0)", "  ipistorm_sender_fn+154",
# "smp_call_function_single+0x5e/0x90 [ipistorm]" -> the function name
function frame_name(s) {
	sub(/^[ \t]*(=>[ \t]*)?/, "", s)
	sub(/[ \t].*$/, "", s)
	sub(/[+].*$/, "", s)
	sub(/\.(cold|isra|constprop|part|llvm)[.0-9]*$/, "", s)
	return s
}

function is_tracer_frame(f) {
	return f ~ /^(bpf_|__bpf_|perf_|trace_event_|__traceiter_|__trace_|trace_call_bpf|kprobe_|__kprobes|kprobe_ftrace_handler|ftrace_|__ftrace|arch_ftrace|function_trace_call|function_stack_trace_call|0x[0-9a-f]+$|$)/
}

function is_plumbing(f) {
	return f ~ /^(native_send_call_func|native_smp_send_reschedule|native_send_call_func_single_ipi|x2apic_|__x2apic_|default_send_IPI|__default_send_IPI|apic_send_IPI|flat_send_IPI|_flat_send_IPI|physflat_send_IPI|kvm_send_ipi|kvm_smp_send_call_func|__send_ipi_mask|xen_send_IPI|__xen_send_IPI|xen_smp_send|hv_send_ipi|send_call_function|arch_send_call_function|smp_send_reschedule|__smp_call_single_queue|generic_exec_single|smp_call_function|on_each_cpu|__on_each_cpu|ipi_send_|__ipi_send_|native_flush_tlb_multi|flush_tlb_multi|__flush_tlb_multi)/
}

# Count @count sends with the stack in st[1..n] (innermost first).
function add_stack(n, count,    i, m, f, clean, via, fn, key, ex) {
	m = 0
	for (i = 1; i <= n; i++) {
		f = frame_name(st[i])
		if (is_tracer_frame(f))
			continue
		clean[++m] = f
	}
	if (!m) {
		via = "?"
		fn = "?"
	} else {
		for (i = 1; i <= m && is_plumbing(clean[i]); i++)
			;
		if (i > m) {
			fn = clean[m]
			via = m > 1 ? clean[m - 1] : clean[m]
		} else {
			fn = clean[i]
			via = i > 1 ? clean[i - 1] : "-"
		}
	}
	key = fn SUBSEP via
	if (!(key in snd_count)) {
		snd_keys[++snd_n] = key
		ex = ""
		for (i = 1; i <= m && i <= 8; i++)
			ex = ex (i > 1 ? SUBSEP : "") clean[i]
		snd_stack[key] = ex
		snd_fn[key] = fn
		snd_via[key] = via
	}
	snd_count[key] += count
	snd_total += count
}

# indices of snd_keys sorted by count, largest first (insertion sort)
function sort_senders(    i, j, t) {
	for (i = 1; i <= snd_n; i++)
		snd_order[i] = i
	for (i = 2; i <= snd_n; i++) {
		t = snd_order[i]
		for (j = i - 1; j >= 1 && \
		    snd_count[snd_keys[snd_order[j]]] < snd_count[snd_keys[t]]; j--)
			snd_order[j + 1] = snd_order[j]
		snd_order[j + 1] = t
	}
}

function senders_json(limit,    i, k, out, n, fr, j, s) {
	sort_senders()
	out = ""
	for (i = 1; i <= snd_n && i <= limit; i++) {
		k = snd_keys[snd_order[i]]
		n = split(snd_stack[k], fr, SUBSEP)
		s = ""
		for (j = 1; j <= n; j++)
			s = s (j > 1 ? ", " : "") jstr(fr[j])
		out = out (i > 1 ? "," : "") "\n    {\"function\": " \
		    jstr(snd_fn[k]) ", \"via\": " jstr(snd_via[k]) \
		    ", \"count\": " sprintf("%.0f", snd_count[k]) \
		    ", \"stack\": [" s "]}"
	}
	return "[" out (out == "" ? "" : "\n  ") "]"
}

function senders_text(title, limit,    i, k, out) {
	sort_senders()
	out = title "\n"
	if (!snd_n)
		out = out "  (no IPI sends seen)\n"
	for (i = 1; i <= snd_n && i <= limit; i++) {
		k = snd_keys[snd_order[i]]
		out = out sprintf("  %8.0f  %s", snd_count[k], snd_fn[k]) \
		    (snd_via[k] == "-" ? "" : "  via " snd_via[k]) "\n"
	}
	if (snd_n > limit)
		out = out sprintf("  (%d more call sites)\n", snd_n - limit)
	return out
}
