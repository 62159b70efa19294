/* SPDX-License-Identifier: GPL-2.0 */
/*
 * storm_mark.h - the marker instruction that bounds a storm's measured
 * window for an instruction counter outside the guest.
 *
 * On x86 a marker is the 9-byte NOP "nopw imm32(%rax,%rax,1)" (66 0f 1f
 * 84 00 imm32) whose imm32 is STORM_MARK_MAGIC | id. On arm64 it is the
 * 4-byte "movz xzr, #(STORM_MARK_A64_MAGIC | id), lsl #48": a write to
 * the zero register, a NOP on every arm64 CPU, that no compiler emits.
 * Real CPUs, KVM and TCG run either as a NOP; the storm-insn QEMU plugin
 * (qemu-plugin/) recognises the bytes of its target's marker when it
 * translates the block and records every vCPU's count of executed
 * instructions when it runs. Included by the modules and by the plugin
 * (a host program, for either target), so it holds constants only.
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

/*
 * arm64: MOVZ (64-bit, sf=1 opc=10) with hw=3 (lsl #48) and Rd=31 (xzr),
 * whose imm16 is STORM_MARK_A64_MAGIC | id; one little-endian word.
 */
#define STORM_MARK_A64_MAGIC	0x5300u		/* 'S' in imm16's high byte */
#define STORM_MARK_A64_MOVZ	0xd2e0001fu	/* movz xzr, #0, lsl #48 */
#define STORM_MARK_A64_IMM_SHIFT 5
#define STORM_MARK_A64_INSN(id)	(STORM_MARK_A64_MOVZ | \
				 ((STORM_MARK_A64_MAGIC | (id)) << \
				  STORM_MARK_A64_IMM_SHIFT))
#define STORM_MARK_A64_LEN	4

#endif /* _STORM_MARK_H */
