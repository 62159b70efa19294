// SPDX-License-Identifier: GPL-2.0
/*
 * ipistorm - storms of cross-CPU function calls.
 *
 * A superset of Anton Blanchard's ipistorm: the same parameters mean the
 * same thing (numipi wait single offset mask delay cpulist timeout), plus
 * targets, async, handler_ns, latency and background.
 *
 * One sender thread per CPU in cpulist, all released together, calls
 *  - smp_call_function_single() on one target (single=1),
 *  - smp_call_function_single_async() with its own csd (async=1),
 *  - smp_call_function_many() on the CPUs in targets=, or
 *  - smp_call_function() on every other online CPU (the default),
 * either numipi times or, with numipi=0, for timeout seconds. insmod
 * returns when the storm is over; the result stays in
 * /sys/kernel/debug/ipistorm/result until rmmod.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/math.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>

#include "storm.h"

static unsigned long numipi;
module_param(numipi, ulong, 0444);
MODULE_PARM_DESC(numipi, "Calls per sending CPU, within timeout; 0 = timed run (default 0)");

static unsigned long timeout = 30;
module_param(timeout, ulong, 0444);
MODULE_PARM_DESC(timeout, "Seconds to run with numipi=0; with numipi, the most the storm may take; 1..604800 (default 30)");

static bool wait = true;
module_param(wait, bool, 0444);
MODULE_PARM_DESC(wait, "Wait for each call to complete (default 1)");

static bool single;
module_param(single, bool, 0444);
MODULE_PARM_DESC(single, "Call one target CPU instead of many (default 0)");

static unsigned long offset = 1;
module_param(offset, ulong, 0444);
MODULE_PARM_DESC(offset, "single=1: target = (cpu + offset) mod (last online CPU + 1) (default 1)");

static unsigned long mask;
module_param(mask, ulong, 0444);
MODULE_PARM_DESC(mask, "single=1: offset only the CPU-number bits in mask (default 0, no mask)");

static unsigned long delay;
module_param(delay, ulong, 0444);
MODULE_PARM_DESC(delay, "Microseconds to sleep between calls (default 0)");

static char *cpulist;
module_param(cpulist, charp, 0444);
MODULE_PARM_DESC(cpulist, "Sending CPUs (default all online)");

static char *targets;
module_param(targets, charp, 0444);
MODULE_PARM_DESC(targets, "single=0: target CPUs for smp_call_function_many (default all other online)");

static bool async;
module_param(async, bool, 0444);
MODULE_PARM_DESC(async, "single target via smp_call_function_single_async (default 0)");

static unsigned long handler_ns;
module_param(handler_ns, ulong, 0444);
MODULE_PARM_DESC(handler_ns, "Busy time in the IPI handler in ns, at most 1000000; where calls can reach a target back to back (wait=0, or two senders on one target) it busy-waits at most 1 ms in every 2 ms, and calls past that return at once and count as trimmed (default 0)");

static unsigned long handler_loops;
module_param(handler_loops, ulong, 0444);
MODULE_PARM_DESC(handler_loops, "Iterations of a two-instruction loop in the IPI handler, at most 100000: a known number of instructions per call; where calls can reach a target back to back it shares handler_ns's budget, a loop run whole or not at all (default 0)");

static unsigned int latency = 64;
module_param(latency, uint, 0444);
MODULE_PARM_DESC(latency, "Time one call in N into the histogram, at a random place in each block of N calls; 1 = every call, 0 = none (default 64)");

static bool background;
module_param(background, bool, 0444);
MODULE_PARM_DESC(background, "Return from insmod at once; rmmod stops the storm (default 0)");

static unsigned int pileup = 4;
module_param(pileup, uint, 0444);
MODULE_PARM_DESC(pileup, "The most senders that may call one CPU that sends no calls itself: more can hold it in hardirq however short the handler (default 4; at least 1)");

static bool inject_miscount;
module_param(inject_miscount, bool, 0444);
MODULE_PARM_DESC(inject_miscount, "Check a count one call off on the first CPU checked, to show that a call run twice or lost ends the storm FAILURE (default 0)");

#define IPISTORM_MAX_HANDLER_NS	(1000UL * NSEC_PER_USEC)
#define IPISTORM_MAX_HANDLER_LOOPS	100000UL
/* each target's budget for its handlers' work, see ipistorm_work() */
#define IPISTORM_BUSY_WINDOW_NS	(2UL * NSEC_PER_MSEC)
#define IPISTORM_BUSY_BUDGET_NS	(1UL * NSEC_PER_MSEC)
#define IPISTORM_MAX_LATENCY	(1U << 20)
/* loops this short cost no more than the call itself: see ipistorm_pace() */
#define IPISTORM_FREE_LOOPS	1000UL

enum ipistorm_kind {
	IPISTORM_ALL,		/* smp_call_function */
	IPISTORM_MANY,		/* smp_call_function_many(targets) */
	IPISTORM_SINGLE,	/* smp_call_function_single */
	IPISTORM_ASYNC,		/* smp_call_function_single_async */
};

