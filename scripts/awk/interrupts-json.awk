# interrupts-json.awk BEFORE AFTER - two /proc/interrupts snapshots as one
# JSON object: the CPU columns, and for every row its description and the
# per-CPU counts before, after and their difference (modulo 2^32, as the
# kernel's counters wrap), plus the total difference over all CPUs.
#
#   {"cpus": [0, 1], "rows": {"CAL": {"description": "Function call
#    interrupts", "before": [..], "after": [..], "delta": [..],
#    "total": N}, ...}}
#
# Needs json.awk. ERR and MIS are one system-wide number: one column.

function parse_line(snap,    name, rest, n, f, i, k, desc) {
	if (FNR == 1 || ncpu[snap] == 0) {
		n = split($0, f, " ")
		ncpu[snap] = 0
		for (i = 1; i <= n; i++) {
			if (f[i] !~ /^CPU[0-9]+$/)
				return
			col[snap, ++ncpu[snap]] = substr(f[i], 4) + 0
		}
		return
	}
	k = index($0, ":")
	if (!k)
		return
	name = substr($0, 1, k - 1)
	gsub(/^[ \t]+|[ \t]+$/, "", name)
	rest = substr($0, k + 1)
	n = split(rest, f, " ")
	for (i = 1; i <= n && i <= ncpu[snap]; i++) {
		if (f[i] !~ /^[0-9]+$/)
			break
		cnt[snap, name, i] = f[i]
	}
	ncnt[snap, name] = i - 1
	desc = ""
	for (; i <= n; i++)
		desc = desc (desc == "" ? "" : " ") f[i]
	if (!((snap, name) in seen)) {
		seen[snap, name] = 1
		order[snap, ++nrows[snap]] = name
	}
	descr[name] = desc
}

FNR == 1 { file++ }
file == 1 { parse_line("b") }
file == 2 { parse_line("a") }

# count of row @name in snapshot @snap for CPU number @cpu (0 if absent)
function count_of(snap, name, cpu,    i) {
	for (i = 1; i <= ncnt[snap, name]; i++)
		if (col[snap, i] == cpu)
			return cnt[snap, name, i]
	return 0
}

function list(snap, name, single,    i, s) {
	s = ""
	for (i = 1; i <= (single ? 1 : ncpu["a"]); i++)
		s = s (i > 1 ? ", " : "") sprintf("%.0f", count_of(snap, name, col["a", i]))
	return "[" s "]"
}

END {
	if (file < 2 || !ncpu["a"]) {
		print "interrupts-json.awk: need two /proc/interrupts snapshots" > "/dev/stderr"
		exit 1
	}
	printf "{\"cpus\": ["
	for (i = 1; i <= ncpu["a"]; i++)
		printf "%s%d", (i > 1 ? ", " : ""), col["a", i]
	printf "], \"rows\": {"
	for (r = 1; r <= nrows["a"]; r++) {
		name = order["a", r]
		single = ncnt["a", name] == 1 && ncpu["a"] > 1 &&
		    (name == "ERR" || name == "MIS")
		d = ""
		total = 0
		for (i = 1; i <= (single ? 1 : ncpu["a"]); i++) {
			c = col["a", i]
			v = count_of("a", name, c) - count_of("b", name, c)
			if (v < 0)
				v += 4294967296
			total += v
			d = d (i > 1 ? ", " : "") sprintf("%.0f", v)
		}
		printf "%s\n  %s: {\"description\": %s, \"before\": %s, \"after\": %s, \"delta\": [%s], \"total\": %.0f}", \
		    (r > 1 ? "," : ""), jstr(name), jstr(descr[name]),
		    list("b", name, single), list("a", name, single), d, total
	}
	printf "}}\n"
}
