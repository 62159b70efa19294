// SPDX-License-Identifier: GPL-2.0
/*
 * insnloop - a known number of instructions between two storm markers,
 * for the instruction counter's tests (tests/test_insn_guest.py).
 *
 *   insmod insnloop.ko loops=N
 *
 * runs, with interrupts off on the loading CPU, the begin marker, a loop
 * of two instructions (dec, jnz; on arm64 subs, b.ne) N times, and the
 * end marker, then stays
 * loaded until rmmod. The counter sees 2 * N plus a constant on that CPU:
 * loads with N1 and N2 differ by exactly 2 * (N2 - N1).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irqflags.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "storm.h"

#define INSNLOOP_MAX_LOOPS	1000000000UL

static unsigned long loops = 1000;
module_param(loops, ulong, 0444);
MODULE_PARM_DESC(loops, "iterations of the two-instruction loop (1 to 1e9)");

static int __init insnloop_init(void)
{
	unsigned long n = loops;
	unsigned long flags;

	if (!n || n > INSNLOOP_MAX_LOOPS) {
		pr_err("loops=%lu: must be 1 to %lu\n", n, INSNLOOP_MAX_LOOPS);
		return -EINVAL;
	}
	local_irq_save(flags);
	storm_mark(STORM_MARK_BEGIN);
#ifdef CONFIG_X86
	asm volatile("1:\n\tdec %0\n\tjnz 1b" : "+r" (n) : : "cc");
#elif defined(CONFIG_ARM64)
	asm volatile("1:\n\tsubs %0, %0, #1\n\tb.ne 1b" : "+r" (n) : : "cc");
#endif
	storm_mark(STORM_MARK_END);
	local_irq_restore(flags);
	return 0;
}

static void __exit insnloop_exit(void)
{
}

module_init(insnloop_init);
module_exit(insnloop_exit);
MODULE_DESCRIPTION("A known instruction count between two storm markers");
MODULE_LICENSE("GPL");