static const char * const ipistorm_kind_name[] = {
	[IPISTORM_ALL]		= "all",
	[IPISTORM_MANY]		= "many",
	[IPISTORM_SINGLE]	= "single",
	[IPISTORM_ASYNC]	= "async",
};

/* One per sending CPU, in that CPU's per-cpu area. */
struct ipistorm_sender {
	int cpu;
	int target;			/* single and async */
	struct task_struct *task;
	u64 calls;
	u64 errors;
	int last_error;
	bool moved;			/* found itself off its CPU: stopped */
	/* latency=N: which calls are timed, see ipistorm_next_skip() */
	u32 rnd;			/* xorshift32 state, never 0 */
	u32 pos;			/* place of the last timed call in its block */
	u64 busy;			/* async: csd still in flight, retried */
	u64 owed_ns, paced_ns;		/* see ipistorm_pace() */
	u64 start_ns, end_ns;
	/* async: written by the target's handler, read by the sender */
	call_single_data_t csd;
	u64 sent;
	u64 completed ____cacheline_aligned_in_smp;
	struct storm_hist hist ____cacheline_aligned_in_smp;
};

/* One per CPU, written by the handler on that CPU only (hardirq). */
struct ipistorm_target {
	u64 handled;
	/* handler_ns, handler_loops: the current window of the budget */
	u64 window_end;			/* storm_clock_ns() */
	u64 budget_left;
	u64 busy_ns;			/* worked, all windows */
	u64 trimmed;			/* calls cut short by the budget */
	u64 sent;			/* after the storm: calls sent here */
};

static enum ipistorm_kind kind;
static struct ipistorm_sender __percpu *senders;
static DEFINE_PER_CPU(struct ipistorm_target, ipistorm_targets);
static cpumask_var_t sender_mask, target_mask;
static struct storm_ctl ctl;
static struct storm_irqs *irqs_before, *irqs_after, *irqs_acc;
static struct storm_hist *hist_total;
static bool busy_budget;		/* see ipistorm_work() */
static bool paced;			/* see ipistorm_pace() */
static bool failed;

/*
 * The handler's work: handler_ns of busy-waiting, then handler_loops
 * iterations of a two-instruction loop; one budget per target CPU for
 * both.
 *
 * A target must always get out of hardirq. For async call data (wait=0,
 * async=1) the kernel unlocks the csd before the handler runs and x86
 * acknowledges the call-function vector first, so a sender queues its
 * next call while a long handler runs, and a new call-function IPI is
 * pending when it returns; with wait=1, two senders on one target do the
 * same. Call-function vectors outrank the local timer: back-to-back long
 * handlers (1 ms of handler_ns, or 100000 loops: 30-50 us on hardware,
 * back to back all the same) would starve the target's timer, devices
 * and tasks for the whole storm (hard lockup, RCU stall, I/O timeouts).
 * So in such storms (busy_budget, set at load) each target works at most
 * IPISTORM_BUSY_BUDGET_NS in a window of IPISTORM_BUSY_WINDOW_NS that its
 * first busy handler opens: a busy-wait is cut at the budget, a loop,
 * which cannot be cut without losing its known count, runs whole or not
 * at all (started only while budget is left: it overshoots by at most one
 * loop), and once the budget is spent the handlers return at once until
 * the window ends. At most 2 ms of work in a row (a budget spent at the
 * end of one window, the next one's at its start) and a loop, at most
 * about half of the target's time; handler.<cpu>.trimmed counts the
 * calls cut short. With wait=1 and one sender per target, the sender
 * calls again only once the handler has returned: no budget, no clock
 * read here (a loop's instructions stay the only ones it adds); the
 * sender paces itself instead (ipistorm_pace()).
 *
 * The busy-wait spins on storm_clock_ns(), which cannot stall with
 * interrupts off (local_clock() can, and the loop would spin for ever);
 * not ndelay(): its loop calibration is far off under TCG.
 */
static void ipistorm_spin(u64 from, u64 ns)
{
	u64 end = from + ns;

	while (storm_clock_ns() < end)
		cpu_relax();
}

static void ipistorm_work(struct ipistorm_target *t)
{
	u64 spin = handler_ns;
	bool cut = false;
	u64 now, spent;

	now = storm_clock_ns();
	if (now >= t->window_end) {
		t->window_end = now + IPISTORM_BUSY_WINDOW_NS;
		t->budget_left = IPISTORM_BUSY_BUDGET_NS;
	}
	if (!t->budget_left || spin > t->budget_left) {
		spin = t->budget_left;
		cut = true;
		t->trimmed++;
	}
	if (spin)
		ipistorm_spin(now, spin);
	/*
	 * The busy-wait counts as asked, as when it is cut at the budget (the
	 * host may stall a TCG guest's clock past its end); a loop as long as
	 * it took, which only its clock can say. A cut call runs no loop.
	 */
	spent = spin;
	if (handler_loops && !cut) {
		u64 t0 = storm_clock_ns();

		storm_loops(handler_loops);
		spent += storm_clock_ns() - t0;
	}
	t->budget_left -= min(spent, t->budget_left);
	t->busy_ns += spent;
}

