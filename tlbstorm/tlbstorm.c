// SPDX-License-Identifier: GPL-2.0
/*
 * tlbstorm - storms of real TLB shootdowns.
 *
 * mode=user (the default): the process that loads the module (insmod) lends
 * its mm to the storm. One worker thread per CPU in targets= adopts that mm
 * with kthread_use_mm(), maps a page of its own in it and keeps touching
 * the page, so its CPU is in the mm's cpumask and never lazy. One flusher
 * thread per CPU in cpulist= adopts the mm too and repeatedly maps `pages`
 * pages (vm_mmap with MAP_POPULATE) and unmaps them (vm_munmap): every
 * unmap ends in a shootdown IPI to every worker CPU, counted in the TLB row
 * of /proc/interrupts (and in CAL, whose vector it uses).
 *
 * mode=kernel: the flushers vmap() `pages` pages, vunmap() them and call
 * vm_unmap_aliases() to purge the lazily freed area at once, so every
 * iteration ends in flush_tlb_kernel_range(): an IPI to every other online
 * CPU, counted in CAL only (it never runs flush_tlb_func, so not in TLB).
 *
 * On arm64 both modes flush by broadcast TLBI instructions, which no
 * interrupt carries: the storm measures the flushes alone, its TLB and CAL
 * counts hold no shootdowns, and the result says so (flush_ipi: none).
 *
 * Either numflush times per flusher or, with numflush=0, for timeout
 * seconds. insmod returns when the storm is over; the result stays in
 * /sys/kernel/debug/tlbstorm/result until rmmod.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#if defined(CONFIG_X86) && defined(CONFIG_PARAVIRT)
#include <asm/paravirt.h>
#endif
#ifdef CONFIG_ARM64
#include <asm/cpufeature.h>
#include <asm/pgtable.h>
#include <asm/tlbflush.h>
#endif

#include "storm.h"
#include "storm_compat.h"

static unsigned long numflush;
module_param(numflush, ulong, 0444);
MODULE_PARM_DESC(numflush, "Flushes per flusher CPU; 0 = timed run (default 0)");

static unsigned long timeout = 30;
module_param(timeout, ulong, 0444);
MODULE_PARM_DESC(timeout, "Seconds to run with numflush=0; with numflush, the most the storm may take; 1..604800 (default 30)");

static char *cpulist;
module_param(cpulist, charp, 0444);
MODULE_PARM_DESC(cpulist, "Flusher CPUs (default the first online CPU)");

static char *targets;
module_param(targets, charp, 0444);
MODULE_PARM_DESC(targets, "mode=user: CPUs whose workers hold the mm (default all other online)");

static unsigned long pages = 1;
module_param(pages, ulong, 0444);
MODULE_PARM_DESC(pages, "Pages mapped and unmapped per flush (default 1)");

static char *mode = "user";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "user: vm_mmap/vm_munmap in the insmod mm; kernel: vmap/vunmap + vm_unmap_aliases (default user)");

static unsigned long delay;
module_param(delay, ulong, 0444);
MODULE_PARM_DESC(delay, "Microseconds to sleep between flushes (default 0)");

static unsigned long op_loops;
module_param(op_loops, ulong, 0444);
MODULE_PARM_DESC(op_loops, "Iterations of a two-instruction loop on the flusher after each flush, at most 10000000: a known cost per flush (default 0)");

static bool latency = true;
module_param(latency, bool, 0444);
MODULE_PARM_DESC(latency, "Time every unmap (and its shootdown) into a histogram (default 1)");

static bool background;
module_param(background, bool, 0444);
MODULE_PARM_DESC(background, "Return from insmod at once; rmmod stops the storm (default 0)");

static bool inject_miscount;
module_param(inject_miscount, bool, 0444);
MODULE_PARM_DESC(inject_miscount, "Check a TLB count one short of the flushes held on the first worker CPU that held one, to show that a flush that missed a CPU ends the storm FAILURE (default 0)");

/* 4096 pages is 16 MiB populated per flush and far above any full-flush ceiling. */
#define TLBSTORM_MAX_PAGES	4096UL

/*
 * x86 flushes a range page by page up to tlb_single_page_flush_ceiling
 * pages and the whole TLB above it. That variable is not exported (it is
 * tunable in /sys/kernel/debug/x86/), so the expected kind of flush is
 * derived from its default and the result says so.
 */
#define TLBSTORM_FLUSH_CEILING	33UL

enum tlbstorm_mode {
	TLBSTORM_USER,		/* vm_mmap + vm_munmap in a user mm */
	TLBSTORM_KERNEL,	/* vmap + vunmap + vm_unmap_aliases */
};

static const char * const tlbstorm_mode_name[] = {
	[TLBSTORM_USER]		= "user",
	[TLBSTORM_KERNEL]	= "kernel",
};

/*
 * The /proc/interrupts row that counts each mode's shootdowns: none on
 * arm64, which sends no IPI to flush.
 */
#ifdef CONFIG_ARM64
#define TLBSTORM_FLUSH_IPI	false
static const char * const tlbstorm_counted_in[] = {
	[TLBSTORM_USER]		= "none",
	[TLBSTORM_KERNEL]	= "none",
};
#else
#define TLBSTORM_FLUSH_IPI	true
static const char * const tlbstorm_counted_in[] = {
	[TLBSTORM_USER]		= "TLB",
	[TLBSTORM_KERNEL]	= "CAL",
};
#endif

