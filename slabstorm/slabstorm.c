// SPDX-License-Identifier: GPL-2.0
/*
 * slabstorm - what creating, shrinking and destroying kmem caches costs in
 * cross-CPU interrupts, with a cross-CPU alloc/free control.
 *
 *  mode=create  one thread on CPU cpu= creates a cache (a unique name and a
 *               constructor, so SLUB never merges it into another cache),
 *               lets every CPU of cpulist allocate and free fill objects
 *               from it (touch), shrinks it (shrink=1) and destroys it;
 *               numcache times or, with numcache=0, for timeout seconds.
 *  mode=rcu     the same with SLAB_TYPESAFE_BY_RCU caches.
 *  mode=shrink  one cache; every round the CPUs of cpulist touch it, then
 *               the thread on cpu= calls kmem_cache_shrink() on it.
 *  mode=remote  one cache; every CPU of cpulist allocates numobj objects
 *               and frees those of the CPU before it in the list: frees
 *               that are all cross-CPU, a control that should cost no IPIs.
 *
 * Each create, touch, shrink and destroy call is timed on its own and the
 * IPI counters of every CPU are read just before and after it, so the
 * result states how many IPIs a cache creation or a destroy cost, and on
 * which CPUs they landed. insmod returns when the storm is over; the result
 * stays in /sys/kernel/debug/slabstorm/result until rmmod. No cache or
 * object of the storm outlives the run.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include "storm.h"

static char *mode = "create";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "create, rcu (SLAB_TYPESAFE_BY_RCU caches), shrink or remote (default create)");

static unsigned long numcache;
module_param(numcache, ulong, 0444);
MODULE_PARM_DESC(numcache, "create/rcu: caches to create and destroy; shrink: touch+shrink rounds; 0 = timed run (default 0)");

static unsigned long numobj;
module_param(numobj, ulong, 0444);
MODULE_PARM_DESC(numobj, "remote: objects each CPU of cpulist allocates; 0 = timed run (default 0)");

static unsigned long timeout = 30;
module_param(timeout, ulong, 0444);
MODULE_PARM_DESC(timeout, "Seconds to run when the count (numcache, numobj) is 0; with a count, the most the storm may take; 1..604800 (default 30)");

static unsigned long objsize = 64;
module_param(objsize, ulong, 0444);
MODULE_PARM_DESC(objsize, "Object size in bytes, 1..65536 (default 64)");

static unsigned long fill = 1;
module_param(fill, ulong, 0444);
MODULE_PARM_DESC(fill, "Objects each CPU of cpulist allocates, then frees, per touch, 1..4096 (default 1)");

static bool shrink;
module_param(shrink, bool, 0444);
MODULE_PARM_DESC(shrink, "create/rcu: kmem_cache_shrink each cache before destroying it (default 0)");

/* cpu=: a file-scope "cpu" would be shadowed by every CPU loop */
static int main_cpu = -1;
module_param_named(cpu, main_cpu, int, 0444);
MODULE_PARM_DESC(cpu, "create/rcu/shrink: CPU that creates, shrinks and destroys (default the first online CPU)");

static char *cpulist;
module_param(cpulist, charp, 0444);
MODULE_PARM_DESC(cpulist, "CPUs that touch the caches (create/rcu default none, shrink default all online) or that allocate and free (remote, default the first two online)");

static unsigned long op_loops;
module_param(op_loops, ulong, 0444);
MODULE_PARM_DESC(op_loops, "create/rcu/shrink: iterations of a two-instruction loop on the main thread after each cache or round, at most 10000000: a known cost per op (default 0)");

static bool latency = true;
module_param(latency, bool, 0444);
MODULE_PARM_DESC(latency, "Time every call into a histogram per phase (default 1)");

static bool background;
module_param(background, bool, 0444);
MODULE_PARM_DESC(background, "Return from insmod at once; rmmod stops the storm (default 0)");

static bool inject_miscount;
module_param(inject_miscount, bool, 0444);
MODULE_PARM_DESC(inject_miscount, "remote: check one object of the first CPU's as not intact, to show that an object that crossed CPUs changed ends the storm FAILURE (default 0)");

#define SLABSTORM_MAX_OBJSIZE	65536UL
#define SLABSTORM_MAX_FILL	4096UL
#define SLABSTORM_RING		256	/* objects in flight per remote CPU */
/*
 * remote: the token each object carries from its allocating CPU to the
 * freeing one, in its first bytes: the CPU above the sequence number
 * (below 2^40: STORM_MAX_COUNT).
 */
#define SLABSTORM_TOKEN_SHIFT	48
/*
 * The storm's own allocations fail rather than reclaim hard or call the
 * OOM killer, and say nothing: a failure is the storm's status, not a
 * warning in the log of the kernel under test.
 */
#define SLABSTORM_GFP		(GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN)
#define SLABSTORM_NAME_LEN	32

enum slabstorm_mode {
	SLABSTORM_CREATE,
	SLABSTORM_RCU,
	SLABSTORM_SHRINK,
	SLABSTORM_REMOTE,
};

static const char * const slabstorm_mode_name[] = {
	[SLABSTORM_CREATE]	= "create",
	[SLABSTORM_RCU]		= "rcu",
	[SLABSTORM_SHRINK]	= "shrink",
	[SLABSTORM_REMOTE]	= "remote",
};

enum slabstorm_phase_id {
	PH_CREATE,		/* kmem_cache_create */
	PH_TOUCH,		/* every CPU of cpulist allocates and frees */
	PH_SHRINK,		/* kmem_cache_shrink */
	PH_DESTROY,		/* kmem_cache_destroy */
	PH_ALLOC,		/* remote: kmem_cache_alloc */
	PH_FREE,		/* remote: kmem_cache_free of another CPU's object */
	NR_PHASES,
};

static const char * const slabstorm_phase_name[] = {
	[PH_CREATE]	= "create",
	[PH_TOUCH]	= "touch",
	[PH_SHRINK]	= "shrink",
	[PH_DESTROY]	= "destroy",
	[PH_ALLOC]	= "alloc",
	[PH_FREE]	= "free",
};

