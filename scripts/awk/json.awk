# json.awk - JSON string and number helpers for the storm-run awk programs.
# POSIX awk (mawk, gawk, busybox); load with -f before the program.

# jstr(s): s as a JSON string literal, with ", \ and control characters
# escaped. Bytes >= 0x80 pass through (UTF-8 stays UTF-8).
function jstr(s,    out, i, c, n) {
	if (!_json_init) {
		for (i = 1; i < 32; i++)
			_json_ctl[sprintf("%c", i)] = sprintf("\\u%04x", i)
		_json_ctl["\t"] = "\\t"
		_json_ctl["\n"] = "\\n"
		_json_ctl["\r"] = "\\r"
		_json_ctl[sprintf("%c", 127)] = "\\u007f"
		_json_init = 1
	}
	# "&&" doubles the backslash in every awk; "\\\\" does not in mawk
	gsub(/\\/, "&&", s)
	gsub(/"/, "\\\"", s)
	if (s !~ /[\001-\037\177]/)
		return "\"" s "\""
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		out = out ((c in _json_ctl) ? _json_ctl[c] : c)
	}
	return "\"" out "\""
}

# isnum(s): s is a plain decimal number that JSON can carry as written.
function isnum(s) {
	return s ~ /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/
}

# jval(s): s as a JSON number when it is one, else as a string.
function jval(s) {
	return isnum(s) ? s : jstr(s)
}
