// SPDX-License-Identifier: GPL-2.0
/*
 * storm_pmu.c - instructions and cycles per CPU over a storm's window,
 * from the PMU (see storm_pmu.h).
 *
 * Linked into each storm as a part of its composite module (Kbuild).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "storm.h"

static bool pmu = true;
module_param(pmu, bool, 0444);
MODULE_PARM_DESC(pmu, "Count each CPU's retired instructions and cycles over the storm's window with the PMU, where there is one (default 1)");

enum { STORM_PMU_INSN, STORM_PMU_CYCLES, STORM_PMU_NR };

/* pmu=, for the Start of test and End of test lines. */
bool storm_pmu_on(void)
{
	return pmu;
}

static const char *const storm_pmu_name[STORM_PMU_NR] = { "insn", "cycles" };

/* One read of a counter: its count, and how long it was enabled and ran. */
struct storm_pmu_value {
	u64 count;
	u64 enabled;
	u64 running;
};

static struct {
	struct perf_event **events;	/* [cpu * STORM_PMU_NR + event] */
	struct storm_pmu_value *before, *after;	/* same layout */
	int error;			/* why nothing counts: -errno */
	bool counted;
} storm_pmu;

void storm_pmu_free(void)
{
	unsigned int i;

	if (storm_pmu.events) {
		for (i = 0; i < nr_cpu_ids * STORM_PMU_NR; i++)
			if (storm_pmu.events[i])
				perf_event_release_kernel(storm_pmu.events[i]);
	}
	kvfree(storm_pmu.events);
	kvfree(storm_pmu.before);
	kvfree(storm_pmu.after);
	storm_pmu.events = NULL;
	storm_pmu.before = NULL;
	storm_pmu.after = NULL;
}

int storm_pmu_start(void)
{
	static const u64 config[STORM_PMU_NR] = {
		PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES,
	};
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(attr),
		.pinned = 1,
	};
	unsigned int n = nr_cpu_ids * STORM_PMU_NR;
	int cpu, e;

	storm_pmu.error = -ENODATA;
	if (!pmu)
		return 0;
	storm_pmu.events = kvcalloc(n, sizeof(*storm_pmu.events), GFP_KERNEL);
	storm_pmu.before = kvcalloc(n, sizeof(*storm_pmu.before), GFP_KERNEL);
	storm_pmu.after = kvcalloc(n, sizeof(*storm_pmu.after), GFP_KERNEL);
	if (!storm_pmu.events || !storm_pmu.before || !storm_pmu.after) {
		storm_pmu_free();
		return -ENOMEM;
	}
	storm_pmu.error = 0;
	cpus_read_lock();
	for_each_online_cpu(cpu) {
		for (e = 0; e < STORM_PMU_NR; e++) {
			struct perf_event *ev;

			attr.config = config[e];
			ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
							      NULL, NULL);
			if (IS_ERR(ev)) {
				storm_pmu.error = PTR_ERR(ev);
				break;
			}
			storm_pmu.events[cpu * STORM_PMU_NR + e] = ev;
		}
		if (storm_pmu.error)
			break;
	}
	cpus_read_unlock();
	if (storm_pmu.error) {
		/* all or nothing: a partial count would read as a change */
		storm_pmu_free();
		if (storm_pmu.error == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

static void storm_pmu_read(struct storm_pmu_value *into)
{
	unsigned int i;

	if (!storm_pmu.events)
		return;
	for (i = 0; i < nr_cpu_ids * STORM_PMU_NR; i++)
		if (storm_pmu.events[i])
			into[i].count =
				perf_event_read_value(storm_pmu.events[i],
						      &into[i].enabled,
						      &into[i].running);
}

/*
 * A counter that did not run for all of the window it was enabled in
 * (multiplexed off its PMU, or in error state, where its count and times
 * stop) counted only part of it: its count is not the window's. The
 * index of the first such counter, or -1.
 */
static int storm_pmu_partial(void)
{
	unsigned int i;

	for (i = 0; i < nr_cpu_ids * STORM_PMU_NR; i++) {
		const struct storm_pmu_value *a = &storm_pmu.after[i];
		const struct storm_pmu_value *b = &storm_pmu.before[i];

		if (storm_pmu.events[i] &&
		    (a->enabled == b->enabled ||
		     a->running - b->running != a->enabled - b->enabled))
			return i;
	}
	return -1;
}

void storm_pmu_begin(void)
{
	storm_pmu_read(storm_pmu.before);
}

void storm_pmu_end(void)
{
	storm_pmu_read(storm_pmu.after);
	storm_pmu.counted = storm_pmu.events != NULL;
}

/*
 * "insn.source: pmu" and "insn.<cpu>: N", "cycles.<cpu>: N" for each CPU
 * counted; or "insn.source: off (<why>)", also when a counter ran for
 * only part of the window. Under the plugin the host counts instead
 * (storm run adds its section to the run file).
 */
void storm_pmu_show(struct seq_file *m)
{
	unsigned int i;
	int cpu, e, partial;

	if (!storm_pmu.counted) {
		if (!pmu)
			seq_puts(m, "insn.source: off (pmu=0)\n");
		else
			seq_printf(m, "insn.source: off (no PMU counter: %d)\n",
				   storm_pmu.error);
		return;
	}
	partial = storm_pmu_partial();
	if (partial >= 0) {
		const struct storm_pmu_value *a = &storm_pmu.after[partial];
		const struct storm_pmu_value *b = &storm_pmu.before[partial];

		seq_printf(m, "insn.source: off (PMU counter %s on CPU %d ran %llu of the %llu ns it was enabled in the window)\n",
			   storm_pmu_name[partial % STORM_PMU_NR],
			   partial / STORM_PMU_NR, a->running - b->running,
			   a->enabled - b->enabled);
		return;
	}
	seq_puts(m, "insn.source: pmu\n");
	for_each_possible_cpu(cpu) {
		for (e = 0; e < STORM_PMU_NR; e++) {
			i = cpu * STORM_PMU_NR + e;
			if (storm_pmu.events[i])
				seq_printf(m, "%s.%d: %llu\n", storm_pmu_name[e],
					   cpu, storm_pmu.after[i].count -
					   storm_pmu.before[i].count);
		}
	}
}
