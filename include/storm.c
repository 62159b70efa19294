// SPDX-License-Identifier: GPL-2.0
/*
 * storm.c - what the ipistorm, tlbstorm and slabstorm modules share: run
 * control, threads, CPU hotplug, the load and unload lifecycle, the
 * histogram, the interrupt counters, parameter checks and the result
 * file's header (declared and described in storm.h).
 *
 * Linked into each storm as a part of its composite module (Kbuild), one
 * copy per module: KBUILD_MODNAME and THIS_MODULE are the storm's own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/rcupdate.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdesc.h>
#include <linux/kernel_stat.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/sched/prio.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/stdarg.h>
#include <linux/string.h>
#include <linux/tick.h>
#include <linux/timekeeping.h>
#include <linux/utsname.h>

#include "storm.h"
#include "storm_compat.h"

/* ---------------------------------------------------------------------
 * Run control: see storm.h.
 */
void storm_ctl_init(struct storm_ctl *ctl, int nr_workers)
{
	memset(ctl, 0, sizeof(*ctl));
	atomic_set(&ctl->ready, 0);
	atomic_set(&ctl->running, nr_workers);
	atomic_set(&ctl->ending, nr_workers);
	atomic64_set(&ctl->last_end_ns, 0);
	init_completion(&ctl->all_ready);
	init_waitqueue_head(&ctl->all_done);
	ctl->nr_workers = nr_workers;
}

/*
 * Every loop of a storm thread yields with cond_resched_tasks_rcu_qs(),
 * never cond_resched() alone: on PREEMPT_RCU kernels (Debian's) a
 * preemption at cond_resched() is no RCU-Tasks quiescent state, so a
 * storm thread that never sleeps would hold off every RCU-Tasks grace
 * period for the whole storm (BPF trampoline and ftrace detach, bpftrace
 * exiting; stall warnings after 10 minutes). The helper reports one.
 *
 * Worker side of the start barrier. Yielding lets the controller in when
 * it shares this CPU; cpu_relax() (PAUSE) also hands the host thread to
 * the next vCPU under TCG.
 */
void storm_worker_ready(struct storm_ctl *ctl)
{
	if (atomic_inc_return(&ctl->ready) == ctl->nr_workers)
		complete(&ctl->all_ready);
	/* pairs with the release in storm_ctl_go() and storm_ctl_stop() */
	while (!smp_load_acquire(&ctl->released)) {
		cond_resched_tasks_rcu_qs();
		cpu_relax();
	}
}

/*
 * The run ends when its last worker does. Each worker raises the end time
 * to its own before it counts itself out, so the controller, which reads
 * the time after it sees no worker running, reads the latest. The last
 * worker also takes the interrupt counters' end snapshot, right after its
 * end time: the window of the counts is the storm's, not the storm plus
 * the controller's wakeup (up to a tick, and the hotplug lock). It does
 * so only in a storm that storm_ctl_go() released, whose start snapshot
 * is taken; otherwise the controller takes it (storm_irqs_end()).
 */
void storm_worker_done(struct storm_ctl *ctl)
{
	s64 now = ktime_get_ns();
	s64 end = atomic64_read(&ctl->last_end_ns);
	bool last;

	while (end < now && !atomic64_try_cmpxchg(&ctl->last_end_ns, &end, now))
		;
	last = atomic_dec_and_test(&ctl->ending);
	/* pairs with the release in storm_ctl_go(): after the start snapshot */
	if (last && smp_load_acquire(&ctl->started) && ctl->irqs_after) {
		storm_mark(STORM_MARK_END);
		if (ctl->drain)
			ctl->drain(ctl);
		storm_irqs_snapshot(ctl->irqs_after);
		ctl->window_end_ns = ktime_get_ns();
		/*
		 * The PMU counts end here too, at the marker, not after the
		 * controller wakes; after the interrupt snapshot, so that the
		 * IPIs that read the other CPUs' counters are not in it.
		 */
		storm_pmu_end();
		ctl->irqs_taken = true;
	}
	/*
	 * A full barrier: the end time and the closing counts before the
	 * count, see storm_ctl_wait_done(); the wakeup after both.
	 */
	if (atomic_dec_and_test(&ctl->running))
		wake_up(&ctl->all_done);
}

/*
 * TASK_IDLE, as the torture tests wait: no load, no hung-task report.
 * Then the RCU callbacks queued so far run, before the storm rather than
 * in its window, on whichever of its CPUs queued them (the shell and
 * insmod that started it among the queuers).
 */
void storm_ctl_wait_ready(struct storm_ctl *ctl)
{
	wait_for_completion_state(&ctl->all_ready, TASK_IDLE);
	rcu_barrier();
}

/*
 * Release the workers. @timed: a timed run (no count), which ends at the
 * deadline by design; any run ends there.
 */
void storm_ctl_go(struct storm_ctl *ctl, bool timed,
		  unsigned long timeout_s)
{
	ctl->timed = timed;
	ctl->deadline = jiffies + timeout_s * HZ;
	ctl->start_ns = ktime_get_ns();
	/* the start snapshot (storm_irqs_begin()) before started */
	smp_store_release(&ctl->started, true);
	/* the workers see timed and deadline once they see released */
	smp_store_release(&ctl->released, true);
}

