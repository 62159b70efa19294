# shellcheck shell=sh
# lib.sh - sourced by the in-guest check scripts (tests/guest/check-*.sh).
#
# Every case leaves its evidence in $OUT/<case>/ for the host-side pytest
# files to assert on: the insmod exit status and stderr, the module's
# result file, the dmesg lines it added, and /proc/interrupts before and
# after. A load is captured by storm run's own capture_load
# (scripts/storm-capture.sh), so the tests exercise the product's capture;
# the checks themselves run on the host, in Python.
#
#   storm_case NAME MODULE [PARAM=VALUE...]         insmod, save, rmmod
#   storm_quick_case NAME MODULE [PARAM=VALUE...]   no settling or snapshots:
#                                                   refusals, uncounted loads
#   refused SECTION                                 every refusal of SECTION in
#                                                   tests/guest/refused.txt
#   storm_signal_case NAME MODULE [PARAM=VALUE...]  TERM to insmod mid-storm
#   storm_rmmod_during_case NAME MODULE [PARAM...]  rmmod while insmod runs
#   storm_background_case NAME MODULE [PARAM...]    background=1, rmmod mid-storm
#   storm_background_done_case NAME MODULE [PARAM...]
#                                                   background=1, ends on its own
#   case_open NAME / capture_load DIR MODULE LOAD... / case_close MODULE
#                                                   a case of one's own
#   case_dir NAME                                   make and print $OUT/NAME
#   dmesg_mark / dmesg_since "$mark"                the kernel log added since
#   cpu_set CPU 0|1 / storm_threads                 hotplug; the storms' threads
#   if once; then ... fi                            checks whose outcome does
#                                                   not depend on the kernel
#
# If STORM_HOOK names a function, it is called as `$STORM_HOOK before DIR`
# and `$STORM_HOOK after DIR` around every case, and `$STORM_HOOK loaded
# DIR` once insmod has returned, while the module is still in (e.g. to
# list the caches).

: "${OUT:?OUT must name the output directory}"
KO=${KO:-build/$(uname -r)}
debugfs=/sys/kernel/debug

mkdir -p "$debugfs" 2>/dev/null
grep -qs "^[^ ]* $debugfs debugfs " /proc/mounts ||
	mount -t debugfs none "$debugfs" 2>/dev/null

# once: true in the boots that run the checks whose outcome does not
# depend on the kernel, false in the others. tests/conftest.py passes
# STORM_CHECK_ONCE=1 to the boots of the first kernel under test
# (conftest.ONCE_KERNELS), 0 to the other kernels'; unset, as in a run by
# hand, it is 1 and every case runs.
once() {
	[ "${STORM_CHECK_ONCE:-1}" != 0 ]
}

case_dir() {
	mkdir -p "$OUT/$1" && printf '%s\n' "$OUT/$1"
}

# capture_load, keep_result, dmesg_mark, dmesg_since, udev_settle and
# uptime_s: storm run's own
. scripts/storm-capture.sh

hook() {
	[ -z "${STORM_HOOK:-}" ] || "$STORM_HOOK" "$@"
}

unload() {
	if [ -d "/sys/module/$1" ]; then
		rmmod "$1" 2>>"$2/stderr"
		echo $? >"$2/rmmod_rc"
	fi
}

# case_open NAME: its directory in $dir, the hook, a mark in the log
# (capture_load takes its own, later)
case_open() {
	dir=$OUT/$1
	mkdir -p "$dir"
	hook before "$dir"
	dmesg_mark
}

# case_close MODULE: the hook while it is in, the unload, the log since
# the mark, the hook
# shellcheck disable=SC2154 # mark: set by dmesg_mark
case_close() {
	hook loaded "$dir"
	unload "$1" "$dir"
	dmesg_since "$mark" >"$dir/dmesg"
	hook after "$dir"
}

# seconds_since START: whole seconds since START, an $uptime_s
# shellcheck disable=SC2154 # uptime_s: set by storm-capture.sh's uptime_s
seconds_since() {
	uptime_s
	echo $((uptime_s - $1))
}

# cpu_set CPU 0|1: take a CPU offline or bring it online
cpu_set() {
	echo "$2" >"/sys/devices/system/cpu/cpu$1/online"
}

# The storms, as the registry says them (scripts/stormsuite/storms.py):
# "NAME|COUNT_PARAM|EXAMPLE|THREADS" lines; storm_names, and what every
# storm's threads are called before their "/".
storm_registry=$(PYTHONPATH=scripts python3 -c '
from stormsuite import storms
print(storms.shell(), end="")
')
# shellcheck disable=SC2034 # used by the check scripts
storm_names=$(printf '%s\n' "$storm_registry" | cut -d'|' -f1)
storm_thread_names=" $(printf '%s\n' "$storm_registry" | cut -d'|' -f4 |
	tr '\n' ' ')"