static void ipistorm_handler(void *info)
{
	struct ipistorm_target *t = this_cpu_ptr(&ipistorm_targets);

	t->handled++;
	if (busy_budget) {
		ipistorm_work(t);
	} else {
		if (handler_ns) {
			ipistorm_spin(storm_clock_ns(), handler_ns);
			t->busy_ns += handler_ns;
		}
		storm_loops(handler_loops);
	}
	if (info) {
		struct ipistorm_sender *s = info;

		/* async: tell the sender this call has run */
		smp_store_release(&s->completed, s->completed + 1);
	}
}

static void ipistorm_nop(void *info)
{
}

static int ipistorm_call_async(struct ipistorm_sender *s)
{
	int ret;

	/* The csd is ours to reuse once the kernel has unlocked it. */
	while ((ret = smp_call_function_single_async(s->target, &s->csd)) ==
	       -EBUSY) {
		s->busy++;
		cpu_relax();
	}
	if (ret)
		return ret;
	s->sent++;
	if (wait) {
		/* pairs with the handler's smp_store_release() */
		while (smp_load_acquire(&s->completed) != s->sent)
			cpu_relax();
	}
	return 0;
}

/* Inlined, so that traces name ipistorm_sender_fn as the caller. */
static __always_inline int ipistorm_call(struct ipistorm_sender *s)
{
	switch (kind) {
	case IPISTORM_SINGLE:
		return smp_call_function_single(s->target, ipistorm_handler,
						NULL, wait);
	case IPISTORM_ASYNC:
		return ipistorm_call_async(s);
	case IPISTORM_MANY:
		preempt_disable();
		smp_call_function_many(target_mask, ipistorm_handler, NULL,
				       wait);
		preempt_enable();
		return 0;
	case IPISTORM_ALL:
		smp_call_function(ipistorm_handler, NULL, wait);
		return 0;
	}
	return -EINVAL;
}

/*
 * Which calls are timed with latency=N. A sender's calls fall into
 * consecutive blocks of N, and exactly one call in each block is timed, at
 * a place drawn uniformly from 0..N-1, afresh for every block (a counter
 * with a random phase per block). So:
 *
 *  - every call is timed with probability exactly 1/N, whatever its latency
 *    and wherever it falls in a periodic pattern (timer ticks, the target's
 *    idle and wake-up cycle, the rotation of vCPUs under TCG): a fixed
 *    stride could lock onto such a period, a random place per block cannot.
 *    The histogram is an equal-probability sample of all calls, and the
 *    percentiles read from it estimate the per-call ones without bias.
 *  - the count is exact up to one: after n calls, floor(n / N) or
 *    ceil(n / N) of them were timed (the unfinished last block may not have
 *    reached its place yet); N = 1 times every call, as before.
 *
 * The gap to the next timed call (1..2N-1 calls, mean N) is drawn here, on
 * the timed path only; an untimed call costs one decrement and compare.
 * xorshift32 is plenty for choosing a place; reciprocal_scale() maps it
 * onto 0..N-1 with one multiply (bias at most N / 2^32).
 */
static u64 ipistorm_next_skip(struct ipistorm_sender *s)
{
	u32 x = s->rnd, pos;
	u64 skip;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->rnd = x;
	pos = reciprocal_scale(x, latency);
	/* the rest of this block, then the place in the next one */
	skip = latency - 1 - s->pos + pos;
	s->pos = pos;
	return skip;
}

/* Before the first call: as if a block had just ended. */
static u64 ipistorm_first_skip(struct ipistorm_sender *s)
{
	/* latency=0: a countdown that no storm reaches (numipi <= 1e12) */
	if (!latency)
		return U64_MAX;
	s->rnd = get_random_u32() ?: 1;
	s->pos = latency - 1;
	return ipistorm_next_skip(s);
}

/*
 * With wait=1 and one sender per target no call waits at its target, so
 * the budget never trims one; yet calls back to back would keep the
 * target in its handler nearly all the time (99.9% with a 1 ms handler):
 * its timer, softirqs and tasks starve for as long as the storm runs. So
 * in such storms with handler work (paced, set at load) the sender pays
 * the time back: once its calls have taken IPISTORM_BUSY_BUDGET_NS it
 * sleeps as long as they took (delay's sleeps count), so its target works
 * at most about half its time and every call keeps its whole handler.
 * A call's time is the sender's, the handler's and the IPI's, so the
 * target is idle for at least as long as it worked. Loops of at most
 * IPISTORM_FREE_LOOPS (about a microsecond on hardware, no more than the
 * call itself) are not paced: their calls add the loop's instructions
 * alone.
 */
