// SPDX-License-Identifier: GPL-2.0
/*
 * storm_sent.c - the send-side IPI counters of count_sent=1: kprobes on
 * the kernel's IPI send functions, per-CPU rows (see storm_sent.h).
 *
 * Linked into each storm as a part of its composite module (Kbuild).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/kprobes.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#ifdef CONFIG_X86
#include <asm/smp.h>
#endif

#include "storm.h"

static bool count_sent;
module_param(count_sent, bool, 0444);
MODULE_PARM_DESC(count_sent, "Count the IPIs sent, per sender and target, with kprobes on the IPI send functions (x86, arm64); costs a few percent of a storm that sends an IPI per call (default 0)");

#if (defined(CONFIG_X86) || defined(CONFIG_ARM64)) && \
	defined(CONFIG_KPROBES) && defined(CONFIG_SMP)
#define STORM_SENT_POSSIBLE	1
#else
#define STORM_SENT_POSSIBLE	0
#endif

/* Vectors as /proc/interrupts groups them: CAL is both call-function ones. */
enum storm_sent_vec { STORM_SENT_CAL, STORM_SENT_RES, STORM_SENT_NR_VEC };
static const char * const storm_sent_vec_name[] = { "CAL", "RES" };

/*
 * A snapshot, summed over the matrix of counters: to[vec][target] and
 * by[vec][sender], nr_cpu_ids entries each.
 */
struct storm_sent_snap {
	u64 *to;
	u64 *by;
	u64 hits;
};

/* Row layout: [vec * nr_cpu_ids + target], then the probe hits. */
#define STORM_SENT_ROW_LEN	(STORM_SENT_NR_VEC * nr_cpu_ids + 1)
#define STORM_SENT_HITS		(STORM_SENT_NR_VEC * nr_cpu_ids)

/* Calibration: batches of calls to a probed function, the best one kept. */
#define STORM_SENT_CAL_BATCHES	16
#define STORM_SENT_CAL_CALLS	64

static struct {
	/* per sending CPU, STORM_SENT_ROW_LEN counters */
	u64 __percpu *rows;
	/* the three send functions, then storm_sent_calibrate_fn() */
	struct kprobe probes[4];
	void *addr[4];		/* where each was registered */
	bool removed[4];
	bool registered;
	bool pinned;		/* a probe could not be removed: see below */
	bool counted;		/* both snapshots were taken */
	unsigned long missed;	/* in the window, see storm_sent_nmissed() */
	u64 hits;		/* probe hits in the window, all CPUs */
	u64 bare_ns;		/* best batch without the probe */
	u64 probed_ns;		/* best batch with it */
	struct storm_sent_snap before, after;
} storm_sent;

#if STORM_SENT_POSSIBLE
static u64 __percpu *storm_sent_slot(enum storm_sent_vec vec,
				     unsigned int target)
{
	return storm_sent.rows + vec * nr_cpu_ids + target;
}

/* kprobe pre-handlers: preemption is off, the CPU is the sender's. */
static int storm_sent_mask(struct kprobe *p, struct pt_regs *regs)
{
	const struct cpumask *mask =
		(const struct cpumask *)regs_get_kernel_argument(regs, 0);
	unsigned int cpu;

	for_each_cpu(cpu, mask)
		this_cpu_inc(*storm_sent_slot(STORM_SENT_CAL, cpu));
	this_cpu_inc(storm_sent.rows[STORM_SENT_HITS]);
	return 0;
}

static void storm_sent_one(struct pt_regs *regs,
			   enum storm_sent_vec vec)
{
	unsigned int cpu = regs_get_kernel_argument(regs, 0);

	if (cpu < nr_cpu_ids)
		this_cpu_inc(*storm_sent_slot(vec, cpu));
	this_cpu_inc(storm_sent.rows[STORM_SENT_HITS]);
}

static int storm_sent_single(struct kprobe *p, struct pt_regs *regs)
{
	storm_sent_one(regs, STORM_SENT_CAL);
	return 0;
}

