# shellcheck shell=sh
# storm-run-checks.sh: what stops an out-of-tree module or its result
# file cold, checked before the first run (sourced by storm-run), and the
# box's settings that move the numbers, captured for the run file.
#
# Every function takes ROOT, the directory /proc and /sys are under: ""
# on a box or in a guest, a fake tree in tests/test_environment.py. A check
# returns 1 and leaves its reason in $why when the storms cannot run.
# POSIX sh, no forks where a builtin does (a TCG guest pays for each).
# shellcheck disable=SC2034 # why, _sel: read by the caller

# _line: the first line of file $1, or empty
read_first() {
	_line=
	[ -r "$1" ] && IFS= read -r _line <"$1" 2>/dev/null
	return 0
}

# the [selected] word of a sysfs choice such as "none [integrity] confidentiality"
selected() {
	_sel=${1#*\[}
	[ "$_sel" = "$1" ] && _sel= && return 0
	_sel=${_sel%%\]*}
}

# whether module file $1 carries a signature (the kernel's own marker at
# its end, as scripts/sign-file appends it)
module_signed() {
	tail -c 28 "$1" 2>/dev/null | grep -q '~Module signature appended~'
}

# Lockdown (Secure Boot turns it on in Debian's kernels) lets only signed
# modules load and, at integrity level and above, restricts debugfs.
check_lockdown() {
	read_first "$1/sys/kernel/security/lockdown"
	selected "$_line"
	case $_sel in
	'' | none) return 0 ;;
	esac
	module_signed "$2" && return 0
	why="the kernel is locked down ($_sel, in $1/sys/kernel/security/lockdown): it loads only signed modules, and $2 is not signed.
  Boot with lockdown=none on a kernel without Secure Boot enforcement (mokutil --disable-validation, or Secure Boot off in the firmware), or sign the modules with a key the kernel trusts (scripts/sign-file sha256 KEY CERT MODULE)"
	return 1
}

# module.sig_enforce=1 (or CONFIG_MODULE_SIG_FORCE) refuses unsigned modules
check_sig_enforce() {
	read_first "$1/sys/module/module/parameters/sig_enforce"
	case $_line in
	Y | 1) ;;
	*) return 0 ;;
	esac
	module_signed "$2" && return 0
	why="the kernel enforces module signatures ($1/sys/module/module/parameters/sig_enforce is $_line: module.sig_enforce=1 or CONFIG_MODULE_SIG_FORCE), and $2 is not signed.
  Boot without module.sig_enforce=1, or sign the modules with a key the kernel trusts (scripts/sign-file sha256 KEY CERT MODULE)"
	return 1
}

# The storms report in debugfs: the kernel must have it and allow it.
check_debugfs() {
	read_first "$1/proc/cmdline"
	for _a in $_line; do
		case $_a in
		debugfs=off | debugfs=no-mount)
			why="debugfs is turned off ($_a on the kernel command line): the storms report their results in /sys/kernel/debug/<storm>/result. Boot without $_a"
			return 1
			;;
		esac
	done
	_fs=
	if [ -r "$1/proc/filesystems" ]; then
		while IFS= read -r _l; do
			case $_l in *debugfs) _fs=1 ;; esac
		done <"$1/proc/filesystems"
	fi
	[ -n "$_fs" ] && return 0
	why="this kernel has no debugfs (none in $1/proc/filesystems: built without CONFIG_DEBUG_FS): the storms report their results in /sys/kernel/debug/<storm>/result. Build it with CONFIG_DEBUG_FS=y"
	return 1
}

# The box's settings, "PATH<TAB>FIRST LINE" for each file there is, for
# stormsuite/runfiles/environment.py: cpufreq governor and driver, turbo, SMT,
# microcode, the idle states and their limits, isolated and nohz_full
# CPUs, the CPU vulnerabilities' mitigations, THP, lockdown and module
# signature enforcement.
sysenv() {
	for _f in "$1"/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor \
		"$1"/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver \
		"$1"/sys/devices/system/cpu/cpufreq/boost \
		"$1"/sys/devices/system/cpu/intel_pstate/no_turbo \
		"$1"/sys/devices/system/cpu/intel_pstate/status \
		"$1"/sys/devices/system/cpu/smt/control \
		"$1"/sys/devices/system/cpu/smt/active \
		"$1"/sys/devices/system/cpu/cpu0/microcode/version \
		"$1"/sys/module/intel_idle/parameters/max_cstate \
		"$1"/sys/module/processor/parameters/max_cstate \
		"$1"/sys/devices/system/cpu/cpu0/cpuidle/state[0-9]*/name \
		"$1"/sys/devices/system/cpu/cpu0/cpuidle/state[0-9]*/disable \
		"$1"/sys/devices/system/cpu/isolated \
		"$1"/sys/devices/system/cpu/nohz_full \
		"$1"/sys/devices/system/cpu/vulnerabilities/* \
		"$1"/sys/kernel/mm/transparent_hugepage/enabled \
		"$1"/sys/kernel/mm/transparent_hugepage/defrag \
		"$1"/sys/kernel/security/lockdown \
		"$1"/sys/module/module/parameters/sig_enforce; do
		[ -r "$_f" ] || continue
		read_first "$_f"
		printf '%s\t%s\n' "${_f#"$1"}" "$_line"
	done
}