static void ipistorm_pace(struct ipistorm_sender *s, u64 took)
{
	u64 t0;

	s->owed_ns += took;
	if (delay)
		s->owed_ns -= min_t(u64, s->owed_ns, delay * NSEC_PER_USEC);
	if (s->owed_ns < IPISTORM_BUSY_BUDGET_NS)
		return;
	t0 = storm_clock_ns();
	usleep_range(div_u64(s->owed_ns, NSEC_PER_USEC),
		     div_u64(s->owed_ns, NSEC_PER_USEC) + 50);
	s->paced_ns += storm_clock_ns() - t0;
	s->owed_ns = 0;
}

/*
 * The timed loop: no locks, allocations or printing in here.
 *
 * Preemption is off from the clock read to the clock read (the calls keep
 * it off for their wait anyway), so both ends are on one CPU's clock and
 * the sender cannot move between checking its CPU and calling: a sender
 * moved off its CPU by hotplug would call its own CPU without an IPI.
 */
static int ipistorm_sender_fn(void *arg)
{
	struct ipistorm_sender *s = arg;
	u64 skip = ipistorm_first_skip(s);	/* untimed calls to go */
	u64 t0 = 0, t1 = 0;
	bool timed;
	int ret;

	storm_worker_ready(&ctl);
	s->start_ns = ktime_get_ns();
	while (!numipi || s->calls < numipi) {
		if (storm_should_stop(&ctl))
			break;
		timed = !skip;
		preempt_disable();
		if (unlikely(smp_processor_id() != s->cpu)) {
			preempt_enable();
			s->moved = true;
			storm_ctl_moved(&ctl);
			break;
		}
		if (unlikely(timed || paced))
			t0 = storm_clock_ns();
		ret = ipistorm_call(s);
		if (unlikely(timed || paced))
			t1 = storm_clock_ns();
		preempt_enable();
		if (unlikely(ret)) {
			/* e.g. the target went offline: stop, never hang */
			s->errors++;
			s->last_error = ret;
			break;
		}
		if (unlikely(timed)) {
			storm_hist_add(&s->hist, t1 - t0);
			skip = ipistorm_next_skip(s);
		} else {
			skip--;
		}
		s->calls++;
		if (delay)
			usleep_range(delay, delay + 1);
		else
			cond_resched_tasks_rcu_qs();
		if (unlikely(paced))
			ipistorm_pace(s, t1 - t0);
	}
	s->end_ns = ktime_get_ns();
	storm_worker_done(&ctl);

	storm_thread_park();
	return 0;
}

static int ipistorm_target_of(int cpu)
{
	unsigned long t;

	if (mask)
		t = (cpu & ~mask) + ((cpu + offset) & mask);
	else
		t = cpu + offset;
	/*
	 * Wrap at the last online CPU + 1: sparse lists work (cpulist=8
	 * offset=8 is CPU 8 -> 16), unlike the original's modulo over the
	 * number of CPUs, and a machine with more possible than online CPUs
	 * runs the default cpulist.
	 */
	return t % (cpumask_last(cpu_online_mask) + 1);
}

/* "<tag>: numipi=..." with the CPU lists and kind as the storm runs them */
static void ipistorm_print_params(const char *tag)
{
	storm_print_params(tag, "numipi=%lu timeout=%lu wait=%d single=%d async=%d offset=%lu mask=%#lx delay=%lu handler_ns=%lu handler_loops=%lu latency=%u background=%d cpulist=%*pbl targets=%*pbl kind=%s busy_budget=%d paced=%d pileup=%u",
			   numipi, timeout, wait, single, async, offset, mask,
			   delay, handler_ns, handler_loops, latency, background,
			   cpumask_pr_args(sender_mask),
			   cpumask_pr_args(target_mask), ipistorm_kind_name[kind],
			   busy_budget, paced, pileup);
}

/*
 * Can a target get its next call while a handler still runs? With wait=0
 * (or async wait=0) a sender queues it then; with wait=1, when a second
 * sender calls the same target.
 */
static bool ipistorm_back_to_back(void)
{
	int t;

	if (!wait)
		return true;
	/* single and async: fewer targets than senders, a shared target */
	if (kind == IPISTORM_SINGLE || kind == IPISTORM_ASYNC)
		return cpumask_weight(target_mask) < cpumask_weight(sender_mask);
	/* many and all: every sender calls each target but itself */
	for_each_cpu(t, target_mask) {
		unsigned int n = cpumask_weight(sender_mask) -
				 cpumask_test_cpu(t, sender_mask);

		if (n > 1)
			return true;
	}
	return false;
}

/* The counts, times and sizes: each within its bound. */
static int ipistorm_check_bounds(void)
{
	return storm_check_bound("numipi", numipi, timeout) ?:
	       storm_check_range("numipi", numipi, STORM_MAX_COUNT) ?:
	       storm_check_range("timeout", timeout, STORM_MAX_TIMEOUT_S) ?:
	       storm_check_range("delay", delay, STORM_MAX_DELAY_US) ?:
	       storm_check_range("handler_ns", handler_ns,
				 IPISTORM_MAX_HANDLER_NS) ?:
	       storm_check_range("handler_loops", handler_loops,
				 IPISTORM_MAX_HANDLER_LOOPS) ?:
	       storm_check_range("latency", latency, IPISTORM_MAX_LATENCY);
}

