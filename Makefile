# SPDX-License-Identifier: GPL-2.0
#
# make                  build every module for the running kernel
# make KDIR=<dir>       ... for the kernel whose headers or build tree is <dir>
#                       (an arm64 one cross-built: aarch64-linux-gnu-)
# make all-kernels      ... for every kernel with headers in /lib/modules
# make check            W=1 build for every installed kernel, fail on warnings
# make plugin           the storm-insn QEMU plugin (build/qemu-plugin/)
# make deps             install what the suite needs (scripts/setup)
# make test             the test suite (what CI runs)
#
# Modules land in build/<kernel release>/<module>.ko, so builds for different
# kernels never overwrite each other.

KDIR ?= /lib/modules/$(shell uname -r)/build
# The release the kernel reports (uname -r), which Debian's headers keep in
# utsrelease.h, not in kernel.release.
KREL := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
MODULES := $(patsubst %/,%,$(dir $(filter-out include/%,$(wildcard */*storm.c))))
# what every storm links in, each its own copy (see Kbuild)
SHARED := $(basename $(notdir $(wildcard include/*.c)))
BUILD := build/$(KREL)
V ?= 0

# The floor: the oldest kernel the storms are built and tested on
# (docs/kernels.md). Below it the modules would fail on some API with a
# compiler error; make says so in one line instead.
FLOOR := 6.1
# Why the kernel whose headers or tree are $(1) cannot be built for, or
# nothing: below the floor, or built with a compiler this host lacks (its
# CONFIG_CC_VERSION_TEXT: a distribution's newer kernel may want gcc-14).
unbuildable = rel=$$(sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
		$(1)/include/generated/utsrelease.h); \
	ver=$$(echo "$$rel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p'); \
	cc=$$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\).*/\1/p' \
		$(1)/include/config/auto.conf 2>/dev/null || :); \
	if [ -n "$$ver" ] && [ "$$(printf '%s\n%s\n' $(FLOOR) "$$ver" | \
			sort -V | head -n 1)" != $(FLOOR) ]; then \
		echo "$$rel is below the floor, $(FLOOR): the oldest kernel the storms are built and tested on"; \
	elif [ -n "$$cc" ] && ! command -v "$$cc" >/dev/null 2>&1; then \
		echo "$$rel was built with $$cc, which is not installed: install it, or build that kernel from source with this host's compiler (docs/kernels.md)"; \
	fi

# A kernel of another architecture than this host's (arm64 here, Debian's
# headers or a cross-built tree) is built for with its cross compiler:
# the kernel's own configuration says which.
KARCH := $(shell grep -qs '^CONFIG_ARM64=y' $(KDIR)/include/config/auto.conf && echo arm64)
ifeq ($(KARCH),arm64)
ifneq ($(shell uname -m),aarch64)
CROSS_COMPILE ?= aarch64-linux-gnu-
endif
KARCH_ARGS := ARCH=arm64 CROSS_COMPILE=$(CROSS_COMPILE)
endif

# A tree prepared for modules only (storm kernel build --prepare-only) has
# no vmlinux to resolve symbols against: modpost warns instead of failing,
# and what the kernel exports is checked by a full build.
MODPOST_WARN := $(if $(wildcard $(KDIR)/Module.symvers),,KBUILD_MODPOST_WARN=1)

.PHONY: all modules all-kernels check clean deps test demo plugin

all: modules plugin

# The instruction counter for TCG guests: a host shared object, not a
# module. -Werror: it is small and has no excuse for a warning.
PLUGIN := build/qemu-plugin/storm-insn.so
PLUGIN_CFLAGS := -O2 -Wall -Wextra -Wno-unused-parameter -Werror -fPIC \
	-shared -fvisibility=hidden

plugin: $(PLUGIN)

$(PLUGIN): qemu-plugin/storm-insn.c qemu-plugin/qemu_plugin_abi.h include/storm_mark.h
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) -o $@ $< -lpthread

modules:
	@if [ -z "$(KREL)" ]; then \
		echo "error: no kernel headers at KDIR=$(KDIR)" >&2; \
		echo "  install them (make deps) or pass KDIR=<headers or built tree>" >&2; \
		echo "  installed: $$(ls /lib/modules 2>/dev/null | tr '\n' ' ')" >&2; \
		exit 1; \
	fi
	@why=$$($(call unbuildable,$(KDIR))); \
	if [ -n "$$why" ]; then echo "error: $$why" >&2; exit 1; fi
	@mkdir -p $(BUILD)
	@ln -sfn ../../include $(BUILD)/include
	@ln -sf ../../Kbuild $(BUILD)/Kbuild
	@rm -f $(addprefix $(BUILD)/,$(addsuffix .c,$(MODULES)))
	@for m in $(MODULES); do \
		ln -sf ../../$$m/$$m.c $(BUILD)/$${m}_main.c; \
		for s in $(SHARED); do \
			ln -sf ../../include/$$s.c $(BUILD)/$${m}_$$s.c; \
		done; \
	done
	@for t in insnloop failalloc irqoff; do \
		ln -sf ../../tests/kmod/$$t.c $(BUILD)/$$t.c; \
	done
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(BUILD) V=$(V) $(MODPOST_WARN) $(KARCH_ARGS) modules
	@ls $(BUILD)/*.ko

# A kernel that cannot be built for (below the floor, or its compiler
# missing) is skipped with a line saying why; every other one is built.
all-kernels:
	@set -e; for d in $(MODULES_DIR)/*/build; do \
		[ -e "$$d/include/generated/utsrelease.h" ] || continue; \
		why=$$($(call unbuildable,$$d)); \
		if [ -n "$$why" ]; then echo "skipped: $$why"; continue; fi; \
		$(MAKE) --no-print-directory KDIR=$$d modules; \
	done

# Warning-free with W=1 is a requirement: fail on any warning. KDIR=
# checks that one kernel only (a built tree, such as today's kernel).
ONE_KDIR := $(filter command line,$(origin KDIR))
# MODULES_DIR: where installed kernels keep their headers (a test sets it)
MODULES_DIR ?= /lib/modules
CHECK_KDIRS := $(if $(ONE_KDIR),$(KDIR),$(wildcard $(MODULES_DIR)/*/build))
check:
	@mkdir -p build; set -e; for d in $(CHECK_KDIRS); do \
		[ -e "$$d/include/generated/utsrelease.h" ] || \
			{ [ -z "$(ONE_KDIR)" ] && continue; \
			echo "error: no kernel headers at KDIR=$$d" >&2; exit 1; }; \
		why=$$($(call unbuildable,$$d)); \
		if [ -n "$$why" ] && [ -n "$(ONE_KDIR)" ]; then \
			echo "error: $$why" >&2; exit 1; fi; \
		if [ -n "$$why" ]; then echo "make check: skipped: $$why"; continue; fi; \
		rel=$$(sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
			$$d/include/generated/utsrelease.h); \
		rm -rf build/$$rel; \
		$(MAKE) --no-print-directory KDIR=$$d W=1 modules 2>&1 | tee build/.check.log; \
		if grep -qE 'warning:|error:' build/.check.log; then \
			echo "error: W=1 warnings or errors for $$rel" >&2; exit 1; fi; \
	done

clean:
	rm -rf build

deps:
	scripts/setup

test:
	scripts/storm test

demo:
	scripts/storm demo