# storm_field NAME 2|3: the storm's count parameter, its example
storm_field() {
	printf '%s\n' "$storm_registry" | awk -F'|' -v n="$1" -v f="$2" \
		'$1 == n { print $f }'
}

storm_threads() {
	# every thread of every storm, by name (kthreads have no cmdline)
	for f in /proc/[0-9]*/comm; do
		read -r comm <"$f" 2>/dev/null || continue
		case $storm_thread_names in
		*" ${comm%%/*} "*) echo "$comm" ;;
		esac
	done
}

# insn_loops DIR: the instruction counter's known loop
# (tests/kmod/insnloop.c) loaded with 1000, 2000, 1000 and 101000
# iterations on CPU 1 (insmod runs the module's init on its own CPU),
# and once refused; each load's marker lines in DIR/loop-I-N
# (tests/test_insn_guest.py's loop_counts reads them)
insn_loops() {
	i=0
	for n in 1000 2000 1000 101000; do
		i=$((i + 1))
		from=$(wc -c <"$STORM_INSN_LOG")
		taskset -c 1 insmod "$KO/insnloop.ko" loops=$n 2>"$1/loop-$i.err"
		echo $? >"$1/loop-$i.rc"
		rmmod insnloop 2>/dev/null
		tail -c +$((from + 1)) "$STORM_INSN_LOG" >"$1/loop-$i-$n"
	done
	# refused: nothing between markers, no marks written
	from=$(wc -c <"$STORM_INSN_LOG")
	insmod "$KO/insnloop.ko" loops=0 2>"$1/loop-refused.err"
	echo $? >"$1/loop-refused.rc"
	tail -c +$((from + 1)) "$STORM_INSN_LOG" >"$1/loop-refused"
}

# case_insmod MODULE [PARAM=VALUE...]: the case's load, stderr kept.
# Not for `&`: $! would be the subshell running the function, which a
# signal ends without reaching insmod (case_insmod_bg is).
case_insmod() {
	ci_module=$1
	shift
	insmod "$KO/$ci_module.ko" "$@" 2>>"$dir/stderr"
}

# case_insmod_bg MODULE [PARAM=VALUE...]: case_insmod in the background,
# insmod's own PID in $insmod_pid; insmod_cpu=N keeps it (the storm's
# controller) on CPU N
case_insmod_bg() {
	ci_module=$1
	shift
	if [ -n "${insmod_cpu:-}" ]; then
		taskset -c "$insmod_cpu" insmod "$KO/$ci_module.ko" "$@" \
			2>>"$dir/stderr" &
	else
		insmod "$KO/$ci_module.ko" "$@" 2>>"$dir/stderr" &
	fi
	insmod_pid=$!
}

# storm_case NAME MODULE [PARAM=VALUE...]
storm_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	printf '%s\n' "$*" >"$dir/params"
	capture_load "$dir" "$module" case_insmod "$module" "$@"
	case_rc=$?
	echo $case_rc >"$dir/rc"
	case_close "$module"
	echo "case $name: insmod rc=$case_rc"
}

# storm_quick_case NAME MODULE [PARAM=VALUE...]: what a test reads of a
# refusal (rc, stderr, dmesg, no result) or of a load whose interrupt
# counts it does not read, without udev's settling and two snapshots:
# there are many of these, and every program run is slow under TCG.
storm_quick_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	case_insmod "$module" "$@"
	echo $? >"$dir/rc"
	keep_result "$dir" "$module"
	case_close "$module"
}

# refused SECTION: each case of [SECTION] in tests/guest/refused.txt
# (NAME STORM PARAM=VALUE... | what the kernel log must say), loaded as a
# storm_quick_case; tests/test_refused_guest.py asserts each. A section
# whose name ends in "once" runs only where once does.
refused() {
	rf_section=$1
	case $rf_section in
	*once) once || return 0 ;;
	esac
	rf_in=0 rf_found=0
	while IFS= read -r rf_line <&3; do
		case $rf_line in
		"[$rf_section]") rf_in=1 rf_found=1 ;;
		"["*) rf_in=0 ;;
		"" | "#"*) ;;
		*)
			[ "$rf_in" = 1 ] || continue
			# NAME STORM PARAMS: split into words on purpose, unglobbed
			set -f
			# shellcheck disable=SC2086
			set -- ${rf_line%%|*}
			set +f
			storm_quick_case "$@"
			;;
		esac
	done 3<tests/guest/refused.txt
	[ "$rf_found" = 1 ] ||
		echo "refused: no section [$rf_section] in tests/guest/refused.txt" >&2
}

