/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm_compat.h - what differs between the kernels the storms build on
 * (6.1 to 7.3), in one place.
 *
 * Each difference is tested by what the kernel's headers contain, never
 * by its version number, so a backport or a distribution kernel gets the
 * code that matches its headers: a macro the kernel defines where C can
 * see one, else a STORM_HAVE_* define that Kbuild sets from the headers
 * themselves (the "What the headers contain" block of Kbuild). The floor,
 * the oldest kernel built and tested, is checked by the Makefile.
 */
#ifndef _STORM_COMPAT_H
#define _STORM_COMPAT_H

#include <linux/bitops.h>
#include <linux/irqnr.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/sched/coredump.h>

#ifdef CONFIG_X86
#include <asm/hardirq.h>

/*
 * The per-CPU interrupt counts that /proc/interrupts shows as CAL, RES,
 * TLB and LOC, read as that kernel's arch_show_interrupts() reads them:
 * named fields of irq_cpustat_t until 7.0, then one array indexed by
 * enum irq_stat_counts (an enum, so Kbuild looks for it).
 */
#ifdef STORM_HAVE_IRQ_STAT_COUNTS
#define storm_irq_stat_cal(st)	READ_ONCE((st)->counts[IRQ_COUNT_CALL_FUNCTION])
#define storm_irq_stat_res(st)	READ_ONCE((st)->counts[IRQ_COUNT_RESCHEDULE])
#define storm_irq_stat_tlb(st)	READ_ONCE((st)->counts[IRQ_COUNT_TLB])
#define storm_irq_stat_loc(st)	READ_ONCE((st)->counts[IRQ_COUNT_APIC_TIMER])
#else
#define storm_irq_stat_cal(st)	READ_ONCE((st)->irq_call_count)
#define storm_irq_stat_res(st)	READ_ONCE((st)->irq_resched_count)
#define storm_irq_stat_tlb(st)	READ_ONCE((st)->irq_tlb_count)
#define storm_irq_stat_loc(st)	READ_ONCE((st)->apic_timer_irqs)
#endif
#endif /* CONFIG_X86 */

/* The number of irqs: a variable until 6.13, then read by a function. */
#ifdef STORM_HAVE_IRQ_GET_NR_IRQS
#define storm_nr_irqs()		irq_get_nr_irqs()
#else
#define storm_nr_irqs()		nr_irqs
#endif

/*
 * The mm flag prctl(PR_SET_THP_DISABLE) sets: MMF_DISABLE_THP until 6.18,
 * then MMF_DISABLE_THP_COMPLETELY beside an "except advised" mode. The
 * flags became a bitmap with accessors (NUM_MM_FLAG_BITS) at the same
 * time, and each is tested on its own.
 */
#ifdef MMF_DISABLE_THP_COMPLETELY
#define STORM_MMF_NO_THP	MMF_DISABLE_THP_COMPLETELY
#else
#define STORM_MMF_NO_THP	MMF_DISABLE_THP
#endif

/* Sets @flag in @mm's flags; returns whether it was set already. */
static inline bool storm_mm_flag_test_and_set(int flag, struct mm_struct *mm)
{
#ifdef NUM_MM_FLAG_BITS
	return mm_flags_test_and_set(flag, mm);
#else
	return test_and_set_bit(flag, &mm->flags);
#endif
}

static inline void storm_mm_flag_clear(int flag, struct mm_struct *mm)
{
#ifdef NUM_MM_FLAG_BITS
	mm_flags_clear(flag, mm);
#else
	clear_bit(flag, &mm->flags);
#endif
}

#endif /* _STORM_COMPAT_H */
