#!/bin/sh
# check-faults.sh - fault injection into every storm's load, on a kernel
# built with configs/debug.config (tests/e2e/debug-kernel), for
# tests/test_debug_guest.py. Kernels without fault injection (Debian's)
# record that and run nothing.
. tests/guest/lib.sh

if [ ! -d /sys/kernel/debug/failslab ]; then
	echo "no fault injection in this kernel" >"$OUT/faults_absent"
	exit 0
fi
dmesg_mark
python3 tests/guest/faults.py --ko "$KO" --out "$OUT/faults.json" \
	>"$OUT/faults.log" 2>&1
echo $? >"$OUT/faults.rc"
# shellcheck disable=SC2154 # mark: set by dmesg_mark
dmesg_since "$mark" >"$OUT/faults.dmesg"
cat "$OUT/faults.log"