/* single=1 (and async=1): each sender's one target, by offset and mask. */
static int ipistorm_check_single(void)
{
	int cpu;

	kind = async ? IPISTORM_ASYNC : IPISTORM_SINGLE;
	cpumask_clear(target_mask);
	for_each_cpu(cpu, sender_mask) {
		int t = ipistorm_target_of(cpu);

		if (t == cpu) {
			pr_err("CPU %d would call itself (offset=%lu mask=%#lx)\n",
			       cpu, offset, mask);
			return -EINVAL;
		}
		if (!cpu_online(t)) {
			pr_err("CPU %d -> target CPU %d is not online (offset=%lu mask=%#lx)\n",
			       cpu, t, offset, mask);
			return -EINVAL;
		}
		per_cpu_ptr(senders, cpu)->target = t;
		cpumask_set_cpu(t, target_mask);
	}
	return 0;
}

/* single=0: no sender whose only target is itself */
static int ipistorm_check_many_self(void)
{
	int cpu;

	for_each_cpu(cpu, sender_mask) {
		if (cpumask_weight(target_mask) == 1 &&
		    cpumask_test_cpu(cpu, target_mask)) {
			pr_err("targets=%s: CPU %d would only call itself\n",
			       targets, cpu);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * single=0 without targets=: smp_call_function() to every other CPU; where
 * some are isolated or nohz_full, _many() to the others (the default CPUs,
 * storm_default_cpus()), as smp_call_function() would call them all.
 */
static int ipistorm_check_all(void)
{
	kind = IPISTORM_ALL;
	storm_default_cpus(target_mask, cpu_online_mask);
	if (!cpumask_equal(target_mask, cpu_online_mask))
		kind = IPISTORM_MANY;
	if (cpumask_weight(target_mask) < 2) {
		pr_err("single=0 needs a second online CPU, not isolated or nohz_full (or targets=)\n");
		return -EINVAL;
	}
	return ipistorm_check_many_self();
}

/* single=0 targets=LIST: smp_call_function_many() to the list. */
static int ipistorm_check_many(void)
{
	int ret;

	kind = IPISTORM_MANY;
	ret = storm_parse_cpulist("targets", targets, target_mask,
				  cpu_online_mask);
	return ret ?: ipistorm_check_many_self();
}

/*
 * A CPU that sends no calls itself takes every call of its senders in
 * hardirq, back to back, however short the handler: at most pileup
 * senders on one such CPU. (A CPU that also sends spends its own time
 * calling, as in the all-CPU storm.)
 */
static int ipistorm_check_pileup(void)
{
	unsigned int *n, most = 0;
	int cpu, at = -1;

	if (!pileup) {
		pr_err("pileup=0: at least one sender must be able to call a CPU\n");
		return -EINVAL;
	}
	if (kind == IPISTORM_ALL || kind == IPISTORM_MANY) {
		for_each_cpu(cpu, target_mask) {
			if (cpumask_test_cpu(cpu, sender_mask))
				continue;
			most = cpumask_weight(sender_mask);
			at = cpu;
			break;
		}
	} else {
		n = kvcalloc(nr_cpu_ids, sizeof(*n), GFP_KERNEL);
		if (!n)
			return -ENOMEM;
		for_each_cpu(cpu, sender_mask) {
			int t = per_cpu_ptr(senders, cpu)->target;

			if (!cpumask_test_cpu(t, sender_mask) && ++n[t] > most) {
				most = n[t];
				at = t;
			}
		}
		kvfree(n);
	}
	if (most <= pileup)
		return 0;
	pr_err("CPU %d would take the calls of %u senders and send none itself, more than pileup=%u (raise pileup= to allow it)\n",
	       at, most, pileup);
	return -EINVAL;
}

static int ipistorm_check_params(void)
{
	int ret;

	ret = storm_parse_cpulist("cpulist", cpulist, sender_mask,
				  cpu_online_mask) ?:
	      ipistorm_check_bounds();
	if (ret)
		return ret;
	if (async && !single) {
		pr_err("async=1 needs single=1\n");
		return -EINVAL;
	}
	if (single && targets) {
		pr_err("targets= is for single=0; single=1 uses offset and mask\n");
		return -EINVAL;
	}
	if (single)
		ret = ipistorm_check_single();
	else if (!targets)
		ret = ipistorm_check_all();
	else
		ret = ipistorm_check_many();
	return ret ?: ipistorm_check_pileup();
}

/* per_call includes the sender's sleeps: delay's, and paced ones */
static const char *ipistorm_per_call_note(void)
{
	if (delay && paced)
		return " (with delay, paced)";
	if (delay)
		return " (with delay)";
	return paced ? " (paced)" : "";
}

static void ipistorm_print_results(void)
{
	struct storm_irqs d, sum;
	u64 runtime = ctl.end_ns - ctl.start_ns;
	u64 calls = 0;
	int cpu;

	for_each_cpu(cpu, sender_mask) {
		struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);
		u64 ns = s->end_ns - s->start_ns;

		storm_irqs_delta(irqs_before, irqs_after, cpu, &d);
		calls += s->calls;
		/*
		 * per_call is the sender's time over its calls, delay sleeps
		 * included; sampled_min/max are over the timed calls only (one
		 * in latency=N); CAL is every call-function interrupt the
		 * target took in the window, wakeups of its tasks included.
		 */
		if (kind == IPISTORM_SINGLE || kind == IPISTORM_ASYNC)
			pr_info("cpu %d -> %d: calls=%llu errors=%llu time=%llu ns per_call=%llu ns%s sampled_min=%llu sampled_max=%llu ns timed=%llu CAL=%llu\n",
				cpu, s->target, s->calls, s->errors, ns,
				s->calls ? div64_u64(ns, s->calls) : 0,
				ipistorm_per_call_note(),
				storm_hist_min(&s->hist), s->hist.max_ns,
				s->hist.count,
				storm_irq_delta(irqs_after[s->target].cal,
						irqs_before[s->target].cal));
		else
			pr_info("cpu %d -> %*pbl: calls=%llu time=%llu ns per_call=%llu ns%s sampled_min=%llu sampled_max=%llu ns timed=%llu\n",
				cpu, cpumask_pr_args(target_mask), s->calls, ns,
				s->calls ? div64_u64(ns, s->calls) : 0,
				ipistorm_per_call_note(),
				storm_hist_min(&s->hist), s->hist.max_ns,
				s->hist.count);
		if (s->errors)
			pr_err("cpu %d: call failed with %d\n", cpu,
			       s->last_error);
		if (s->moved)
			pr_info("cpu %d: the sender was moved off its CPU (hotplug): stopped\n",
				cpu);
	}
	storm_irqs_sum(irqs_before, irqs_after, cpu_online_mask, &sum);
	pr_info("summary: senders=%u calls=%llu runtime=%llu ns calls_per_sec=%llu CAL=%llu RES=%llu TLB=%llu status=%s\n",
		cpumask_weight(sender_mask), calls, runtime,
		runtime ? mul_u64_u64_div_u64(calls, NSEC_PER_SEC, runtime) : 0,
		sum.cal, sum.res, sum.tlb, storm_status(&ctl, failed));
	storm_print_end(&ctl, failed, ipistorm_print_params);
}

static int ipistorm_result_show(struct seq_file *m, void *v)
{
	struct storm_op op = {
		.name = "call", .ipi_rows = "CAL",
		.senders = sender_mask, .targets = target_mask,
		/* with latency=0 it timed none: the runtime stands in */
		.timed = "latency",
	};
	char name[32];
	int cpu;

	storm_show_header(m, "ipistorm", &ctl, failed);
	seq_printf(m, "param.numipi: %lu\nparam.timeout: %lu\n"
		   "param.wait: %d\nparam.single: %d\nparam.async: %d\n"
		   "param.offset: %lu\nparam.mask: %lu\nparam.delay: %lu\n"
		   "param.handler_ns: %lu\nparam.handler_loops: %lu\n"
		   "param.latency: %u\nparam.background: %d\n"
		   "param.pileup: %u\n",
		   numipi, timeout, wait, single, async, offset, mask, delay,
		   handler_ns, handler_loops, latency, background, pileup);
	seq_printf(m, "param.cpulist: %*pbl\nparam.targets: %*pbl\n",
		   cpumask_pr_args(sender_mask), cpumask_pr_args(target_mask));
	seq_printf(m, "kind: %s\n", ipistorm_kind_name[kind]);

	for_each_cpu(cpu, sender_mask) {
		struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);

		if (kind == IPISTORM_SINGLE || kind == IPISTORM_ASYNC)
			seq_printf(m, "sender.%d.target: %d\n", cpu, s->target);
		else
			seq_printf(m, "sender.%d.targets: %*pbl\n", cpu,
				   cpumask_pr_args(target_mask));
		seq_printf(m, "sender.%d.calls: %llu\n", cpu, s->calls);
		op.count += s->calls;
		seq_printf(m, "sender.%d.errors: %llu\n", cpu, s->errors);
		seq_printf(m, "sender.%d.moved: %d\n", cpu, s->moved);
		seq_printf(m, "sender.%d.runtime_ns: %llu\n", cpu,
			   s->end_ns - s->start_ns);
		if (kind == IPISTORM_ASYNC)
			seq_printf(m, "sender.%d.busy_retries: %llu\n", cpu,
				   s->busy);
		if (paced)
			seq_printf(m, "sender.%d.paced_ns: %llu\n", cpu,
				   s->paced_ns);
		if (latency) {
			snprintf(name, sizeof(name), "sender.%d.latency", cpu);
			storm_hist_show(m, name, &s->hist);
		}
	}
	if (latency) {
		/* the histograms hold every N-th call on average, see above */
		seq_printf(m, "latency.sampled_every: %u\n", latency);
		storm_hist_show(m, "latency", hist_total);
	}
	for_each_possible_cpu(cpu) {
		const struct ipistorm_target *t;

		if (!storm_cpu_seen(irqs_before, irqs_after, cpu))
			continue;
		t = per_cpu_ptr(&ipistorm_targets, cpu);
		seq_printf(m, "handled.%d: %llu\n", cpu, t->handled);
		if (handler_ns || handler_loops)
			seq_printf(m, "handler.%d.busy_ns: %llu\n"
				   "handler.%d.trimmed: %llu\n",
				   cpu, t->busy_ns, cpu, t->trimmed);
	}
	if (handler_ns || handler_loops)
		seq_printf(m, "handler.busy_budget: %d\nhandler.budget_ns: %lu\n"
			   "handler.window_ns: %lu\nhandler.paced: %d\n",
			   busy_budget, IPISTORM_BUSY_BUDGET_NS,
			   IPISTORM_BUSY_WINDOW_NS, paced);
	storm_show_op(m, &op);
	storm_irqs_show(m, irqs_before, irqs_after);
	storm_sent_show(m, irqs_before, irqs_after);
	storm_pmu_show(m);
	storm_hotplug_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipistorm_result);

static void ipistorm_stop_senders(void)
{
	int cpu;

	for_each_cpu(cpu, sender_mask)
		storm_thread_stop(&per_cpu_ptr(senders, cpu)->task);
}

/*
 * Make sure no call of ours is still queued or running anywhere before the
 * results are read or the module goes away: with wait=0 the last calls may
 * still sit in the targets' queues. A synchronous call to every CPU makes
 * each flush its queue: once it returns, every call queued before it has
 * been taken off its queue by a flush that has run our nop. That does not
 * mean the flush is over: it runs synchronous calls (the nop) before the
 * asynchronous ones it took with them. A flush runs with interrupts off,
 * which is an RCU read-side critical section: synchronize_rcu() is what
 * guarantees that every such flush, and every handler of ours in it, has
 * returned.
 */
static void ipistorm_quiesce(void)
{
	int cpu;

	if (kind == IPISTORM_ASYNC) {
		for_each_cpu(cpu, sender_mask) {
			struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);

			/* pairs with the handler's smp_store_release() */
			while (smp_load_acquire(&s->completed) != s->sent)
				cpu_relax();
		}
	}
	if (!wait || kind == IPISTORM_ASYNC) {
		on_each_cpu(ipistorm_nop, NULL, 1);
		synchronize_rcu();
	}
}

