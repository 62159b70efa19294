"""How the per-boot data sets in this directory were made: real run files
of ipistorm's default storm (numipi=20000 single=1 wait=1 cpulist=0
offset=1, 4 vCPUs under TCG, one QEMU thread) that `storm matrix`, the
noise-levers bench and the e2e bisects wrote under results/, and of the
tlbstorm and slabstorm commands of the detectable bench, cut down to
the fields the verdict reads (the result, the IPI and timer rows of
/proc/interrupts, the environment fields compare checks) and grouped by
session and boot.

  python3 tests/data/resample/extract.py

from a checkout that still has results/ (commit 1fa48aa has them; they
are in the repository's history). Boots measured since join a data set
as a group of their own, read from their directories wherever they are:

  python3 tests/data/resample/extract.py --add NAME GROUP DIR...

and a pool that tests/e2e/time-design made (two sides, interleaved, a
known change between them) becomes a data set of its own, each side a
group whose level is its side's parameter (e.g. handler_loops=55):

  python3 tests/data/resample/extract.py --pool NAME RUNS_DIR

<name>/boots.json.gz: {"what", "groups": [{"name", "kernel", "session",
"level", "dirs", "boots": [{"boot_id", "runs": [run document]}]}]}.
Each run document loads as a storm run (runs.load_run's schema).
"""

from __future__ import annotations

import collections
import gzip
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
DEFAULT = {"cpulist": "0", "numipi": "20000", "offset": "1", "single": "1",
           "wait": "1"}
SERIES = "ipistorm-cpulist_0-numipi_20000-offset_1-single_1-wait_1"
TLB = {"numflush": "200"}
SLAB = {"mode": "create", "numcache": "2000"}
ROWS = ("CAL", "TLB", "RES", "LOC")
ENV = ("kernel_release", "boot_id", "virtualization", "accel", "cpu_count",
       "cpu_model", "qemu_version", "host_cpus", "boot_args", "idle",
       "guest_name", "kernel_commit")
RUN = ("index", "runs", "warmup", "series", "started", "traced",
       "insmod_ns", "host_load_start", "host_load_end")

# data set: (the storm's parameters, [(group name, level, series
# directories)]): every directory's runs, grouped by session (run.series)
# and then by boot
SETS = {
    "ipistorm-6.1-aa": (DEFAULT, [
        ("detectable-" + t, "aa", [
            f"results/bench/detectable-{t}/runs/6.1.0-56-amd64.{s}/{SERIES}"
            for s in "ab"])
        for t in ("20261123T210413Z", "20261123T212229Z",
                  "20261123T213604Z", "20261124T001153Z")
    ] + [
        ("noise-levers", "aa",
         [f"results/bench/noise-levers-20261123T231134Z/runs/short/{SERIES}"]),
        ("matrix-6.1", "aa", [f"results/6.1.0-56-amd64/{SERIES}"]),
    ]),
    "ipistorm-6.1-e2e": (DEFAULT, [
        (f"{tree}-{commit}", level, [
            f"results/bisect/{tree}/runs/{d}/{SERIES}"
            for d in dirs])
        for tree in ("linux-source-6.1-20261124T025646Z",
                     "linux3-20261124T030649Z")
        for commit, level, dirs in (
            ("good", "good", ["good-dec36020d118"]),
            ("5f12c94", "good", ["5f12c94c35ab"]),
            ("63e7a68", "bad", ["63e7a684bf05"]),
            ("885a90a", "bad", ["885a90a0ac48"]),
            ("9de411c", "bad", ["9de411cd01f0"]))
    ]),
    # slabstorm: the one session after the bench's two fixes (launch
    # order, captures kept in the guest)
    "tlbstorm-6.1-aa": (TLB, [
        ("detectable-" + t, "aa", [
            f"results/bench/detectable-{t}/runs/6.1.0-56-amd64.{s}/"
            "tlbstorm-numflush_200" for s in "ab"])
        for t in ("20261123T212229Z", "20261124T001153Z")]),
    "slabstorm-6.1-aa": (SLAB, [
        ("detectable-20261124T001153Z", "aa", [
            "results/bench/detectable-20261124T001153Z/runs/"
            f"6.1.0-56-amd64.{s}/slabstorm-mode_create-numcache_2000"
            for s in "ab"])]),
}


def cut(doc: dict) -> dict:
    irq = doc["interrupts"]
    return {
        "schema": doc["schema"], "kind": doc["kind"], "storm": doc["storm"],
        "label": doc["label"], "params": doc["params"],
        "result": {k: v for k, v in doc["result"].items()
                   if not (k.startswith("sender.") and ".latency." in k)},
        "interrupts": {"cpus": irq["cpus"], "rows": {
            k: v for k, v in irq["rows"].items() if k in ROWS}},
        "env": {k: doc["env"][k] for k in ENV if k in doc["env"]},
        "run": {k: doc["run"][k] for k in RUN if k in doc["run"]},
    }