/* Every worker has finished its storm (or never got to start one). */
bool storm_ctl_over(const struct storm_ctl *ctl)
{
	return !atomic_read(&ctl->running);
}

/*
 * Ask the workers to stop early (signal, rmmod, hotplug, error). Safe
 * before the release: workers still at the barrier pass it and stop at
 * once. A storm that is already over is not marked interrupted.
 */
void storm_ctl_stop(struct storm_ctl *ctl, bool interrupted)
{
	if (interrupted && !storm_ctl_over(ctl))
		WRITE_ONCE(ctl->interrupted, true);
	WRITE_ONCE(ctl->stop, true);
	/* a worker released here sees stop at its first check */
	smp_store_release(&ctl->released, true);
}

/*
 * The storm's own watchdog, checked by the controller with the running
 * counts once a second. Call-function vectors outrank the local timer,
 * so a CPU a storm holds in hardirq takes no tick, and its timer,
 * softirqs and tasks starve; the kernel says so only after seconds (hard
 * lockup at 10 s, RCU stall at 21 s, soft lockup at 20 s). A CPU whose
 * timer count has not moved for STORM_STARVE_CHECKS checks in a row,
 * each time idle for less than half of the time since the last, stops
 * the storm: status "starved", the CPU named. Idle matters: an idle CPU
 * with no timer due stops its tick (NOHZ); a nohz_full CPU runs its one
 * task without a tick, so it is not watched. Counted in checks, not
 * seconds: a guest whose host stops it for seconds stops its controller
 * as well. Where the timer count is read: x86, and arm64 with its
 * arch_timer irq found. There the IPIs and the timer share the GIC's
 * priority, so a CPU that takes one IPI after another need not get to
 * its tick either; and a busy CPU that is not nohz_full ticks, so a flat
 * count means the same as on x86.
 */
#define STORM_STARVE_CHECKS	3

struct storm_watch {
	u64 loc;
	u64 idle_us;
	u64 at_ns;
	unsigned int flat;
};

static DEFINE_PER_CPU(struct storm_watch, storm_watch);

static u64 storm_idle_us(int cpu)
{
	u64 us = get_cpu_idle_time_us(cpu, NULL);

	/* -1 where NOHZ is off: the tick never stops then, idle or not */
	return us == (u64)-1 ? 0 : us;
}

static void storm_watchdog_reset(const struct storm_irqs *acc)
{
	u64 now = ktime_get_ns();
	int cpu;

	for_each_possible_cpu(cpu) {
		struct storm_watch *w = per_cpu_ptr(&storm_watch, cpu);

		w->loc = acc[cpu].loc;
		w->idle_us = storm_idle_us(cpu);
		w->at_ns = now;
		w->flat = 0;
	}
}

static bool storm_irqs_have_loc(void);

static void storm_watchdog_check(struct storm_ctl *ctl)
{
	const struct storm_irqs *acc = ctl->irqs_acc;
	u64 now = ktime_get_ns();
	int cpu;

	if (!storm_irqs_have_loc())
		return;
	for_each_online_cpu(cpu) {
		struct storm_watch *w = per_cpu_ptr(&storm_watch, cpu);
		u64 idle_us = storm_idle_us(cpu);
		/* idle time read remotely can step back: then not busy */
		bool busy = idle_us >= w->idle_us &&
			    (idle_us - w->idle_us) * NSEC_PER_USEC * 2 <
			    now - w->at_ns;

		if (acc[cpu].loc != w->loc || !busy || tick_nohz_full_cpu(cpu))
			w->flat = 0;
		else
			w->flat++;
		w->loc = acc[cpu].loc;
		w->idle_us = idle_us;
		w->at_ns = now;
		if (w->flat < STORM_STARVE_CHECKS || ctl->starved)
			continue;
		ctl->starved = true;
		ctl->starved_cpu = cpu;
		pr_err("watchdog: CPU %d took no timer interrupt in %u checks a second apart, busy: stopping the storm\n",
		       cpu, w->flat);
		storm_ctl_stop(ctl, false);
	}
}

/*
 * Wait for the end of the run: woken by the last worker, by a fatal
 * signal, or after a second (see storm.h). TASK_KILLABLE | TASK_NOLOAD:
 * a fatal signal (Ctrl-C on insmod) wakes it, and a long storm adds
 * nothing to the load average. The signal stops the workers early; the
 * run is then marked interrupted and this still waits for every worker,
 * which stops within one call.
 */
