# bpftrace-report.awk - the maps bpftrace printed at the end of a traced
# storm run (the probes storm-run writes), summarised:
#
#   @send[<kernel stack>]: N          -> IPI senders (see senders.awk)
#   @handler_ns[<vector>]: <hist>     -> handler time histograms
#   @handled[<vector>, <cpu>]: N      -> handler runs per CPU
#
# Prints one JSON object; writes a text summary to the file `summary`.
# Needs json.awk and senders.awk. -v tool= version= source= summary=

# "4K" -> 4096, "2M" -> 2097152 (bpftrace's powers of 1024)
function size(s,    m) {
	m = 1
	if (s ~ /K$/) m = 1024
	else if (s ~ /M$/) m = 1048576
	else if (s ~ /G$/) m = 1073741824
	else if (s ~ /T$/) m = 1099511627776
	sub(/[KMGT]$/, "", s)
	return s * m
}

function start_hist(name) {
	hist = name
	if (!(name in hcount))
		hnames[++nh] = name
	hcount[name] += 0
}

# "[4K, 8K)   8 |@@@ |", "[0]   3 |@|", "[2, 4)   1 |  |"
function hist_line(line,    spec, rest, lo, hi, c, k) {
	k = index(line, "]")
	if (!k)
		k = index(line, ")")
	spec = substr(line, 2, k - 2)
	rest = substr(line, k + 1)
	sub(/^[ \t]+/, "", rest)
	c = rest
	sub(/[ \t].*/, "", c)
	if (spec ~ /^\.\.\./)
		return
	if (index(spec, ",")) {
		lo = spec
		sub(/,.*/, "", lo)
		hi = spec
		sub(/.*,[ \t]*/, "", hi)
		hi = hi == "..." ? -1 : size(hi)
	} else {
		lo = spec
		hi = size(spec) + 1
	}
	if (c + 0 == 0)
		return
	hb[hist, ++hn[hist]] = sprintf("{\"low\": %.0f, \"high\": %s, \"count\": %.0f}", \
	    size(lo), (hi < 0 ? "null" : sprintf("%.0f", hi)), c)
	htext[hist] = htext[hist] sprintf(" %s:%d", lo, c)
	hcount[hist] += c
}

/^\]: [0-9]+/ && in_send {
	c = $0
	sub(/^\]: /, "", c)
	add_stack(n, c + 0)
	in_send = 0
	next
}
in_send {
	st[++n] = $0
	next
}
/^@send\[/ {
	n = 0
	if ($0 ~ /\]: [0-9]+[ \t]*$/) {
		# no stack: the kernel could not give one
		c = $0
		sub(/.*\]: /, "", c)
		add_stack(0, c + 0)
		next
	}
	in_send = 1
	next
}
/^@handler_ns(\[|:)/ {
	name = $0
	if (name ~ /^@handler_ns:/)
		name = "all"
	sub(/^@handler_ns\[/, "", name)
	sub(/\]:.*/, "", name)
	start_hist(name)
	next
}
/^@handled\[/ {
	key = $0
	sub(/^@handled\[/, "", key)
	c = key
	sub(/\]:.*/, "", key)
	sub(/.*\]: */, "", c)
	vec = key
	sub(/,.*/, "", vec)
	cpu = key
	sub(/.*,[ \t]*/, "", cpu)
	if (!((vec, "n") in handled))
		hvecs[++nhv] = vec
	handled[vec, "n"]++
	handled[vec, cpu] = c
	hcpus[vec] = hcpus[vec] (hcpus[vec] == "" ? "" : " ") cpu
	next
}
/^[\[(]/ && hist != "" {
	hist_line($0)
	next
}
/^[ \t]*$/ {
	hist = ""
	next
}
/^@/ {
	hist = ""
	next
}

END {
	printf "{\n  \"tool\": %s,\n  \"version\": %s,\n  \"source\": %s,\n", \
	    jstr(tool), jstr(version), jstr(source)
	printf "  \"sends\": %.0f,\n  \"senders\": %s,\n", snd_total, senders_json(20)
	printf "  \"handler_ns\": {"
	for (i = 1; i <= nh; i++) {
		h = hnames[i]
		printf "%s\n    %s: {\"count\": %.0f, \"buckets\": [", \
		    (i > 1 ? "," : ""), jstr(h), hcount[h]
		for (j = 1; j <= hn[h]; j++)
			printf "%s%s", (j > 1 ? ", " : ""), hb[h, j]
		printf "]}"
	}
	printf "%s},\n  \"handled\": {", (nh ? "\n  " : "")
	for (i = 1; i <= nhv; i++) {
		v = hvecs[i]
		printf "%s\n    %s: {", (i > 1 ? "," : ""), jstr(v)
		m = split(hcpus[v], cs, " ")
		for (j = 1; j <= m; j++)
			printf "%s\"%s\": %.0f", (j > 1 ? ", " : ""), cs[j], handled[v, cs[j]]
		printf "}"
	}
	printf "%s}\n}\n", (nhv ? "\n  " : "")
	if (summary != "") {
		printf "%s", senders_text("IPI senders in the traced run (" tool \
		    ": " source "), sends by kernel function:", 10) > summary
		for (i = 1; i <= nh; i++) {
			h = hnames[i]
			printf "  %s handler time (ns, n=%.0f), low:count:%s\n", h, \
			    hcount[h], htext[h] > summary
		}
		close(summary)
	}
}
