// SPDX-License-Identifier: GPL-2.0
/*
 * irqoff - holds one CPU in hardirq for a while: a test module for the
 * storms' watchdog (tests/guest/check-ipistorm.sh).
 *
 *   insmod irqoff.ko cpu=1 ms=6000
 *
 * sends CPU cpu one function call whose handler busy-waits ms
 * milliseconds with interrupts off, as a storm's handlers would if
 * nothing bounded them, and returns without waiting for it. The CPU
 * takes no timer interrupt meanwhile. rmmod waits for the handler's end.
 * At most 8 s: below the kernel's own lockup detectors (10 s and more).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/processor.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>

#define IRQOFF_MAX_MS	8000U

static unsigned int cpu = 1;
module_param(cpu, uint, 0444);
MODULE_PARM_DESC(cpu, "the CPU to hold in hardirq (default 1)");

static unsigned int ms = 6000;
module_param(ms, uint, 0444);
MODULE_PARM_DESC(ms, "how long, in ms (1 to 8000, default 6000)");

static void irqoff_spin(void *info)
{
	/* the clocksource itself: local_clock() stalls with interrupts off */
	u64 end = ktime_get_mono_fast_ns() + (u64)ms * NSEC_PER_MSEC;

	while (ktime_get_mono_fast_ns() < end)
		cpu_relax();
}

static void irqoff_nop(void *info)
{
}

static int __init irqoff_init(void)
{
	int ret;

	if (!ms || ms > IRQOFF_MAX_MS) {
		pr_err("ms=%u: must be 1 to %u\n", ms, IRQOFF_MAX_MS);
		return -EINVAL;
	}
	if (cpu >= nr_cpu_ids || !cpu_online(cpu)) {
		pr_err("cpu=%u: not an online CPU\n", cpu);
		return -EINVAL;
	}
	ret = smp_call_function_single(cpu, irqoff_spin, NULL, 0);
	if (ret)
		pr_err("cpu=%u: the call failed (%d)\n", cpu, ret);
	return ret;
}

static void __exit irqoff_exit(void)
{
	/* queued behind the spin: once it has run, the spin is over */
	smp_call_function_single(cpu, irqoff_nop, NULL, 1);
}

module_init(irqoff_init);
module_exit(irqoff_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Holds one CPU in hardirq: a test of the storms' watchdog");
