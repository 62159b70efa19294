// SPDX-License-Identifier: GPL-2.0
/*
 * rcustorm - storms of RCU grace periods, and the IPIs they send.
 *
 * One caller thread per CPU in cpulist= waits for grace period after grace
 * period. mode=expedited (the default) calls synchronize_rcu_expedited():
 * it asks every online CPU that is not in a quiescent state for one with
 * an IPI (smp_call_function_single(), counted in CAL), and sends none to an
 * idle CPU or one in user space under nohz_full: the IPIs that reach
 * nohz_full and real-time users from other work on the machine. The same
 * IPIs are what membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) sends to the
 * CPUs running its caller's mm, a system call a module cannot make.
 * mode=normal calls synchronize_rcu(), which waits for the CPUs to pass
 * quiescent states on their own and interrupts only CPUs that hold it up.
 *
 * busy= names the CPUs kept out of idle during the storm, each by a reader
 * thread that loops in the kernel through short RCU read-side critical
 * sections: the CPUs an expedited grace period has to interrupt. The
 * readers also check what a grace period promises (rcustorm_read()).
 *
 * Either numgp grace periods per caller or, with numgp=0, for timeout
 * seconds. insmod returns when the storm is over; the result stays in
 * /sys/kernel/debug/rcustorm/result until rmmod.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "storm.h"

static unsigned long numgp;
module_param(numgp, ulong, 0444);
MODULE_PARM_DESC(numgp, "Grace periods per caller CPU; 0 = timed run (default 0)");

static unsigned long timeout = 30;
module_param(timeout, ulong, 0444);
MODULE_PARM_DESC(timeout, "Seconds to run with numgp=0; with numgp, the most the storm may take; 1..604800 (default 30)");

static char *mode = "expedited";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "expedited: synchronize_rcu_expedited(); normal: synchronize_rcu() (default expedited)");

static char *cpulist;
module_param(cpulist, charp, 0444);
MODULE_PARM_DESC(cpulist, "Caller CPUs (default the first online CPU)");

static char *busy;
module_param(busy, charp, 0444);
MODULE_PARM_DESC(busy, "CPUs kept busy in the kernel by reader threads, none of them a caller's (default none: every other CPU may idle)");

static unsigned long delay;
module_param(delay, ulong, 0444);
MODULE_PARM_DESC(delay, "Microseconds to sleep between grace periods (default 0)");

static bool latency = true;
module_param(latency, bool, 0444);
MODULE_PARM_DESC(latency, "Time every grace period into a histogram (default 1)");

static bool background;
module_param(background, bool, 0444);
MODULE_PARM_DESC(background, "Return from insmod at once; rmmod stops the storm (default 0)");

static bool inject_miscount;
module_param(inject_miscount, bool, 0444);
MODULE_PARM_DESC(inject_miscount, "Check the first reader as if one of its read-side critical sections had spanned a whole grace period, to show that such a section ends the storm FAILURE (default 0)");

enum rcustorm_mode {
	RCUSTORM_EXPEDITED,
	RCUSTORM_NORMAL,
};

static const char * const rcustorm_mode_name[] = {
	[RCUSTORM_EXPEDITED]	= "expedited",
	[RCUSTORM_NORMAL]	= "normal",
};

/* One per caller CPU. */
struct rcustorm_caller {
	int cpu;
	struct task_struct *task;
	u64 gps;
	bool moved;			/* found itself off its CPU: stopped */
	u64 start_ns, end_ns;
	struct storm_hist hist ____cacheline_aligned_in_smp;
};

/* One per busy CPU, written by its reader only. */
struct rcustorm_reader {
	int cpu;
	struct task_struct *task;
	u64 sections;
	/* sections that a grace period ended while inside (rcustorm_read()) */
	u64 spanned;
};

/*
 * Grace periods completed, by every caller: written after each
 * synchronize_*() returns, read inside every read-side critical section.
 * A line of its own, apart from the callers' and readers' counters.
 */
