"""The checks whose outcome does not depend on the kernel run in the full
boot of the first kernel under test only (conftest.ONCE_KERNELS, lib.sh's
`once`): the other kernels' full boots must not have run them, or the
gating saves nothing. Collected only when there are two kernels or more.
"""

from __future__ import annotations

import pytest

from conftest import KERNELS, boot
from refusals import load

# what a once-only case leaves in a full boot's output directory
ONCE_CASES = sorted({*(r.name for r in load() if r.once), "numa_nodes",
                     "numa_tlb_across"})
ONCE_FILES = ["fuzz.json", "fuzz.log", "fuzz.rc", "numa_run",
              *(f"drivers/{case}.rc" for case in
                ("tlbstorm", "slabstorm", "sent", "bad_cpulist"))]
# and what runs on every kernel beside them, so the guest did get there
EVERY_KERNEL = [*(r.name for r in load() if not r.once), "drivers/ipistorm.rc", "drivers/traced.rc",
                "safety_complete", "ipi_all_with_offline",
                "tlb_user_with_offline", "slab_shrink_offline"]


@pytest.mark.boots("full")
@pytest.mark.parametrize("kernel", KERNELS[1:])
def test_other_kernels_skip_the_once_only_checks(kernel):
    run = boot(kernel)
    assert (run.out / "check_once").read_text().strip() == "0", run.log[-3000:]
    missing = [name for name in EVERY_KERNEL if not (run.out / name).exists()]
    assert not missing, (missing, run.log[-3000:])
    ran = [name for name in [*ONCE_CASES, *ONCE_FILES]
           if (run.out / name).exists()]
    assert not ran, f"{kernel}'s full boot ran once-only checks: {ran}"