/* The phases each mode reports, in the order they run. */
static const unsigned long slabstorm_mode_phases[] = {
	[SLABSTORM_CREATE] = BIT(PH_CREATE) | BIT(PH_TOUCH) | BIT(PH_SHRINK) |
			     BIT(PH_DESTROY),
	[SLABSTORM_RCU]	   = BIT(PH_CREATE) | BIT(PH_TOUCH) | BIT(PH_SHRINK) |
			     BIT(PH_DESTROY),
	[SLABSTORM_SHRINK] = BIT(PH_TOUCH) | BIT(PH_SHRINK),
	[SLABSTORM_REMOTE] = BIT(PH_ALLOC) | BIT(PH_FREE),
};

struct slabstorm_phase {
	u64 count;			/* calls */
	struct storm_irqs *irqs;	/* per CPU, summed over the calls */
	struct storm_hist hist;
};

/* Single producer (the owning CPU), single consumer (the next CPU). */
struct slabstorm_ring {
	unsigned long head ____cacheline_aligned_in_smp;
	bool done;			/* the producer will push no more */
	unsigned long tail ____cacheline_aligned_in_smp;
	void *slot[SLABSTORM_RING] ____cacheline_aligned_in_smp;
};

/* One per CPU of cpulist: a touch helper, or a remote worker. */
struct slabstorm_cpu {
	int cpu;
	struct task_struct *task;
	/* touch helper */
	struct completion go;		/* one touch requested */
	bool quit;
	void **objs;			/* fill slots */
	u64 touched;			/* objects allocated and freed */
	/* remote worker */
	int from;			/* frees the objects of this CPU */
	u64 allocs, frees;
	u64 mismatches;			/* objects from @from found changed */
	u64 bad_token, bad_expected;	/* the first of them */
	int error;
	u64 start_ns, end_ns;
	struct slabstorm_ring ring;	/* objects allocated here */
	struct storm_hist alloc_hist, free_hist;
};

static enum slabstorm_mode smode;
static int home = -1;			/* the CPU of the main thread */
static struct slabstorm_cpu __percpu *pcpus;
static cpumask_var_t touch_mask;	/* cpulist */
static struct slabstorm_phase phases[NR_PHASES];
static struct storm_ctl ctl;
static struct storm_irqs *irqs_before, *irqs_after, *irqs_acc;
static struct storm_irqs *snap_prev, *snap_cur;
static struct task_struct *main_task;
static struct kmem_cache *fixed_cache;	/* shrink and remote */
/*
 * kmem_cache_create() keeps its own copy of the name (kstrdup_const in
 * 6.1 and 6.12), so one buffer serves every cache; it still stays intact
 * from create to destroy of each.
 */
static char cache_name[SLABSTORM_NAME_LEN];
static u64 ops;				/* caches, or shrink rounds */
static int main_error;
static u64 drained;			/* remote objects freed at teardown */
static u64 rcu_release_ns;
static unsigned long rcu_cookie;	/* rcu: taken before the last destroy */
static bool rcu_gp_done;		/* a grace period has passed since */
static bool failed;

/*
 * A touch round. Waking a sleeping helper sends its CPU a reschedule IPI,
 * and a helper waking the main thread at the end would send one to the
 * main CPU: IPIs of the harness, not of the touch. So the main thread
 * wakes the helpers first and waits until every one is up, spinning at
 * the round's barrier; only then does it take the touch's snapshot and
 * release them, and it polls for the last one to finish instead of
 * sleeping. The main CPU's share of the touch it does itself, in line.
 */
static struct kmem_cache *touch_cache;
static int touch_helpers;		/* cpulist less the main CPU */
static atomic_t touch_awake;		/* helpers at the barrier */
static atomic_t touch_pending;		/* helpers still touching */
static bool touch_released;
static int touch_error;

/* A constructor makes the cache unmergeable: each create is a real one. */
static void slabstorm_ctor(void *obj)
{
}

static u64 slabstorm_clock(void)
{
	return latency ? storm_clock_ns() : 0;
}

static bool slabstorm_has_phase(enum slabstorm_phase_id p)
{
	return slabstorm_mode_phases[smode] & BIT(p);
}

/* Per-phase IPI counts are taken by the main thread, not in remote mode. */
static bool slabstorm_phase_irqs(enum slabstorm_phase_id p)
{
	return p != PH_ALLOC && p != PH_FREE;
}

/* ---------------------------------------------------------------------
 * Main thread: create, touch, shrink, destroy.
 */

/* The counters as they are now: the start of a run of phases. */
static void slabstorm_phase_start(void)
{
	storm_irqs_snapshot(snap_prev);
}

/*
 * One call of phase @p, started at @t0, has returned: time it, then charge
 * it the IPIs since the previous snapshot. The snapshot is taken after the
 * clock is read, so it is never part of the time, and it starts the next
 * phase of the same cache.
 */
static void slabstorm_phase_end(enum slabstorm_phase_id p, u64 t0)
{
	struct slabstorm_phase *ph = &phases[p];
	struct storm_irqs d;
	int c;

	if (latency)
		storm_hist_add(&ph->hist, storm_clock_ns() - t0);
	ph->count++;
	storm_irqs_snapshot(snap_cur);
	storm_irqs_advance(snap_prev, snap_cur);
	for_each_possible_cpu(c) {
		storm_irqs_delta(snap_prev, snap_cur, c, &d);
		ph->irqs[c].cal += d.cal;
		ph->irqs[c].res += d.res;
		ph->irqs[c].tlb += d.tlb;
	}
	swap(snap_prev, snap_cur);
}