/*
 * Each call ran on the CPU it was sent to, exactly once (what
 * kernel/scftorture.c checks call by call, here by the counts): once
 * ipistorm_quiesce() has returned every call made has run, so each CPU
 * has handled exactly the calls sent to it. smp_call_function() and
 * _many() leave out the calling CPU. Not checked when a CPU went off- or
 * online (status hotplug): the kernel refuses a call to an offline CPU
 * and _many() and all-CPU calls skip one.
 */
static void ipistorm_check_calls(void)
{
	bool inject = inject_miscount;
	u64 total = 0, handled, sent;
	int cpu;

	if (ctl.hotplug)
		return;
	for_each_cpu(cpu, sender_mask) {
		struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);

		total += s->calls;
		if (kind == IPISTORM_SINGLE || kind == IPISTORM_ASYNC)
			per_cpu_ptr(&ipistorm_targets, s->target)->sent +=
				s->calls;
	}
	for_each_online_cpu(cpu) {
		struct ipistorm_target *t = per_cpu_ptr(&ipistorm_targets, cpu);

		sent = t->sent;
		if (kind == IPISTORM_ALL ||
		    (kind == IPISTORM_MANY && cpumask_test_cpu(cpu, target_mask))) {
			sent = total;
			if (cpumask_test_cpu(cpu, sender_mask))
				sent -= per_cpu_ptr(senders, cpu)->calls;
		}
		handled = t->handled;
		if (inject) {
			pr_info("check: injected: CPU %d's count one too many\n",
				cpu);
			inject = false;
			handled++;
		}
		if (handled != sent)
			storm_check_failed(&ctl, handled > sent ? handled - sent :
					   sent - handled,
					   "CPU %d ran %llu calls, %llu were sent to it",
					   cpu, handled, sent);
	}
}

