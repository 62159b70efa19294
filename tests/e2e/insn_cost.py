"""What the instruction counter costs: boots with and without it, in turns.

    .venv/bin/python tests/e2e/insn_cost.py [--kernel 6.1] [--pairs 3]
        [--runs 5] [--results DIR] [STORM PARAM=VALUE ...]

Boots the kernel --pairs times without the storm-insn plugin
(storm vm --no-insn: no plugin, default tick handling) and as many times
with it (the plugin and nohz=off), one guest at a time, alternating which
goes first, and runs the storm (default: ipistorm numipi=20000 single=1
wait=1 cpulist=0 offset=1) --runs times in each. Prints each boot's time
to its first run (the kernel's uptime then) and the guest's whole time,
then storm compare's verdict on the storm's time with the plugin against
without it: the counter's cost on what it measures.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]
                       / "scripts"))

from stormsuite import compare, guest, runs  # noqa: E402

DEFAULT_STORM = ["ipistorm", "numipi=20000", "single=1", "wait=1",
                 "cpulist=0", "offset=1"]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="insn_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="6.1")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--results", type=pathlib.Path,
                   default=runs.RESULTS / "bench" / "insn-cost")
    p.add_argument("storm", nargs="*", default=DEFAULT_STORM)
    args = p.parse_args(argv)
    storm, params = args.storm[0], tuple(args.storm[1:])
    guest.build_modules(args.kernel)
    step = (guest.Step(storm, params),)
    sides = []
    for insn, label in ((False, "insn-off"), (True, "insn-on")):
        series = guest.new_series_id()
        g = guest.Guest(args.kernel, no_build=True, insn=insn)
        sides.append([guest.Boot(g, label, series,
                                 f"{label} boot {i + 1}/{args.pairs}", step)
                      for i in range(args.pairs)])
    done = guest.run_boots(guest.interleave(sides), runs=args.runs,
                           warmup=1, results=args.results, jobs=1)
    print(f"{'boot':24} {'to first run':>13} {'guest':>8} "
          f"{'median time/call':>17}")
    by_label: dict[str, list[pathlib.Path]] = {}
    for d in done:
        docs = [runs.load_run(f) for f in d.files]
        up = min(float(x["env"]["seconds_since_boot"]) for x in docs)
        per_call = statistics.median(
            x["result"]["runtime_ns"] / x["result"]["sender.0.calls"]
            for x in docs if "sender.0.calls" in x["result"]) \
            if storm == "ipistorm" else float("nan")
        print(f"{d.boot.name:24} {up:12.1f}s {d.seconds:7.1f}s "
              f"{per_call / 1e3:14.2f} us")
        by_label.setdefault(d.boot.label, []).extend(d.files)
    sets = [runs.load_files(by_label[lb], lb) for lb in ("insn-off",
                                                        "insn-on")]
    cmp = compare.build(sets, force=True)
    print("\n".join(compare.verdict_lines(cmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