/* Helper side: allocate fill objects here, then free them all. */
static int slabstorm_touch_here(struct slabstorm_cpu *c, struct kmem_cache *s)
{
	unsigned long i, n;
	int ret = 0;

	for (n = 0; n < fill; n++) {
		c->objs[n] = kmem_cache_alloc(s, SLABSTORM_GFP);
		if (!c->objs[n]) {
			ret = -ENOMEM;
			break;
		}
	}
	for (i = 0; i < n; i++)
		kmem_cache_free(s, c->objs[i]);
	c->touched += n;
	return ret;
}

/*
 * Yielding lets in a task that shares the CPU (with an RCU-Tasks
 * quiescent state, see storm.h); cpu_relax() (PAUSE) also hands the host
 * thread to the next vCPU under TCG.
 */
static void slabstorm_touch_spin(void)
{
	cond_resched_tasks_rcu_qs();
	cpu_relax();
}

static int slabstorm_touch_fn(void *arg)
{
	struct slabstorm_cpu *c = arg;
	int ret;

	for (;;) {
		/* TASK_IDLE: an idle helper is not a hung task */
		wait_for_completion_state(&c->go, TASK_IDLE);
		if (READ_ONCE(c->quit))
			break;
		atomic_inc(&touch_awake);
		/* pairs with the release in slabstorm_touch() */
		while (!smp_load_acquire(&touch_released))
			slabstorm_touch_spin();
		ret = slabstorm_touch_here(c, touch_cache);
		if (ret)
			WRITE_ONCE(touch_error, ret);
		/* the error and the objects before the count, for the poller */
		smp_mb__before_atomic();
		atomic_dec(&touch_pending);
	}
	storm_thread_park();
	return 0;
}

/*
 * Main side: every CPU of cpulist touches @s. The round's phase (touch)
 * starts at the release, after the wakeups, and ends when this returns.
 */
static int slabstorm_touch(struct kmem_cache *s)
{
	struct slabstorm_cpu *here = per_cpu_ptr(pcpus, home);
	bool touch_home = cpumask_test_cpu(home, touch_mask);
	int c, ret = 0;
	u64 t0;

	touch_cache = s;
	WRITE_ONCE(touch_error, 0);
	WRITE_ONCE(touch_released, false);
	atomic_set(&touch_awake, 0);
	atomic_set(&touch_pending, touch_helpers);
	for_each_cpu(c, touch_mask)
		if (c != home)
			complete(&per_cpu_ptr(pcpus, c)->go);
	while (atomic_read(&touch_awake) < touch_helpers)
		slabstorm_touch_spin();

	/* the wakeups are nobody's: the touch is counted from here */
	slabstorm_phase_start();
	t0 = slabstorm_clock();
	/* the cache and the cleared error before the release */
	smp_store_release(&touch_released, true);
	if (touch_home)
		ret = slabstorm_touch_here(here, s);
	while (atomic_read_acquire(&touch_pending))
		slabstorm_touch_spin();
	slabstorm_phase_end(PH_TOUCH, t0);
	return ret ?: READ_ONCE(touch_error);
}

/* create/rcu: one cache from create to destroy. */
static int slabstorm_one_cache(void)
{
	slab_flags_t flags = smode == SLABSTORM_RCU ? SLAB_TYPESAFE_BY_RCU : 0;
	struct kmem_cache *s;
	int ret = 0;
	u64 t0;

	snprintf(cache_name, sizeof(cache_name), KBUILD_MODNAME "-%llu", ops);
	slabstorm_phase_start();
	t0 = slabstorm_clock();
	s = kmem_cache_create(cache_name, objsize, 0, flags, slabstorm_ctor);
	slabstorm_phase_end(PH_CREATE, t0);
	if (!s)
		return -ENOMEM;

	if (!cpumask_empty(touch_mask)) {
		ret = slabstorm_touch(s);
		/* the shrink is counted from the end of the touch */
	}
	if (shrink && !ret) {
		t0 = slabstorm_clock();
		kmem_cache_shrink(s);
		slabstorm_phase_end(PH_SHRINK, t0);
	}
	if (smode == SLABSTORM_RCU)
		rcu_cookie = get_state_synchronize_rcu();
	t0 = slabstorm_clock();
	kmem_cache_destroy(s);
	slabstorm_phase_end(PH_DESTROY, t0);
	ops++;
	return ret;
}

/* shrink: fill the CPUs' slabs of the one cache, then shrink it. */
static int slabstorm_shrink_round(void)
{
	int ret;
	u64 t0;

	ret = slabstorm_touch(fixed_cache);
	t0 = slabstorm_clock();
	kmem_cache_shrink(fixed_cache);
	slabstorm_phase_end(PH_SHRINK, t0);
	ops++;
	return ret;
}

/*
 * Before 6.12, kmem_cache_destroy() of a SLAB_TYPESAFE_BY_RCU cache only
 * queues it: a work item on system_wq frees it, and removes it from
 * /sys/kernel/slab, after an rcu_barrier(). Wait for that, so no cache of
 * the storm outlives the run. From 6.12 on the destroy itself waits.
 * Kbuild defines STORM_SLAB_RCU_DESTROY_DEFERRED for the kernels before.
 */
#ifdef STORM_SLAB_RCU_DESTROY_DEFERRED
static void slabstorm_wait_deferred_release(void)
{
	u64 t0 = ktime_get_ns();

	rcu_barrier();
	flush_scheduled_work();
	rcu_release_ns = ktime_get_ns() - t0;
}
#else
static void slabstorm_wait_deferred_release(void)
{
}
#endif

static void slabstorm_rcu_release(void)
{
	if (smode != SLABSTORM_RCU)
		return;
	slabstorm_wait_deferred_release();
	/* evidence that the slabs freed through RCU were waited for */
	rcu_gp_done = ops && poll_state_synchronize_rcu(rcu_cookie);
}

static int slabstorm_main_fn(void *unused)
{
	int ret = 0;

	storm_worker_ready(&ctl);
	while (!numcache || ops < numcache) {
		if (storm_should_stop(&ctl))
			break;
		if (smode == SLABSTORM_SHRINK)
			ret = slabstorm_shrink_round();
		else
			ret = slabstorm_one_cache();
		if (ret)
			break;
		storm_loops(op_loops);
		cond_resched_tasks_rcu_qs();
	}
	main_error = ret;
	slabstorm_rcu_release();
	storm_worker_done(&ctl);
	storm_thread_park();
	return 0;
}

