# SPDX-License-Identifier: GPL-2.0
#
# make                  build every module for the running kernel
# make KDIR=<dir>       ... for the kernel whose headers or build tree is <dir>
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
	@for t in insnloop failalloc; do \
		ln -sf ../../tests/kmod/$$t.c $(BUILD)/$$t.c; \
	done
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(BUILD) V=$(V) modules
	@ls $(BUILD)/*.ko

all-kernels:
	@set -e; for d in /lib/modules/*/build; do \
		[ -e "$$d/include/generated/utsrelease.h" ] || continue; \
		$(MAKE) --no-print-directory KDIR=$$d modules; \
	done

# Warning-free with W=1 is a requirement: fail on any warning.
check:
	@mkdir -p build; set -e; for d in /lib/modules/*/build; do \
		[ -e "$$d/include/generated/utsrelease.h" ] || continue; \
		rel=$$(basename $$(dirname $$d)); \
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
