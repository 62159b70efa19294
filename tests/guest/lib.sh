# shellcheck shell=sh
# lib.sh - sourced by the in-guest check scripts (tests/guest/check-*.sh).
#
# Every case leaves its evidence in $OUT/<case>/ for the host-side pytest
# files to assert on: the insmod exit status and stderr, the module's
# result file, the dmesg lines it added, and /proc/interrupts before and
# after. The checks themselves run on the host, in Python.
#
#   storm_case NAME MODULE [PARAM=VALUE...]         insmod, save, rmmod
#   storm_signal_case NAME MODULE [PARAM=VALUE...]  TERM to insmod mid-storm
#   storm_rmmod_during_case NAME MODULE [PARAM...]  rmmod while insmod runs
#   storm_background_case NAME MODULE [PARAM...]    background=1, rmmod mid-storm
#   case_dir NAME                                   make and print $OUT/NAME
#   dmesg_mark / dmesg_since MARK                   the kernel log added since
#   cpu_set CPU 0|1 / storm_threads                 hotplug; the storms' threads
#
# If STORM_HOOK names a function, it is called as `$STORM_HOOK before DIR`
# and `$STORM_HOOK after DIR` around every case (e.g. to list the caches).

: "${OUT:?OUT must name the output directory}"
KO=${KO:-build/$(uname -r)}

mkdir -p /sys/kernel/debug 2>/dev/null
mountpoint -q /sys/kernel/debug 2>/dev/null ||
	mount -t debugfs none /sys/kernel/debug 2>/dev/null

case_dir() {
	mkdir -p "$OUT/$1" && printf '%s\n' "$OUT/$1"
}

# dmesg_mark, dmesg_since and udev_settle: storm run's own
. scripts/storm-capture.sh

hook() {
	[ -z "${STORM_HOOK:-}" ] || "$STORM_HOOK" "$@"
}

save_result() {
	cat "/sys/kernel/debug/$1/result" >"$2/result" 2>/dev/null
}

unload() {
	if grep -q "^$1 " /proc/modules; then
		rmmod "$1" 2>>"$2/stderr"
		echo $? >"$2/rmmod_rc"
	fi
}

# case_open NAME: its directory in $dir, the hook, a mark in the log
case_open() {
	dir=$(case_dir "$1")
	hook before "$dir"
	mark=$(dmesg_mark)
}

# case_close MODULE: its result (if any), the unload, the log since the
# mark, the hook
case_close() {
	if [ -r "/sys/kernel/debug/$1/result" ]; then
		save_result "$1" "$dir"
	fi
	unload "$1" "$dir"
	dmesg_since "$mark" >"$dir/dmesg"
	hook after "$dir"
}

seconds_since() {
	echo $(($(date +%s) - $1))
}

# cpu_set CPU 0|1: take a CPU offline or bring it online
cpu_set() {
	echo "$2" >"/sys/devices/system/cpu/cpu$1/online"
}

storm_threads() {
	# every thread of the three storms, by name (kthreads have no cmdline)
	for f in /proc/[0-9]*/comm; do
		read -r comm <"$f" 2>/dev/null || continue
		case $comm in
		ipistorm* | tlbstorm* | slabstorm* | slabtouch*) echo "$comm" ;;
		esac
	done
}

# storm_case NAME MODULE [PARAM=VALUE...]
storm_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	printf '%s\n' "$*" >"$dir/params"
	udev_settle >"$dir/udev_settle"
	cat /proc/interrupts >"$dir/interrupts.before"
	insmod "$KO/$module.ko" "$@" 2>"$dir/stderr"
	echo $? >"$dir/rc"
	cat /proc/interrupts >"$dir/interrupts.after"
	case_close "$module"
	echo "case $name: insmod rc=$(cat "$dir/rc")"
}

# A fatal signal to insmod 3 s into a (long) storm: insmod must return
# within seconds (stop_seconds) and the result must say "interrupted".
storm_signal_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	insmod "$KO/$module.ko" "$@" 2>"$dir/stderr" &
	pid=$!
	sleep 3
	start=$(date +%s)
	# TERM, not INT: a non-interactive sh starts background jobs with
	# SIGINT ignored.
	kill -TERM "$pid"
	wait "$pid"
	echo $? >"$dir/rc"
	seconds_since "$start" >"$dir/stop_seconds"
	case_close "$module"
	echo "case $name: stopped in $(cat "$dir/stop_seconds") s"
}

# rmmod 2 s into a foreground storm: refused at once (the module is not
# live while insmod runs it); the storm goes on; rmmod after it works.
storm_rmmod_during_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	insmod "$KO/$module.ko" "$@" 2>"$dir/stderr" &
	pid=$!
	sleep 2
	rmmod "$module" 2>"$dir/early_stderr"
	echo $? >"$dir/early_rmmod_rc"
	wait "$pid"
	echo $? >"$dir/rc"
	case_close "$module"
	echo "case $name: early rmmod rc=$(cat "$dir/early_rmmod_rc")"
}

# background=1: insmod returns at once; rmmod 2 s later stops the storm
# and must return within seconds (stop_seconds).
storm_background_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	insmod "$KO/$module.ko" background=1 "$@" 2>"$dir/stderr"
	echo $? >"$dir/rc"
	sleep 2
	start=$(date +%s)
	rmmod "$module" 2>>"$dir/stderr"
	echo $? >"$dir/rmmod_rc"
	seconds_since "$start" >"$dir/stop_seconds"
	dmesg_since "$mark" >"$dir/dmesg"
	hook after "$dir"
	echo "case $name: rmmod took $(cat "$dir/stop_seconds") s"
}