/* ---------------------------------------------------------------------
 * Remote workers: allocate here, free what the previous CPU allocated.
 */
/*
 * The ring's barriers pair up: the producer fills a slot, then releases
 * head; the consumer acquires head, then reads the slot. The consumer is
 * done with a slot before it releases tail; the producer acquires tail
 * before it writes that slot again.
 */
static bool slabstorm_ring_full(const struct slabstorm_ring *r)
{
	/* acquire: pairs with the release of tail in slabstorm_ring_pop() */
	return r->head - smp_load_acquire(&r->tail) >= SLABSTORM_RING;
}

/* Producer only, and only after slabstorm_ring_full() said no. */
static void slabstorm_ring_push(struct slabstorm_ring *r, void *obj)
{
	r->slot[r->head % SLABSTORM_RING] = obj;
	/* release: the slot is written before the consumer can see it */
	smp_store_release(&r->head, r->head + 1);
}

static bool slabstorm_ring_empty(const struct slabstorm_ring *r)
{
	/* acquire: pairs with the release of head in slabstorm_ring_push() */
	return r->tail == smp_load_acquire(&r->head);
}

/* The producer is done and everything it pushed has been taken. */
static bool slabstorm_ring_drained(const struct slabstorm_ring *r)
{
	/* acquire: pairs with the release of done after the last push */
	return smp_load_acquire(&r->done) && slabstorm_ring_empty(r);
}

/* Consumer only (or anyone once the producer is gone). */
static void *slabstorm_ring_pop(struct slabstorm_ring *r)
{
	unsigned long tail = r->tail;
	void *obj;

	/* acquire: pairs with the release of head in slabstorm_ring_push() */
	if (tail == smp_load_acquire(&r->head))
		return NULL;
	obj = r->slot[tail % SLABSTORM_RING];
	/* release: the slot is read before the producer may reuse it */
	smp_store_release(&r->tail, tail + 1);
	return obj;
}

/* What the @seq-th object allocated on @cpu carries. */
static u64 slabstorm_token(int cpu, u64 seq)
{
	return (u64)cpu << SLABSTORM_TOKEN_SHIFT | seq;
}

/*
 * Both sides spin, never sleep: a wakeup would itself be an IPI, and this
 * mode is the control that should show none.
 *
 * Each object carries its token (slabstorm_token()) across: one store
 * after the allocation, one load and compare before the free, outside
 * the timed calls. A ring hands the objects over in order, so the
 * freeing side knows the token of the next one from its own count.
 */
static int slabstorm_remote_fn(void *arg)
{
	struct slabstorm_cpu *c = arg;
	struct slabstorm_ring *out = &c->ring;
	struct slabstorm_ring *in = &per_cpu_ptr(pcpus, c->from)->ring;
	bool producing = true;
	unsigned long loops = 0;
	void *obj;
	u64 t0, token;

	storm_worker_ready(&ctl);
	c->start_ns = ktime_get_ns();
	for (;;) {
		bool busy = false;

		if (producing && ((numobj && c->allocs >= numobj) ||
				  c->error || storm_should_stop(&ctl))) {
			producing = false;
			/* release: after the last push, see ring_drained() */
			smp_store_release(&out->done, true);
		}
		if (producing && !slabstorm_ring_full(out)) {
			t0 = slabstorm_clock();
			obj = kmem_cache_alloc(fixed_cache, SLABSTORM_GFP);
			if (latency && obj)
				storm_hist_add(&c->alloc_hist, storm_clock_ns() - t0);
			if (obj) {
				*(u64 *)obj = slabstorm_token(c->cpu, c->allocs);
				slabstorm_ring_push(out, obj);
				c->allocs++;
			} else {
				c->error = -ENOMEM;
				storm_ctl_stop(&ctl, false);
			}
			busy = true;
		}
		obj = slabstorm_ring_pop(in);
		if (obj) {
			token = slabstorm_token(c->from, c->frees);
			if (unlikely(*(u64 *)obj != token)) {
				if (!c->mismatches++) {
					c->bad_token = *(u64 *)obj;
					c->bad_expected = token;
				}
			}
			t0 = slabstorm_clock();
			kmem_cache_free(fixed_cache, obj);
			if (latency)
				storm_hist_add(&c->free_hist, storm_clock_ns() - t0);
			c->frees++;
			busy = true;
		} else if (!producing && (slabstorm_ring_drained(in) ||
					  kthread_should_stop())) {
			/*
			 * rmmod may stop this worker before its producer ever
			 * ran (and set done); the rings are drained after.
			 */
			break;
		} else if (!busy) {
			cpu_relax();
		}
		if (!(++loops % 64))
			cond_resched_tasks_rcu_qs();
	}
	c->end_ns = ktime_get_ns();
	storm_worker_done(&ctl);
	storm_thread_park();
	return 0;
}

/*
 * Every worker empties the ring it frees from before it stops, so this
 * finds nothing after a run (the result counts what it finds as drained,
 * and a failure); it is here so that no object outlives the cache on any
 * exit path.
 */
static void slabstorm_drain_rings(void)
{
	void *obj;
	int c;

	if (smode != SLABSTORM_REMOTE || !pcpus || !fixed_cache)
		return;
	for_each_cpu(c, touch_mask) {
		while ((obj = slabstorm_ring_pop(&per_cpu_ptr(pcpus, c)->ring))) {
			kmem_cache_free(fixed_cache, obj);
			drained++;
		}
	}
}

static void slabstorm_destroy_fixed(void)
{
	if (!fixed_cache)
		return;
	slabstorm_drain_rings();
	kmem_cache_destroy(fixed_cache);
	fixed_cache = NULL;
}

/* ---------------------------------------------------------------------
 * Parameters.
 */
