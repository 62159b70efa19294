"""storm pairs (scripts/storm-pairs): the CPU pairs of a machine, read
from a sysfs tree: here a made-up 2-package, 2-core, 2-thread box with a
NUMA node per package, and this host's own /sys."""

from __future__ import annotations

import pathlib
import subprocess

REPO = pathlib.Path(__file__).resolve().parent.parent
PAIRS = REPO / "scripts" / "storm-pairs"


def fake_sysfs(root: pathlib.Path) -> pathlib.Path:
    """CPUs 0-7: package = cpu % 4 // 2, core = cpu % 2, so 0 and 4 are
    SMT siblings, 1 shares package 0 with 0, 2 and 3 are package 1;
    node = package."""
    base = root / "devices" / "system" / "cpu"
    base.mkdir(parents=True)
    (base / "online").write_text("0-7\n")
    for c in range(8):
        pkg, core = c % 4 // 2, c % 2
        topo = base / f"cpu{c}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{pkg}\n")
        (topo / "core_id").write_text(f"{core}\n")
        (base / f"cpu{c}" / f"node{pkg}").mkdir()
    return root


def pairs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(PAIRS), *args], capture_output=True,
                          text=True)


def rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if not line.startswith(("#", "relation"))}


def test_every_relation_of_a_two_package_smt_box(tmp_path):
    r = pairs("--sysfs", str(fake_sysfs(tmp_path)))
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout)
    assert got == {
        "smt-sibling": ["0", "4", "single=1", "cpulist=0", "offset=4",
                        "cpulist=0", "targets=4"],
        "same-package": ["0", "1", "single=1", "cpulist=0", "offset=1",
                         "cpulist=0", "targets=1"],
        "other-package": ["0", "2", "single=1", "cpulist=0", "offset=2",
                          "cpulist=0", "targets=2"],
        "other-node": ["0", "2", "single=1", "cpulist=0", "offset=2",
                       "cpulist=0", "targets=2"]}
    assert r.stdout.startswith("# from CPU 0 (package 0, core 0, node 0)")


def test_the_offset_wraps_as_ipistorm_wraps(tmp_path):
    """From CPU 6 (package 1, core 0) its sibling is 2: offset 4, since
    ipistorm's target is (6 + 4) mod 8."""
    r = pairs("--sysfs", str(fake_sysfs(tmp_path)), "--cpu", "6")
    assert r.returncode == 0, r.stderr
    got = rows(r.stdout)
    assert got["smt-sibling"][:5] == ["6", "2", "single=1", "cpulist=6",
                                      "offset=4"]
    assert got["other-package"][1] == "0"


def test_refusals(tmp_path):
    root = fake_sysfs(tmp_path)
    r = pairs("--sysfs", str(root), "--cpu", "9")
    assert r.returncode == 2 and "CPU 9 is not online" in r.stderr
    r = pairs("--sysfs", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "not a Linux sysfs" in r.stderr
    r = pairs("--bogus")
    assert r.returncode == 2 and "unknown argument --bogus" in r.stderr


def test_this_hosts_sysfs():
    """On the machine the tests run on: a header and, with two CPUs or
    more, at least one pair."""
    r = pairs()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# from CPU ")
    online = pathlib.Path("/sys/devices/system/cpu/online").read_text()
    if online.strip() not in ("0", ""):
        assert rows(r.stdout), r.stdout


def test_help_and_the_storm_command():
    r = subprocess.run(["sh", str(REPO / "scripts" / "storm"), "pairs",
                        "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "storm pairs [--cpu N]" in r.stdout
