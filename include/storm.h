/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm.h - what the ipistorm, tlbstorm and slabstorm modules share.
 *
 * Declarations of include/storm.c, which every storm links in as a part
 * of its composite module (Kbuild), and the few helpers a storm loop
 * calls on every iteration, inline here:
 *
 *  - storm_ctl:    start barrier, stop flag, deadline, "all workers done"
 *  - storm_module: the load and unload lifecycle every storm shares
 *  - storm_hist:   log-linear latency histogram (percentiles in userspace)
 *  - storm_irqs:   per-CPU CAL/RES/TLB/LOC snapshots (x86 irq_stat, arm64
 *                  IPI and timer irqs)
 *  - storm_sent:   the IPIs sent, by sender and target (storm_sent.h)
 *  - storm_pmu:    instructions and cycles from the PMU (storm_pmu.h)
 *  - cpulist parameters with a one-line reason on refusal
 *  - thread helpers, the "name: value" result-file printers, and the
 *    "Start of test" and "End of test" lines of the kernel log
 */
#ifndef _STORM_H
#define _STORM_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/cache.h>
#include <linux/compiler.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/seq_file.h>
#include <linux/timekeeping.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "storm_mark.h"
#include "storm_pmu.h"
#include "storm_sent.h"

struct dentry;
struct task_struct;

/*
 * Version of the modules, for modinfo. Declaring one also makes modpost
 * record a srcversion (a hash of the sources), which the run files keep so
 * that two sets taken with different module sources are told apart.
 */
#define STORM_MODULE_VERSION	"2"

/* Version of the result-file format; bump on incompatible changes. */
#define STORM_SCHEMA		1

/* Upper bounds that keep arithmetic (jiffies, ns) far from overflow. */
#define STORM_MAX_TIMEOUT_S	(7UL * 24 * 3600)
#define STORM_MAX_COUNT		1000000000000ULL	/* 1e12 */
#define STORM_MAX_DELAY_US	1000000UL

/*
 * storm_mark(STORM_MARK_BEGIN or _END): the marker NOP (storm_mark.h) that an
 * instruction counter outside the guest records, next to the interrupt
 * snapshots (storm_irqs_begin(), and the end snapshot wherever it is
 * taken) so that its counts cover the window the interrupt counts cover.
 * A compiler barrier, so that the window's loads and stores stay on their
 * side of it.
 */
static __always_inline void storm_mark(const unsigned int id)
{
#ifdef CONFIG_X86
	/* "i": inlined, id is the constant the plugin reads back */
	asm volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n\t.long %c0"
		     : : "i" (STORM_MARK_MAGIC | id) : "memory");
#elif defined(CONFIG_ARM64)
	asm volatile(".inst %c0" : : "i" (STORM_MARK_A64_INSN(id)) : "memory");
#else
	barrier();
#endif
}

/*
 * storm_loops(n): n iterations of a two-instruction loop (dec, jnz; subs,
 * b.ne), a known number of instructions; the storms' planted costs
 * (ipistorm's handler_loops, tlbstorm's and slabstorm's op_loops), which
 * is how a design is shown to detect a change of a known size.
 */
#define STORM_MAX_LOOPS		10000000UL

static __always_inline void storm_loops(unsigned long n)
{
	if (!n)
		return;
#ifdef CONFIG_X86
	asm volatile("1:\n\tdec %0\n\tjnz 1b" : "+r" (n) : : "cc");
#elif defined(CONFIG_ARM64)
	asm volatile("1:\n\tsubs %0, %0, #1\n\tb.ne 1b" : "+r" (n) : : "cc");
#else
	while (n--)
		barrier();
#endif
}

/* ---------------------------------------------------------------------
 * Run control: start barrier, stop request, end of run.
 *
 * The controller creates the workers, waits until every one of them is
 * ready (storm_ctl_wait_ready), then releases them all at once with
 * storm_ctl_go(). Workers poll storm_should_stop() in their loop: it reads
 * one read-mostly cache line and jiffies, nothing else.
 *
 * The release wakes no task: the workers spin at the barrier. The last
 * worker to end wakes the controller only after it has taken the
 * window's closing counts, so that the wakeup's IPI falls outside the
 * window. Till then the controller sleeps, waking once a second (to take
 * in the running counts) or for a fatal signal: the storm's CPUs may be
 * the controller's, and a controller that woke every tick there would
 * add its own instructions and interrupts to theirs.
 */