static int storm_sent_resched(struct kprobe *p, struct pt_regs *regs)
{
	storm_sent_one(regs, STORM_SENT_RES);
	return 0;
}

/*
 * What a probe hit costs, measured in every run, outside the window: the
 * same kind of probe (an ftrace callback at a function's entry) with the
 * same handler, on a function of ours called with a target out of range,
 * so that only the hit is counted. Timed without the probe at the start
 * and with it at the end.
 */
static noinline void storm_sent_calibrate_fn(unsigned int cpu)
{
	/* a call and an argument the compiler must keep */
	asm volatile("" : : "r" (cpu) : "memory");
}

#ifdef CONFIG_X86
/*
 * The send functions are found through smp_ops, not by name: their names
 * change between releases and with the APIC driver, the hooks do not.
 */
static int storm_sent_register(void)
{
	struct kprobe *kps[ARRAY_SIZE(storm_sent.probes)];
	void *addr[] = {
		smp_ops.send_call_func_ipi,
		smp_ops.send_call_func_single_ipi,
		smp_ops.smp_send_reschedule,
		storm_sent_calibrate_fn,
	};
	static const char * const hook[] = {
		"smp_ops.send_call_func_ipi",
		"smp_ops.send_call_func_single_ipi",
		"smp_ops.smp_send_reschedule",
		"storm_sent_calibrate_fn",
	};
	kprobe_pre_handler_t handler[] = {
		storm_sent_mask, storm_sent_single, storm_sent_resched,
		storm_sent_single,
	};
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(storm_sent.probes); i++) {
		if (!addr[i]) {
			pr_err("count_sent=1: this kernel has no %s to probe: refused\n",
			       hook[i]);
			return -ENOENT;
		}
		memset(&storm_sent.probes[i], 0, sizeof(storm_sent.probes[i]));
		storm_sent.probes[i].addr = addr[i];
		storm_sent.probes[i].pre_handler = handler[i];
		storm_sent.removed[i] = false;
		kps[i] = &storm_sent.probes[i];
	}
	ret = register_kprobes(kps, ARRAY_SIZE(kps));
	if (ret) {
		pr_err("count_sent=1: cannot probe the IPI send functions %ps %ps %ps (%d): refused\n",
		       addr[0], addr[1], addr[2], ret);
		return ret;
	}
	/* as registered: the kernel may move it (past an ENDBR on x86) */
	for (i = 0; i < ARRAY_SIZE(storm_sent.probes); i++)
		storm_sent.addr[i] = storm_sent.probes[i].addr;
	return 0;
}
#else
/*
 * arm64 has no smp_ops: the generic code calls the arch's send functions
 * by name, arch_send_call_function_ipi_mask(mask),
 * arch_send_call_function_single_ipi(cpu) and the reschedule one,
 * arch_smp_send_reschedule(cpu) since 6.3 (smp_send_reschedule() became
 * an inline around it), smp_send_reschedule(cpu) before. The kernel
 * finds each by its symbol; the reschedule one is tried under both
 * names. Their argument is in x0, as regs_get_kernel_argument() reads.
 */
