#!/bin/sh
# run-all.sh OUT GROUP [NAME...] - in the guest: every check script of
# GROUP, one boot.
#
# GROUP "full" runs every tests/guest/check-*.sh; any other group runs only
# the scripts that declare it in a "# groups:" line (e.g. "idle" for the
# idle=poll boot). NAMEs, if given, keep only those check-NAME.sh (a full
# boot split over two guests, tests/conftest.py). The host-side tests then
# read $OUT.
OUT=${1:?usage: run-all.sh OUT GROUP [NAME...]}
group=${2:-full}
shift $(($# < 2 ? $# : 2))
only=" $* "
export OUT
dir=$(dirname "$0")
mkdir -p "$OUT"
# A debug kernel (configs/debug.config) has kmemleak: forget what it
# suspected before the checks, so that what it reports at the end leaked
# while they ran. Its own scan thread is stopped: the checks scan when
# they mean to, and a scan thread sharing a worker's CPU makes that CPU
# lazy in the worker's mm, so that the flushes tlbstorm counts skip it.
grep -qs '^[^ ]* /sys/kernel/debug debugfs ' /proc/mounts ||
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
leaks=/sys/kernel/debug/kmemleak
if [ -w "$leaks" ]; then
	echo scan=off >"$leaks"
	echo scan >"$leaks"
	echo clear >"$leaks"
fi
for check in "$dir"/check-*.sh; do
	if [ "$group" != full ] &&
		! grep -q "^# groups:.*\b$group\b" "$check"; then
		continue
	fi
	name=${check##*/check-}
	name=${name%.sh}
	case $only in
	"  " | *" $name "*) ;;
	*) continue ;;
	esac
	echo "== $(basename "$check") ($group)"
	start=$(cut -d' ' -f1 /proc/uptime)
	GROUP=$group sh "$check" || echo "check script $check exited $?"
	# what each check costs the boot, for the suite's time budget
	awk -v name="$name" -v start="$start" '{ printf "%s %.1f\n", name, $1 - start }' \
		/proc/uptime >>"$OUT/check-seconds"
done
if [ -w "$leaks" ]; then
	# kmemleak reports an object only once it has been unreferenced for
	# 5 s and seen so by a scan: scan after the checks, wait, scan again
	echo scan >"$leaks"
	sleep 6
	echo scan >"$leaks"
	cat "$leaks" >"$OUT/kmemleak"
fi
# whether this boot ran the checks that run once (lib.sh's once)
echo "${STORM_CHECK_ONCE:-1}" >"$OUT/check_once"
cat /proc/cmdline >"$OUT/cmdline"
nproc >"$OUT/nproc"
cat /proc/modules >"$OUT/modules"
dmesg >"$OUT/dmesg"
echo complete >"$OUT/complete"
