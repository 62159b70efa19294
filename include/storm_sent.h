/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm_sent.h - the IPIs a storm made the kernel send, by sender and target.
 *
 * irq_stat and /proc/interrupts count the interrupts a CPU *received*.
 * IPIs of one vector sent to a CPU that still has one pending coalesce in
 * its APIC (under single-threaded TCG a target rarely runs while a sender
 * queues, so most do), and a target polling in idle is woken with no IPI
 * at all. A patch that changes how many IPIs are sent can leave the
 * received counts unchanged. Only the send functions see the sends.
 *
 * On x86 every call-function and reschedule IPI goes through smp_ops
 * (exported): send_call_func_ipi(mask), send_call_func_single_ipi(cpu)
 * and smp_send_reschedule(cpu), reached only once the generic code has
 * decided that an IPI is needed (queue was empty, target not polling).
 * A kprobe on each function they point to (native_* on bare metal and
 * under TCG, the paravirt ones under KVM or Xen) counts the IPIs per
 * target and vector on the sending CPU. 6.4 and later also have the
 * ipi_send_cpu/ipi_send_cpumask tracepoints; 6.1 does not, and one
 * mechanism on every kernel keeps the counts comparable across kernels.
 * CONFIG_KPROBES_ON_FTRACE (Debian's kernels) makes each probe an ftrace
 * callback at the function's entry, not a breakpoint trap.
 *
 * On arm64 the generic code calls the arch's send functions by name:
 * arch_send_call_function_ipi_mask(mask),
 * arch_send_call_function_single_ipi(cpu) and arch_smp_send_reschedule(cpu)
 * (smp_send_reschedule(cpu) before 6.3), probed by symbol. There a kprobe
 * is a breakpoint (BRK) trap, dearer than an ftrace callback: the result's
 * sent.probe_ns says what a hit cost.
 *
 * Each CPU counts into its own row (this_cpu_inc: one instruction, safe
 * against interrupts) and no counter line is shared. The window's counts
 * are the difference of two snapshots, like irq_stat's. The probes are
 * registered before the storm's threads are released and removed after
 * the storm, so their own IPIs (text patching syncs every CPU) fall
 * outside the window.
 *
 * The result lines are storm_sent_show()'s, next to the irq_stat ones,
 * for the same CPUs. The code is in storm_sent.c.
 *
 * count_sent=0 leaves the probes out: the storm then runs exactly as
 * without this file, and the result says "sent.source: off".
 */
#ifndef _STORM_SENT_H
#define _STORM_SENT_H

#include <linux/types.h>

struct seq_file;
struct storm_irqs;

/*
 * At the end of a module's init, before its threads are released: -ENOMEM
 * fails the load; a kernel without the probes only loses the counts.
 */
int storm_sent_start(void);
/* Around the storm's irq_stat snapshots: the first and the last. */
void storm_sent_begin(void);
void storm_sent_end(void);
/* After the storm (@may_pin: the module is live), and at unload. */
void storm_sent_stop(bool may_pin);
void storm_sent_free(void);
bool storm_sent_on(void);
bool storm_sent_pinned(void);
void storm_sent_show(struct seq_file *m, const struct storm_irqs *before,
		     const struct storm_irqs *after);

#endif /* _STORM_SENT_H */
