/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm.h - what the ipistorm, tlbstorm and slabstorm modules share.
 *
 * Header-only on purpose: each storm is one self-contained .ko, so the
 * helpers are static inline and every module gets its own copy.
 *
 *  - storm_ctl:   start barrier, stop flag, deadline, "all workers done"
 *  - storm_hist:  log-linear latency histogram (percentiles in userspace)
 *  - storm_irqs:  per-CPU CAL/RES/TLB snapshots from x86 irq_stat
 *  - cpulist parameters with a one-line reason on refusal
 *  - thread helpers and the "name: value" result-file printers
 *
 * Users must define pr_fmt before including this header.
 */
#ifndef _STORM_H
#define _STORM_H

#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/percpu.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>
#ifdef CONFIG_X86
#include <asm/hardirq.h>
#endif

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

/* ---------------------------------------------------------------------
 * Run control: start barrier, stop request, end of run.
 *
 * The controller creates the workers, waits until every one of them is
 * ready (storm_ctl_wait_ready), then releases them all at once with
 * storm_ctl_go(). Workers poll storm_should_stop() in their loop: it reads
 * one read-mostly cache line and jiffies, nothing else.
 */
struct storm_ctl {
	/* read by every worker in its loop: keep apart from the counters */
	bool stop ____cacheline_aligned_in_smp;
	bool timed;
	unsigned long deadline;		/* jiffies, timed mode only */

	atomic_t ready ____cacheline_aligned_in_smp;
	atomic_t running;
	struct completion all_ready;
	struct completion go;
	struct completion done;		/* the last worker has finished */
	int nr_workers;
	bool interrupted;		/* stopped by a signal or by rmmod */
	u64 start_ns, end_ns;		/* ktime_get_ns() */
};

static inline void storm_ctl_init(struct storm_ctl *ctl, int nr_workers)
{
	memset(ctl, 0, sizeof(*ctl));
	atomic_set(&ctl->ready, 0);
	atomic_set(&ctl->running, nr_workers);
	init_completion(&ctl->all_ready);
	init_completion(&ctl->go);
	init_completion(&ctl->done);
	ctl->nr_workers = nr_workers;
}

/* Worker side of the start barrier. */
static inline void storm_worker_ready(struct storm_ctl *ctl)
{
	if (atomic_inc_return(&ctl->ready) == ctl->nr_workers)
		complete(&ctl->all_ready);
	wait_for_completion(&ctl->go);
}

static inline void storm_worker_done(struct storm_ctl *ctl)
{
	if (atomic_dec_and_test(&ctl->running))
		complete(&ctl->done);
}

static inline bool storm_should_stop(const struct storm_ctl *ctl)
{
	if (READ_ONCE(ctl->stop))
		return true;
	return ctl->timed && time_after(jiffies, ctl->deadline);
}

static inline void storm_ctl_wait_ready(struct storm_ctl *ctl)
{
	wait_for_completion(&ctl->all_ready);
}

/* Release the workers; a timeout of 0 means a fixed-count run. */
static inline void storm_ctl_go(struct storm_ctl *ctl, unsigned long timeout_s)
{
	ctl->timed = timeout_s != 0;
	ctl->deadline = jiffies + timeout_s * HZ;
	ctl->start_ns = ktime_get_ns();
	complete_all(&ctl->go);
}

/*
 * Ask the workers to stop early (signal, rmmod, error). Safe before go:
 * workers still at the barrier are released and stop at once.
 */
static inline void storm_ctl_stop(struct storm_ctl *ctl, bool interrupted)
{
	if (interrupted)
		ctl->interrupted = true;
	WRITE_ONCE(ctl->stop, true);
	complete_all(&ctl->go);
}

/*
 * Wait for the end of the run. A fatal signal to the waiting task (Ctrl-C
 * on insmod) stops the workers early; the run is then marked interrupted
 * and this still waits for every worker, which stops within one call.
 */
static inline void storm_ctl_wait_done(struct storm_ctl *ctl)
{
	if (wait_for_completion_killable(&ctl->done)) {
		pr_info("fatal signal: stopping the storm early\n");
		storm_ctl_stop(ctl, true);
		wait_for_completion(&ctl->done);
	}
	ctl->end_ns = ktime_get_ns();
}

/* ---------------------------------------------------------------------
 * Worker threads: created bound to one CPU, with a task reference held so
 * kthread_stop() is safe whether or not the thread has already returned.
 */
