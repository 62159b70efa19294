#!/bin/sh
# check-rcustorm.sh - rcustorm cases for the host-side tests
# (tests/test_rcustorm_guest.py). Expects 4 online CPUs; the caller is
# CPU 0, readers keep the CPUs of busy= out of idle, CPU 3 idles unless a
# case says otherwise.
. tests/guest/lib.sh

# An expedited grace period interrupts each busy CPU once, no idle one.
storm_case rcu_exp_busy rcustorm numgp=200 cpulist=0 busy=1-2
# ... and with every CPU but the caller's idle, none at all.
storm_case rcu_exp_idle rcustorm numgp=200 cpulist=0
# A normal grace period waits for the busy CPUs' own quiescent states.
storm_case rcu_normal rcustorm mode=normal numgp=10 cpulist=0 busy=1-2
# Two callers: grace periods in flight together, the readers' check holds.
storm_case rcu_two_callers rcustorm numgp=100 cpulist=0-1 busy=2-3
# The readers' check: one section counted across a whole grace period.
storm_case rcu_miscount rcustorm numgp=50 cpulist=0 busy=1 \
	inject_miscount=1
# Timed, untimed grace periods.
storm_case rcu_timed rcustorm timeout=1 latency=0 cpulist=0 busy=1
storm_background_case rcu_background_rmmod rcustorm timeout=120 busy=1
storm_signal_case rcu_signal rcustorm timeout=120 busy=1

refused "rcustorm once"