/*
 * wait=0: when the last sender ends, its last calls, and the other
 * senders', may still sit in their targets' queues, their IPIs not yet
 * taken: the window's closing counts would miss up to one CAL per
 * sender and target. The last sender waits (at most a second) until
 * every call made has been handled, after the end marker, so that the
 * instructions it spins are not the storm's. Its end time is taken
 * before: runtime_ns is the calls', window_ns includes the wait.
 */
static void ipistorm_drain(struct storm_ctl *c)
{
	u64 expected = 0, handled, end;
	int cpu;

	if (READ_ONCE(c->hotplug))
		return;
	for_each_cpu(cpu, sender_mask) {
		u64 calls = per_cpu_ptr(senders, cpu)->calls;

		if (kind == IPISTORM_SINGLE || kind == IPISTORM_ASYNC)
			expected += calls;
		else
			expected += calls * (cpumask_weight(target_mask) -
					     cpumask_test_cpu(cpu, target_mask));
	}
	end = storm_clock_ns() + NSEC_PER_SEC;
	for (;;) {
		handled = 0;
		for_each_cpu(cpu, target_mask)
			handled += READ_ONCE(per_cpu_ptr(&ipistorm_targets,
							 cpu)->handled);
		if (handled >= expected || storm_clock_ns() >= end)
			return;
		cpu_relax();
	}
}