static int storm_sent_register(void)
{
	struct kprobe *kps[ARRAY_SIZE(storm_sent.probes)];
	static const char * const sym[] = {
		"arch_send_call_function_ipi_mask",
		"arch_send_call_function_single_ipi",
		"arch_smp_send_reschedule",
	};
	static const char * const resched_old = "smp_send_reschedule";
	kprobe_pre_handler_t handler[] = {
		storm_sent_mask, storm_sent_single, storm_sent_resched,
		storm_sent_single,
	};
	bool retried = false;
	int i, ret;

retry:
	for (i = 0; i < ARRAY_SIZE(storm_sent.probes); i++) {
		memset(&storm_sent.probes[i], 0, sizeof(storm_sent.probes[i]));
		if (i < ARRAY_SIZE(sym))
			storm_sent.probes[i].symbol_name = sym[i];
		else
			storm_sent.probes[i].addr =
				(kprobe_opcode_t *)storm_sent_calibrate_fn;
		if (i == 2 && retried)
			storm_sent.probes[i].symbol_name = resched_old;
		storm_sent.probes[i].pre_handler = handler[i];
		storm_sent.removed[i] = false;
		kps[i] = &storm_sent.probes[i];
	}
	ret = register_kprobes(kps, ARRAY_SIZE(kps));
	/* -ENOENT: a symbol not found, the reschedule one before 6.3 */
	if (ret == -ENOENT && !retried) {
		retried = true;
		goto retry;
	}
	if (ret) {
		pr_err("count_sent=1: cannot probe the IPI send functions %s %s %s (%d): refused\n",
		       sym[0], sym[1], retried ? resched_old : sym[2], ret);
		return ret;
	}
	for (i = 0; i < ARRAY_SIZE(storm_sent.probes); i++)
		storm_sent.addr[i] = storm_sent.probes[i].addr;
	return 0;
}
#endif

/*
 * Remove the probes not removed yet; returns how many are left.
 * unregister_kprobes() returns nothing, but it clears ->addr of a probe
 * it could not remove (disarming it failed: an ftrace allocation). Such
 * a probe stays in the kernel's table, armed, calling our handler, which
 * counts into our per-CPU rows: the module and the rows must not go while
 * it is there. A retry restores ->addr as the kernel registered it (it
 * may have moved it from where we asked): the kernel then finds the probe
 * again and tries to disarm it anew.
 */
static int storm_sent_unregister(void)
{
	struct kprobe *kps[ARRAY_SIZE(storm_sent.probes)];
	int i, n = 0, left = 0;

	for (i = 0; i < ARRAY_SIZE(kps); i++) {
		if (storm_sent.removed[i])
			continue;
		/* a retry: where the kernel has the probe */
		if (!storm_sent.probes[i].addr)
			storm_sent.probes[i].addr = storm_sent.addr[i];
		kps[n++] = &storm_sent.probes[i];
	}
	/* waits until no handler runs any more */
	unregister_kprobes(kps, n);
	for (i = 0; i < ARRAY_SIZE(kps); i++) {
		if (storm_sent.removed[i])
			continue;
		if (storm_sent.probes[i].addr)
			storm_sent.removed[i] = true;
		else
			left++;
	}
	return left;
}

/* Hits not counted: a probe that fired inside another kprobe's handler. */
static unsigned long storm_sent_nmissed(void)
{
	unsigned long n = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(storm_sent.probes); i++)
		n += storm_sent.probes[i].nmissed;
	return n;
}
#else
static int storm_sent_register(void)
{
	pr_err("count_sent=1: the IPI send functions are probed on x86 and arm64 with kprobes only: refused\n");
	return -EOPNOTSUPP;
}

static int storm_sent_unregister(void)
{
	return 0;
}

static unsigned long storm_sent_nmissed(void)
{
	return 0;
}

static void storm_sent_calibrate_fn(unsigned int cpu)
{
}
#endif

/* The best batch, in ns per call of storm_sent_calibrate_fn(). */
static u64 storm_sent_time_calls(void)
{
	void (*fn)(unsigned int) = storm_sent_calibrate_fn;
	u64 best = U64_MAX, t0, t;
	int b, i;

	/* an indirect call: no inlining, no clone without the argument */
	OPTIMIZER_HIDE_VAR(fn);
	for (b = 0; b < STORM_SENT_CAL_BATCHES; b++) {
		preempt_disable();
		t0 = storm_clock_ns();
		for (i = 0; i < STORM_SENT_CAL_CALLS; i++)
			fn(nr_cpu_ids);
		t = storm_clock_ns() - t0;
		preempt_enable();
		best = min(best, t);
	}
	return div_u64(best, STORM_SENT_CAL_CALLS);
}

static void storm_sent_free_snap(struct storm_sent_snap *s)
{
	kvfree(s->to);
	kvfree(s->by);
	s->to = s->by = NULL;
}