/* "<tag>: mode=..." with the CPUs as the storm runs them */
static void slabstorm_print_params(const char *tag)
{
	storm_print_params(tag, "mode=%s numcache=%lu numobj=%lu timeout=%lu objsize=%lu fill=%lu shrink=%d cpu=%d op_loops=%lu latency=%d background=%d cpulist=%*pbl",
			   slabstorm_mode_name[smode], numcache, numobj,
			   timeout, objsize, fill, shrink, home, op_loops,
			   latency, background, cpumask_pr_args(touch_mask));
}

static int slabstorm_check_cpu(void)
{
	if (smode == SLABSTORM_REMOTE) {
		if (main_cpu != -1) {
			pr_err("cpu=%d: mode=remote has no main thread; cpulist= picks its CPUs\n",
			       main_cpu);
			return -EINVAL;
		}
		return 0;
	}
	if (main_cpu == -1) {
		home = storm_default_cpu();
		return 0;
	}
	if (main_cpu < 0 || main_cpu >= nr_cpu_ids) {
		pr_err("cpu=%d: not a CPU number below %u\n", main_cpu, nr_cpu_ids);
		return -EINVAL;
	}
	if (!cpu_online(main_cpu)) {
		pr_err("cpu=%d: CPU %d is not online\n", main_cpu, main_cpu);
		return -EINVAL;
	}
	home = main_cpu;
	return 0;
}

static int slabstorm_check_cpulist(void)
{
	int first, second;

	switch (smode) {
	case SLABSTORM_CREATE:
	case SLABSTORM_RCU:
		return storm_parse_cpulist("cpulist", cpulist, touch_mask,
					   cpu_none_mask);
	case SLABSTORM_SHRINK:
		return storm_parse_cpulist("cpulist", cpulist, touch_mask,
					   cpu_online_mask);
	case SLABSTORM_REMOTE:
		break;
	}

	if (cpulist) {
		if (storm_parse_cpulist("cpulist", cpulist, touch_mask,
					cpu_online_mask))
			return -EINVAL;
		if (cpumask_weight(touch_mask) < 2) {
			pr_err("cpulist=%s: mode=remote needs two CPUs or more, to free on another CPU\n",
			       cpulist);
			return -EINVAL;
		}
		return 0;
	}

	storm_default_cpus(touch_mask, cpu_online_mask);
	first = cpumask_first(touch_mask);
	second = cpumask_next(first, touch_mask);
	if (second >= nr_cpu_ids) {
		pr_err("mode=remote needs a second online CPU, not isolated or nohz_full (or cpulist=)\n");
		return -EINVAL;
	}
	cpumask_clear(touch_mask);
	cpumask_set_cpu(first, touch_mask);
	cpumask_set_cpu(second, touch_mask);
	return 0;
}

/*
 * The count of the mode (numobj for remote, numcache for the others) and
 * the time bound; the other mode's count is refused.
 */
static int slabstorm_check_count(void)
{
	if (smode == SLABSTORM_REMOTE) {
		if (numcache) {
			pr_err("numcache=%lu: mode=remote counts objects, use numobj=\n",
			       numcache);
			return -EINVAL;
		}
		if (op_loops) {
			pr_err("op_loops=%lu: mode=remote has no main thread to run them\n",
			       op_loops);
			return -EINVAL;
		}
		return storm_check_bound("numobj", numobj, timeout) ?:
		       storm_check_range("numobj", numobj, STORM_MAX_COUNT);
	}
	if (numobj) {
		pr_err("numobj=%lu: only mode=remote counts objects, mode=%s counts numcache=\n",
		       numobj, mode);
		return -EINVAL;
	}
	return storm_check_bound("numcache", numcache, timeout) ?:
	       storm_check_range("numcache", numcache, STORM_MAX_COUNT) ?:
	       storm_check_range("op_loops", op_loops, STORM_MAX_LOOPS);
}

/* Objects: their size, how many a touch holds, and the memory at once. */
static int slabstorm_check_objects(void)
{
	int ret;

	if (!objsize) {
		pr_err("objsize=0: objects need at least one byte\n");
		return -EINVAL;
	}
	if (smode == SLABSTORM_REMOTE && objsize < sizeof(u64)) {
		pr_err("objsize=%lu: mode=remote carries an 8-byte token in each object\n",
		       objsize);
		return -EINVAL;
	}
	if (!fill) {
		pr_err("fill=0: a touch allocates at least one object\n");
		return -EINVAL;
	}
	ret = storm_check_range("timeout", timeout, STORM_MAX_TIMEOUT_S) ?:
	      storm_check_range("objsize", objsize, SLABSTORM_MAX_OBJSIZE) ?:
	      storm_check_range("fill", fill, SLABSTORM_MAX_FILL);
	if (ret)
		return ret;
	/* objects held at once: fill per touching CPU, or full rings */
	if (smode == SLABSTORM_REMOTE)
		return storm_check_memory("objsize x ring x cpulist",
					  (u64)objsize * SLABSTORM_RING *
					  cpumask_weight(touch_mask));
	return storm_check_memory("objsize x fill x cpulist",
				  (u64)objsize * fill *
				  cpumask_weight(touch_mask));
}

static int slabstorm_check_params(void)
{
	int ret;

	ret = match_string(slabstorm_mode_name,
			   ARRAY_SIZE(slabstorm_mode_name), mode);
	if (ret < 0) {
		pr_err("mode=%s: unknown mode (create, rcu, shrink, remote)\n",
		       mode);
		return -EINVAL;
	}
	smode = ret;
	if (shrink && smode != SLABSTORM_CREATE && smode != SLABSTORM_RCU) {
		pr_err("shrink=1 is for mode=create and mode=rcu (mode=shrink always shrinks)\n");
		return -EINVAL;
	}
	return slabstorm_check_cpu() ?: slabstorm_check_cpulist() ?:
	       slabstorm_check_count() ?: slabstorm_check_objects();
}

/* ---------------------------------------------------------------------
 * Results.
 */
