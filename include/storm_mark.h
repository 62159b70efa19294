/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm_mark.h - the marker instruction that bounds a storm's measured
 * window for an instruction counter outside the guest.
 *
 * A marker is the 9-byte NOP "nopw imm32(%rax,%rax,1)" (66 0f 1f 84 00
 * imm32) whose imm32 is STORM_MARK_MAGIC | id. Real x86 CPUs, KVM and TCG
 * run it as a NOP; the storm-insn QEMU plugin (qemu-plugin/) recognises
 * its bytes when it translates the block and records every vCPU's count
 * of executed instructions when it runs. Included by the modules and by
 * the plugin, so it holds constants only.
 */
#ifndef _STORM_MARK_H
#define _STORM_MARK_H

#define STORM_MARK_MAGIC	0x53744d00u	/* "\0MtS" as the imm32 bytes */
#define STORM_MARK_ID_MASK	0xffu

#define STORM_MARK_BEGIN	1	/* opens the window, after the before-snapshot */
#define STORM_MARK_END		2	/* closes it, before the after-snapshot */

/* The NOP's opcode, ModRM and SIB bytes, before the imm32. */
#define STORM_MARK_OPCODE	{ 0x66, 0x0f, 0x1f, 0x84, 0x00 }
#define STORM_MARK_LEN		9

#endif /* _STORM_MARK_H */