enum tlbstorm_flush_kind {
	TLBSTORM_FLUSH_SINGLE,	/* one page invalidated */
	TLBSTORM_FLUSH_RANGE,	/* each page of the range invalidated */
	TLBSTORM_FLUSH_FULL,	/* the whole TLB flushed */
};

static const char * const tlbstorm_flush_kind_name[] = {
	[TLBSTORM_FLUSH_SINGLE]	= "single",
	[TLBSTORM_FLUSH_RANGE]	= "range",
	[TLBSTORM_FLUSH_FULL]	= "full",
};

/* One per flusher CPU, in that CPU's per-cpu area. */
struct tlbstorm_flusher {
	int cpu;
	struct task_struct *task;
	u64 flushes;
	u64 errors;
	int last_error;
	bool moved;			/* found itself off its CPU: stopped */
	u64 start_ns, end_ns;
	struct storm_hist hist ____cacheline_aligned_in_smp;
};

/* One per target CPU in user mode: keeps the mm loaded and in use there. */
struct tlbstorm_worker {
	int cpu;
	struct task_struct *task;
	unsigned long addr;		/* its own page in the mm */
	u64 touches;
	u64 errors;
	int last_error;
	/*
	 * Its time on its CPU during the storm: while another task has the
	 * CPU it is not in the mm (lazy, or out of mm_cpumask), and a flush
	 * may skip it (native_flush_tlb_multi()).
	 */
	u64 oncpu_start_ns;
	u64 oncpu_ns;
	u64 flushes_held;		/* see struct tlbstorm_held */
};

static enum tlbstorm_mode storm_mode;
static enum tlbstorm_flush_kind flush_kind;
static struct tlbstorm_flusher __percpu *flushers;
static struct tlbstorm_worker __percpu *workers;
static cpumask_var_t flusher_mask, target_mask;
static struct mm_struct *storm_mm;	/* user mode: mmget() reference */
static bool thp_was_disabled;		/* STORM_MMF_NO_THP before the storm */
static struct page **kpages;		/* kernel mode: what vmap() maps */
static atomic_t workers_ready;
static struct completion workers_all_ready;
static struct storm_ctl ctl;
static struct storm_irqs *irqs_before, *irqs_after, *irqs_acc;
static struct storm_hist *hist_total;
static const char *no_check;		/* why the flush check does not apply */
/*
 * The span the workers' oncpu_ns were read across: from before the first
 * start was read to after the last end was. It holds the storm's runtime
 * and the main thread's wakeup after it, which a worker may spend on its
 * CPU too.
 */
static u64 oncpu_window_start_ns, oncpu_window_ns;
static bool failed;

static void tlbstorm_worker_ready(void)
{
	if (atomic_inc_return(&workers_ready) ==
	    cpumask_weight(target_mask))
		complete(&workers_all_ready);
}

static void tlbstorm_worker_error(struct tlbstorm_worker *w, int err)
{
	w->errors++;
	w->last_error = err;
}

/*
 * Every flusher's flushes, begun and done, in one cache line that the
 * workers read at each look: the look is inside the measurement, and one
 * line per flusher would cost a miss per flusher, across sockets too.
 */
static struct {
	atomic64_t begun;
	atomic64_t done;
} tlbstorm_total ____cacheline_aligned_in_smp;

/*
 * Flushes begun and done by all flushers, in that order: a flush counted
 * done here was counted begun in any earlier call.
 */
static void tlbstorm_flush_counts(u64 *begun, u64 *done)
{
	*begun = atomic64_read(&tlbstorm_total.begun);
	/* pairs with the flusher's barrier between its flush and done */
	smp_rmb();
	*done = atomic64_read(&tlbstorm_total.done);
}

/* Context switches of current so far: unchanged, it held its CPU. */
static unsigned long tlbstorm_switches(void)
{
	return READ_ONCE(current->nvcsw) + READ_ONCE(current->nivcsw);
}

/*
 * A stretch of a worker's life on its CPU with no switch: flushes begun
 * after its first look and done by its last one ran while the CPU ran
 * the mm, not lazily, and each of them had to interrupt it.
 */
struct tlbstorm_held {
	bool on;			/* in a stretch */
	unsigned long switches;		/* at its start */
	u64 begun;			/* flushes begun at its first look */
	u64 done;			/* flushes done at its last look */
};

static void tlbstorm_held_end(struct tlbstorm_worker *w,
			      struct tlbstorm_held *h)
{
	if (h->on && h->done > h->begun)
		w->flushes_held += h->done - h->begun;
	h->on = false;
}

static void tlbstorm_worker_look(struct tlbstorm_worker *w,
				 struct tlbstorm_held *h)
{
	unsigned long before = tlbstorm_switches(), after;
	u64 begun, done;

	tlbstorm_flush_counts(&begun, &done);
	after = tlbstorm_switches();
	if (h->on && before == h->switches && after == h->switches) {
		h->done = done;
		return;
	}
	/* switched since the last look: a new stretch, if this look is in it */
	tlbstorm_held_end(w, h);
	h->on = before == after;
	h->switches = after;
	h->begun = begun;
	h->done = done;
}

/*
 * A worker maps a page of its own in the mm, then reads and writes it
 * until kthread_stop(): while it runs, its CPU runs the mm (not lazily),
 * so every unmap in the mm has to shoot down its TLB. Its page goes
 * before it leaves.
 *
 * An error before the first touch is recorded before the worker says it
 * is ready, so that the check before the release sees it: the storm then
 * does not run with a CPU out of the mm. An error during the storm stops
 * it (status failed).
 */
