// SPDX-License-Identifier: GPL-2.0
/*
 * storm-insn - a QEMU TCG plugin that counts the guest instructions each
 * vCPU executes and, whenever a guest runs a storm marker
 * (include/storm_mark.h), writes every vCPU's count to a file the guest
 * can read while it runs.
 *
 *   qemu-system-x86_64 ... -plugin storm-insn.so,out=FILE
 *   qemu-system-aarch64 ... -plugin storm-insn.so,out=FILE
 *
 * It matches the marker of the target it is loaded into: x86's 9-byte
 * NOP or arm64's "movz xzr" word.
 *
 * FILE gets a header line and one line per marker run:
 *
 *   storm-insn 1 vcpus 4
 *   mark SEQ ID VCPU COUNT0 COUNT1 ... COUNTn-1
 *
 * SEQ numbers the markers from 1, ID is the marker's id, VCPU the vCPU
 * that ran it, and COUNTi what vCPU i has executed since it started. A
 * storm's window is the difference of its two markers' counts.
 *
 * Counting is per translation block: a callback on each block's entry
 * adds the block's length to the vCPU's count. With one TCG thread for
 * all vCPUs (-accel tcg,thread=single) no other vCPU runs while a marker
 * is recorded, so a line is an exact snapshot of every vCPU. A block left
 * early by an exception counts whole, as the same code does every time.
 * A halted vCPU executes nothing and counts nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_abi.h"
#include "../include/storm_mark.h"

/* the API version checked at load; a test builds it with another one */
#ifndef STORM_INSN_KNOWN_ABI
#define STORM_INSN_KNOWN_ABI	STORM_QEMU_PLUGIN_ABI
#endif

QEMU_PLUGIN_EXPORT int qemu_plugin_version = STORM_QEMU_PLUGIN_ABI;

static uint64_t *counts;
static unsigned int nr_vcpus;
static FILE *out;
static uint64_t seq;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
/* the target's marker reader, set at install */
static int (*mark_id)(const struct qemu_plugin_insn *insn);

static void tb_exec(unsigned int vcpu, void *udata)
{
	if (vcpu < nr_vcpus)
		counts[vcpu] += (uintptr_t)udata;
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	unsigned int i;

	pthread_mutex_lock(&out_lock);
	fprintf(out, "mark %" PRIu64 " %u %u", ++seq,
		(unsigned int)(uintptr_t)udata, vcpu);
	for (i = 0; i < nr_vcpus; i++)
		fprintf(out, " %" PRIu64, counts[i]);
	fputc('\n', out);
	/* the guest reads the file over 9p right after its marker */
	fflush(out);
	pthread_mutex_unlock(&out_lock);
}

/* The marker's id when insn is a storm marker, else -1: x86_64. */
static int mark_id_x86(const struct qemu_plugin_insn *insn)
{
	static const unsigned char opcode[] = STORM_MARK_OPCODE;
	const unsigned char *p;
	uint32_t imm;

	if (qemu_plugin_insn_size(insn) != STORM_MARK_LEN)
		return -1;
	p = qemu_plugin_insn_data(insn);
	if (memcmp(p, opcode, sizeof(opcode)))
		return -1;
	memcpy(&imm, p + sizeof(opcode), sizeof(imm));	/* x86: little endian */
	if ((imm & ~STORM_MARK_ID_MASK) != STORM_MARK_MAGIC)
		return -1;
	return imm & STORM_MARK_ID_MASK;
}

/* The same for aarch64: one instruction word, little endian. */
static int mark_id_a64(const struct qemu_plugin_insn *insn)
{
	const unsigned char *p;
	uint32_t word;

	if (qemu_plugin_insn_size(insn) != STORM_MARK_A64_LEN)
		return -1;
	p = qemu_plugin_insn_data(insn);
	word = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if ((word & ~(STORM_MARK_ID_MASK << STORM_MARK_A64_IMM_SHIFT)) !=
	    STORM_MARK_A64_INSN(0))
		return -1;
	return (word >> STORM_MARK_A64_IMM_SHIFT) & STORM_MARK_ID_MASK;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int mark = mark_id(insn);

		if (mark >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec,
					QEMU_PLUGIN_CB_NO_REGS,
					(void *)(uintptr_t)mark);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	if (out)
		fclose(out);
	out = NULL;
}

static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int refuse(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qemu_plugin_outs(msg);
	fprintf(stderr, "%s", msg);
	return -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	if (info->version.cur != STORM_INSN_KNOWN_ABI)
		return refuse("storm-insn: this QEMU's plugin API is version %d; "
			      "storm-insn knows version %d only (QEMU 4.2 to "
			      "8.x)\n", info->version.cur,
			      STORM_INSN_KNOWN_ABI);
	if (info->system_emulation && !strcmp(info->target_name, "x86_64"))
		mark_id = mark_id_x86;
	else if (info->system_emulation &&
		 !strcmp(info->target_name, "aarch64"))
		mark_id = mark_id_a64;
	else
		return refuse("storm-insn: needs qemu-system-x86_64 or "
			      "qemu-system-aarch64, not %s%s\n",
			      info->target_name,
			      info->system_emulation ? "" : " user mode");
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else
			return refuse("storm-insn: unknown argument '%s' "
				      "(it takes out=FILE)\n", argv[i]);
	}
	if (!path || !*path)
		return refuse("storm-insn: give out=FILE\n");
	nr_vcpus = info->system.max_vcpus;
	counts = calloc(nr_vcpus, sizeof(*counts));
	if (!counts)
		return refuse("storm-insn: out of memory\n");
	out = fopen(path, "w");
	if (!out)
		return refuse("storm-insn: %s: %s\n", path, strerror(errno));
	fprintf(out, "storm-insn %d vcpus %u\n", STORM_QEMU_PLUGIN_ABI,
		nr_vcpus);
	fflush(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