void storm_ctl_wait_done(struct storm_ctl *ctl)
{
	unsigned long advance = jiffies + HZ;
	DEFINE_WAIT(wait);

	for (;;) {
		prepare_to_wait(&ctl->all_done, &wait,
				TASK_KILLABLE | TASK_NOLOAD);
		if (!atomic_read_acquire(&ctl->running))
			break;
		if (fatal_signal_pending(current) && !READ_ONCE(ctl->stop)) {
			pr_info("fatal signal: stopping the storm early\n");
			storm_ctl_stop(ctl, true);
		}
		/* 32-bit counters: take in each CPU's counts every second */
		if (time_after_eq(jiffies, advance)) {
			if (ctl->irqs_acc) {
				storm_irqs_advance(ctl->irqs_acc,
						   ctl->irqs_acc);
				storm_watchdog_check(ctl);
			}
			advance = jiffies + HZ;
		}
		/* with the signal pending this returns at once: workers stop */
		schedule_timeout(max_t(long, advance - jiffies, 1));
	}
	finish_wait(&ctl->all_done, &wait);
	/*
	 * A hotplug callback that saw the storm still running has finished
	 * with the status once the hotplug lock is ours: the status is final.
	 */
	cpus_read_lock();
	cpus_read_unlock();
	/*
	 * Acquired with running == 0: every worker's end is in. Workers
	 * stopped before the release end before the start.
	 */
	ctl->end_ns = max_t(u64, atomic64_read(&ctl->last_end_ns),
			    ctl->start_ns);
}

/* ---------------------------------------------------------------------
 * Worker threads: created on their CPU's node and bound to the CPU, with
 * a task reference held so kthread_stop() is safe whether or not the
 * thread has already returned.
 */
static bool storm_nice;
module_param_named(nice, storm_nice, bool, 0444);
MODULE_PARM_DESC(nice, "Run the storm's threads at nice 19, for shared boxes: the box's own tasks go first and the storm takes what is left (default 0)");

struct task_struct *storm_thread_create(int (*fn)(void *), void *data,
					unsigned int cpu, const char *namefmt)
{
	struct task_struct *t;

	t = kthread_create_on_cpu(fn, data, cpu, namefmt);
	if (IS_ERR(t))
		return t;
	get_task_struct(t);
	if (storm_nice)
		set_user_nice(t, MAX_NICE);
	return t;
}

/*
 * A storm thread that has finished sleeps here until kthread_stop(), so
 * that whoever stops it (the controller, or rmmod in background mode)
 * owns its lifetime and can still read what it left.
 */
void storm_thread_park(void)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
}

/*
 * Idempotent. kthread_stop() on a thread that has not run yet makes it
 * exit without calling its function at all: fine for a worker (it never
 * started), and the reason storm_module_exit() stops the workers itself.
 */
void storm_thread_stop(struct task_struct **t)
{
	if (IS_ERR_OR_NULL(*t))
		return;
	kthread_stop(*t);
	put_task_struct(*t);
	*t = NULL;
}

/* ---------------------------------------------------------------------
 * CPU hotplug during a storm. A storm's CPU sets are fixed at load; a CPU
 * that goes offline or comes online changes what a call reaches (and may
 * move a bound worker), so the storm stops at the first such event and
 * its status is "hotplug", never a count that silently means something
 * else. The callbacks run in the hotplug thread, where sleeping is fine.
 */
static struct storm_ctl *storm_hp_ctl;
static atomic_t storm_hp_offline = ATOMIC_INIT(0);
static atomic_t storm_hp_online = ATOMIC_INIT(0);
static int storm_hp_state = -1;

/* Counted from the CPU sets' check at load to the end of the storm. */
static void storm_hp_event(atomic_t *count)
{
	if (!storm_hp_ctl || storm_ctl_over(storm_hp_ctl))
		return;
	atomic_inc(count);
	WRITE_ONCE(storm_hp_ctl->hotplug, true);
	storm_ctl_stop(storm_hp_ctl, false);
}

static int storm_hp_cpu_online(unsigned int cpu)
{
	storm_hp_event(&storm_hp_online);
	return 0;
}

static int storm_hp_cpu_offline(unsigned int cpu)
{
	storm_hp_event(&storm_hp_offline);
	return 0;
}

/*
 * A bound worker found itself on another CPU: its CPU is going offline.
 * The scheduler pushes such threads away (sched_cpu_deactivate()) before
 * any CPUHP_AP_ONLINE_DYN callback runs, so the worker says it first.
 */
void storm_ctl_moved(struct storm_ctl *ctl)
{
	WRITE_ONCE(ctl->hotplug, true);
	storm_ctl_stop(ctl, false);
}

/* Not under cpus_read_lock(): the setup takes it. */
int storm_hotplug_watch(struct storm_ctl *ctl)
{
	int ret;

	storm_hp_ctl = ctl;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					KBUILD_MODNAME ":storm",
					storm_hp_cpu_online,
					storm_hp_cpu_offline);
	if (ret < 0) {
		pr_err("cannot watch CPU hotplug (%d)\n", ret);
		return ret;
	}
	storm_hp_state = ret;
	return 0;
}

void storm_hotplug_unwatch(void)
{
	if (storm_hp_state >= 0)
		cpuhp_remove_state_nocalls(storm_hp_state);
	storm_hp_state = -1;
}

void storm_hotplug_show(struct seq_file *m)
{
	seq_printf(m, "hotplug.offline: %d\nhotplug.online: %d\n",
		   atomic_read(&storm_hp_offline),
		   atomic_read(&storm_hp_online));
}

/* ---------------------------------------------------------------------
 * Load and unload: see struct storm_module.
 */