static int storm_sent_alloc_snap(struct storm_sent_snap *s)
{
	s->to = kvcalloc(STORM_SENT_NR_VEC * nr_cpu_ids, sizeof(u64),
			GFP_KERNEL);
	s->by = kvcalloc(STORM_SENT_NR_VEC * nr_cpu_ids, sizeof(u64),
			GFP_KERNEL);
	return s->to && s->by ? 0 : -ENOMEM;
}

/*
 * Remove the probes: idempotent, and safe if they never were there. A
 * probe the kernel could not remove keeps calling our handler. With
 * @may_pin (the module is live: after its storm, in insmod or the
 * controller) the module then takes a reference on itself, so that rmmod
 * is refused and its text and counters stay for as long as the kernel
 * runs, and says so. Otherwise (rmmod, or a load that fails), or if the
 * module is already going, it retries until the kernel removes them:
 * rmmod waits, rather than free what an armed probe still calls.
 */
void storm_sent_stop(bool may_pin)
{
	int left, tries = 0;

	if (!storm_sent.registered)
		return;
	storm_sent.registered = false;
	left = storm_sent_unregister();
	if (!left)
		return;
	if (may_pin && try_module_get(THIS_MODULE)) {
		storm_sent.pinned = true;
		pr_err("count_sent: the kernel could not remove %d of the kprobes on the IPI send functions: the module stays loaded for good (rmmod is refused), their handlers still run\n",
		       left);
		return;
	}
	pr_err("count_sent: the kernel could not remove %d of the kprobes on the IPI send functions: retrying until it does\n",
	       left);
	do {
		schedule_timeout_idle(HZ / 10);
		tries++;
	} while (storm_sent_unregister());
	pr_info("count_sent: kprobes removed after %d retries\n", tries);
}

void storm_sent_free(void)
{
	storm_sent_stop(false);
	/* pinned: never reached, the module cannot be removed */
	free_percpu(storm_sent.rows);
	storm_sent.rows = NULL;
	storm_sent_free_snap(&storm_sent.before);
	storm_sent_free_snap(&storm_sent.after);
}

/*
 * At the end of a module's init, before its threads are released: a
 * failure fails the load, a kernel whose send functions cannot be probed
 * included (count_sent=1 asked for counts; a result without them would
 * be compared as zeros).
 */
int storm_sent_start(void)
{
	int ret;

	if (!count_sent)
		return 0;
	/*
	 * Each CPU's row counts for every possible target: past the per-CPU
	 * allocator's limit from about 2048 possible CPUs (it would WARN,
	 * a panic with panic_on_warn). Refused, with the figures.
	 */
	if (STORM_SENT_ROW_LEN * sizeof(u64) > PCPU_MIN_UNIT_SIZE) {
		pr_err("count_sent=1: %u possible CPUs need %zu bytes of counters per CPU, more than the per-CPU allocator's %u: refused (at most %zu possible CPUs)\n",
		       nr_cpu_ids, STORM_SENT_ROW_LEN * sizeof(u64),
		       (unsigned int)PCPU_MIN_UNIT_SIZE,
		       (PCPU_MIN_UNIT_SIZE / sizeof(u64) - 1) / STORM_SENT_NR_VEC);
		return -EINVAL;
	}
	storm_sent.rows = __alloc_percpu(STORM_SENT_ROW_LEN * sizeof(u64),
					 SMP_CACHE_BYTES);
	if (!storm_sent.rows ||
	    storm_sent_alloc_snap(&storm_sent.before) ||
	    storm_sent_alloc_snap(&storm_sent.after)) {
		pr_err("cannot allocate the send-side counters\n");
		storm_sent_free();
		return -ENOMEM;
	}
	storm_sent.bare_ns = storm_sent_time_calls();
	ret = storm_sent_register();
	if (ret) {
		storm_sent_free();
		return ret;
	}
	storm_sent.registered = true;
	return 0;
}

