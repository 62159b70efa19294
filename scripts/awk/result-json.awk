# result-json.awk - a storm's "name: value" result file as a JSON object,
# numbers as numbers. Needs json.awk.
#
# CPU lists stay strings even when they are one CPU ("param.cpulist: 1"
# and "param.cpulist: 0-3" must have the same type), and so do values that
# are not plain decimals (histograms, kernel release, modes).

function result_object(file, indent,    line, k, name, value, out, n, v) {
	out = ""
	n = 0
	while ((getline line < file) > 0) {
		if (line ~ /^[ \t]*$/)
			continue
		k = index(line, ": ")
		if (k) {
			name = substr(line, 1, k - 1)
			value = substr(line, k + 2)
		} else if (line ~ /:$/) {
			name = substr(line, 1, length(line) - 1)
			value = ""
		} else {
			continue
		}
		gsub(/^[ \t]+|[ \t]+$/, "", value)
		if (name ~ /(^|\.)(cpulist|targets|cpus_online|cpus)$/)
			v = jstr(value)
		else
			v = jval(value)
		out = out (n++ ? "," : "") "\n" indent "  " jstr(name) ": " v
	}
	close(file)
	return n ? "{" out "\n" indent "}" : "{}"
}