/*
 * The result file, made once run() has reported. Without it the numbers
 * are in the kernel log only, which no driver reads: a foreground load
 * that cannot make it fails (debugfs could not allocate) rather than
 * load without a result, and a background storm says so in the log.
 */
static int storm_result_create(struct storm_module *sm)
{
	struct dentry *dir, *file;

	dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(dir)) {
		file = dir;
		goto fail;
	}
	file = debugfs_create_file("result", 0444, dir, NULL, sm->result_fops);
	if (IS_ERR(file)) {
		debugfs_remove_recursive(dir);
		goto fail;
	}
	sm->result_dir = dir;
	return 0;
fail:
	pr_err("cannot create /sys/kernel/debug/%s/result (%ld): the result is in this log only\n",
	       KBUILD_MODNAME, PTR_ERR(file));
	return PTR_ERR(file);
}

static int storm_controller_fn(void *arg)
{
	struct storm_module *sm = arg;

	sm->run();
	storm_result_create(sm);
	storm_sent_stop(true);
	WRITE_ONCE(sm->reported, true);
	/* rmmod collects us */
	storm_thread_park();
	return 0;
}

/* The end of a successful init: run the storm, or start it. */
int storm_module_start(struct storm_module *sm)
{
	struct task_struct *t;
	int ret;

	ret = storm_sent_start();
	if (!ret)
		ret = storm_pmu_start();
	if (ret)
		goto err;
	if (!sm->background) {
		sm->run();
		storm_sent_stop(true);
		ret = storm_result_create(sm);
		/* pinned by a probe left behind: a failed load would free it */
		if (ret && !storm_sent_pinned())
			goto err;
		return 0;
	}
	t = kthread_create(storm_controller_fn, sm, KBUILD_MODNAME "/ctl");
	if (IS_ERR(t)) {
		ret = PTR_ERR(t);
		pr_err("cannot start the controller thread (%d)\n", ret);
		goto err;
	}
	get_task_struct(t);
	if (storm_nice)
		set_user_nice(t, MAX_NICE);
	sm->controller = t;
	wake_up_process(t);
	return 0;

err:
	storm_ctl_stop(sm->ctl, true);
	sm->stop_threads();
	storm_hotplug_unwatch();
	sm->free();
	storm_sent_free();
	storm_pmu_free();
	return ret;
}

/*
 * rmmod. Stop the storm, wait for the controller: if it ever ran, it ran
 * to its report. kthread_stop() on a controller that has not run yet
 * makes it exit without calling run(), so the workers are stopped here
 * in any case, never left running in freed module text.
 */
void storm_module_exit(struct storm_module *sm)
{
	storm_ctl_stop(sm->ctl, true);
	storm_thread_stop(&sm->controller);
	sm->stop_threads();
	if (sm->background && !READ_ONCE(sm->reported))
		pr_info("unloaded before the storm could report: no result\n");
	storm_hotplug_unwatch();
	/* waits for readers of the result before what they read goes */
	debugfs_remove_recursive(sm->result_dir);
	sm->result_dir = NULL;
	sm->free();
	storm_sent_free();
	storm_pmu_free();
}

/* ---------------------------------------------------------------------
 * Latency histogram: see storm.h.
 */
void storm_hist_init(struct storm_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = U64_MAX;
}

/* Smallest value that falls in bucket @idx (storm_hist_index() inverted). */
static u64 storm_hist_bucket_low(unsigned int idx)
{
	unsigned int shift;

	if (idx < STORM_HIST_SUB)
		return idx;
	shift = idx / STORM_HIST_SUB - 1;
	return (u64)(STORM_HIST_SUB + idx % STORM_HIST_SUB) << shift;
}