static struct {
	atomic64_t done;
} rcustorm_gps ____cacheline_aligned_in_smp;

static enum rcustorm_mode storm_mode;
static struct rcustorm_caller __percpu *callers;
static struct rcustorm_reader __percpu *readers;
static cpumask_var_t caller_mask, busy_mask;
static unsigned int nr_callers;
static struct storm_ctl ctl;
static struct storm_irqs *irqs_before, *irqs_after, *irqs_acc;
static struct storm_hist *hist_total;
static bool failed;

static void rcustorm_synchronize(void)
{
	if (storm_mode == RCUSTORM_EXPEDITED)
		synchronize_rcu_expedited();
	else
		synchronize_rcu();
}

static int rcustorm_caller_fn(void *arg)
{
	struct rcustorm_caller *c = arg;
	u64 t0;

	storm_worker_ready(&ctl);
	c->start_ns = ktime_get_ns();
	while (!numgp || c->gps < numgp) {
		if (storm_should_stop(&ctl))
			break;
		/* moved by hotplug: what it waited for would not be counted */
		if (unlikely(raw_smp_processor_id() != c->cpu)) {
			c->moved = true;
			storm_ctl_moved(&ctl);
			break;
		}
		t0 = storm_clock_ns();
		rcustorm_synchronize();
		if (latency)
			storm_hist_add(&c->hist, storm_clock_ns() - t0);
		/* the grace period's full barrier orders this after it */
		atomic64_inc(&rcustorm_gps.done);
		WRITE_ONCE(c->gps, c->gps + 1);
		if (delay)
			usleep_range(delay, delay + 1);
		else
			cond_resched_tasks_rcu_qs();
	}
	c->end_ns = ktime_get_ns();
	storm_worker_done(&ctl);
	storm_thread_park();
	return 0;
}

/*
 * One read-side critical section. Each caller adds one to the count of
 * grace periods done after each grace period it waited for, and starts
 * its next one after that. A section that read the count as n at its
 * start may see each caller's grace period in flight end (it began before
 * the section did), but no caller's next one: that began after the
 * section, so it waits for the section to end. At the section's end the
 * count is at most n + the number of callers; more would be a grace
 * period that ended with a reader still inside.
 */
static void rcustorm_read(struct rcustorm_reader *r)
{
	s64 first, last;

	rcu_read_lock();
	first = atomic64_read(&rcustorm_gps.done);
	cpu_relax();
	last = atomic64_read(&rcustorm_gps.done);
	rcu_read_unlock();
	r->sections++;
	if (unlikely(last - first > nr_callers))
		r->spanned++;
}

static int rcustorm_reader_fn(void *arg)
{
	struct rcustorm_reader *r = arg;

	/*
	 * From load to unload, not just the window: a busy CPU that idled
	 * between the start barrier and the release would not be busy for
	 * the storm's first grace periods.
	 */
	while (!kthread_should_stop()) {
		rcustorm_read(r);
		/* a quiescent state for every flavour, RCU-Tasks too */
		cond_resched_tasks_rcu_qs();
	}
	return 0;
}

/* "<tag>: numgp=..." with the CPU lists */
static void rcustorm_print_params(const char *tag)
{
	storm_print_params(tag, "numgp=%lu timeout=%lu mode=%s delay=%lu latency=%d background=%d cpulist=%*pbl busy=%*pbl",
			   numgp, timeout, rcustorm_mode_name[storm_mode],
			   delay, latency, background,
			   cpumask_pr_args(caller_mask),
			   cpumask_pr_args(busy_mask));
}