static void slabstorm_phase_sum(enum slabstorm_phase_id p,
				struct storm_irqs *sum)
{
	int c;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(c) {
		sum->cal += phases[p].irqs[c].cal;
		sum->res += phases[p].irqs[c].res;
		sum->tlb += phases[p].irqs[c].tlb;
	}
}

/* IPIs are what arrives as CAL (TLB shootdowns included) or RES. */
static u64 slabstorm_ipis(const struct storm_irqs *s)
{
	return s->cal + s->res;
}

static u64 slabstorm_per_op_milli(u64 ipis, u64 n)
{
	return n ? div64_u64(ipis * 1000, n) : 0;
}

/* What one op of the mode is: a cache, a shrink round, a remote free. */
static u64 slabstorm_ops(void)
{
	return smode == SLABSTORM_REMOTE ? phases[PH_FREE].count : ops;
}

static const char *slabstorm_ops_name(void)
{
	switch (smode) {
	case SLABSTORM_SHRINK:
		return "rounds";
	case SLABSTORM_REMOTE:
		return "frees";
	default:
		return "caches";
	}
}

static u64 slabstorm_outstanding(void)
{
	return phases[PH_ALLOC].count - phases[PH_FREE].count;
}

/* After the run: merge the remote workers, decide whether it failed. */
static void slabstorm_collect(void)
{
	int c;

	if (main_error || READ_ONCE(touch_error))
		failed = true;
	if (smode != SLABSTORM_REMOTE)
		return;
	for_each_cpu(c, touch_mask) {
		struct slabstorm_cpu *w = per_cpu_ptr(pcpus, c);

		phases[PH_ALLOC].count += w->allocs;
		phases[PH_FREE].count += w->frees;
		storm_hist_merge(&phases[PH_ALLOC].hist, &w->alloc_hist);
		storm_hist_merge(&phases[PH_FREE].hist, &w->free_hist);
		if (w->error)
			failed = true;
	}
	if (slabstorm_outstanding())
		failed = true;
}

/*
 * remote: every object crossed intact (the freeing CPU found the token its
 * allocating CPU wrote, slabstorm_remote_fn()), and every object
 * allocated came back to the allocator, freed by a worker or drained at
 * teardown. A worker moved by hotplug still writes and expects its own
 * CPU's tokens: checked whatever the status.
 */
static void slabstorm_check_remote(void)
{
	bool inject = inject_miscount;
	u64 n, allocs, back;
	int c;

	if (smode != SLABSTORM_REMOTE)
		return;
	for_each_cpu(c, touch_mask) {
		struct slabstorm_cpu *w = per_cpu_ptr(pcpus, c);

		n = w->mismatches;
		if (inject) {
			pr_info("check: injected: one object CPU %d freed counted as not intact\n",
				c);
			inject = false;
			n++;
		}
		if (w->mismatches)
			storm_check_failed(&ctl, n,
					   "CPU %d found %llu objects from CPU %d changed (the first carried %#llx, not %#llx)",
					   c, n, w->from, w->bad_token,
					   w->bad_expected);
		else if (n)
			storm_check_failed(&ctl, n,
					   "CPU %d found %llu objects from CPU %d changed",
					   c, n, w->from);
	}
	allocs = phases[PH_ALLOC].count;
	back = phases[PH_FREE].count + drained;
	if (allocs != back)
		storm_check_failed(&ctl, allocs > back ? allocs - back :
				   back - allocs,
				   "%llu objects allocated, %llu freed and %llu drained",
				   allocs, phases[PH_FREE].count, drained);
}

static void slabstorm_print_results(void)
{
	u64 runtime = ctl.end_ns - ctl.start_ns;
	struct storm_irqs sum;
	u64 milli;
	int p;

	for (p = 0; p < NR_PHASES; p++) {
		if (!slabstorm_has_phase(p))
			continue;
		if (!slabstorm_phase_irqs(p)) {
			pr_info("phase %s: count=%llu mean=%llu ns\n",
				slabstorm_phase_name[p], phases[p].count,
				storm_hist_mean(&phases[p].hist));
			continue;
		}
		slabstorm_phase_sum(p, &sum);
		milli = slabstorm_per_op_milli(slabstorm_ipis(&sum),
					       phases[p].count);
		pr_info("phase %s: count=%llu mean=%llu ns CAL=%llu RES=%llu TLB=%llu ipis_per_op=%llu.%03llu\n",
			slabstorm_phase_name[p], phases[p].count,
			storm_hist_mean(&phases[p].hist), sum.cal, sum.res,
			sum.tlb, milli / 1000, milli % 1000);
	}
	if (smode == SLABSTORM_REMOTE)
		pr_info("remote: allocated=%llu freed=%llu outstanding=%llu\n",
			phases[PH_ALLOC].count, phases[PH_FREE].count,
			slabstorm_outstanding());
	storm_irqs_sum(irqs_before, irqs_after, cpu_possible_mask, &sum);
	milli = slabstorm_per_op_milli(slabstorm_ipis(&sum), slabstorm_ops());
	pr_info("summary: mode=%s %s=%llu runtime=%llu ns CAL=%llu RES=%llu TLB=%llu ipis_per_op=%llu.%03llu status=%s\n",
		slabstorm_mode_name[smode], slabstorm_ops_name(),
		slabstorm_ops(), runtime, sum.cal, sum.res, sum.tlb,
		milli / 1000, milli % 1000, storm_status(&ctl, failed));
	if (main_error)
		pr_err("mode=%s stopped on error %d\n", slabstorm_mode_name[smode],
		       main_error);
	storm_print_end(&ctl, failed, slabstorm_print_params);
}

