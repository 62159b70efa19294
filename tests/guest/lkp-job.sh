#!/bin/sh
# lkp-job.sh OUT JOB - in a storm vm guest: install the storms into the
# lkp-tests checkout OUT/lkp-tests (storm lkp install), split JOB and run
# it with `lkp run`, as an lkp user would; lkp's result roots end up in
# OUT/result (tests/test_lkp_guest.py).
#
# lkp writes /lkp (results, benchmarks), which the guest's root (the
# host's, read-only) has no room for: the job runs chrooted in an
# overlay of the root on a tmpfs, OUT bound into it so that the host sees
# what lands there. lkp's own `lkp install` is not run (docs/lkp.md).
set -eu
out=$1
job=$2
repo=$(pwd)
top=/tmp/storm-lkp
mkdir -p "$top"
mount -t tmpfs storm-lkp "$top"
mkdir "$top/upper" "$top/work" "$top/root"
mount -t overlay overlay \
	-o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" "$top/root"
for d in /proc /sys /dev /run "$out"; do
	mount --rbind "$d" "$top/root$d"
done
rc=0
# shellcheck disable=SC2016 # expanded in the chroot
chroot "$top/root" /bin/sh -c '
	set -eu
	out=$1 job=$2 repo=$3
	cd "$repo"
	scripts/storm lkp install "$out/lkp-tests"
	cd "$out/lkp-tests"
	mkdir -p "$out/jobs"
	bin/lkp split-job -o "$out/jobs" "$job"
	rc=0
	for j in "$out"/jobs/*.yaml; do
		bin/lkp run "$j" || rc=$?
	done
	# what came of it, also of a failed run, for the host to look at
	cp -a /lkp/result "$out/result"
	exit "$rc"
' lkp-job "$out" "$job" "$repo" || rc=$?
exit "$rc"