/* Release to report; in insmod, or in the controller thread. */
static void ipistorm_run(void)
{
	int cpu;

	storm_ctl_wait_ready(&ctl);
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&ipistorm_targets, cpu), 0,
		       sizeof(struct ipistorm_target));
	storm_pmu_begin();
	storm_sent_begin();
	storm_irqs_begin(&ctl, irqs_before, irqs_after, irqs_acc);
	storm_ctl_go(&ctl, !numipi, timeout);
	storm_ctl_wait_done(&ctl);
	storm_irqs_end(&ctl);
	storm_sent_end();
	storm_ctl_check_cpus(&ctl, irqs_before, irqs_after);
	ipistorm_quiesce();
	ipistorm_stop_senders();
	ipistorm_check_calls();

	for_each_cpu(cpu, sender_mask) {
		struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);

		/* a target gone offline mid-storm is hotplug, not a failure */
		if (s->errors && !(ctl.hotplug && s->last_error == -ENXIO))
			failed = true;
		storm_hist_merge(hist_total, &s->hist);
	}
	ipistorm_print_results();
}

static void ipistorm_free(void)
{
	kfree(hist_total);
	storm_irqs_free(irqs_acc);
	storm_irqs_free(irqs_after);
	storm_irqs_free(irqs_before);
	free_percpu(senders);
	free_cpumask_var(target_mask);
	free_cpumask_var(sender_mask);
}

static struct storm_module ipistorm_module = {
	.ctl		= &ctl,
	.run		= ipistorm_run,
	.stop_threads	= ipistorm_stop_senders,
	.free		= ipistorm_free,
	.result_fops	= &ipistorm_result_fops,
};

static int __init ipistorm_init(void)
{
	int cpu, ret = -ENOMEM;

	if (!zalloc_cpumask_var(&sender_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&target_mask, GFP_KERNEL))
		goto err_free;
	senders = alloc_percpu(struct ipistorm_sender);
	irqs_before = storm_irqs_alloc();
	irqs_after = storm_irqs_alloc();
	irqs_acc = storm_irqs_alloc();
	hist_total = kmalloc(sizeof(*hist_total), GFP_KERNEL);
	if (!senders || !irqs_before || !irqs_after || !irqs_acc ||
	    !hist_total)
		goto err_free;
	storm_hist_init(hist_total);
	ret = storm_hotplug_watch(&ctl);
	if (ret)
		goto err_free;

	/* Hold off CPU hotplug while checking and binding to CPUs. */
	cpus_read_lock();
	ret = ipistorm_check_params();
	if (ret) {
		cpus_read_unlock();
		goto err_unwatch;
	}
	busy_budget = (handler_ns || handler_loops) && ipistorm_back_to_back();
	paced = !busy_budget &&
		(handler_ns || handler_loops > IPISTORM_FREE_LOOPS);
	ipistorm_print_params("Start of test");
	storm_ctl_init(&ctl, cpumask_weight(sender_mask));
	if (!wait)
		ctl.drain = ipistorm_drain;
	for_each_cpu(cpu, sender_mask) {
		struct ipistorm_sender *s = per_cpu_ptr(senders, cpu);

		s->cpu = cpu;
		storm_hist_init(&s->hist);
		INIT_CSD(&s->csd, ipistorm_handler, s);
		s->task = storm_thread_create(ipistorm_sender_fn, s, cpu,
					      KBUILD_MODNAME "/%u");
		if (IS_ERR(s->task)) {
			ret = PTR_ERR(s->task);
			s->task = NULL;
			pr_err("cannot create the sender thread for CPU %d (%d)\n",
			       cpu, ret);
			cpus_read_unlock();
			goto err_stop;
		}
	}
	cpus_read_unlock();
	for_each_cpu(cpu, sender_mask)
		wake_up_process(per_cpu_ptr(senders, cpu)->task);

	ipistorm_module.background = background;
	return storm_module_start(&ipistorm_module);

err_stop:
	storm_ctl_stop(&ctl, true);
	ipistorm_stop_senders();
err_unwatch:
	storm_hotplug_unwatch();
err_free:
	ipistorm_free();
	return ret;
}

static void __exit ipistorm_exit(void)
{
	storm_module_exit(&ipistorm_module);
}

module_init(ipistorm_init);
module_exit(ipistorm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(STORM_MODULE_VERSION);
MODULE_DESCRIPTION("Storms of cross-CPU function calls (IPIs)");