static int tlbstorm_worker_fn(void *arg)
{
	struct tlbstorm_worker *w = arg;
	struct tlbstorm_held held = { };
	u32 __user *p;
	u32 v = 0;
	int ret;

	kthread_use_mm(storm_mm);
	w->addr = vm_mmap(NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, 0);
	if (IS_ERR_VALUE(w->addr)) {
		tlbstorm_worker_error(w, (int)w->addr);
		w->addr = 0;
		tlbstorm_worker_ready();
		goto out;
	}
	p = (u32 __user *)w->addr;
	ret = put_user(v, p);
	if (ret)
		tlbstorm_worker_error(w, ret);
	/* orders the error before the count: see tlbstorm_run() */
	tlbstorm_worker_ready();

	while (!ret && !kthread_should_stop()) {
		ret = get_user(v, p) ?: put_user(v + 1, p);
		w->touches++;
		if (unlikely(ret)) {
			tlbstorm_worker_error(w, ret);
			storm_ctl_stop(&ctl, false);
			break;
		}
		tlbstorm_worker_look(w, &held);
		cond_resched_tasks_rcu_qs();
	}
	tlbstorm_held_end(w, &held);
	ret = vm_munmap(w->addr, PAGE_SIZE);
	if (ret)
		tlbstorm_worker_error(w, ret);
out:
	kthread_unuse_mm(storm_mm);
	storm_thread_park();
	return 0;
}

/*
 * One user-mode flush: populate, then unmap (the shootdown is in here).
 * MAP_POPULATE ignores a failure to fault a page in, and unmapping a page
 * that was never mapped flushes nothing: a store to each page makes it
 * present (already so, when populate worked) or fails the flush.
 */
static int tlbstorm_flush_user(struct tlbstorm_flusher *f)
{
	unsigned long len = pages << PAGE_SHIFT;
	unsigned long addr, off;
	u64 t0 = 0;
	int ret;

	addr = vm_mmap(NULL, 0, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, 0);
	if (IS_ERR_VALUE(addr))
		return (int)addr;
	for (off = 0; off < len; off += PAGE_SIZE) {
		if (put_user(0, (u8 __user *)(addr + off))) {
			vm_munmap(addr, len);
			return -EFAULT;
		}
	}
	if (latency)
		t0 = storm_clock_ns();
	ret = vm_munmap(addr, len);
	if (latency && !ret)
		storm_hist_add(&f->hist, storm_clock_ns() - t0);
	return ret;
}

/* One kernel-mode flush: vunmap is lazy, vm_unmap_aliases purges now. */
static int tlbstorm_flush_kernel(struct tlbstorm_flusher *f)
{
	u64 t0 = 0;
	void *addr;

	addr = vmap(kpages, pages, VM_MAP, PAGE_KERNEL);
	if (!addr)
		return -ENOMEM;
	if (latency)
		t0 = storm_clock_ns();
	vunmap(addr);
	vm_unmap_aliases();
	if (latency)
		storm_hist_add(&f->hist, storm_clock_ns() - t0);
	return 0;
}

/*
 * The timed loop: nothing of ours but the flush, which itself takes the
 * kernel's locks and allocates (mmap_lock, vmap_purge_lock): that is what
 * a shootdown costs.
 */
static int tlbstorm_flusher_fn(void *arg)
{
	struct tlbstorm_flusher *f = arg;
	int ret;

	if (storm_mode == TLBSTORM_USER)
		kthread_use_mm(storm_mm);
	storm_worker_ready(&ctl);
	f->start_ns = ktime_get_ns();
	while (!numflush || f->flushes < numflush) {
		if (storm_should_stop(&ctl))
			break;
		/* moved by hotplug: its flushes would not be what it counts */
		if (unlikely(raw_smp_processor_id() != f->cpu)) {
			f->moved = true;
			storm_ctl_moved(&ctl);
			break;
		}
		if (storm_mode == TLBSTORM_USER) {
			atomic64_inc(&tlbstorm_total.begun);
			/* a worker that missed the count is in the mask */
			smp_mb__after_atomic();
			ret = tlbstorm_flush_user(f);
		} else {
			ret = tlbstorm_flush_kernel(f);
		}
		if (unlikely(ret)) {
			/* e.g. out of memory: stop, never spin on errors */
			f->errors++;
			f->last_error = ret;
			break;
		}
		/* a worker that sees it done saw it begun: flush_counts() */
		smp_mb__before_atomic();
		atomic64_inc(&tlbstorm_total.done);
		WRITE_ONCE(f->flushes, f->flushes + 1);
		storm_loops(op_loops);
		if (delay)
			usleep_range(delay, delay + 1);
		else
			cond_resched_tasks_rcu_qs();
	}
	f->end_ns = ktime_get_ns();
	if (storm_mode == TLBSTORM_USER)
		kthread_unuse_mm(storm_mm);
	storm_worker_done(&ctl);
	storm_thread_park();
	return 0;
}

