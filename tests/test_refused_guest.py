"""Refused parameters in real guests: every line of
tests/guest/refused.txt, loaded by the check scripts (lib.sh's
`refused`), must fail insmod with its errno, say its reason in the
kernel log once, start nothing and leave nothing loaded."""

from __future__ import annotations

import pytest

from conftest import assert_refused
from refusals import load

CASES = load()


def refused(guest, refusal):
    case = guest.case(refusal.name)
    assert_refused(case, refusal.reason, refusal.errno)
    # the storm said one thing, the reason, and nothing of a run
    ours = [line for line in case.dmesg.splitlines()
            if f"{refusal.storm}: " in line and "taint" not in line]
    assert len(ours) == 1, ours
    assert refusal.reason in ours[0], ours
    assert not case.file("rmmod_rc"), "the module stayed loaded"


# the kernel's own parsers: on every kernel
@pytest.mark.parametrize("refusal", [r for r in CASES if not r.once],
                         ids=lambda r: r.name)
def test_refused_on_every_kernel(guest, refusal):
    refused(guest, refusal)


# the modules' own checks, the same C on every kernel: in the first
# kernel's full boot only (conftest's ONCE_KERNELS)
@pytest.mark.parametrize("refusal", [r for r in CASES if r.once],
                         ids=lambda r: r.name)
def test_refused_once(guest_once, refusal):
    refused(guest_once, refusal)
