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

static struct {
	struct perf_event **events;	/* [cpu * STORM_PMU_NR + event] */
	u64 *before, *after;		/* same layout */
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
	kfree(storm_pmu.events);
	kfree(storm_pmu.before);
	kfree(storm_pmu.after);
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
	storm_pmu.events = kcalloc(n, sizeof(*storm_pmu.events), GFP_KERNEL);
	storm_pmu.before = kcalloc(n, sizeof(u64), GFP_KERNEL);
	storm_pmu.after = kcalloc(n, sizeof(u64), GFP_KERNEL);
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

static void storm_pmu_read(u64 *into)
{
	unsigned int i;
	u64 enabled, running;

	if (!storm_pmu.events)
		return;
	for (i = 0; i < nr_cpu_ids * STORM_PMU_NR; i++)
		if (storm_pmu.events[i])
			into[i] = perf_event_read_value(storm_pmu.events[i],
							&enabled, &running);
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
 * counted; or "insn.source: off (<why>)". Under the plugin the host
 * counts instead (storm run adds its section to the run file).
 */
void storm_pmu_show(struct seq_file *m)
{
	unsigned int i;
	int cpu, e;

	if (!storm_pmu.counted) {
		if (!pmu)
			seq_puts(m, "insn.source: off (pmu=0)\n");
		else
			seq_printf(m, "insn.source: off (no PMU counter: %d)\n",
				   storm_pmu.error);
		return;
	}
	seq_puts(m, "insn.source: pmu\n");
	for_each_possible_cpu(cpu) {
		for (e = 0; e < STORM_PMU_NR; e++) {
			i = cpu * STORM_PMU_NR + e;
			if (storm_pmu.events[i])
				seq_printf(m, "%s.%d: %llu\n", storm_pmu_name[e],
					   cpu, storm_pmu.after[i] -
					   storm_pmu.before[i]);
		}
	}
}
