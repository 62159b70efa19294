# shellcheck shell=sh
# lib.sh - sourced by the in-guest check scripts (tests/guest/check-*.sh).
#
# Every case leaves its evidence in $OUT/<case>/ for the host-side pytest
# files to assert on: the insmod exit status and stderr, the module's
# result file, the dmesg lines it added, and /proc/interrupts before and
# after. The checks themselves run on the host, in Python.
#
#   storm_case NAME MODULE [PARAM=VALUE...]   insmod, save, rmmod
#   case_dir NAME                             make and print $OUT/NAME
#   dmesg_mark / dmesg_since MARK             the kernel log added since

: "${OUT:?OUT must name the output directory}"
KO=${KO:-build/$(uname -r)}

mkdir -p /sys/kernel/debug 2>/dev/null
mountpoint -q /sys/kernel/debug 2>/dev/null ||
	mount -t debugfs none /sys/kernel/debug 2>/dev/null

case_dir() {
	mkdir -p "$OUT/$1" && printf '%s\n' "$OUT/$1"
}

dmesg_mark() {
	dmesg | wc -l
}

dmesg_since() {
	dmesg | tail -n "+$(($1 + 1))"
}

# storm_case NAME MODULE [PARAM=VALUE...]
storm_case() {
	name=$1 module=$2
	shift 2
	dir=$(case_dir "$name")
	printf '%s\n' "$*" >"$dir/params"
	mark=$(dmesg_mark)
	cat /proc/interrupts >"$dir/interrupts.before"
	insmod "$KO/$module.ko" "$@" 2>"$dir/stderr"
	echo $? >"$dir/rc"
	cat /proc/interrupts >"$dir/interrupts.after"
	if [ -r "/sys/kernel/debug/$module/result" ]; then
		cat "/sys/kernel/debug/$module/result" >"$dir/result"
	fi
	if grep -q "^$module " /proc/modules; then
		rmmod "$module" 2>>"$dir/stderr"
		echo $? >"$dir/rmmod_rc"
	fi
	dmesg_since "$mark" >"$dir/dmesg"
	echo "case $name: insmod rc=$(cat "$dir/rc")"
}
