# trace-report.awk - `trace-cmd report` of a traced storm run, summarised:
# events counted in total and per CPU, and the IPI senders from the
# kernel stacks that follow each send (-T on ipi:ipi_send_* or on
# storm-run's kprobe events on the x86 send functions; the function tracer
# with --func-stack is understood too).
# Prints one JSON object; writes a text summary to the file `summary`.
# Needs json.awk and senders.awk.
#
#   -v tool= version= source=   what recorded the trace
#   -v events_file=             the events that were enabled, one a line
#   -v window=1                 count only between the "storm-run: begin"
#                               and "storm-run: end" trace markers
#   -v summary=                 where the text summary goes

BEGIN {
	if (events_file != "") {
		while ((getline e < events_file) > 0) {
			enabled[++nenabled] = e
			short = e
			sub(/^[^:]*:/, "", short)
			fullname[short] = e
		}
		close(events_file)
	}
}

function is_send(ev) {
	return ev ~ /^(storm_run:send_|ipi:ipi_send_cpu|function:native_send_call_func|function:native_smp_send_reschedule)/
}

# A stack is a send's when one of its first frames is the send function
# (function tracer) or the send tracepoint's handler (-T): decided from
# the frames, since other CPUs' lines may come between event and stack.
function is_send_stack(    i) {
	for (i = 1; i <= n && i <= 5; i++)
		if (st[i] ~ /^=> (trace_event_raw_event_ipi_send_cpu|native_send_call_func|native_smp_send_reschedule)/)
			return 1
	return 0
}

function finish_stack() {
	if (collecting && n && is_send_stack())
		add_stack(n, 1)
	collecting = 0
	n = 0
}

/^=> / {
	if (collecting)
		st[++n] = $0
	next
}

{
	finish_stack()
	if (window) {
		if (index($0, "storm-run: begin")) {
			inside = 1
			marked = 1
			next
		}
		if (index($0, "storm-run: end")) {
			inside = 0
			next
		}
		if (!inside)
			next
	}
	if (!match($0, /\[[0-9]+\] /))
		next
	cpu = substr($0, RSTART + 1, RLENGTH - 3) + 0
	rest = substr($0, RSTART + RLENGTH)
	# skip the flags and timestamp: "d..2. 192.741763: "
	k = index(rest, ": ")
	if (!k)
		next
	rest = substr(rest, k + 2)
	sub(/^[ \t]+/, "", rest)
	k = index(rest, ":")
	if (!k)
		next
	ev = substr(rest, 1, k - 1)
	fields = substr(rest, k + 1)
	sub(/^[ \t]+/, "", fields)
	if (ev == "kernel_stack") {
		collecting = 1
		n = 0
		next
	}
	if (ev == "function") {
		f = fields
		sub(/[ \t].*/, "", f)
		ev = "function:" f
	} else if (ev in fullname) {
		ev = fullname[ev]
	}
	if (!(ev in count))
		evs[++nev] = ev
	count[ev]++
	percpu[ev, cpu]++
	if (cpu > maxcpu)
		maxcpu = cpu
	if (is_send(ev))
		sends++
}

function per_cpu_json(ev,    c, out) {
	out = ""
	for (c = 0; c <= maxcpu; c++)
		if ((ev, c) in percpu)
			out = out (out == "" ? "" : ", ") "\"" c "\": " percpu[ev, c]
	return "{" out "}"
}

function per_cpu_text(ev,    c, out) {
	out = ""
	for (c = 0; c <= maxcpu; c++)
		if ((ev, c) in percpu)
			out = out (out == "" ? "" : " ") "cpu" c ":" percpu[ev, c]
	return out
}

END {
	finish_stack()
	printf "{\n  \"tool\": %s,\n  \"version\": %s,\n  \"source\": %s,\n", \
	    jstr(tool), jstr(version), jstr(source)
	printf "  \"events\": ["
	for (i = 1; i <= nenabled; i++)
		printf "%s%s", (i > 1 ? ", " : ""), jstr(enabled[i])
	printf "],\n  \"counts\": {"
	for (i = 1; i <= nev; i++)
		printf "%s\n    %s: {\"total\": %d, \"per_cpu\": %s}", \
		    (i > 1 ? "," : ""), jstr(evs[i]), count[evs[i]], \
		    per_cpu_json(evs[i])
	printf "%s},\n", (nev ? "\n  " : "")
	printf "  \"window\": %s,\n", jstr(!window ? "whole trace" : \
	    marked ? "storm-run markers" : "markers not seen")
	printf "  \"sends\": %d,\n  \"sends_with_stack\": %d,\n", sends, snd_total
	printf "  \"senders\": %s\n}\n", senders_json(20)
	if (summary != "") {
		printf "%s", senders_text("IPI senders in the traced run (" tool \
		    ": " source "), sends by kernel function:", 10) > summary
		printf "  events in the window, by CPU:\n" > summary
		for (i = 2; i <= nev; i++) {     # largest count first
			e = evs[i]
			for (j = i - 1; j >= 1 && count[evs[j]] < count[e]; j--)
				evs[j + 1] = evs[j]
			evs[j + 1] = e
		}
		for (i = 1; i <= nev; i++)
			printf "  %8d  %s  (%s)\n", count[evs[i]], evs[i], \
			    per_cpu_text(evs[i]) > summary
		close(summary)
	}
}