/* "<tag>: numflush=..." with the CPU lists and the flush as expected */
static void tlbstorm_print_params(const char *tag)
{
	storm_print_params(tag, "numflush=%lu timeout=%lu pages=%lu mode=%s delay=%lu op_loops=%lu latency=%d background=%d cpulist=%*pbl targets=%*pbl counted_in=%s flush_kind=%s",
			   numflush, timeout, pages,
			   tlbstorm_mode_name[storm_mode], delay, op_loops,
			   latency, background, cpumask_pr_args(flusher_mask),
			   cpumask_pr_args(target_mask),
			   tlbstorm_counted_in[storm_mode],
			   tlbstorm_flush_kind_name[flush_kind]);
}

/*
 * The most pages the kernel flushes one by one (or by range operations),
 * and where that figure comes from. arm64's is no tunable: a user range
 * below PTRS_PER_PTE pages (MAX_TLBI_OPS, MAX_DVM_OPS) is flushed page
 * by page, and any range up to MAX_TLBI_RANGE_PAGES by range operations
 * where the CPU has them (FEAT_TLBIRANGE); a kernel range up to
 * PTRS_PER_PTE pages page by page.
 */
static unsigned long tlbstorm_flush_ceiling(void)
{
#ifdef CONFIG_ARM64
	if (storm_mode == TLBSTORM_KERNEL)
		return PTRS_PER_PTE;
	if (system_supports_tlb_range())
		return MAX_TLBI_RANGE_PAGES - 1;
	return PTRS_PER_PTE - 1;
#else
	return TLBSTORM_FLUSH_CEILING;
#endif
}

#ifdef CONFIG_ARM64
#define TLBSTORM_FLUSH_CEILING_SOURCE	"arch"
#else
#define TLBSTORM_FLUSH_CEILING_SOURCE	"default"
#endif

/*
 * What the kernel is expected to do for one flush. A user unmap flushes
 * exactly its pages; a vmap area has a guard page, and the kernel-range
 * flush of its purge covers it too and never takes the single-page path.
 */
static enum tlbstorm_flush_kind tlbstorm_expected_flush(void)
{
	unsigned long span = pages;

	if (storm_mode == TLBSTORM_KERNEL)
		span = pages + 1;
	else if (pages == 1)
		return TLBSTORM_FLUSH_SINGLE;
	return span > tlbstorm_flush_ceiling() ? TLBSTORM_FLUSH_FULL :
						 TLBSTORM_FLUSH_RANGE;
}

/* The counts, times and sizes: each within its bound, and the memory. */
static int tlbstorm_check_bounds(void)
{
	u64 bytes;
	int ret;

	ret = storm_check_bound("numflush", numflush, timeout);
	if (ret)
		return ret;
	if (inject_miscount && !TLBSTORM_FLUSH_IPI) {
		pr_err("inject_miscount=1: this arch flushes by broadcast TLBI, with no TLB interrupt to check\n");
		return -EINVAL;
	}
	if (!pages) {
		pr_err("pages=0: a flush needs at least one page\n");
		return -EINVAL;
	}
	ret = storm_check_range("numflush", numflush, STORM_MAX_COUNT) ?:
	      storm_check_range("timeout", timeout, STORM_MAX_TIMEOUT_S) ?:
	      storm_check_range("delay", delay, STORM_MAX_DELAY_US) ?:
	      storm_check_range("op_loops", op_loops, STORM_MAX_LOOPS) ?:
	      storm_check_range("pages", pages, TLBSTORM_MAX_PAGES);
	if (ret)
		return ret;
	/*
	 * user: each flusher maps pages at a time, in insmod's mm and so in
	 * its memory cgroup; kernel: one vmap
	 */
	if (storm_mode == TLBSTORM_KERNEL)
		return storm_check_memory("pages", (u64)pages * PAGE_SIZE);
	bytes = (u64)pages * PAGE_SIZE * cpumask_weight(flusher_mask);
	return storm_check_memory("pages", bytes) ?:
	       storm_check_memcg("pages", bytes, current->mm);
}

/* mode=kernel: one flusher, and every other online CPU is flushed. */
static int tlbstorm_check_kernel(void)
{
	/*
	 * vm_unmap_aliases() purges every CPU's lazy areas at once: a second
	 * flusher's purge would often find nothing left and send no IPI, yet
	 * count and time a flush.
	 */
	if (cpumask_weight(flusher_mask) > 1) {
		pr_err("mode=kernel: one flusher only (cpulist=%*pbl): the kernel purges all lazy vmap areas in one flush\n",
		       cpumask_pr_args(flusher_mask));
		return -EINVAL;
	}
	if (targets && *targets) {
		pr_err("targets= is for mode=user; a kernel-range flush goes to every other online CPU\n");
		return -EINVAL;
	}
	cpumask_andnot(target_mask, cpu_online_mask, flusher_mask);
	if (cpumask_empty(target_mask)) {
		pr_err("mode=kernel: no online CPU outside cpulist=%*pbl to flush\n",
		       cpumask_pr_args(flusher_mask));
		return -EINVAL;
	}
	return 0;
}

/*
 * mode=user: a worker on each target CPU, none of them a flusher's.
 * targets= not given, or given empty: every online CPU but the flushers.
 */