static int rcustorm_check_busy(void)
{
	int cpu, ret;

	if (!busy || !*busy)
		return 0;
	ret = storm_parse_cpulist("busy", busy, busy_mask, cpu_online_mask);
	if (ret)
		return ret;
	for_each_cpu(cpu, busy_mask) {
		if (cpumask_test_cpu(cpu, caller_mask)) {
			pr_err("busy=%s: CPU %d is also a caller (cpulist)\n",
			       busy, cpu);
			return -EINVAL;
		}
	}
	return 0;
}

/* inject_miscount=1 fails the readers' check: without readers, nothing */
static int rcustorm_check_inject(void)
{
	if (inject_miscount && cpumask_empty(busy_mask)) {
		pr_err("inject_miscount=1 needs busy=: it fails the readers' check, and there are no readers\n");
		return -EINVAL;
	}
	return 0;
}

static int rcustorm_check_params(void)
{
	if (mode && sysfs_streq(mode, "expedited")) {
		storm_mode = RCUSTORM_EXPEDITED;
	} else if (mode && sysfs_streq(mode, "normal")) {
		storm_mode = RCUSTORM_NORMAL;
	} else {
		pr_err("mode=%s: unknown mode (expedited or normal)\n",
		       mode ?: "");
		return -EINVAL;
	}
	return storm_parse_cpulist("cpulist", cpulist, caller_mask,
				   cpumask_of(storm_default_cpu())) ?:
	       storm_check_bound("numgp", numgp, timeout) ?:
	       storm_check_range("numgp", numgp, STORM_MAX_COUNT) ?:
	       storm_check_range("timeout", timeout, STORM_MAX_TIMEOUT_S) ?:
	       storm_check_range("delay", delay, STORM_MAX_DELAY_US) ?:
	       rcustorm_check_busy() ?: rcustorm_check_inject();
}

static u64 rcustorm_total_gps(void)
{
	u64 total = 0;
	int cpu;

	for_each_cpu(cpu, caller_mask)
		total += per_cpu_ptr(callers, cpu)->gps;
	return total;
}

/*
 * No grace period ended with a reader inside (rcustorm_read()). Not
 * checked across a hotplug event, which may move a reader to a CPU the
 * storm does not watch.
 */
static void rcustorm_check_readers(void)
{
	bool inject = inject_miscount;
	u64 spanned;
	int cpu;

	if (ctl.hotplug)
		return;
	for_each_cpu(cpu, busy_mask) {
		spanned = per_cpu_ptr(readers, cpu)->spanned;
		if (inject) {
			pr_info("check: injected: CPU %d's reader counted with one section across a whole grace period\n",
				cpu);
			inject = false;
			spanned++;
		}
		if (spanned)
			storm_check_failed(&ctl, spanned,
					   "CPU %d: %llu read-side critical sections lasted across a whole grace period",
					   cpu, spanned);
	}
}

static void rcustorm_print_results(void)
{
	u64 runtime = ctl.end_ns - ctl.start_ns;
	u64 gps = rcustorm_total_gps();
	struct storm_irqs sum;
	int cpu;

	for_each_cpu(cpu, caller_mask) {
		struct rcustorm_caller *c = per_cpu_ptr(callers, cpu);
		u64 ns = c->end_ns - c->start_ns;

		pr_info("caller %d: gps=%llu time=%llu ns per_gp=%llu ns%s\n",
			cpu, c->gps, ns, c->gps ? div64_u64(ns, c->gps) : 0,
			delay ? " (with delay)" : "");
	}
	storm_irqs_sum(irqs_before, irqs_after, busy_mask, &sum);
	pr_info("summary: mode=%s callers=%u gps=%llu runtime=%llu ns busy=%*pbl CAL=%llu RES=%llu status=%s\n",
		rcustorm_mode_name[storm_mode], cpumask_weight(caller_mask),
		gps, runtime, cpumask_pr_args(busy_mask), sum.cal, sum.res,
		storm_status(&ctl, failed));
	storm_print_end(&ctl, failed, rcustorm_print_params);
}

