/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm_pmu.h - instructions and cycles per CPU over a storm's window,
 * from the PMU: the hardware's count of what the storm-insn plugin counts
 * under emulation (qemu-plugin/). Included by storm.h; the code is in
 * storm_pmu.c.
 *
 * One pinned kernel counter per online CPU and event, created at load,
 * counting from then on; the window is the difference of two reads, taken
 * just outside the irq_stat snapshots because reading another CPU's
 * counter interrupts it (an IPI that the snapshots must not see). So the
 * counts cover the markers' window and a few hundred instructions of each
 * read. No PMU (a TCG guest, a VM without a vPMU, a counter the NMI
 * watchdog holds): the result says which and counts nothing.
 */
#ifndef _STORM_PMU_H
#define _STORM_PMU_H

struct seq_file;

/* At load, with the storm's other allocations: -ENOMEM fails the load. */
int storm_pmu_start(void);
/* Before the storm's before-snapshot, and after its after-snapshot. */
void storm_pmu_begin(void);
void storm_pmu_end(void);
void storm_pmu_show(struct seq_file *m);
void storm_pmu_free(void);
bool storm_pmu_on(void);

#endif /* _STORM_PMU_H */
