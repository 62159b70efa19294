#!/bin/sh
# run-all.sh OUT GROUP - in the guest: every check script of GROUP, one boot.
#
# GROUP "full" runs every tests/guest/check-*.sh; any other group runs only
# the scripts that declare it in a "# groups:" line (e.g. "idle" for the
# idle=poll boot). The host-side tests then read $OUT.
OUT=${1:?usage: run-all.sh OUT GROUP}
group=${2:-full}
export OUT
dir=$(dirname "$0")
mkdir -p "$OUT"
for check in "$dir"/check-*.sh; do
	if [ "$group" != full ] &&
		! grep -q "^# groups:.*\b$group\b" "$check"; then
		continue
	fi
	echo "== $(basename "$check") ($group)"
	GROUP=$group sh "$check" || echo "check script $check exited $?"
done
cat /proc/cmdline >"$OUT/cmdline"
nproc >"$OUT/nproc"
cat /proc/modules >"$OUT/modules"
dmesg >"$OUT/dmesg"
echo complete >"$OUT/complete"