# storm_started PID: returns once the storm of the insmod running as PID
# has threads, or that insmod has ended (refused, or a storm over
# already). The cases that act a fixed time into a storm count from
# here, not from insmod: a load takes over 10 s on a KASAN guest.
storm_started() {
	while kill -0 "$1" 2>/dev/null && [ -z "$(storm_threads)" ]; do
		sleep 0.1
	done
}

# the load of storm_signal_case: TERM, not INT (a non-interactive sh
# starts background jobs with SIGINT ignored), 3 s in
signal_load() {
	case_insmod_bg "$@"
	storm_started "$insmod_pid"
	sleep 3
	uptime_s
	start=$uptime_s
	kill -TERM "$insmod_pid"
	wait "$insmod_pid"
	sl_rc=$?
	seconds_since "$start" >"$dir/stop_seconds"
	return $sl_rc
}

# A fatal signal to insmod 3 s into a (long) storm: insmod must return
# within seconds (stop_seconds) and the result must say "interrupted".
storm_signal_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	capture_load "$dir" "$module" signal_load "$module" "$@"
	echo $? >"$dir/rc"
	case_close "$module"
	read -r stop_seconds <"$dir/stop_seconds"
	echo "case $name: stopped in $stop_seconds s"
}

# the load of storm_rmmod_during_case
rmmod_during_load() {
	case_insmod_bg "$@"
	# The module is in the kernel but not live from its /sys/module
	# directory until its init, the storm, returns: waiting for that
	# costs no fork, where storm_started's look for threads took 5 s on
	# a KASAN guest.
	while kill -0 "$insmod_pid" 2>/dev/null && [ ! -d "/sys/module/$1" ]; do
		sleep 0.1
	done
	sleep 2
	rmmod "$1" 2>"$dir/early_stderr"
	echo $? >"$dir/early_rmmod_rc"
	wait "$insmod_pid"
}

# rmmod 2 s into a foreground storm: refused at once (the module is not
# live while insmod runs it); the storm goes on; rmmod after it works.
storm_rmmod_during_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	capture_load "$dir" "$module" rmmod_during_load "$module" "$@"
	echo $? >"$dir/rc"
	case_close "$module"
	read -r early_rc <"$dir/early_rmmod_rc"
	echo "case $name: early rmmod rc=$early_rc"
}

# the load of storm_background_case: insmod's own status in $dir/rc;
# whether the storm was still running when rmmod came (no result yet),
# and whether the module is gone after it
background_load() {
	bl_module=$1
	shift
	case_insmod "$bl_module" background=1 "$@"
	echo $? >"$dir/rc"
	set -- "$bl_module"
	sleep 2
	if [ -e "$debugfs/$1/result" ]; then
		echo finished >"$dir/state_before_rmmod"
	else
		echo running >"$dir/state_before_rmmod"
	fi
	hook loaded "$dir"
	uptime_s
	start=$uptime_s
	rmmod "$1" 2>>"$dir/stderr"
	echo $? >"$dir/rmmod_rc"
	seconds_since "$start" >"$dir/stop_seconds"
	grep -c "^$1 " /proc/modules >"$dir/loaded_after"
}

# background=1: insmod returns at once; rmmod 2 s later stops the storm
# and must return within seconds (stop_seconds).
storm_background_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	capture_load "$dir" "$module" background_load "$module" "$@"
	dmesg_since "$mark" >"$dir/dmesg"
	hook after "$dir"
	read -r stop_seconds <"$dir/stop_seconds"
	echo "case $name: rmmod took $stop_seconds s"
}

# the load of storm_background_done_case: until the result is there
background_done_load() {
	case_insmod "$@" background=1 || return
	bd_waited=0
	while [ ! -e "$debugfs/$1/result" ] && [ $bd_waited -lt 300 ]; do
		sleep 1
		bd_waited=$((bd_waited + 1))
	done
}

# background=1 without rmmod: insmod returns at once, the storm ends on
# its own and its result appears (within 300 s); rmmod after it.
storm_background_done_case() {
	name=$1 module=$2
	shift 2
	case_open "$name"
	capture_load "$dir" "$module" background_done_load "$module" "$@"
	case_rc=$?
	echo $case_rc >"$dir/rc"
	case_close "$module"
	echo "case $name: insmod rc=$case_rc"
}
