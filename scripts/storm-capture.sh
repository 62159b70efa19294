# shellcheck shell=sh
# storm-capture.sh - the capture of one storm load, sourced by storm run
# (scripts/storm-run) and the in-guest checks (tests/guest/lib.sh), so
# that the tests exercise the capture the product uses: udev settled, a
# mark in the kernel log, /proc/interrupts around the load, the module's
# result. POSIX sh, for a bare test box and the guests.

# A line of our own in the kernel log, to find what came after it: a
# line count breaks once the log buffer (128 KiB on Debian) has wrapped;
# a mark that has been overwritten yields nothing, which the readers of
# the log then notice.
# Sets $mark (no command substitution: a fork costs a TCG guest).
dmesg_mark() {
	read -r mark </proc/sys/kernel/random/uuid
	echo "storm mark $mark" >/dev/kmsg 2>/dev/null
}

# the kernel log since mark $1
dmesg_since() {
	dmesg 2>/dev/null | awk -v id="storm mark $1" 'found { print }
		index($0, id) { found = 1 }'
}

# Let udev finish the uevents of earlier module loads (the previous
# run's rmmod, or another tool's) so that its work does not fall into
# this load's counts: after hundreds of loads systemd-udevd works on for
# seconds, and its root-filesystem I/O wakes tasks on a storm's target
# with call-function IPIs (docs/safety.md, udev settled before every case). Prints
# udevadm's status and the seconds it waited; an empty queue returns at
# once; where udev does not run, nothing.
udev_settle() {
	command -v udevadm >/dev/null 2>&1 || return 0
	uptime_s
	settle_start=$uptime_s
	udevadm settle --timeout=60 2>/dev/null
	settle_rc=$?
	uptime_s
	echo "rc=$settle_rc seconds=$((uptime_s - settle_start))"
}

# Whole seconds since boot in $uptime_s, for the durations a capture
# reports (read, not `date`: a fork costs a TCG guest).
uptime_s() {
	read -r uptime_s _ </proc/uptime
	uptime_s=${uptime_s%.*}
}

# capture_load DIR MODULE LOAD...: one load of a storm. Settles udev
# (DIR/udev_settle), sets $mark (the log after it is the load's), takes
# /proc/interrupts just before and just after LOAD (DIR/interrupts.before,
# DIR/interrupts.after), a command that loads MODULE and returns when its
# storm is over, then keeps MODULE's result where the load left one
# ($debugfs/MODULE/result into DIR/result, else none; the sourcing script
# sets $debugfs). Returns LOAD's exit status.
# shellcheck disable=SC2154 # debugfs: the sourcing script's
capture_load() {
	cl_dir=$1 cl_module=$2
	shift 2
	udev_settle >"$cl_dir/udev_settle"
	dmesg_mark
	cat /proc/interrupts >"$cl_dir/interrupts.before"
	"$@"
	cl_rc=$?
	cat /proc/interrupts >"$cl_dir/interrupts.after"
	keep_result "$cl_dir" "$cl_module"
	return "$cl_rc"
}

# keep_result DIR MODULE: MODULE's result file as DIR/result, or no
# DIR/result where the load left none
# shellcheck disable=SC2154 # debugfs: the sourcing script's
keep_result() {
	cat "$debugfs/$2/result" >"$1/result" 2>/dev/null || rm -f "$1/result"
}
