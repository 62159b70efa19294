# shellcheck shell=sh
# storm-capture.sh - what every capture of a storm load shares, sourced
# by storm run (scripts/storm-run) and the in-guest checks
# (tests/guest/lib.sh): a mark in the kernel log and the log after it,
# and udev settled before a load's counts start. POSIX sh, for a bare
# test box and the guests.

# A line of our own in the kernel log, to find what came after it: a
# line count breaks once the log buffer (128 KiB on Debian) has wrapped;
# a mark that has been overwritten yields nothing, which the readers of
# the log then notice.
dmesg_mark() {
	read -r id </proc/sys/kernel/random/uuid
	echo "storm mark $id" >/dev/kmsg 2>/dev/null
	printf '%s\n' "$id"
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
# with call-function IPIs (docs/evidence/udev-after-faults.md). Prints
# udevadm's status and the seconds it waited; an empty queue returns at
# once; where udev does not run, nothing.
udev_settle() {
	command -v udevadm >/dev/null 2>&1 || return 0
	settle_start=$(date +%s)
	udevadm settle --timeout=60 2>/dev/null
	echo "rc=$? seconds=$(($(date +%s) - settle_start))"
}