static void storm_sent_snapshot(struct storm_sent_snap *s)
{
	unsigned int sender, target, vec;

	if (!storm_sent.registered)
		return;
	memset(s->to, 0, STORM_SENT_NR_VEC * nr_cpu_ids * sizeof(u64));
	memset(s->by, 0, STORM_SENT_NR_VEC * nr_cpu_ids * sizeof(u64));
	s->hits = 0;
	for_each_possible_cpu(sender) {
		u64 *row = per_cpu_ptr(storm_sent.rows, sender);

		s->hits += READ_ONCE(row[STORM_SENT_HITS]);
		for (vec = 0; vec < STORM_SENT_NR_VEC; vec++) {
			for_each_possible_cpu(target) {
				u64 n = READ_ONCE(row[vec * nr_cpu_ids + target]);

				s->to[vec * nr_cpu_ids + target] += n;
				s->by[vec * nr_cpu_ids + sender] += n;
			}
		}
	}
}

/*
 * Around the storm's irq_stat snapshots: first at the start, last at the
 * end, so that an IPI received in the window was sent in it.
 */
void storm_sent_begin(void)
{
	storm_sent_snapshot(&storm_sent.before);
	storm_sent.missed = storm_sent_nmissed();
}

void storm_sent_end(void)
{
	storm_sent_snapshot(&storm_sent.after);
	storm_sent.missed = storm_sent_nmissed() - storm_sent.missed;
	storm_sent.counted = storm_sent.registered;
	if (storm_sent.counted) {
		storm_sent.hits = storm_sent.after.hits - storm_sent.before.hits;
		storm_sent.probed_ns = storm_sent_time_calls();
	}
}

/* count_sent=, for the Start of test and End of test lines. */
bool storm_sent_on(void)
{
	return count_sent;
}

/* A probe the kernel could not remove keeps the module loaded for good. */
bool storm_sent_pinned(void)
{
	return storm_sent.pinned;
}

/*
 * "sent.<cpu>.CAL" (IPIs sent to the CPU) and "sent_by.<cpu>.CAL" (sent
 * from it), and RES, for the CPUs storm_irqs_show() reports on.
 */
void storm_sent_show(struct seq_file *m,
		     const struct storm_irqs *before,
		     const struct storm_irqs *after)
{
	const struct storm_sent_snap *b = &storm_sent.before;
	const struct storm_sent_snap *a = &storm_sent.after;
	unsigned int vec, i;
	int cpu;

	if (!count_sent) {
		seq_puts(m, "sent.source: off\n");
		return;
	}
	if (!storm_sent.counted) {
		/* the storm ended before its window's second snapshot */
		seq_puts(m, "sent.source: unavailable\n");
		return;
	}
	seq_printf(m, "sent.source: kprobe %ps %ps %ps\n",
		   storm_sent.probes[0].addr, storm_sent.probes[1].addr,
		   storm_sent.probes[2].addr);
	seq_printf(m, "sent.missed: %lu\n", storm_sent.missed);
	/* cost: probe_ns per hit, at most hits x probe_ns over all CPUs */
	seq_printf(m, "sent.hits: %llu\n", storm_sent.hits);
	seq_printf(m, "sent.probe_ns: %llu\n",
		   storm_sent.probed_ns > storm_sent.bare_ns ?
		   storm_sent.probed_ns - storm_sent.bare_ns : 0);
	for_each_possible_cpu(cpu) {
		if (!storm_cpu_seen(before, after, cpu))
			continue;
		for (vec = 0; vec < STORM_SENT_NR_VEC; vec++) {
			i = vec * nr_cpu_ids + cpu;
			seq_printf(m, "sent.%d.%s: %llu\n", cpu,
				   storm_sent_vec_name[vec], a->to[i] - b->to[i]);
			seq_printf(m, "sent_by.%d.%s: %llu\n", cpu,
				   storm_sent_vec_name[vec], a->by[i] - b->by[i]);
		}
	}
}
