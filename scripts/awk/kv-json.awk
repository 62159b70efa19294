# kv-json.awk - helpers that turn the small "TYPE KEY VALUE" files that
# storm-run writes into JSON objects. Needs json.awk.
#
# One entry per line: TYPE is s (string), n (number; null when the value
# is not one), b (true when the value is 1/true/yes) or j (raw JSON, used
# as it is); KEY has no blanks; VALUE is the rest of the line.

function kv_object(file, indent,    line, type, key, value, out, n, v, sep) {
	out = ""
	n = 0
	while ((getline line < file) > 0) {
		if (line == "")
			continue
		type = line
		sub(/ .*/, "", type)
		key = substr(line, length(type) + 2)
		value = key
		sub(/ .*/, "", key)
		value = (length(key) < length(value)) ? \
		    substr(value, length(key) + 2) : ""
		if (type == "s")
			v = jstr(value)
		else if (type == "n")
			v = isnum(value) ? value : "null"
		else if (type == "b")
			v = (value ~ /^(1|true|yes|y)$/) ? "true" : "false"
		else
			v = value == "" ? "null" : value
		sep = n++ ? "," : ""
		out = out sep "\n" indent "  " jstr(key) ": " v
	}
	close(file)
	return n ? "{" out "\n" indent "}" : "{}"
}

# The whole of a file (a JSON fragment written by another program).
function slurp(file,    line, out) {
	out = ""
	while ((getline line < file) > 0)
		out = out (out == "" ? "" : "\n") line
	close(file)
	return out
}