static void slabstorm_show_phase(struct seq_file *m, enum slabstorm_phase_id p)
{
	const char *name = slabstorm_phase_name[p];
	struct storm_irqs sum, *d;
	char prefix[32];
	u64 milli;
	int c;

	seq_printf(m, "phase.%s.count: %llu\n", name, phases[p].count);
	if (slabstorm_phase_irqs(p)) {
		slabstorm_phase_sum(p, &sum);
		milli = slabstorm_per_op_milli(slabstorm_ipis(&sum),
					       phases[p].count);
		seq_printf(m, "phase.%s.CAL: %llu\nphase.%s.RES: %llu\n"
			   "phase.%s.TLB: %llu\nphase.%s.ipis: %llu\n",
			   name, sum.cal, name, sum.res, name, sum.tlb, name,
			   slabstorm_ipis(&sum));
		seq_printf(m, "phase.%s.ipis_per_op: %llu.%03llu\n"
			   "phase.%s.ipis_per_op_milli: %llu\n",
			   name, milli / 1000, milli % 1000, name, milli);
		for_each_possible_cpu(c) {
			if (!storm_cpu_seen(irqs_before, irqs_after, c))
				continue;
			d = &phases[p].irqs[c];
			seq_printf(m, "phase.%s.irq.%d.CAL: %llu\n"
				   "phase.%s.irq.%d.RES: %llu\n"
				   "phase.%s.irq.%d.TLB: %llu\n",
				   name, c, d->cal, name, c, d->res, name, c,
				   d->tlb);
		}
	}
	if (latency) {
		snprintf(prefix, sizeof(prefix), "phase.%s.latency", name);
		storm_hist_show(m, prefix, &phases[p].hist);
	}
}