static int tlbstorm_check_user(void)
{
	int cpu, ret;

	if (!targets || !*targets) {
		storm_default_cpus(target_mask, cpu_online_mask);
		cpumask_andnot(target_mask, target_mask, flusher_mask);
		if (cpumask_empty(target_mask)) {
			pr_err("mode=user: no online CPU outside cpulist=%*pbl for a worker, not isolated or nohz_full (or targets=)\n",
			       cpumask_pr_args(flusher_mask));
			return -EINVAL;
		}
		return 0;
	}
	ret = storm_parse_cpulist("targets", targets, target_mask,
				  cpu_online_mask);
	if (ret)
		return ret;
	for_each_cpu(cpu, target_mask) {
		if (cpumask_test_cpu(cpu, flusher_mask)) {
			pr_err("targets=%s: CPU %d is also a flusher (cpulist)\n",
			       targets, cpu);
			return -EINVAL;
		}
	}
	return 0;
}

static int tlbstorm_check_params(void)
{
	int ret;

	if (mode && sysfs_streq(mode, "user")) {
		storm_mode = TLBSTORM_USER;
	} else if (mode && sysfs_streq(mode, "kernel")) {
		storm_mode = TLBSTORM_KERNEL;
	} else {
		pr_err("mode=%s: unknown mode (user or kernel)\n",
		       mode ?: "");
		return -EINVAL;
	}
	ret = storm_parse_cpulist("cpulist", cpulist, flusher_mask,
				  cpumask_of(storm_default_cpu())) ?:
	      tlbstorm_check_bounds();
	if (ret)
		return ret;
	flush_kind = tlbstorm_expected_flush();
	if (storm_mode == TLBSTORM_KERNEL)
		return tlbstorm_check_kernel();
	return tlbstorm_check_user();
}

static u64 tlbstorm_total_flushes(void)
{
	u64 total = 0;
	int cpu;

	for_each_cpu(cpu, flusher_mask)
		total += per_cpu_ptr(flushers, cpu)->flushes;
	return total;
}

static void tlbstorm_print_results(void)
{
	u64 runtime = ctl.end_ns - ctl.start_ns;
	u64 flushes = tlbstorm_total_flushes();
	struct storm_irqs sum;
	int cpu;

	for_each_cpu(cpu, flusher_mask) {
		struct tlbstorm_flusher *f = per_cpu_ptr(flushers, cpu);
		u64 ns = f->end_ns - f->start_ns;

		/* per_flush includes delay sleeps; min/max: the timed unmaps */
		pr_info("flusher %d -> %*pbl: flushes=%llu errors=%llu time=%llu ns per_flush=%llu ns%s min=%llu max=%llu ns\n",
			cpu, cpumask_pr_args(target_mask), f->flushes,
			f->errors, ns, f->flushes ? div64_u64(ns, f->flushes) : 0,
			delay ? " (with delay)" : "",
			storm_hist_min(&f->hist), f->hist.max_ns);
		if (f->errors)
			pr_err("flusher %d: flush failed with %d\n", cpu,
			       f->last_error);
	}
	if (storm_mode == TLBSTORM_USER) {
		for_each_cpu(cpu, target_mask) {
			struct tlbstorm_worker *w = per_cpu_ptr(workers, cpu);

			if (w->errors)
				pr_err("worker %d: touching the mm failed with %d\n",
				       cpu, w->last_error);
		}
	}
	storm_irqs_sum(irqs_before, irqs_after, target_mask, &sum);
	pr_info("summary: mode=%s flushers=%u flushes=%llu runtime=%llu ns flushes_per_sec=%llu targets=%*pbl TLB=%llu CAL=%llu RES=%llu counted_in=%s flush_kind=%s status=%s\n",
		tlbstorm_mode_name[storm_mode], cpumask_weight(flusher_mask),
		flushes, runtime,
		runtime ? mul_u64_u64_div_u64(flushes, NSEC_PER_SEC, runtime) : 0,
		cpumask_pr_args(target_mask), sum.tlb, sum.cal, sum.res,
		tlbstorm_counted_in[storm_mode],
		tlbstorm_flush_kind_name[flush_kind], storm_status(&ctl, failed));
	storm_print_end(&ctl, failed, tlbstorm_print_params);
}