struct storm_irqs;

struct storm_ctl {
	/* read by every worker in its loop: keep apart from the counters */
	bool stop ____cacheline_aligned_in_smp;
	bool released;
	bool timed;
	unsigned long deadline;		/* jiffies */

	atomic_t ready ____cacheline_aligned_in_smp;
	atomic_t running;
	struct completion all_ready;
	wait_queue_head_t all_done;	/* the controller, till running is 0 */
	int nr_workers;
	bool deadline_hit;		/* a fixed-count run ran out of time */
	bool interrupted;		/* stopped by a signal or by rmmod */
	bool hotplug;			/* a CPU went off- or online meanwhile */
	u64 failures;			/* see storm_check_failed() */
	bool starved;			/* see storm_watchdog_check() */
	int starved_cpu;
	atomic64_t last_end_ns;		/* the latest worker end so far */
	u64 start_ns, end_ns;		/* ktime_get_ns() */
	/* the window's interrupt counts, see storm_irqs_begin() */
	bool started;			/* released by storm_ctl_go() */
	atomic_t ending;		/* workers not yet at their end */
	bool irqs_taken;		/* the last worker took irqs_after */
	u64 window_start_ns, window_end_ns;	/* around the snapshots */
	/*
	 * Run by the last worker between the end marker and the closing
	 * counts: waits for the storm's work still in flight (ipistorm's
	 * wait=0 calls), so that the counts hold it. Optional.
	 */
	void (*drain)(struct storm_ctl *ctl);
	struct storm_irqs *irqs_before, *irqs_after, *irqs_acc;
};

void storm_ctl_init(struct storm_ctl *ctl, int nr_workers);
void storm_worker_ready(struct storm_ctl *ctl);
void storm_worker_done(struct storm_ctl *ctl);
void storm_ctl_wait_ready(struct storm_ctl *ctl);
void storm_ctl_go(struct storm_ctl *ctl, bool timed, unsigned long timeout_s);
bool storm_ctl_over(const struct storm_ctl *ctl);
void storm_ctl_stop(struct storm_ctl *ctl, bool interrupted);
void storm_ctl_moved(struct storm_ctl *ctl);
void storm_ctl_wait_done(struct storm_ctl *ctl);

/*
 * Stop at ->stop, and at the deadline. A fixed-count run has a deadline
 * too (timeout=, as in the original ipistorm): one that hits it says so.
 * Every storm loop calls this on every iteration: inline.
 */
static inline bool storm_should_stop(struct storm_ctl *ctl)
{
	if (READ_ONCE(ctl->stop))
		return true;
	if (!time_after(jiffies, ctl->deadline))
		return false;
	if (!ctl->timed && !READ_ONCE(ctl->deadline_hit))
		WRITE_ONCE(ctl->deadline_hit, true);
	return true;
}

/* ---------------------------------------------------------------------
 * Threads: one bound to each CPU of a storm, parked once done.
 * @namefmt holds one %u, the CPU: KBUILD_MODNAME "/%u".
 */
struct task_struct *storm_thread_create(int (*fn)(void *), void *data,
					unsigned int cpu, const char *namefmt);
void storm_thread_park(void);
void storm_thread_stop(struct task_struct **t);

/* CPU hotplug during a storm: the storm stops, its status is "hotplug". */
int storm_hotplug_watch(struct storm_ctl *ctl);
void storm_hotplug_unwatch(void);
void storm_hotplug_show(struct seq_file *m);

/* ---------------------------------------------------------------------
 * Load and unload, the same for every storm (storm.c).
 *
 * A module's init allocates, checks its parameters, creates and wakes its
 * threads, then hands over to storm_module_start(); its exit is
 * storm_module_exit(). In between, rmmod may come at any moment of a
 * background storm: the controller not yet run, the workers at the
 * barrier or storming, the report being written, or all parked.
 */