void storm_hist_merge(struct storm_hist *dst,
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

u64 storm_hist_mean(const struct storm_hist *h)
{
	return h->count ? div64_u64(h->sum_ns, h->count) : 0;
}

u64 storm_hist_min(const struct storm_hist *h)
{
	return h->count ? h->min_ns : 0;
}

/*
 * "<prefix>.count: N" ... and "<prefix>.hist: low:count ..." listing only
 * the non-empty buckets by their lower bound in ns.
 */
void storm_hist_show(struct seq_file *m, const char *prefix,
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
 * Per-CPU interrupt counters: see struct storm_irqs.
 */
#ifdef CONFIG_ARM64
/*
 * arm64 counts its IPIs per Linux irq, as any interrupt: one irq per IPI
 * type from ipi_irq_base (arch/arm64/kernel/smp.c), each requested by
 * the name "IPI", with IPI 0 the reschedule and IPI 1 the function call
 * (enum ipi_msg_type). ipi_irq_base is not exported: the first irq whose
 * action is named "IPI" is it. The tick is the arch timer's per-CPU irq,
 * named "arch_timer". Found once, at the first allocation of a snapshot
 * (at load), never on a storm's path; then read as arm64's
 * arch_show_interrupts() reads them, with irq_desc_kstat_cpu(). Neither
 * irq is ever freed, so their descriptors stay.
 */
static struct {
	bool searched;
	struct irq_desc *res, *cal, *loc;
	int ipi_base, loc_irq;
} storm_arm64_irqs = { .ipi_base = -1, .loc_irq = -1 };

/* @irq's descriptor if its first action is named @name, else NULL. */
static struct irq_desc *storm_irq_named(unsigned int irq, const char *name)
{
	struct irq_desc *desc = NULL;
	struct irq_data *data;
	unsigned long flags;
	bool match;

	/* a sparse irq's descriptor is freed after a grace period */
	rcu_read_lock();
	data = irq_get_irq_data(irq);
	if (data) {
		desc = irq_data_to_desc(data);
		raw_spin_lock_irqsave(&desc->lock, flags);
		match = desc->action && desc->action->name &&
			!strcmp(desc->action->name, name);
		raw_spin_unlock_irqrestore(&desc->lock, flags);
		if (!match)
			desc = NULL;
	}
	rcu_read_unlock();
	return desc;
}

static void storm_irqs_find(void)
{
	struct irq_desc *desc;
	unsigned int irq;

	if (storm_arm64_irqs.searched)
		return;
	storm_arm64_irqs.searched = true;
	for (irq = 0; irq < storm_nr_irqs(); irq++) {
		if (storm_arm64_irqs.ipi_base < 0 &&
		    storm_irq_named(irq, "IPI")) {
			storm_arm64_irqs.ipi_base = irq;
			storm_arm64_irqs.res = storm_irq_named(irq, "IPI");
			/* IPI 1 is the next irq, if it is an IPI */
			storm_arm64_irqs.cal = storm_irq_named(irq + 1, "IPI");
		}
		if (storm_arm64_irqs.loc_irq < 0) {
			desc = storm_irq_named(irq, "arch_timer");
			if (desc) {
				storm_arm64_irqs.loc_irq = irq;
				storm_arm64_irqs.loc = desc;
			}
		}
	}
	if (!storm_arm64_irqs.res || !storm_arm64_irqs.cal)
		pr_warn("no IPI irqs found: the result's CAL and RES counts are zeros\n");
	if (!storm_arm64_irqs.loc)
		pr_warn("no arch_timer irq found: the result's LOC counts are zeros and the watchdog is off\n");
}

static u64 storm_irq_desc_count(struct irq_desc *desc, int cpu)
{
	return desc ? irq_desc_kstat_cpu(desc, cpu) : 0;
}

/* The irqs read, for the result: "irq.source: ..." */
static void storm_irqs_show_source(struct seq_file *m)
{
	seq_puts(m, "irq.source: ");
	if (storm_arm64_irqs.res && storm_arm64_irqs.cal)
		seq_printf(m, "IPI irqs RES %d CAL %d, TLB none",
			   storm_arm64_irqs.ipi_base,
			   storm_arm64_irqs.ipi_base + 1);
	else
		seq_puts(m, "IPI irqs not found: CAL RES TLB none");
	if (storm_arm64_irqs.loc)
		seq_printf(m, ", LOC arch_timer irq %d\n",
			   storm_arm64_irqs.loc_irq);
	else
		seq_puts(m, ", LOC none: no arch_timer irq\n");
}

/* The storm's watchdog needs the timer's count. */
static bool storm_irqs_have_loc(void)
{
	return storm_arm64_irqs.loc;
}
#else
static void storm_irqs_find(void)
{
}

static void storm_irqs_show_source(struct seq_file *m)
{
}

static bool storm_irqs_have_loc(void)
{
	return IS_ENABLED(CONFIG_X86_LOCAL_APIC);
}
#endif

static void storm_irqs_read(int cpu, struct storm_irqs *s)
{
#ifdef CONFIG_X86
	const irq_cpustat_t *st = per_cpu_ptr(&irq_stat, cpu);

	s->cal = storm_irq_stat_cal(st);
	s->res = storm_irq_stat_res(st);
	s->tlb = storm_irq_stat_tlb(st);
#ifdef CONFIG_X86_LOCAL_APIC
	s->loc = storm_irq_stat_loc(st);
#endif
#elif defined(CONFIG_ARM64)
	s->cal = storm_irq_desc_count(storm_arm64_irqs.cal, cpu);
	s->res = storm_irq_desc_count(storm_arm64_irqs.res, cpu);
	s->tlb = 0;
	s->loc = storm_irq_desc_count(storm_arm64_irqs.loc, cpu);
#else
	memset(s, 0, sizeof(*s));
#endif
	s->online = cpu_online(cpu);
}

/*
 * Snapshot of every possible CPU: an array of nr_cpu_ids entries, not
 * necessarily contiguous in pages (thousands of possible CPUs).
 */
struct storm_irqs *storm_irqs_alloc(void)
{
	storm_irqs_find();
	return kvcalloc(nr_cpu_ids, sizeof(struct storm_irqs), GFP_KERNEL);
}

void storm_irqs_free(struct storm_irqs *snap)
{
	kvfree(snap);
}

void storm_irqs_snapshot(struct storm_irqs *snap)
{
	int cpu;

	for_each_possible_cpu(cpu)
		storm_irqs_read(cpu, &snap[cpu]);
}

/*
 * The kernel's counters are 32 bit: at a million IPIs a second a CPU's
 * wraps in 72 minutes. A snapshot holds them as 64-bit counts whose low
 * 32 bits are the kernel's: storm_irqs_advance() takes a fresh reading
 * into @snap and adds to @prev (which may be @snap) the 32-bit change
 * since it, read as signed, so a reading a little older than @prev moves
 * it back. Right while fewer than 2^31 interrupts come between the two:
 * the controller advances the storm's running counts every second
 * (storm_ctl_wait_done()), and slabstorm's phases each last one call.
 */
static s64 storm_irq_step(u64 now, u64 prev)
{
	return (s32)((u32)now - (u32)prev);
}

void storm_irqs_advance(const struct storm_irqs *prev,
			struct storm_irqs *snap)
{
	struct storm_irqs now;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct storm_irqs *p = &prev[cpu];
		struct storm_irqs *s = &snap[cpu];

		if (snap == prev)
			storm_irqs_read(cpu, &now);
		else
			now = *s;
		s->cal = p->cal + storm_irq_step(now.cal, p->cal);
		s->res = p->res + storm_irq_step(now.res, p->res);
		s->tlb = p->tlb + storm_irq_step(now.tlb, p->tlb);
		s->loc = p->loc + storm_irq_step(now.loc, p->loc);
		s->online = now.online;
	}
}

/*
 * A storm's window: the start snapshot in @before (also the running
 * counts' start, in @acc), the end one in @after, taken by the last
 * worker or here, then advanced from the running counts to 64 bits.
 */
void storm_irqs_begin(struct storm_ctl *ctl,
		      struct storm_irqs *before,
		      struct storm_irqs *after,
		      struct storm_irqs *acc)
{
	ctl->window_start_ns = ktime_get_ns();
	storm_irqs_snapshot(before);
	storm_mark(STORM_MARK_BEGIN);
	memcpy(acc, before, nr_cpu_ids * sizeof(*acc));
	storm_watchdog_reset(acc);
	ctl->irqs_before = before;
	ctl->irqs_after = after;
	ctl->irqs_acc = acc;
}

/* After storm_ctl_wait_done(), which saw every worker's end. */
void storm_irqs_end(struct storm_ctl *ctl)
{
	if (!ctl->irqs_taken) {
		storm_mark(STORM_MARK_END);
		storm_irqs_snapshot(ctl->irqs_after);
		ctl->window_end_ns = ktime_get_ns();
		storm_pmu_end();
	}
	storm_irqs_advance(ctl->irqs_acc, ctl->irqs_after);
}

void storm_irqs_delta(const struct storm_irqs *before,
		      const struct storm_irqs *after, int cpu,
		      struct storm_irqs *d)
{
	d->cal = storm_irq_delta(after[cpu].cal, before[cpu].cal);
	d->res = storm_irq_delta(after[cpu].res, before[cpu].res);
	d->tlb = storm_irq_delta(after[cpu].tlb, before[cpu].tlb);
	d->loc = storm_irq_delta(after[cpu].loc, before[cpu].loc);
}

/*
 * A CPU that came online during the storm is in cpu_online_mask before
 * its CPUHP_AP_ONLINE_DYN callback runs; if the storm ended in between,
 * only the snapshots tell. Call with both taken.
 */
void storm_ctl_check_cpus(struct storm_ctl *ctl,
			  const struct storm_irqs *before,
			  const struct storm_irqs *after)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (before[cpu].online != after[cpu].online)
			WRITE_ONCE(ctl->hotplug, true);
}

