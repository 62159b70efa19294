// SPDX-License-Identifier: GPL-2.0
/*
 * failalloc - fails the user-memory allocations of one task, by its name,
 * on a kernel without fault injection: a test module for the storms'
 * error paths (tests/guest/check-tlbstorm.sh).
 *
 *   insmod failalloc.ko comm=tlbstorm-w/1
 *
 * A kprobe on the allocator of a user mapping's pages, vma_alloc_folio()
 * (6.1; vma_alloc_folio_noprof() from 6.10 on; without CONFIG_NUMA that
 * is an inline over __folio_alloc(), __folio_alloc_noprof() from 6.10 on,
 * which the task then calls for its page-cache folios too), sends the
 * calls of a task named comm to a function of ours that returns NULL, as
 * bpf_override_return() would: the anonymous fault that asked for the
 * page fails with VM_FAULT_OOM (MAP_POPULATE goes on without it, a
 * put_user() gets -EFAULT). Slab and page-table pages, and every other
 * task, are left alone, and the allocator never runs, so nothing is
 * logged. /sys/module/failalloc/parameters/failed counts the failures.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/string.h>

static char *comm;
module_param(comm, charp, 0444);
MODULE_PARM_DESC(comm, "Name of the task whose user-memory allocations fail");

/* one task's probe hits, which never run at once: a plain count */
static int failed;
module_param(failed, int, 0444);
MODULE_PARM_DESC(failed, "Allocations failed so far (read-only)");

/* Runs instead of the allocator: no folio. */
static noinline void *failalloc_none(void)
{
	return NULL;
}

static int failalloc_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (strcmp(current->comm, comm))
		return 0;
	WRITE_ONCE(failed, failed + 1);
	/* resume in failalloc_none(), which returns to the caller */
	instruction_pointer_set(regs, (unsigned long)failalloc_none);
	return 1;
}

static struct kprobe failalloc_probe = {
	.pre_handler	= failalloc_pre,
};

static int __init failalloc_init(void)
{
	static const char * const names[] = {
		"vma_alloc_folio_noprof", "vma_alloc_folio",
		"__folio_alloc_noprof", "__folio_alloc",
	};
	int i, ret = -ENOENT;

	if (!comm || !*comm) {
		pr_err("comm=: the name of the task to fail is needed\n");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(names) && ret; i++) {
		failalloc_probe.symbol_name = names[i];
		failalloc_probe.addr = NULL;
		ret = register_kprobe(&failalloc_probe);
	}
	if (ret)
		pr_err("cannot probe vma_alloc_folio (%d)\n", ret);
	else
		pr_info("failing the user-memory allocations of %s in %s\n",
			comm, failalloc_probe.symbol_name);
	return ret;
}

static void __exit failalloc_exit(void)
{
	unregister_kprobe(&failalloc_probe);
}

module_init(failalloc_init);
module_exit(failalloc_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Fails the user-memory allocations of one task, for tests");