static int rcustorm_result_show(struct seq_file *m, void *v)
{
	struct storm_irqs sum;
	char name[40];
	int cpu;

	storm_show_header(m, "rcustorm", &ctl, failed);
	seq_printf(m, "param.numgp: %lu\nparam.timeout: %lu\nparam.mode: %s\n"
		   "param.delay: %lu\nparam.latency: %d\nparam.background: %d\n",
		   numgp, timeout, rcustorm_mode_name[storm_mode], delay,
		   latency, background);
	seq_printf(m, "param.cpulist: %*pbl\nparam.busy: %*pbl\n",
		   cpumask_pr_args(caller_mask), cpumask_pr_args(busy_mask));
	seq_printf(m, "gps: %llu\n", rcustorm_total_gps());
	for_each_cpu(cpu, caller_mask) {
		struct rcustorm_caller *c = per_cpu_ptr(callers, cpu);

		seq_printf(m, "caller.%d.gps: %llu\ncaller.%d.moved: %d\n"
			   "caller.%d.runtime_ns: %llu\n", cpu, c->gps, cpu,
			   c->moved, cpu, c->end_ns - c->start_ns);
		if (latency) {
			snprintf(name, sizeof(name), "caller.%d.latency", cpu);
			storm_hist_show(m, name, &c->hist);
		}
	}
	for_each_cpu(cpu, busy_mask) {
		struct rcustorm_reader *r = per_cpu_ptr(readers, cpu);

		seq_printf(m, "reader.%d.sections: %llu\nreader.%d.spanned: %llu\n",
			   cpu, r->sections, cpu, r->spanned);
	}
	if (latency)
		storm_hist_show(m, "latency", hist_total);
	storm_irqs_sum(irqs_before, irqs_after, busy_mask, &sum);
	seq_printf(m, "busy.CAL: %llu\nbusy.RES: %llu\n", sum.cal, sum.res);
	/*
	 * The IPIs a grace period sends go to whichever CPUs are not
	 * quiescent, busy or not: every CPU's count, no sides.
	 */
	storm_show_op(m, &(struct storm_op){
		.name = "gp", .count = rcustorm_total_gps(), .ipi_rows = "CAL",
		.timed = "latency",
	});
	storm_irqs_show(m, irqs_before, irqs_after);
	storm_sent_show(m, irqs_before, irqs_after);
	storm_pmu_show(m);
	storm_hotplug_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rcustorm_result);

/* Readers first, so that no caller waits on a grace period they hold. */
static void rcustorm_stop_threads(void)
{
	int cpu;

	if (readers)
		for_each_cpu(cpu, busy_mask)
			storm_thread_stop(&per_cpu_ptr(readers, cpu)->task);
	if (callers)
		for_each_cpu(cpu, caller_mask)
			storm_thread_stop(&per_cpu_ptr(callers, cpu)->task);
}

/* Release to report; in insmod, or in the controller thread. */
static void rcustorm_run(void)
{
	int cpu;

	storm_ctl_wait_ready(&ctl);
	storm_pmu_begin();
	storm_sent_begin();
	storm_irqs_begin(&ctl, irqs_before, irqs_after, irqs_acc);
	storm_ctl_go(&ctl, !numgp, timeout);
	storm_ctl_wait_done(&ctl);
	storm_irqs_end(&ctl);
	storm_sent_end();
	storm_ctl_check_cpus(&ctl, irqs_before, irqs_after);
	rcustorm_stop_threads();
	for_each_cpu(cpu, caller_mask)
		storm_hist_merge(hist_total, &per_cpu_ptr(callers, cpu)->hist);
	/* the readers' counts are final once they have stopped */
	rcustorm_check_readers();
	rcustorm_print_results();
}

static void rcustorm_free(void)
{
	kfree(hist_total);
	storm_irqs_free(irqs_acc);
	storm_irqs_free(irqs_after);
	storm_irqs_free(irqs_before);
	free_percpu(readers);
	free_percpu(callers);
	free_cpumask_var(busy_mask);
	free_cpumask_var(caller_mask);
}