static int slabstorm_result_show(struct seq_file *m, void *v)
{
	struct storm_irqs sum;
	u64 milli;
	int c, p;

	storm_show_header(m, "slabstorm", &ctl, failed);
	seq_printf(m, "param.mode: %s\nparam.numcache: %lu\n"
		   "param.numobj: %lu\nparam.timeout: %lu\n"
		   "param.objsize: %lu\nparam.fill: %lu\nparam.shrink: %d\n"
		   "param.cpu: %d\nparam.cpulist: %*pbl\n"
		   "param.op_loops: %lu\nparam.latency: %d\n"
		   "param.background: %d\n",
		   slabstorm_mode_name[smode], numcache, numobj, timeout,
		   objsize, fill, shrink, home, cpumask_pr_args(touch_mask),
		   op_loops, latency, background);
	seq_puts(m, "phases:");
	for (p = 0; p < NR_PHASES; p++)
		if (slabstorm_has_phase(p))
			seq_printf(m, " %s", slabstorm_phase_name[p]);
	seq_putc(m, '\n');
	seq_printf(m, "%s: %llu\n", slabstorm_ops_name(), slabstorm_ops());
	seq_printf(m, "error: %d\n", main_error ?: READ_ONCE(touch_error));
	if (smode == SLABSTORM_RCU)
		seq_printf(m, "rcu_release_ns: %llu\nrcu_gp_since_last_destroy: %d\n",
			   rcu_release_ns, rcu_gp_done);

	storm_irqs_sum(irqs_before, irqs_after, cpu_possible_mask, &sum);
	milli = slabstorm_per_op_milli(slabstorm_ipis(&sum), slabstorm_ops());
	seq_printf(m, "run.CAL: %llu\nrun.RES: %llu\nrun.TLB: %llu\n"
		   "run.ipis: %llu\nrun.ipis_per_op: %llu.%03llu\n"
		   "run.ipis_per_op_milli: %llu\n",
		   sum.cal, sum.res, sum.tlb, slabstorm_ipis(&sum),
		   milli / 1000, milli % 1000, milli);

	for (p = 0; p < NR_PHASES; p++)
		if (slabstorm_has_phase(p))
			slabstorm_show_phase(m, p);

	for_each_cpu(c, touch_mask) {
		struct slabstorm_cpu *w = per_cpu_ptr(pcpus, c);

		if (smode != SLABSTORM_REMOTE) {
			seq_printf(m, "touch.%d.objects: %llu\n", c, w->touched);
			continue;
		}
		seq_printf(m, "remote.%d.from: %d\nremote.%d.allocs: %llu\n"
			   "remote.%d.frees: %llu\nremote.%d.errors: %d\n"
			   "remote.%d.runtime_ns: %llu\n",
			   c, w->from, c, w->allocs, c, w->frees, c,
			   w->error ? 1 : 0, c, w->end_ns - w->start_ns);
	}
	if (smode == SLABSTORM_REMOTE)
		seq_printf(m, "objects.allocated: %llu\nobjects.freed: %llu\n"
			   "objects.outstanding: %llu\nobjects.drained: %llu\n",
			   phases[PH_ALLOC].count, phases[PH_FREE].count,
			   slabstorm_outstanding(), drained);
	/* the work moves between CPUs: no senders or targets */
	storm_show_op(m, &(struct storm_op){
		.name = "op", .count = slabstorm_ops(),
		.ipi_rows = "CAL RES",
	});
	storm_irqs_show(m, irqs_before, irqs_after);
	storm_sent_show(m, irqs_before, irqs_after);
	storm_pmu_show(m);
	storm_hotplug_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(slabstorm_result);

/* ---------------------------------------------------------------------
 * Threads, run, load and unload.
 */

/* The main thread first: it may still need the touch helpers. */
static void slabstorm_stop_threads(void)
{
	int c;

	storm_thread_stop(&main_task);
	for_each_cpu(c, touch_mask) {
		struct slabstorm_cpu *w = per_cpu_ptr(pcpus, c);

		/* never created (an error at load): go is not even set up */
		if (!w->task)
			continue;
		WRITE_ONCE(w->quit, true);
		complete(&w->go);
		storm_thread_stop(&w->task);
	}
}

static int slabstorm_create_threads(void)
{
	int c, prev = cpumask_last(touch_mask);
	int ret;

	storm_ctl_init(&ctl, smode == SLABSTORM_REMOTE ?
		       cpumask_weight(touch_mask) : 1);
	for_each_cpu(c, touch_mask) {
		struct slabstorm_cpu *w = per_cpu_ptr(pcpus, c);

		w->cpu = c;
		init_completion(&w->go);
		storm_hist_init(&w->alloc_hist);
		storm_hist_init(&w->free_hist);
		if (smode == SLABSTORM_REMOTE) {
			w->from = prev;
			prev = c;
			w->task = storm_thread_create(slabstorm_remote_fn, w, c,
						      KBUILD_MODNAME "/%u");
		} else {
			w->objs = kvcalloc(fill, sizeof(void *), GFP_KERNEL);
			if (!w->objs)
				return -ENOMEM;
			/* the main thread touches its own CPU */
			if (c == home)
				continue;
			w->task = storm_thread_create(slabstorm_touch_fn, w, c,
						      "slabtouch/%u");
		}
		if (IS_ERR(w->task)) {
			ret = PTR_ERR(w->task);
			w->task = NULL;
			pr_err("cannot create the thread for CPU %d (%d)\n",
			       c, ret);
			return ret;
		}
		if (smode != SLABSTORM_REMOTE)
			touch_helpers++;
	}
	if (smode == SLABSTORM_REMOTE)
		return 0;
	main_task = storm_thread_create(slabstorm_main_fn, NULL, home,
					KBUILD_MODNAME "/%u");
	if (IS_ERR(main_task)) {
		ret = PTR_ERR(main_task);
		main_task = NULL;
		pr_err("cannot create the main thread on CPU %d (%d)\n", home,
		       ret);
		return ret;
	}
	return 0;
}

static int slabstorm_create_fixed(void)
{
	if (smode != SLABSTORM_SHRINK && smode != SLABSTORM_REMOTE)
		return 0;
	snprintf(cache_name, sizeof(cache_name), KBUILD_MODNAME "-%s",
		 slabstorm_mode_name[smode]);
	fixed_cache = kmem_cache_create(cache_name, objsize, 0, 0,
					slabstorm_ctor);
	if (!fixed_cache) {
		pr_err("cannot create the cache %s\n", cache_name);
		return -ENOMEM;
	}
	return 0;
}

/* Release to report; in insmod, or in the controller thread. */
static void slabstorm_run(void)
{
	storm_ctl_wait_ready(&ctl);
	storm_pmu_begin();
	storm_sent_begin();
	storm_irqs_begin(&ctl, irqs_before, irqs_after, irqs_acc);
	storm_ctl_go(&ctl, !(smode == SLABSTORM_REMOTE ? numobj : numcache),
		     timeout);
	storm_ctl_wait_done(&ctl);
	storm_irqs_end(&ctl);
	storm_sent_end();
	storm_ctl_check_cpus(&ctl, irqs_before, irqs_after);
	slabstorm_stop_threads();
	slabstorm_collect();
	slabstorm_destroy_fixed();
	if (drained)
		failed = true;
	slabstorm_check_remote();

	slabstorm_print_results();
}

static void slabstorm_free(void)
{
	int c, p;

	slabstorm_destroy_fixed();
	if (pcpus) {
		for_each_possible_cpu(c)
			kvfree(per_cpu_ptr(pcpus, c)->objs);
		free_percpu(pcpus);
	}
	for (p = 0; p < NR_PHASES; p++)
		kfree(phases[p].irqs);
	storm_irqs_free(snap_cur);
	storm_irqs_free(snap_prev);
	storm_irqs_free(irqs_acc);
	storm_irqs_free(irqs_after);
	storm_irqs_free(irqs_before);
	free_cpumask_var(touch_mask);
}

static struct storm_module slabstorm_module = {
	.ctl		= &ctl,
	.run		= slabstorm_run,
	.stop_threads	= slabstorm_stop_threads,
	.free		= slabstorm_free,
	.result_fops	= &slabstorm_result_fops,
};

static int __init slabstorm_init(void)
{
	int c, p, ret = -ENOMEM;

	if (!zalloc_cpumask_var(&touch_mask, GFP_KERNEL))
		goto err_free;
	pcpus = alloc_percpu(struct slabstorm_cpu);
	irqs_before = storm_irqs_alloc();
	irqs_after = storm_irqs_alloc();
	irqs_acc = storm_irqs_alloc();
	snap_prev = storm_irqs_alloc();
	snap_cur = storm_irqs_alloc();
	if (!pcpus || !irqs_before || !irqs_after || !irqs_acc || !snap_prev ||
	    !snap_cur)
		goto err_free;
	for (p = 0; p < NR_PHASES; p++) {
		phases[p].irqs = storm_irqs_alloc();
		if (!phases[p].irqs)
			goto err_free;
		storm_hist_init(&phases[p].hist);
	}
	ret = storm_hotplug_watch(&ctl);
	if (ret)
		goto err_free;

	/* Hold off CPU hotplug while checking and binding to CPUs. */
	cpus_read_lock();
	ret = slabstorm_check_params();
	if (ret) {
		cpus_read_unlock();
		goto err_unwatch;
	}
	slabstorm_print_params("Start of test");
	ret = slabstorm_create_threads();
	cpus_read_unlock();
	if (ret)
		goto err_stop;
	/* kmem_cache_create() takes the hotplug lock itself */
	ret = slabstorm_create_fixed();
	if (ret)
		goto err_stop;

	for_each_cpu(c, touch_mask)
		if (per_cpu_ptr(pcpus, c)->task)
			wake_up_process(per_cpu_ptr(pcpus, c)->task);
	if (main_task)
		wake_up_process(main_task);

	slabstorm_module.background = background;
	return storm_module_start(&slabstorm_module);

err_stop:
	storm_ctl_stop(&ctl, true);
	slabstorm_stop_threads();
err_unwatch:
	storm_hotplug_unwatch();
err_free:
	slabstorm_free();
	return ret;
}

static void __exit slabstorm_exit(void)
{
	storm_module_exit(&slabstorm_module);
}

module_init(slabstorm_init);
module_exit(slabstorm_exit);

MODULE_LICENSE("GPL");
MODULE_VERSION(STORM_MODULE_VERSION);
MODULE_DESCRIPTION("Storms of kmem cache create/shrink/destroy and cross-CPU frees");