/*
 * "irq.<cpu>.CAL: delta" etc. for every CPU seen. LOC, the ticks in the
 * window, is what an instruction count over the window carries besides
 * the storm (each tick runs thousands of instructions).
 */
void storm_irqs_show(struct seq_file *m,
		     const struct storm_irqs *before,
		     const struct storm_irqs *after)
{
	struct storm_irqs d;
	int cpu;

	storm_irqs_show_source(m);
	for_each_possible_cpu(cpu) {
		if (!storm_cpu_seen(before, after, cpu))
			continue;
		storm_irqs_delta(before, after, cpu, &d);
		seq_printf(m, "irq.%d.CAL: %llu\nirq.%d.RES: %llu\n"
			   "irq.%d.TLB: %llu\nirq.%d.LOC: %llu\n",
			   cpu, d.cal, cpu, d.res, cpu, d.tlb, cpu, d.loc);
	}
}

void storm_irqs_sum(const struct storm_irqs *before,
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
		sum->loc += d.loc;
	}
}

/* ---------------------------------------------------------------------
 * CPU-list parameters. @str NULL (not given) selects @dflt; given but empty
 * is refused. Every refusal says why in one line, naming the parameter.
 */
/*
 * cpulist_parse() lets empty groups through ("1,,2", "1,", ",1"): a typo
 * there should be refused, not read as the CPUs that were spelled out.
 * -ENODATA: no CPU at all (",").
 */
static int storm_cpulist_syntax(const char *str)
{
	bool empty = true, any = false;
	const char *p;

	for (p = str; *p; p++) {
		if (*p == ',') {
			if (empty && any)
				return -EINVAL;
			empty = true;
		} else if (*p != '\n') {
			if (empty && !any && p != str)
				return -EINVAL;		/* ",1" */
			empty = false;
			any = true;
		}
	}
	if (!any)
		return -ENODATA;
	return empty ? -EINVAL : 0;
}