static inline struct task_struct *storm_thread_create(int (*fn)(void *),
						      void *data, int cpu,
						      const char *name)
{
	struct task_struct *t;

	t = kthread_create(fn, data, "%s/%d", name, cpu);
	if (IS_ERR(t))
		return t;
	kthread_bind(t, cpu);
	get_task_struct(t);
	return t;
}

/*
 * A storm thread that has finished sleeps here until kthread_stop(), so
 * that whoever stops it (the controller, or rmmod in background mode)
 * owns its lifetime and can still read what it left.
 */
static inline void storm_thread_park(void)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
}

static inline void storm_thread_stop(struct task_struct **t)
{
	if (IS_ERR_OR_NULL(*t))
		return;
	kthread_stop(*t);
	put_task_struct(*t);
	*t = NULL;
}

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

static inline void storm_hist_init(struct storm_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = U64_MAX;
}

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

/* Smallest value that falls in bucket @idx (the inverse of the above). */
static inline u64 storm_hist_bucket_low(unsigned int idx)
{
	unsigned int shift;

	if (idx < STORM_HIST_SUB)
		return idx;
	shift = idx / STORM_HIST_SUB - 1;
	return (u64)(STORM_HIST_SUB + idx % STORM_HIST_SUB) << shift;
}

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

static inline void storm_hist_merge(struct storm_hist *dst,
				    const struct storm_hist *src)
{
	unsigned int i;

	if (!src->count)
		return;
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	dst->min_ns = min(dst->min_ns, src->min_ns);
	dst->max_ns = max(dst->max_ns, src->max_ns);
	for (i = 0; i < STORM_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

static inline u64 storm_hist_mean(const struct storm_hist *h)
{
	return h->count ? div64_u64(h->sum_ns, h->count) : 0;
}

static inline u64 storm_hist_min(const struct storm_hist *h)
{
	return h->count ? h->min_ns : 0;
}

/*
 * "<prefix>.count: N" ... and "<prefix>.hist: low:count ..." listing only
 * the non-empty buckets by their lower bound in ns.
 */
static inline void storm_hist_show(struct seq_file *m, const char *prefix,
				   const struct storm_hist *h)
{
	unsigned int i;

	seq_printf(m, "%s.count: %llu\n", prefix, h->count);
	seq_printf(m, "%s.min_ns: %llu\n", prefix, storm_hist_min(h));
	seq_printf(m, "%s.mean_ns: %llu\n", prefix, storm_hist_mean(h));
	seq_printf(m, "%s.max_ns: %llu\n", prefix, h->max_ns);
	seq_printf(m, "%s.hist:", prefix);
	for (i = 0; i < STORM_HIST_BUCKETS; i++)
		if (h->bucket[i])
			seq_printf(m, " %llu:%llu", storm_hist_bucket_low(i),
				   h->bucket[i]);
	seq_putc(m, '\n');
}

/* ---------------------------------------------------------------------
 * Per-CPU interrupt counters, as /proc/interrupts shows them on x86:
 * CAL = irq_call_count (both call-function vectors, so kernel-range TLB
 * flushes too), TLB = irq_tlb_count (remote flush_tlb_func runs),
 * RES = irq_resched_count. Other architectures report zeros.
 */
struct storm_irqs {
	u64 cal;
	u64 res;
	u64 tlb;
};

static inline void storm_irqs_read(int cpu, struct storm_irqs *s)
{
#ifdef CONFIG_X86
	const irq_cpustat_t *st = per_cpu_ptr(&irq_stat, cpu);

	s->cal = READ_ONCE(st->irq_call_count);
	s->res = READ_ONCE(st->irq_resched_count);
	s->tlb = READ_ONCE(st->irq_tlb_count);
#else
	memset(s, 0, sizeof(*s));
#endif
}

/* Snapshot of every possible CPU: an array of nr_cpu_ids entries. */
static inline struct storm_irqs *storm_irqs_alloc(void)
{
	return kcalloc(nr_cpu_ids, sizeof(struct storm_irqs), GFP_KERNEL);
}

static inline void storm_irqs_snapshot(struct storm_irqs *snap)
{
	int cpu;

	for_each_possible_cpu(cpu)
		storm_irqs_read(cpu, &snap[cpu]);
}

/* The counters are 32 bit in the kernel: subtract modulo 2^32. */
static inline u64 storm_irq_delta(u64 after, u64 before)
{
	return (u32)((u32)after - (u32)before);
}

static inline void storm_irqs_delta(const struct storm_irqs *before,
				    const struct storm_irqs *after, int cpu,
				    struct storm_irqs *d)
{
	d->cal = storm_irq_delta(after[cpu].cal, before[cpu].cal);
	d->res = storm_irq_delta(after[cpu].res, before[cpu].res);
	d->tlb = storm_irq_delta(after[cpu].tlb, before[cpu].tlb);
}

/* "irq.<cpu>.CAL: delta" etc. for every CPU online at the end. */
static inline void storm_irqs_show(struct seq_file *m,
				   const struct storm_irqs *before,
				   const struct storm_irqs *after)
{
	struct storm_irqs d;
	int cpu;

	for_each_online_cpu(cpu) {
		storm_irqs_delta(before, after, cpu, &d);
		seq_printf(m, "irq.%d.CAL: %llu\nirq.%d.RES: %llu\n"
			   "irq.%d.TLB: %llu\n",
			   cpu, d.cal, cpu, d.res, cpu, d.tlb);
	}
}

static inline void storm_irqs_sum(const struct storm_irqs *before,
				  const struct storm_irqs *after,
				  const struct cpumask *cpus,
				  struct storm_irqs *sum)
{
	struct storm_irqs d;
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_cpu(cpu, cpus) {
		storm_irqs_delta(before, after, cpu, &d);
		sum->cal += d.cal;
		sum->res += d.res;
		sum->tlb += d.tlb;
	}
}

/* ---------------------------------------------------------------------
 * CPU-list parameters. @str NULL (not given) selects @dflt; given but empty
 * is refused. Every refusal says why in one line, naming the parameter.
 */
static inline int storm_parse_cpulist(const char *param, const char *str,
				      struct cpumask *mask,
				      const struct cpumask *dflt)
{
	int cpu, ret;

	if (!str) {
		cpumask_copy(mask, dflt);
		return 0;
	}
	if (!*str) {
		pr_err("%s=: empty CPU list\n", param);
		return -EINVAL;
	}
	ret = cpulist_parse(str, mask);
	if (ret) {
		pr_err("%s=%s: not a valid CPU list below %u (%d)\n",
		       param, str, nr_cpu_ids, ret);
		return -EINVAL;
	}
	if (cpumask_empty(mask)) {
		pr_err("%s=%s: empty CPU list\n", param, str);
		return -EINVAL;
	}
	for_each_cpu(cpu, mask) {
		if (!cpu_online(cpu)) {
			pr_err("%s=%s: CPU %d is not online\n", param, str, cpu);
			return -EINVAL;
		}
	}
	return 0;
}

static inline int storm_check_range(const char *param,
				    unsigned long long val,
				    unsigned long long max)
{
	if (val <= max)
		return 0;
	pr_err("%s=%llu: out of range (at most %llu)\n", param, val, max);
	return -EINVAL;
}

/* ---------------------------------------------------------------------
 * Result file helpers: flat "name: value" lines.
 */
static inline const char *storm_status(const struct storm_ctl *ctl,
				       bool failed)
{
	if (failed)
		return "failed";
	return ctl->interrupted ? "interrupted" : "done";
}

static inline void storm_show_header(struct seq_file *m, const char *storm,
				     const struct storm_ctl *ctl, bool failed)
{
	seq_printf(m, "storm: %s\n", storm);
	seq_printf(m, "schema: %d\n", STORM_SCHEMA);
	seq_printf(m, "kernel: %s\n", init_utsname()->release);
	seq_printf(m, "status: %s\n", storm_status(ctl, failed));
	seq_printf(m, "cpus_online: %*pbl\n", cpumask_pr_args(cpu_online_mask));
	seq_printf(m, "runtime_ns: %llu\n", ctl->end_ns - ctl->start_ns);
}

/* The last line of every run in dmesg, as refscale and rcutorture say it. */
static inline void storm_print_verdict(const struct storm_ctl *ctl,
				       bool failed)
{
	if (failed)
		pr_info("End of test: FAILURE\n");
	else if (ctl->interrupted)
		pr_info("End of test: FAILURE (interrupted)\n");
	else
		pr_info("End of test: SUCCESS\n");
}

#endif /* _STORM_H */