def tracked(d: str) -> list[pathlib.Path]:
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", d],
                         check=True, capture_output=True, text=True).stdout
    return sorted(REPO / f for f in out.split()
                  if f.endswith(".json") and "/run-" in f)


def add(name: str, gname: str, dirs: list[str]) -> int:
    """Append the runs under dirs (any run-*.json below them) to data set
    name as group gname, level aa."""
    path = HERE / name / "boots.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    params = SETS[name][0]
    files = {d: sorted(pathlib.Path(d).rglob("run-*.json")) for d in dirs}
    groups = collect(gname, "aa", dirs, params, files)
    if not groups:
        print(f"extract: no runs of {params} under {dirs}", file=sys.stderr)
        return 1
    doc["groups"] += groups
    doc["what"] += f"; group {gname} added by extract.py --add"
    write(path, doc)
    return 0


def pool(name: str, runs_dir: str) -> int:
    """Data set NAME from a time-design pool: RUNS_DIR/<label>/<series>/,
    each label a side, grouped at the level its label names after the
    release (<release>_<param>=<value>)."""
    path = HERE / name / "boots.json.gz"
    if path.exists():
        print(f"extract: {path} exists", file=sys.stderr)
        return 1
    groups = []
    for side in sorted(pathlib.Path(runs_dir).iterdir()):
        if not side.is_dir():
            continue
        level = side.name.split("_", 1)[1] if "_" in side.name else side.name
        files = sorted(side.rglob("run-*.json"))
        params = json.loads(files[0].read_text())["params"] if files else {}
        groups += collect(level, level, [str(side)], params,
                          {str(side): files})
    if len({g["level"] for g in groups}) != 2:
        print(f"extract: {runs_dir}: not two sides", file=sys.stderr)
        return 1
    write(path, {"what": f"{name}: the real boots of a tests/e2e/"
                 "time-design pool, two sides interleaved, cut by "
                 "tests/data/resample/extract.py --pool", "groups": groups})
    return 0


def collect(gname: str, level: str, dirs: list[str], params: dict,
            files: dict[str, list[pathlib.Path]]) -> list[dict]:
    sessions: dict[str, dict[str, list]] = collections.defaultdict(dict)
    for d in dirs:
        for f in files[d]:
            doc = json.loads(f.read_text())
            if doc["params"] != params or doc["run"].get("traced") \
                    or (doc["storm"] == "ipistorm"
                        and "latency.hist" not in doc["result"]):
                continue
            sid = doc["run"].get("series")
            bid = doc["env"].get("boot_id")
            if not sid or not bid:
                continue        # older files: no session or boot
            sessions[sid].setdefault(bid, []).append(cut(doc))
    return [{"name": gname, "level": level, "session": sid,
             "kernel": next(iter(boots.values()))[0]["env"][
                 "kernel_release"],
             "dirs": dirs,
             "boots": [{"boot_id": b, "runs": sorted(
                 r, key=lambda x: x["run"]["started"] +
                 f"{x['run']['index']:04d}")}
                 for b, r in boots.items()]}
            for sid, boots in sorted(sessions.items())]


def write(path: pathlib.Path, doc: dict) -> None:
    path.parent.mkdir(exist_ok=True)
    text = json.dumps(doc, separators=(",", ":")) + "\n"
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    groups = doc["groups"]
    nb = sum(len(g["boots"]) for g in groups)
    nr = sum(len(b["runs"]) for g in groups for b in g["boots"])
    print(f"{path.relative_to(REPO)}: {len(groups)} groups, {nb} boots, "
          f"{nr} runs", file=sys.stderr)


def main() -> int:
    if sys.argv[1:2] == ["--add"] and len(sys.argv) > 4:
        return add(sys.argv[2], sys.argv[3], sys.argv[4:])
    if sys.argv[1:2] == ["--pool"] and len(sys.argv) == 4:
        return pool(sys.argv[2], sys.argv[3])
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                            check=True, capture_output=True,
                            text=True).stdout.strip()
    for name, (params, groups) in SETS.items():
        out = []
        for gname, level, dirs in groups:
            out += collect(gname, level, dirs, params,
                           {d: tracked(d) for d in dirs})
        doc = {"what": f"{name}: real per-boot runs, cut from the run "
               "files under results/ at commit "
               f"{commit} by tests/data/resample/extract.py",
               "groups": out}
        write(HERE / name / "boots.json.gz", doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