/*
 * The CPUs a storm takes when it is not told: of @dflt, those neither
 * isolated (isolcpus=, domain) nor nohz_full, which their owners keep the
 * kernel's work off on purpose. A list that names them is obeyed.
 */
void storm_default_cpus(struct cpumask *mask, const struct cpumask *dflt)
{
	cpumask_and(mask, dflt, housekeeping_cpumask(HK_TYPE_DOMAIN));
	cpumask_and(mask, mask, housekeeping_cpumask(HK_TYPE_TICK));
}

/* The one CPU a storm takes when not told: the first default CPU. */
int storm_default_cpu(void)
{
	int cpu;

	for_each_online_cpu(cpu) {
		if (cpumask_test_cpu(cpu, housekeeping_cpumask(HK_TYPE_DOMAIN)) &&
		    cpumask_test_cpu(cpu, housekeeping_cpumask(HK_TYPE_TICK)))
			return cpu;
	}
	/* every online CPU isolated: the box has no other */
	return cpumask_first(cpu_online_mask);
}

int storm_parse_cpulist(const char *param, const char *str,
			struct cpumask *mask,
			const struct cpumask *dflt)
{
	int cpu, ret;

	if (!str) {
		storm_default_cpus(mask, dflt);
		if (!cpumask_empty(mask) || cpumask_empty(dflt))
			return 0;
		pr_err("%s: its default CPUs (%*pbl) are all isolated or nohz_full: name them with %s=\n",
		       param, cpumask_pr_args(dflt), param);
		return -EINVAL;
	}
	if (!*str) {
		pr_err("%s=: empty CPU list\n", param);
		return -EINVAL;
	}
	ret = storm_cpulist_syntax(str);
	if (ret == -ENODATA) {
		pr_err("%s=%s: empty CPU list\n", param, str);
		return -EINVAL;
	}
	if (!ret)
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

int storm_check_range(const char *param,
		      unsigned long long val,
		      unsigned long long max)
{
	if (val <= max)
		return 0;
	pr_err("%s=%llu: out of range (at most %llu)\n", param, val, max);
	return -EINVAL;
}

/*
 * Every storm has a time bound: timeout= seconds ends a timed run (count
 * 0) and caps a counted one, which then says "timeout". timeout=0 is
 * refused either way: a counted storm could otherwise run for days, or
 * end at once.
 */
int storm_check_bound(const char *count_name,
		      unsigned long count, unsigned long timeout)
{
	if (timeout)
		return 0;
	if (!count)
		pr_err("%s=0 and timeout=0: nothing bounds the storm\n",
		       count_name);
	else
		pr_err("timeout=0: %s=%lu needs a time bound too (timeout=1..%lu seconds caps every storm)\n",
		       count_name, count, STORM_MAX_TIMEOUT_S);
	return -EINVAL;
}

/*
 * Memory a storm would hold at once, against what the machine has. More
 * than half of what is available now is refused at load: a storm must
 * never make the OOM killer pick off the tasks around it.
 */
int storm_check_memory(const char *what, u64 bytes)
{
	u64 avail = (u64)si_mem_available() << PAGE_SHIFT;

	if (bytes <= avail / 2)
		return 0;
	pr_err("%s: would hold %llu MiB at once, more than half of the %llu MiB available\n",
	       what, bytes >> 20, avail >> 20);
	return -EINVAL;
}

/*
 * The same against the memory cgroup of @mm, where the pages of a storm
 * that lends @mm are charged (tlbstorm's user mode: insmod's): more than
 * half of what its limit, or the lowest limit above it, leaves now is
 * refused, or the cgroup's OOM killer would pick off its tasks.
 */
int storm_check_memcg(const char *what, u64 bytes, struct mm_struct *mm)
{
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg, *m;
	u64 left = U64_MAX;

	if (mem_cgroup_disabled() || !mm)
		return 0;
	memcg = get_mem_cgroup_from_mm(mm);
	for (m = memcg; m; m = parent_mem_cgroup(m)) {
		unsigned long max = READ_ONCE(m->memory.max);
		unsigned long used = page_counter_read(&m->memory);

		if (max != PAGE_COUNTER_MAX)
			left = min_t(u64, left,
				     (u64)(max > used ? max - used : 0) <<
				     PAGE_SHIFT);
	}
	mem_cgroup_put(memcg);
	if (bytes <= left / 2)
		return 0;
	pr_err("%s: would hold %llu MiB at once in insmod's memory cgroup, more than half of the %llu MiB its limit leaves\n",
	       what, bytes >> 20, left >> 20);
	return -EINVAL;
#else
	return 0;
#endif
}

/*
 * A check of what the storm drove found it wrong (a call that ran on
 * another CPU than it was sent to, or not exactly once; a flush that
 * missed a CPU): @n violations, said once in the log, counted in the
 * result's "failures" line, and the run ends "End of test: FAILURE", as
 * the kernel's torture tests end theirs. The controller's, after the run:
 * never on a storm's timed path.
 */
void storm_check_failed(struct storm_ctl *ctl, u64 n, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("check failed: %pV\n", &vaf);
	va_end(args);
	ctl->failures += n;
}

/* ---------------------------------------------------------------------
 * Result file helpers: flat "name: value" lines.
 */
const char *storm_status(const struct storm_ctl *ctl,
			 bool failed)
{
	if (failed || ctl->failures)
		return "failed";
	if (ctl->starved)
		return "starved";
	if (READ_ONCE(ctl->interrupted))
		return "interrupted";
	if (ctl->hotplug)
		return "hotplug";
	return ctl->deadline_hit ? "timeout" : "done";
}

static void storm_show_range(struct seq_file *m, const char *sep,
			     int first, int last)
{
	if (first == last)
		seq_printf(m, "%s%d", sep, first);
	else
		seq_printf(m, "%s%d-%d", sep, first, last);
}

/*
 * The CPUs online at the start of the storm, as a CPU list (not when the
 * file is read: hotplug may come in between).
 */
static void storm_show_cpus_online(struct seq_file *m,
				   const struct storm_irqs *snap)
{
	int cpu, first = -1, last = -1;
	const char *sep = "";

	seq_puts(m, "cpus_online: ");
	for_each_possible_cpu(cpu) {
		if (!snap[cpu].online)
			continue;
		if (first >= 0 && cpu == last + 1) {
			last = cpu;
			continue;
		}
		if (first >= 0) {
			storm_show_range(m, sep, first, last);
			sep = ",";
		}
		first = last = cpu;
	}
	if (first >= 0)
		storm_show_range(m, sep, first, last);
	seq_putc(m, '\n');
}

/*
 * The kernel's preemption model: it moves what a storm's threads and
 * their targets cost, and kernels differ in what they offer (7.x on x86
 * has lazy preemption and no longer PREEMPT_VOLUNTARY).
 */
static const char *storm_preempt_model(void)
{
	if (preempt_model_rt())
		return "rt";
#ifdef CONFIG_ARCH_HAS_PREEMPT_LAZY
	if (preempt_model_lazy())
		return "lazy";
#endif
	if (preempt_model_full())
		return "full";
	if (preempt_model_voluntary())
		return "voluntary";
	if (preempt_model_none())
		return "none";
	return "unknown";
}

void storm_show_header(struct seq_file *m, const char *storm,
		       const struct storm_ctl *ctl, bool failed)
{
	seq_printf(m, "storm: %s\n", storm);
	seq_printf(m, "schema: %d\n", STORM_SCHEMA);
	seq_printf(m, "kernel: %s\n", init_utsname()->release);
	seq_printf(m, "kernel.preempt: %s\n", storm_preempt_model());
	seq_printf(m, "status: %s\n", storm_status(ctl, failed));
	seq_printf(m, "failures: %llu\n", ctl->failures);
	seq_printf(m, "param.nice: %d\n", storm_nice);
	if (ctl->starved)
		seq_printf(m, "starved.cpu: %d\n", ctl->starved_cpu);
	storm_show_cpus_online(m, ctl->irqs_before);
	seq_printf(m, "runtime_ns: %llu\n", ctl->end_ns - ctl->start_ns);
	/* what the interrupt counts cover: runtime_ns and the snapshots */
	seq_printf(m, "window_ns: %llu\n",
		   ctl->window_end_ns - ctl->window_start_ns);
}

void storm_show_op(struct seq_file *m, const struct storm_op *op)
{
	seq_printf(m, "op: %s\nop.count: %llu\nop.ipi_rows: %s\n",
		   op->name, op->count, op->ipi_rows);
	if (op->senders)
		seq_printf(m, "op.senders: %*pbl\n",
			   cpumask_pr_args(op->senders));
	if (op->targets && !cpumask_empty(op->targets))
		seq_printf(m, "op.targets: %*pbl\n",
			   cpumask_pr_args(op->targets));
	if (op->timed)
		seq_printf(m, "op.timed: %s\n", op->timed);
}

/*
 * A storm's first and last lines in the kernel log, as rcutorture and
 * locktorture print theirs: "Start of test: <every parameter>" once the
 * parameters are checked, and "End of test: SUCCESS: <the same>" (or
 * "FAILURE", "FAILURE (<status>)") as the last line of the run. @fmt
 * holds the storm's own parameters; the shared ones follow.
 */
void storm_print_params(const char *tag, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("%s: %pV count_sent=%d pmu=%d nice=%d\n", tag, &vaf,
		storm_sent_on(), storm_pmu_on(), storm_nice);
	va_end(args);
}

void storm_print_end(const struct storm_ctl *ctl, bool failed,
		     void (*print_params)(const char *tag))
{
	const char *status = storm_status(ctl, failed);
	char tag[48];

	if (!strcmp(status, "done"))
		strscpy(tag, "End of test: SUCCESS", sizeof(tag));
	else if (failed || ctl->failures)
		strscpy(tag, "End of test: FAILURE", sizeof(tag));
	else
		snprintf(tag, sizeof(tag), "End of test: FAILURE (%s)", status);
	print_params(tag);
}