static int rcustorm_create_threads(void)
{
	int cpu, ret;

	for_each_cpu(cpu, busy_mask) {
		struct rcustorm_reader *r = per_cpu_ptr(readers, cpu);

		r->cpu = cpu;
		r->task = storm_thread_create(rcustorm_reader_fn, r, cpu,
					      KBUILD_MODNAME "-r/%u");
		if (IS_ERR(r->task)) {
			ret = PTR_ERR(r->task);
			r->task = NULL;
			pr_err("cannot create the reader thread for CPU %d (%d)\n",
			       cpu, ret);
			return ret;
		}
	}
	for_each_cpu(cpu, caller_mask) {
		struct rcustorm_caller *c = per_cpu_ptr(callers, cpu);

		c->cpu = cpu;
		storm_hist_init(&c->hist);
		c->task = storm_thread_create(rcustorm_caller_fn, c, cpu,
					      KBUILD_MODNAME "/%u");
		if (IS_ERR(c->task)) {
			ret = PTR_ERR(c->task);
			c->task = NULL;
			pr_err("cannot create the caller thread for CPU %d (%d)\n",
			       cpu, ret);
			return ret;
		}
	}
	return 0;
}

static struct storm_module rcustorm_module = {
	.ctl		= &ctl,
	.run		= rcustorm_run,
	.stop_threads	= rcustorm_stop_threads,
	.free		= rcustorm_free,
	.result_fops	= &rcustorm_result_fops,
};

static int __init rcustorm_init(void)
{
	int cpu, ret = -ENOMEM;

	if (!zalloc_cpumask_var(&caller_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&busy_mask, GFP_KERNEL))
		goto err_free;
	callers = alloc_percpu(struct rcustorm_caller);
	readers = alloc_percpu(struct rcustorm_reader);
	irqs_before = storm_irqs_alloc();
	irqs_after = storm_irqs_alloc();
	irqs_acc = storm_irqs_alloc();
	hist_total = kmalloc(sizeof(*hist_total), GFP_KERNEL);
	if (!callers || !readers || !irqs_before || !irqs_after || !irqs_acc ||
	    !hist_total)
		goto err_free;
	storm_hist_init(hist_total);
	atomic64_set(&rcustorm_gps.done, 0);
	ret = storm_hotplug_watch(&ctl);
	if (ret)
		goto err_free;

	/* Hold off CPU hotplug while checking and binding to CPUs. */
	cpus_read_lock();
	ret = rcustorm_check_params();
	if (ret)
		goto err_unlock;
	rcustorm_print_params("Start of test");
	nr_callers = cpumask_weight(caller_mask);
	storm_ctl_init(&ctl, nr_callers);
	ret = rcustorm_create_threads();
	if (ret)
		goto err_stop_unlock;
	cpus_read_unlock();

	for_each_cpu(cpu, busy_mask)
		wake_up_process(per_cpu_ptr(readers, cpu)->task);
	for_each_cpu(cpu, caller_mask)
		wake_up_process(per_cpu_ptr(callers, cpu)->task);

	rcustorm_module.background = background;
	return storm_module_start(&rcustorm_module);

err_stop_unlock:
	cpus_read_unlock();
	storm_ctl_stop(&ctl, true);
	rcustorm_stop_threads();
	goto err_unwatch;
err_unlock:
	cpus_read_unlock();
err_unwatch:
	storm_hotplug_unwatch();
err_free:
	rcustorm_free();
	return ret;
}

static void __exit rcustorm_exit(void)
{
	storm_module_exit(&rcustorm_module);
}

module_init(rcustorm_init);
module_exit(rcustorm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(STORM_MODULE_VERSION);
MODULE_DESCRIPTION("Storms of RCU grace periods (expedited and normal)");