struct storm_module {
	struct storm_ctl *ctl;
	/* release to report: in insmod, or in the controller thread */
	void (*run)(void);
	/*
	 * Stop every thread and drop what they use: idempotent, and safe
	 * whatever state each thread is in, including never created.
	 */
	void (*stop_threads)(void);
	/* Free what init allocated: safe after a partial init. */
	void (*free)(void);
	/* made into /sys/kernel/debug/<module>/result once run() is over */
	const struct file_operations *result_fops;
	struct dentry *result_dir;
	bool background;
	struct task_struct *controller;
	bool reported;			/* the controller has run to its report */
};

int storm_module_start(struct storm_module *sm);
void storm_module_exit(struct storm_module *sm);

/* ---------------------------------------------------------------------
 * Latency histogram with log-linear buckets: values below 16 ns have a
 * bucket each; above, every power of two is split into 16 sub-buckets, so
 * any percentile read from the buckets is within 1/16 (6.25%) of the true
 * value. Values of 2^41 ns (~37 min) and more share the last bucket.
 */
#define STORM_HIST_SUB_BITS	4
#define STORM_HIST_SUB		(1U << STORM_HIST_SUB_BITS)
#define STORM_HIST_MAX_MSB	40
#define STORM_HIST_BUCKETS	\
	((STORM_HIST_MAX_MSB - STORM_HIST_SUB_BITS + 2) * STORM_HIST_SUB)

struct storm_hist {
	u64 count;
	u64 sum_ns;
	u64 min_ns;
	u64 max_ns;
	u64 bucket[STORM_HIST_BUCKETS];
};

static inline unsigned int storm_hist_index(u64 ns)
{
	unsigned int msb, shift;

	if (ns < STORM_HIST_SUB)
		return ns;
	msb = fls64(ns) - 1;
	if (msb > STORM_HIST_MAX_MSB)
		return STORM_HIST_BUCKETS - 1;
	shift = msb - STORM_HIST_SUB_BITS;
	return (shift + 1) * STORM_HIST_SUB +
	       ((ns >> shift) & (STORM_HIST_SUB - 1));
}

/*
 * The clock of every timed sample. Not local_clock(): with an unstable
 * sched_clock (a TSC the kernel does not trust, as in any TCG guest) it
 * is clamped to one tick past this CPU's last tick, so both reads of a
 * call that runs after a late tick return the same value and the sample
 * reads 0 ns. The fast monotonic clock reads the clocksource itself,
 * never stalls, and is the clock the handlers spin on, so a sender's
 * sample and its handler's time compare.
 */
static __always_inline u64 storm_clock_ns(void)
{
	return ktime_get_mono_fast_ns();
}

/* On a storm's timed path: inline. */
static inline void storm_hist_add(struct storm_hist *h, u64 ns)
{
	h->count++;
	h->sum_ns += ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->bucket[storm_hist_index(ns)]++;
}

void storm_hist_init(struct storm_hist *h);
void storm_hist_merge(struct storm_hist *dst, const struct storm_hist *src);
u64 storm_hist_mean(const struct storm_hist *h);
u64 storm_hist_min(const struct storm_hist *h);
void storm_hist_show(struct seq_file *m, const char *prefix,
		     const struct storm_hist *h);

/* ---------------------------------------------------------------------
 * Per-CPU interrupt counters, as /proc/interrupts shows them.
 * x86: CAL = irq_call_count (both call-function vectors, so kernel-range
 * TLB flushes too), TLB = irq_tlb_count (remote flush_tlb_func runs),
 * RES = irq_resched_count, LOC = apic_timer_irqs.
 * arm64: CAL = IPI1 (function call), RES = IPI0 (reschedule), TLB = 0
 * (arm64 flushes by broadcast TLBI, with no IPI), LOC = the arch_timer
 * irq; the result's "irq.source" line says which irqs were read, or that
 * one was not found (its counts are then zeros).
 * Other architectures report zeros. Snapshots are arrays of nr_cpu_ids
 * entries, over every possible CPU, with 64-bit counts
 * (storm_irqs_advance()).
 */