static int tlbstorm_result_show(struct seq_file *m, void *v)
{
	struct storm_irqs sum;
	char name[40];
	int cpu;

	storm_show_header(m, "tlbstorm", &ctl, failed);
	seq_printf(m, "param.numflush: %lu\nparam.timeout: %lu\n"
		   "param.pages: %lu\nparam.mode: %s\nparam.delay: %lu\n"
		   "param.op_loops: %lu\nparam.latency: %d\n"
		   "param.background: %d\n",
		   numflush, timeout, pages, tlbstorm_mode_name[storm_mode],
		   delay, op_loops, latency, background);
	seq_printf(m, "param.cpulist: %*pbl\nparam.targets: %*pbl\n",
		   cpumask_pr_args(flusher_mask), cpumask_pr_args(target_mask));
	seq_printf(m, "mode: %s\ncounted_in: %s\nflush_kind: %s\n",
		   tlbstorm_mode_name[storm_mode],
		   tlbstorm_counted_in[storm_mode],
		   tlbstorm_flush_kind_name[flush_kind]);
	/* user mode maps base pages only: see tlbstorm_get_mm() */
	if (storm_mode == TLBSTORM_USER)
		seq_puts(m, "thp: disabled\n");
	/* x86: tlb_single_page_flush_ceiling is not exported: its default */
	seq_printf(m, "flush_ceiling: %lu\nflush_ceiling_source: %s\n",
		   tlbstorm_flush_ceiling(), TLBSTORM_FLUSH_CEILING_SOURCE);
	if (!TLBSTORM_FLUSH_IPI)
		seq_puts(m, "flush_ipi: none (broadcast TLBI)\n");
	seq_printf(m, "flushes: %llu\n", tlbstorm_total_flushes());

	for_each_cpu(cpu, flusher_mask) {
		struct tlbstorm_flusher *f = per_cpu_ptr(flushers, cpu);

		seq_printf(m, "flusher.%d.flushes: %llu\n", cpu, f->flushes);
		seq_printf(m, "flusher.%d.errors: %llu\n", cpu, f->errors);
		seq_printf(m, "flusher.%d.last_error: %d\n", cpu,
			   f->last_error);
		seq_printf(m, "flusher.%d.moved: %d\n", cpu, f->moved);
		seq_printf(m, "flusher.%d.runtime_ns: %llu\n", cpu,
			   f->end_ns - f->start_ns);
		if (latency) {
			snprintf(name, sizeof(name), "flusher.%d.latency", cpu);
			storm_hist_show(m, name, &f->hist);
		}
	}
	if (storm_mode == TLBSTORM_USER) {
		for_each_cpu(cpu, target_mask) {
			struct tlbstorm_worker *w = per_cpu_ptr(workers, cpu);

			seq_printf(m, "worker.%d.touches: %llu\n", cpu,
				   w->touches);
			seq_printf(m, "worker.%d.errors: %llu\n", cpu,
				   w->errors);
			seq_printf(m, "worker.%d.oncpu_ns: %llu\n", cpu,
				   w->oncpu_ns);
			seq_printf(m, "worker.%d.flushes_held: %llu\n", cpu,
				   w->flushes_held);
		}
		/* oncpu_ns is up to date at ticks and switches only */
		seq_printf(m, "worker.oncpu_resolution_ns: %lu\n",
			   (unsigned long)(2 * TICK_NSEC));
		seq_printf(m, "worker.oncpu_window_ns: %llu\n",
			   oncpu_window_ns);
	}
	if (latency)
		storm_hist_show(m, "latency", hist_total);
	storm_irqs_sum(irqs_before, irqs_after, target_mask, &sum);
	seq_printf(m, "targets.CAL: %llu\ntargets.RES: %llu\n"
		   "targets.TLB: %llu\n", sum.cal, sum.res, sum.tlb);
	/*
	 * The workers touch memory for as long as the storm lasts, so their
	 * instructions follow time, not flushes: no op.targets. CAL on arm64
	 * too, where a flush sends none: IPIs per flush is then measured as
	 * 0, and a kernel whose flushes start sending IPIs shows there.
	 */
	storm_show_op(m, &(struct storm_op){
		.name = "flush", .count = tlbstorm_total_flushes(),
		.ipi_rows = "CAL",
		.senders = flusher_mask,
	});
	storm_irqs_show(m, irqs_before, irqs_after);
	storm_sent_show(m, irqs_before, irqs_after);
	storm_pmu_show(m);
	storm_hotplug_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(tlbstorm_result);

/* Drop the mm last: no thread of ours uses it any more. */
static void tlbstorm_put_mm(void)
{
	if (storm_mm) {
		if (!thp_was_disabled)
			storm_mm_flag_clear(STORM_MMF_NO_THP, storm_mm);
		mmput(storm_mm);
		storm_mm = NULL;
	}
}

/*
 * Workers first: each unmaps its page and lets go of the mm. Then the
 * flushers, which have already let go of it when their loop ended. Then
 * the mm.
 */
static void tlbstorm_stop_threads(void)
{
	int cpu;

	if (workers)
		for_each_cpu(cpu, target_mask)
			storm_thread_stop(&per_cpu_ptr(workers, cpu)->task);
	if (flushers)
		for_each_cpu(cpu, flusher_mask)
			storm_thread_stop(&per_cpu_ptr(flushers, cpu)->task);
	tlbstorm_put_mm();
}

/*
 * A worker's time on its CPU so far. The scheduler brings a running
 * task's sum_exec_runtime up to date at each tick and switch: read around
 * a storm it is off by two ticks at most.
 */
static u64 tlbstorm_worker_runtime(const struct tlbstorm_worker *w)
{
	return READ_ONCE(w->task->se.sum_exec_runtime);
}

/* Each worker's time on its CPU across the storm: a start, then the span. */
static void tlbstorm_workers_oncpu(bool storm_over)
{
	int cpu;

	if (storm_mode != TLBSTORM_USER)
		return;
	if (!storm_over)
		oncpu_window_start_ns = ktime_get_ns();
	for_each_cpu(cpu, target_mask) {
		struct tlbstorm_worker *w = per_cpu_ptr(workers, cpu);
		u64 now = tlbstorm_worker_runtime(w);

		if (storm_over)
			w->oncpu_ns = now - w->oncpu_start_ns;
		else
			w->oncpu_start_ns = now;
	}
	if (storm_over)
		oncpu_window_ns = ktime_get_ns() - oncpu_window_start_ns;
}

/*
 * Why a flush of the storm's mm may have reached a CPU that ran it with
 * no interrupt there, or NULL. Call with the mm still held.
 */
static const char *tlbstorm_flush_without_ipi(void)
{
#if defined(CONFIG_X86) && defined(CONFIG_PARAVIRT)
	char name[64];
#endif

#ifdef CONFIG_ARM64
	return "arm64 flushes by broadcast TLBI: no IPI";
#else
#ifdef CONFIG_BROADCAST_TLB_FLUSH
	/*
	 * An mm active on four CPUs or more may get a global ASID
	 * (consider_global_asid()), which it keeps till it goes: from then
	 * on flush_tlb_mm_range() flushes it everywhere with INVLPGB. What
	 * mm_global_asid() reads, which modules do not see; the flushers
	 * are done, so no order is needed with them.
	 */
	if (cpu_feature_enabled(X86_FEATURE_INVLPGB) &&
	    READ_ONCE(storm_mm->context.global_asid))
		return "the mm's flushes are INVLPGB broadcasts";
#endif
#if defined(CONFIG_X86) && defined(CONFIG_PARAVIRT)
	/*
	 * A hypervisor's flush (KVM's PV flush, Hyper-V, Xen) flushes a vCPU
	 * the host preempted at its next entry, or flushes by hypercall:
	 * the worker held its CPU, yet the guest took no interrupt there.
	 */
	snprintf(name, sizeof(name), "%ps", (void *)pv_ops.mmu.flush_tlb_multi);
	if (strcmp(name, "native_flush_tlb_multi"))
		return "remote flushes go through a hypervisor";
#endif
	return NULL;
#endif /* !CONFIG_ARM64 */
}

/*
 * Every flush that began and ended while a worker held its CPU had to
 * interrupt that CPU (struct tlbstorm_held): its TLB count over the
 * window is at least the flushes its worker held. Not checked where that
 * need not hold: in mode=kernel, where no worker holds an mm; when a CPU
 * went off- or online (a worker whose CPU went away ran on, and held, on
 * another, and the counts of a CPU offline for part of the window stop);
 * and when flushes need no IPI (tlbstorm_flush_without_ipi()).
 */
static void tlbstorm_check_flushes(void)
{
	bool inject = inject_miscount;
	struct storm_irqs d;
	u64 held;
	int cpu;

	if (storm_mode != TLBSTORM_USER || ctl.hotplug)
		return;
	if (no_check) {
		pr_info("check: not done: %s\n", no_check);
		return;
	}
	for_each_cpu(cpu, target_mask) {
		held = per_cpu_ptr(workers, cpu)->flushes_held;
		storm_irqs_delta(irqs_before, irqs_after, cpu, &d);
		if (inject && held) {
			pr_info("check: injected: CPU %d's TLB count one short of its flushes held\n",
				cpu);
			inject = false;
			d.tlb = held - 1;
		}
		if (d.tlb < held)
			storm_check_failed(&ctl, held - d.tlb,
					   "CPU %d got %llu TLB interrupts, fewer than the %llu flushes its worker held it through",
					   cpu, d.tlb, held);
	}
}

/* Release to report; in insmod, or in the controller thread. */
static void tlbstorm_run(void)
{
	int cpu;

	if (storm_mode == TLBSTORM_USER)
		wait_for_completion_state(&workers_all_ready, TASK_IDLE);
	storm_ctl_wait_ready(&ctl);
	if (storm_mode == TLBSTORM_USER) {
		for_each_cpu(cpu, target_mask) {
			if (per_cpu_ptr(workers, cpu)->errors) {
				/* a CPU without its worker: no storm */
				failed = true;
				storm_ctl_stop(&ctl, false);
			}
		}
	}
	storm_pmu_begin();
	storm_sent_begin();
	storm_irqs_begin(&ctl, irqs_before, irqs_after, irqs_acc);
	tlbstorm_workers_oncpu(false);
	storm_ctl_go(&ctl, !numflush, timeout);
	storm_ctl_wait_done(&ctl);
	tlbstorm_workers_oncpu(true);
	storm_irqs_end(&ctl);
	storm_sent_end();
	storm_ctl_check_cpus(&ctl, irqs_before, irqs_after);
	if (storm_mode == TLBSTORM_USER)
		no_check = tlbstorm_flush_without_ipi();
	tlbstorm_stop_threads();

	for_each_cpu(cpu, flusher_mask) {
		struct tlbstorm_flusher *f = per_cpu_ptr(flushers, cpu);

		if (f->errors)
			failed = true;
		storm_hist_merge(hist_total, &f->hist);
	}
	if (storm_mode == TLBSTORM_USER)
		for_each_cpu(cpu, target_mask)
			if (per_cpu_ptr(workers, cpu)->errors)
				failed = true;
	/* the workers' flushes_held are final once they have stopped */
	tlbstorm_check_flushes();
	tlbstorm_print_results();
}

static void tlbstorm_free_kpages(void)
{
	unsigned long i;

	if (!kpages)
		return;
	for (i = 0; i < pages; i++)
		if (kpages[i])
			__free_page(kpages[i]);
	kvfree(kpages);
	kpages = NULL;
}

static int tlbstorm_alloc_kpages(void)
{
	unsigned long i;

	kpages = kvcalloc(pages, sizeof(*kpages), GFP_KERNEL);
	if (!kpages)
		return -ENOMEM;
	for (i = 0; i < pages; i++) {
		kpages[i] = alloc_page(GFP_KERNEL);
		if (!kpages[i])
			return -ENOMEM;
	}
	return 0;
}

static void tlbstorm_free(void)
{
	tlbstorm_free_kpages();
	kfree(hist_total);
	storm_irqs_free(irqs_acc);
	storm_irqs_free(irqs_after);
	storm_irqs_free(irqs_before);
	free_percpu(workers);
	free_percpu(flushers);
	free_cpumask_var(target_mask);
	free_cpumask_var(flusher_mask);
}

/* User mode: the loading process lends its mm for the whole run. */
static int tlbstorm_get_mm(void)
{
	if (!current->mm) {
		pr_err("mode=user: the loading task has no mm to lend\n");
		return -EINVAL;
	}
	/* mm_users, not just mm_count: the mappings must stay usable */
	mmget(current->mm);
	storm_mm = current->mm;
	/*
	 * No transparent huge pages in the storm's mappings (what
	 * prctl(PR_SET_THP_DISABLE) sets, for the lent mm, until the storm
	 * ends). Debian's kernels have THP "always", and 6.12 aligns an
	 * anonymous mapping of a multiple of 2 MiB to 2 MiB: with pages a
	 * multiple of 512, MAP_POPULATE would map huge pages and each unmap
	 * would clear pages/512 PMD entries, not the pages the result
	 * counts, and 6.1 and 6.12 would flush different things.
	 */
	thp_was_disabled = storm_mm_flag_test_and_set(STORM_MMF_NO_THP,
						      storm_mm);
	return 0;
}

static int tlbstorm_create_threads(void)
{
	int cpu, ret;

	if (storm_mode == TLBSTORM_USER) {
		for_each_cpu(cpu, target_mask) {
			struct tlbstorm_worker *w = per_cpu_ptr(workers, cpu);

			w->cpu = cpu;
			w->task = storm_thread_create(tlbstorm_worker_fn, w,
						      cpu, KBUILD_MODNAME "-w/%u");
			if (IS_ERR(w->task)) {
				ret = PTR_ERR(w->task);
				w->task = NULL;
				pr_err("cannot create the worker thread for CPU %d (%d)\n",
				       cpu, ret);
				return ret;
			}
		}
	}
	for_each_cpu(cpu, flusher_mask) {
		struct tlbstorm_flusher *f = per_cpu_ptr(flushers, cpu);

		f->cpu = cpu;
		storm_hist_init(&f->hist);
		f->task = storm_thread_create(tlbstorm_flusher_fn, f, cpu,
					      KBUILD_MODNAME "/%u");
		if (IS_ERR(f->task)) {
			ret = PTR_ERR(f->task);
			f->task = NULL;
			pr_err("cannot create the flusher thread for CPU %d (%d)\n",
			       cpu, ret);
			return ret;
		}
	}
	return 0;
}

static struct storm_module tlbstorm_module = {
	.ctl		= &ctl,
	.run		= tlbstorm_run,
	.stop_threads	= tlbstorm_stop_threads,
	.free		= tlbstorm_free,
	.result_fops	= &tlbstorm_result_fops,
};

static int __init tlbstorm_init(void)
{
	int cpu, ret = -ENOMEM;

	if (!zalloc_cpumask_var(&flusher_mask, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&target_mask, GFP_KERNEL))
		goto err_free;
	flushers = alloc_percpu(struct tlbstorm_flusher);
	workers = alloc_percpu(struct tlbstorm_worker);
	irqs_before = storm_irqs_alloc();
	irqs_after = storm_irqs_alloc();
	irqs_acc = storm_irqs_alloc();
	hist_total = kmalloc(sizeof(*hist_total), GFP_KERNEL);
	if (!flushers || !workers || !irqs_before || !irqs_after || !irqs_acc ||
	    !hist_total)
		goto err_free;
	storm_hist_init(hist_total);
	atomic_set(&workers_ready, 0);
	init_completion(&workers_all_ready);
	ret = storm_hotplug_watch(&ctl);
	if (ret)
		goto err_free;

	/* Hold off CPU hotplug while checking and binding to CPUs. */
	cpus_read_lock();
	ret = tlbstorm_check_params();
	if (ret)
		goto err_unlock;
	tlbstorm_print_params("Start of test");
	if (storm_mode == TLBSTORM_USER)
		ret = tlbstorm_get_mm();
	else
		ret = tlbstorm_alloc_kpages();
	if (ret)
		goto err_unlock;
	storm_ctl_init(&ctl, cpumask_weight(flusher_mask));
	ret = tlbstorm_create_threads();
	if (ret)
		goto err_stop_unlock;
	cpus_read_unlock();

	/* Workers first: they hold the mm before any flusher is released. */
	if (storm_mode == TLBSTORM_USER)
		for_each_cpu(cpu, target_mask)
			wake_up_process(per_cpu_ptr(workers, cpu)->task);
	for_each_cpu(cpu, flusher_mask)
		wake_up_process(per_cpu_ptr(flushers, cpu)->task);

	tlbstorm_module.background = background;
	return storm_module_start(&tlbstorm_module);

err_stop_unlock:
	cpus_read_unlock();
	storm_ctl_stop(&ctl, true);
	tlbstorm_stop_threads();
	goto err_unwatch;
err_unlock:
	cpus_read_unlock();
	tlbstorm_put_mm();
err_unwatch:
	storm_hotplug_unwatch();
err_free:
	tlbstorm_free();
	return ret;
}

static void __exit tlbstorm_exit(void)
{
	storm_module_exit(&tlbstorm_module);
}

module_init(tlbstorm_init);
module_exit(tlbstorm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(STORM_MODULE_VERSION);
MODULE_DESCRIPTION("Storms of TLB shootdowns (user mm and kernel range)");