struct storm_irqs {
	u64 cal;
	u64 res;
	u64 tlb;
	u64 loc;			/* local timer interrupts: ticks */
	bool online;			/* when the snapshot was taken */
};

/* Both snapshots advanced to 64 bits: a plain difference. */
static inline u64 storm_irq_delta(u64 after, u64 before)
{
	return after - before;
}

/*
 * The CPUs a result reports on: online at the start of the storm or at its
 * end, so that a CPU that went away during the storm still shows up.
 */
static inline bool storm_cpu_seen(const struct storm_irqs *before,
				  const struct storm_irqs *after, int cpu)
{
	return before[cpu].online || after[cpu].online;
}

struct storm_irqs *storm_irqs_alloc(void);
void storm_irqs_free(struct storm_irqs *snap);
void storm_irqs_snapshot(struct storm_irqs *snap);
void storm_irqs_advance(const struct storm_irqs *prev,
			struct storm_irqs *snap);
void storm_irqs_begin(struct storm_ctl *ctl, struct storm_irqs *before,
		      struct storm_irqs *after, struct storm_irqs *acc);
void storm_irqs_end(struct storm_ctl *ctl);
void storm_irqs_delta(const struct storm_irqs *before,
		      const struct storm_irqs *after, int cpu,
		      struct storm_irqs *d);
void storm_irqs_sum(const struct storm_irqs *before,
		    const struct storm_irqs *after,
		    const struct cpumask *cpus, struct storm_irqs *sum);
void storm_ctl_check_cpus(struct storm_ctl *ctl,
			  const struct storm_irqs *before,
			  const struct storm_irqs *after);
void storm_irqs_show(struct seq_file *m, const struct storm_irqs *before,
		     const struct storm_irqs *after);

/* ---------------------------------------------------------------------
 * Parameters: every refusal says why in one line, naming the parameter.
 */
void storm_default_cpus(struct cpumask *mask, const struct cpumask *dflt);
int storm_default_cpu(void);
int storm_parse_cpulist(const char *param, const char *str,
			struct cpumask *mask, const struct cpumask *dflt);
int storm_check_range(const char *param, unsigned long long val,
		      unsigned long long max);
int storm_check_bound(const char *count_name, unsigned long count,
		      unsigned long timeout);
int storm_check_memory(const char *what, u64 bytes);
struct mm_struct;
int storm_check_memcg(const char *what, u64 bytes, struct mm_struct *mm);

/* ---------------------------------------------------------------------
 * Results: the result file's header, the status, and the kernel log's
 * first and last lines of a storm: print_params(tag) of each storm calls
 * storm_print_params() with its own parameters.
 */
const char *storm_status(const struct storm_ctl *ctl, bool failed);
__printf(3, 4)
void storm_check_failed(struct storm_ctl *ctl, u64 n, const char *fmt, ...);
void storm_show_header(struct seq_file *m, const char *storm,
		       const struct storm_ctl *ctl, bool failed);

/*
 * The operation a storm measures, said in its result in keys the drivers
 * read without knowing the storm (docs/storms.md):
 *   op: NAME            one operation ("call", "flush", ...)
 *   op.count: N         operations made in the window
 *   op.ipi_rows: ROWS   the irq.<cpu>.<ROW> rows (CAL, RES, TLB) whose sum
 *                       over every CPU is the IPIs the operations took
 *   op.senders: CPUS    the CPUs that make the operations (optional)
 *   op.targets: CPUS    the CPUs whose work is each operation's receiving
 *                       side: their instructions grow with the count, not
 *                       with time (optional)
 *   op.timed: PREFIX    the histogram that times single operations; its
 *                       median is the time per operation (optional)
 */
struct storm_op {
	const char *name;
	u64 count;
	const char *ipi_rows;
	const struct cpumask *senders;
	const struct cpumask *targets;
	const char *timed;
};

void storm_show_op(struct seq_file *m, const struct storm_op *op);
__printf(2, 3)
void storm_print_params(const char *tag, const char *fmt, ...);
void storm_print_end(const struct storm_ctl *ctl, bool failed,
		     void (*print_params)(const char *tag));

#endif /* _STORM_H */
